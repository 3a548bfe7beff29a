//! Labelled sets of corrections (`tests/data/correction_requests.json` and sets of the same
//! form): the same request written several ways, and requests that ask for the opposite. Sent
//! to a real server, they measure how its correction clusters group what people ask for.

use crate::Server;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, Instant};

/// One request, written several ways.
#[derive(Debug, Clone)]
pub struct LabelledRequest {
    pub id: String,
    /// Requests that ask for the opposite: never to be merged with this one.
    pub opposite_of: Vec<String>,
    pub texts: Vec<String>,
}

/// A labelled set: `{"requests": [{"id", "opposite_of"?, "texts"}, …]}`.
pub fn load(path: &Path) -> anyhow::Result<Vec<LabelledRequest>> {
    let set: Value = serde_json::from_str(&std::fs::read_to_string(path)?)?;
    let requests = set["requests"]
        .as_array()
        .ok_or_else(|| anyhow::anyhow!("{}: no `requests` list", path.display()))?;
    requests
        .iter()
        .map(|r| {
            let strings = |v: &Value| -> Vec<String> {
                v.as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|s| s.as_str().map(str::to_string))
                    .collect()
            };
            let id = r["id"]
                .as_str()
                .ok_or_else(|| anyhow::anyhow!("{}: a request without an id", path.display()))?;
            // one opposite may be written as a string, several as a list
            let opposite_of = match &r["opposite_of"] {
                Value::Null => Vec::new(),
                Value::String(s) => vec![s.clone()],
                Value::Array(_) => strings(&r["opposite_of"]),
                other => anyhow::bail!(
                    "{}: request {id}: `opposite_of` is {other}, not a request id or a list of them",
                    path.display()
                ),
            };
            Ok(LabelledRequest {
                id: id.to_string(),
                opposite_of,
                texts: strings(&r["texts"]),
            })
        })
        .collect()
}

/// How a clustering groups a labelled set.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scores {
    /// Of the pairs put in one cluster, the share that are the same request.
    pub precision: f64,
    /// Of the pairs that are the same request, the share put in one cluster.
    pub recall: f64,
    /// Each cluster's most common request, summed over clusters, over all corrections.
    pub purity: f64,
    pub clusters: usize,
    pub requests: usize,
    pub corrections: usize,
    /// Pairs of opposite requests put in one cluster.
    pub opposites_merged: usize,
}

/// Scores `cluster_of` (correction → cluster) against the labels (correction → request id):
/// every correction of `labels` must have a cluster.
pub fn score(
    labels: &BTreeMap<String, String>,
    opposites: &BTreeSet<(String, String)>,
    cluster_of: &BTreeMap<String, String>,
) -> Scores {
    let items: Vec<(&String, &String)> = labels
        .iter()
        .map(|(correction, request)| (request, &cluster_of[correction]))
        .collect();
    let (mut together, mut same, mut both, mut opposites_merged) = (0, 0, 0, 0);
    for (i, (request_a, cluster_a)) in items.iter().enumerate() {
        for (request_b, cluster_b) in &items[i + 1..] {
            let is_same = request_a == request_b;
            let is_together = cluster_a == cluster_b;
            together += usize::from(is_together);
            same += usize::from(is_same);
            both += usize::from(is_same && is_together);
            let pair = ((*request_a).clone(), (*request_b).clone());
            opposites_merged += usize::from(is_together && opposites.contains(&pair));
        }
    }
    let mut members: BTreeMap<&String, BTreeMap<&String, usize>> = BTreeMap::new();
    for (request, cluster) in &items {
        *members
            .entry(cluster)
            .or_default()
            .entry(request)
            .or_default() += 1;
    }
    let majority: usize = members
        .values()
        .map(|counts| counts.values().max().copied().unwrap_or(0))
        .sum();
    let ratio = |a: usize, b: usize| if b == 0 { 1.0 } else { a as f64 / b as f64 };
    Scores {
        precision: ratio(both, together),
        recall: ratio(both, same),
        purity: ratio(majority, items.len()),
        clusters: members.len(),
        requests: labels.values().collect::<BTreeSet<_>>().len(),
        corrections: items.len(),
        opposites_merged,
    }
}

/// Sends every text of `set` as a correction of `tenant`/`user` (one a day, an hour apart, in
/// the set's order, event ids `<prefix><n>`), waits until the server has clustered them all, and
/// scores its clusters. Gives up after `timeout`.
pub fn send_and_score(
    server: &Server,
    tenant: &str,
    user: &str,
    prefix: &str,
    set: &[LabelledRequest],
    timeout: Duration,
) -> Scores {
    let clustered = send_and_cluster(server, tenant, user, prefix, set, timeout);
    score(
        &clustered.labels,
        &clustered.opposites,
        &clustered.cluster_of,
    )
}

