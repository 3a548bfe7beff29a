//! `/v1/memory` as of an event time: the time-stamped parts of the graph as they stood then.

use chrono::{DateTime, Utc};
use serde_json::Value;
use std::collections::BTreeSet;

/// Narrows a `/v1/memory` answer (`memory`, as [`super::memory_json`] writes it) to what was
/// known to hold at event time `as_of`: fact versions valid then (a version closed after
/// `as_of` shows as current, without its `valid_to` and `superseded_by`), summaries, relations
/// and corrections made by then, entities first seen by then (aliases read among those:
/// [`engram_operators::entity_aliases`]) and the co-mentions and edges between what remains. The rest (skills, correction clusters, preferences, style, marks,
/// retrieval preferences, entity mention counts) is the views' present state; `as_of` is added
/// to the answer.
pub fn memory_as_of(memory: &mut Value, as_of: DateTime<Utc>) {
    let after = |v: &Value| {
        v.as_str()
            .and_then(|s| DateTime::parse_from_rfc3339(s).ok())
            .is_some_and(|t| t > as_of)
    };
    let mut dropped: BTreeSet<String> = BTreeSet::new();
    let mut keep = |list: &mut Value, time: &str, id: &str| {
        if let Some(items) = list.as_array_mut() {
            items.retain(|item| {
                let later = after(&item[time]);
                if later {
                    if let Some(id) = item[id].as_str() {
                        dropped.insert(id.to_string());
                    }
                }
                !later
            });
        }
    };
    keep(&mut memory["facts"], "valid_from", "id");
    keep(&mut memory["summaries"], "ts", "id");
    keep(&mut memory["relations"], "ts", "id");
    keep(&mut memory["corrections"], "ts", "id");
    keep(&mut memory["entities"], "first_seen", "name");
    for fact in memory["facts"].as_array_mut().into_iter().flatten() {
        if after(&fact["valid_to"]) {
            fact["valid_to"] = Value::Null;
            fact["superseded_by"] = Value::Null;
            fact["current"] = Value::Bool(true);
        }
    }
    let gone = |v: &Value| v.as_str().is_some_and(|s| dropped.contains(s));
    if let Some(pairs) = memory["co_mentions"].as_array_mut() {
        pairs.retain(|p| !gone(&p["a"]) && !gone(&p["b"]));
    }
    if let Some(edges) = memory["edges"].as_array_mut() {
        edges.retain(|e| !gone(&e["from"]) && !gone(&e["to"]));
    }
    if let Some(held) = memory["needs_clarification"].as_array_mut() {
        held.retain(|id| !gone(id));
    }
    // aliases as they were then, among the named entities seen by then ("port" stood for
    // "portland" until "porto" came)
    if let Some(entities) = memory["entities"].as_array_mut() {
        let named: Vec<String> = entities
            .iter()
            .filter(|e| e["kind"] == "named")
            .filter_map(|e| e["name"].as_str().map(str::to_string))
            .collect();
        let names: Vec<&str> = named.iter().map(String::as_str).collect();
        let aliases = engram_operators::entity_aliases::aliases(&names);
        for entity in entities.iter_mut() {
            let full = entity["name"].as_str().and_then(|n| aliases.get(n));
            match (full, entity.as_object_mut()) {
                (Some(full), Some(e)) => {
                    e.insert("alias_of".into(), Value::String(full.to_string()));
                }
                (None, Some(e)) => {
                    e.remove("alias_of");
                }
                _ => {}
            }
        }
    }
    memory["as_of"] = Value::String(as_of.to_rfc3339_opts(chrono::SecondsFormat::Secs, true));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_graph_as_it_stood_at_an_event_time() {
        let mut m = json!({
            "facts": [
                {"id": "f1", "attribute": "lives_in", "value": "Leeds", "valid_from": "2023-01-01T00:00:00Z",
                 "valid_to": "2023-06-01T00:00:00Z", "superseded_by": "f2", "current": false},
                {"id": "f2", "attribute": "lives_in", "value": "Porto", "valid_from": "2023-06-01T00:00:00Z",
                 "valid_to": null, "superseded_by": null, "current": true}
            ],
            "summaries": [{"id": "s1", "ts": "2023-02-01T00:00:00Z"}, {"id": "s2", "ts": "2023-07-01T00:00:00Z"}],
            "relations": [{"id": "r1", "ts": "2023-07-02T00:00:00Z"}],
            "corrections": [{"id": "c1", "ts": "2023-08-01T00:00:00Z"}],
            "needs_clarification": ["c1"],
            "entities": [{"name": "leeds", "kind": "named", "first_seen": "2023-01-01T00:00:00Z"},
                         {"name": "port", "kind": "named", "first_seen": "2023-01-02T00:00:00Z"},
                         {"name": "porto", "kind": "named", "first_seen": "2023-06-01T00:00:00Z"},
                         {"name": "portland", "kind": "named", "first_seen": "2023-01-03T00:00:00Z"}],
            "co_mentions": [{"a": "leeds", "b": "porto", "weight": 1}],
            "edges": [{"type": "SUPERSEDED_BY", "from": "f1", "to": "f2"},
                      {"type": "COVERS", "from": "s1", "to": "e1"},
                      {"type": "EVIDENCE_FOR", "from": "e9", "to": "r1"}],
            "skills": [{"skill_id": "concise"}]
        });
        memory_as_of(&mut m, "2023-03-15T00:00:00Z".parse().unwrap());
        assert_eq!(
            m,
            json!({
                "facts": [{"id": "f1", "attribute": "lives_in", "value": "Leeds",
                           "valid_from": "2023-01-01T00:00:00Z", "valid_to": null,
                           "superseded_by": null, "current": true}],
                "summaries": [{"id": "s1", "ts": "2023-02-01T00:00:00Z"}],
                "relations": [],
                "corrections": [],
                "needs_clarification": [],
                "entities": [{"name": "leeds", "kind": "named", "first_seen": "2023-01-01T00:00:00Z"},
                             {"name": "port", "kind": "named", "first_seen": "2023-01-02T00:00:00Z",
                              "alias_of": "portland"},
                             {"name": "portland", "kind": "named", "first_seen": "2023-01-03T00:00:00Z"}],
                "co_mentions": [],
                "edges": [{"type": "COVERS", "from": "s1", "to": "e1"}],
                "skills": [{"skill_id": "concise"}],
                "as_of": "2023-03-15T00:00:00Z"
            })
        );
    }
}
