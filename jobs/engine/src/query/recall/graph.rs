//! Graph expansion: episodes that mention entities co-mentioned with the query's.

use super::*;

/// The entities `query` names that the user's memory knows, in the order it names them.
pub fn query_entities(memory: &engram_dataflows::views::UserMemory, query: &str) -> Vec<String> {
    engram_operators::entities::extract_entities(query)
        .into_iter()
        .map(|(name, _)| name)
        .filter(|name| memory.entities.contains_key(name.as_str()))
        .collect()
}

/// Neighbours per query entity considered as the inner vertices of a 3-edge path: bounds the
/// pair checks to 50² per pair of query entities.
const PATH_FANOUT: usize = 50;

/// The entities the query's entities lead to in the user's co-mention graph, within `limits`,
/// each with why: the `limits.neighbours` heaviest neighbours of each query entity (depth ≥ 1),
/// every entity joining two query entities (depth ≥ 2), and the inner entities of paths of
/// three edges between two query entities (depth 3, through their [`PATH_FANOUT`] heaviest
/// neighbours). Entities whose kind `limits` excludes are neither added nor passed through.
/// The query's own entities are not listed: its words already find them.
pub fn graph_expansion(
    memory: &engram_dataflows::views::UserMemory,
    query: &str,
    limits: &GraphLimits,
) -> Vec<(String, String)> {
    if limits.neighbours == 0 || limits.depth == 0 {
        return Vec::new();
    }
    let allowed = |name: &str| {
        memory.entities.get(name).is_some_and(|stats| {
            limits.entity_kinds.is_empty() || limits.entity_kinds.contains(&stats.kind)
        })
    };
    let in_query = query_entities(memory, query);
    if in_query.is_empty() {
        return Vec::new();
    }
    // the allowed neighbours of each query entity, heaviest first
    let mut neighbours: HashMap<&str, Vec<(&str, u64)>> = HashMap::new();
    for (a, b, w) in memory.co_mentions.iter() {
        for (x, y) in [(&**a, &**b), (&**b, &**a)] {
            if in_query.iter().any(|q| q == x) && allowed(y) {
                neighbours.entry(x).or_default().push((y, w));
            }
        }
    }
    for list in neighbours.values_mut() {
        list.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    }
    let mut out: Vec<(String, String)> = Vec::new();
    let mut add = |entity: &str, why: String| {
        if in_query.iter().any(|q| q == entity) {
            return;
        }
        match out.iter_mut().find(|(e, _)| e == entity) {
            Some((_, w)) => {
                w.push_str("; ");
                w.push_str(&why);
            }
            None => out.push((entity.to_string(), why)),
        }
    };
    for q in &in_query {
        if let Some(list) = neighbours.get(q.as_str()) {
            for (n, w) in list.iter().take(limits.neighbours) {
                add(n, format!("co-mentioned with {q} ({w}×)"));
            }
        }
    }
    let co_mentioned = |x: &str, y: &str| memory.co_mentions.weight(x, y).is_some();
    for (i, a) in in_query.iter().enumerate() {
        for b in &in_query[i + 1..] {
            let (Some(na), Some(nb)) = (neighbours.get(a.as_str()), neighbours.get(b.as_str()))
            else {
                continue;
            };
            if limits.depth >= 2 {
                for (c, _) in na {
                    if nb.iter().any(|(d, _)| d == c) {
                        add(c, format!("joins {a} and {b}"));
                    }
                }
            }
            if limits.depth >= 3 {
                for (x, _) in na.iter().take(PATH_FANOUT) {
                    for (y, _) in nb.iter().take(PATH_FANOUT) {
                        if x != y && co_mentioned(x, y) {
                            let why = format!("on the path {a} – {x} – {y} – {b}");
                            add(x, why.clone());
                            add(y, why);
                        }
                    }
                }
            }
        }
    }
    out
}