/// A labelled set as the server clustered it.
pub struct Clustered {
    /// Correction event id → request id.
    pub labels: BTreeMap<String, String>,
    /// Pairs of request ids that ask for opposite things.
    pub opposites: BTreeSet<(String, String)>,
    /// Correction event id → the server's cluster id.
    pub cluster_of: BTreeMap<String, String>,
}

/// The pairs of request ids that ask for opposite things, both ways round: a set marks a pair
/// on one side or on both.
pub fn opposite_pairs(set: &[LabelledRequest]) -> BTreeSet<(String, String)> {
    set.iter()
        .flat_map(|r| r.opposite_of.iter().map(move |o| (r.id.clone(), o.clone())))
        .flat_map(|(a, b)| [(a.clone(), b.clone()), (b, a)])
        .collect()
}

/// Sends `set` as [`send_and_score`] does and returns the server's clusters with the labels.
pub fn send_and_cluster(
    server: &Server,
    tenant: &str,
    user: &str,
    prefix: &str,
    set: &[LabelledRequest],
    timeout: Duration,
) -> Clustered {
    let mut labels = BTreeMap::new();
    let mut events = Vec::new();
    for request in set {
        for text in &request.texts {
            let id = format!("{prefix}{:04}", labels.len());
            let ts =
                chrono::DateTime::from_timestamp(1_700_000_000 + 3_600 * labels.len() as i64, 0)
                    .expect("a valid time")
                    .to_rfc3339();
            events.push(
                json!({"kind": "correction", "event_id": id, "tenant": tenant,
                "user": user, "ts": ts, "target_event_id": "answer",
                "original": "(the assistant's answer)", "correction_type": "OTHER",
                "expected_behavior": text}),
            );
            labels.insert(id, request.id.clone());
        }
    }
    for chunk in events.chunks(200) {
        let (status, body) = server.post("/v1/events", &json!(chunk));
        assert_eq!(status, 200, "{body}");
    }
    let opposites = opposite_pairs(set);
    let start = Instant::now();
    loop {
        let (status, memory) = server.post("/v1/memory", &json!({"tenant": tenant, "user": user}));
        assert_eq!(status, 200, "{memory}");
        let cluster_of: BTreeMap<String, String> = memory["correction_clusters"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|c| {
                let cluster = c["cluster_id"].as_str().unwrap_or_default().to_string();
                c["corrections"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(move |id| Some((id.as_str()?.to_string(), cluster.clone())))
            })
            .collect();
        if labels.keys().all(|id| cluster_of.contains_key(id)) {
            return Clustered {
                labels,
                opposites,
                cluster_of,
            };
        }
        assert!(
            start.elapsed() < timeout,
            "{} of {} corrections clustered after {timeout:?}",
            labels
                .keys()
                .filter(|id| cluster_of.contains_key(*id))
                .count(),
            labels.len()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_are_counted_by_hand() {
        // a a b | c: requests x x x y; x and y are opposites
        let labels: BTreeMap<String, String> = [("1", "x"), ("2", "x"), ("3", "x"), ("4", "y")]
            .map(|(c, r)| (c.to_string(), r.to_string()))
            .into();
        let clusters: BTreeMap<String, String> = [("1", "a"), ("2", "a"), ("3", "b"), ("4", "a")]
            .map(|(c, k)| (c.to_string(), k.to_string()))
            .into();
        let opposites = [("x".to_string(), "y".to_string()), ("y".into(), "x".into())].into();
        let s = score(&labels, &opposites, &clusters);
        // together: (1,2) (1,4) (2,4); same: (1,2) (1,3) (2,3); both: (1,2)
        assert_eq!((s.precision, s.recall), (1.0 / 3.0, 1.0 / 3.0));
        assert_eq!(s.opposites_merged, 2);
        // cluster a: x x y → 2, cluster b: x → 1
        assert_eq!(s.purity, 3.0 / 4.0);
        assert_eq!((s.clusters, s.requests, s.corrections), (2, 2, 4));
    }

    #[test]
    fn an_opposite_marked_on_one_side_counts_both_ways() {
        let request = |id: &str, opposite_of: &[&str]| LabelledRequest {
            id: id.into(),
            opposite_of: opposite_of.iter().map(|o| o.to_string()).collect(),
            texts: vec![],
        };
        let set = [request("x", &[]), request("y", &["x"]), request("z", &[])];
        let pairs: Vec<(String, String)> = opposite_pairs(&set).into_iter().collect();
        assert_eq!(pairs, [("x".into(), "y".into()), ("y".into(), "x".into())]);
        // the pair (x, y) comes first in a set's order: it is an opposite merged
        let labels: BTreeMap<String, String> = [("1", "x"), ("2", "y")]
            .map(|(c, r)| (c.to_string(), r.to_string()))
            .into();
        let clusters: BTreeMap<String, String> = [("1", "a"), ("2", "a")]
            .map(|(c, k)| (c.to_string(), k.to_string()))
            .into();
        assert_eq!(
            score(&labels, &opposite_pairs(&set), &clusters).opposites_merged,
            1
        );
    }
}
