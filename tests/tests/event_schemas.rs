//! The JSON Schema files a producer validates against (`schemas/json/`) and engram's own
//! validator, on a hand-written corpus of events (`tests/data/event_examples.json`): engram
//! (`engram_schemas::parse_event`, with the kind the Kafka topic implies) accepts exactly the
//! examples marked valid and names the field written beside each invalid one; Python's
//! `jsonschema` (2020-12, formats asserted) decides every example as engram does, refusing the
//! invalid ones for an error about the field engram names, except those
//! the corpus marks `not_expressible`, where it must decide otherwise (so the marks, and the
//! list of what the schemas cannot say, stay true). Also: a schema file for every kind and
//! every input topic, each topic's schema taking the kinds engram takes on it; and
//! `docs/kafka.md` naming every `kafka.*` key and linking schema files that exist.

use engram_connectors::kafka::KafkaConfig;
use engram_schemas::{parse_event, EventKind};
use engram_tests::{python_clients_dir, run_python_client};
use serde_json::{json, Map, Value};
use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The validation script's whole run (a second or two on an idle machine).
const SCRIPT_DEADLINE: Duration = Duration::from_secs(180);

struct Example {
    name: String,
    /// The input topic (without the prefix) it arrives on; none: as `POST /v1/events` takes it.
    topic: Option<String>,
    event: Value,
    valid: bool,
    kind: Option<String>,
    field: Option<String>,
    not_expressible: Option<String>,
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn schema_dir() -> PathBuf {
    repo().join("schemas/json")
}

/// `{"$repeat": S, "times": N}` as S repeated N times, `{"$items": V, "times": N}` as N copies
/// of V, everywhere in `v`.
fn expand(v: &Value) -> Value {
    match v {
        Value::Object(o) if o.contains_key("$repeat") || o.contains_key("$items") => {
            let times = o["times"].as_u64().expect("times") as usize;
            match (o.get("$repeat"), o.get("$items")) {
                (Some(Value::String(s)), None) => Value::String(s.repeat(times)),
                (None, Some(item)) => Value::Array(vec![expand(item); times]),
                _ => panic!("bad generator {v}"),
            }
        }
        Value::Object(o) => Value::Object(o.iter().map(|(k, v)| (k.clone(), expand(v))).collect()),
        Value::Array(a) => Value::Array(a.iter().map(expand).collect()),
        other => other.clone(),
    }
}

fn corpus() -> Vec<Example> {
    let path = repo().join("tests/data/event_examples.json");
    let text = std::fs::read_to_string(&path).expect("the corpus");
    let corpus: Value = serde_json::from_str(&text).expect("the corpus is JSON");
    let bases = corpus["bases"].as_object().expect("bases");
    let text_of = |e: &Value, f: &str| e.get(f).and_then(Value::as_str).map(str::to_string);
    corpus["examples"]
        .as_array()
        .expect("examples")
        .iter()
        .map(|e| {
            let event = match (e.get("event"), text_of(e, "base")) {
                (Some(event), None) => expand(event),
                (None, Some(base)) => {
                    let mut event: Map<String, Value> =
                        bases[&base].as_object().expect("a base").clone();
                    for (k, v) in e
                        .get("with")
                        .and_then(Value::as_object)
                        .into_iter()
                        .flatten()
                    {
                        event.insert(k.clone(), expand(v));
                    }
                    for k in e
                        .get("without")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                    {
                        assert!(event.remove(k.as_str().unwrap()).is_some(), "{e}: {k}");
                    }
                    Value::Object(event)
                }
                _ => panic!("an example has an event or a base: {e}"),
            };
            Example {
                name: text_of(e, "name").expect("name"),
                topic: text_of(e, "topic"),
                event,
                valid: e["valid"].as_bool().expect("valid"),
                kind: text_of(e, "kind"),
                field: text_of(e, "field"),
                not_expressible: text_of(e, "not_expressible"),
            }
        })
        .collect()
}

/// The kind the topic implies, as engram's Kafka source has it.
fn hint(topic: &str) -> EventKind {
    let config = KafkaConfig::default();
    let name = format!("{}{topic}", config.topic_prefix);
    config
        .input_topics()
        .into_iter()
        .find(|(t, _)| *t == name)
        .unwrap_or_else(|| panic!("{name} is not an input topic"))
        .1
}

/// The schema a producer validates the example against.
fn schema_of(e: &Example) -> String {
    match &e.topic {
        Some(topic) => format!("topic.{topic}.schema.json"),
        None => "event.schema.json".into(),
    }
}

#[test]
fn engram_accepts_exactly_the_valid_examples_and_names_the_field_of_the_others() {
    let examples = corpus();
    let mut wrong = Vec::new();
    for e in &examples {
        let bytes = serde_json::to_vec(&e.event).unwrap();
        let parsed = parse_event(&bytes, e.topic.as_deref().map(hint));
        let got = match &parsed {
            Ok(event) => format!("valid {}", event.kind().as_str()),
            Err(error) => format!("invalid at {} ({})", error.field, error.reason),
        };
        let as_written = match parsed {
            Ok(event) => e.valid && e.kind.as_deref() == Some(event.kind().as_str()),
            Err(error) => !e.valid && e.field.as_deref() == Some(error.field.as_str()),
        };
        if !as_written {
            let expected = match e.valid {
                true => format!("valid {:?}", e.kind),
                false => format!("invalid at {:?}", e.field),
            };
            wrong.push(format!("{}: expected {expected}, got {got}", e.name));
        }
    }
    eprintln!(
        "engram's validator: {} of {} examples as the corpus says ({} valid)",
        examples.len() - wrong.len(),
        examples.len(),
        examples.iter().filter(|e| e.valid).count()
    );
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_json_schemas_decide_as_engram_does_except_where_the_corpus_says_they_cannot() {
    let clients = python_clients_dir();
    assert!(
        clients.join("jsonschema").exists() && clients.join("rfc3339_validator.py").exists(),
        "jsonschema and rfc3339-validator are not in {}: run `bash scripts/setup --tests`",
        clients.display()
    );
    let examples = corpus();
    let mut lines = tempfile::NamedTempFile::new().unwrap();
    for e in &examples {
        let line = json!({"schema": schema_of(e), "event": e.event});
        writeln!(lines, "{line}").unwrap();
    }
    lines.flush().unwrap();
    let schemas = schema_dir();
    let out = run_python_client(
        "validate_events.py",
        &[schemas.to_str().unwrap(), lines.path().to_str().unwrap()],
        SCRIPT_DEADLINE,
    );
    let results: Vec<Value> = serde_json::from_str(out.trim()).expect("the script's report");
    assert_eq!(results.len(), examples.len());
    let (mut agree, mut differ_as_marked, mut wrong) = (0, 0, Vec::new());
    for (e, result) in examples.iter().zip(&results) {
        let schema_valid = result["valid"].as_bool().unwrap();
        let why = &result["errors"];
        match (&e.not_expressible, schema_valid == e.valid) {
            (None, true) if !e.valid && !names(result, e.field.as_deref().unwrap()) => {
                wrong.push(format!(
                    "{} ({}): refused, but not for engram's field {:?}: {why}",
                    e.name,
                    schema_of(e),
                    e.field
                ))
            }
            (None, true) => agree += 1,
            (Some(_), false) => differ_as_marked += 1,
            (None, false) => wrong.push(format!(
                "{} ({}): engram says valid={}, the schema valid={schema_valid} {why}",
                e.name,
                schema_of(e),
                e.valid
            )),
            (Some(reason), true) => wrong.push(format!(
                "{} ({}): marked not expressible ({reason}), yet the schema decides as engram (valid={})",
                e.name,
                schema_of(e),
                e.valid
            )),
        }
    }
    eprintln!(
        "JSON Schema: {agree} of {} examples decided as engram does; {differ_as_marked} differ, each marked not expressible",
        examples.len()
    );
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Whether the script's `result` has an error about engram's `field` (its top-level part:
/// `signals` of `signals.voice.agreement`, `covers` of `covers[1]`).
fn names(result: &Value, field: &str) -> bool {
    let top = field.split(['.', '[']).next().unwrap();
    result["fields"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f.as_str() == Some(top))
}

/// The `kind` values a schema file's top level takes.
fn kinds_taken(file: &str) -> BTreeSet<Option<String>> {
    let text =
        std::fs::read_to_string(schema_dir().join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
    let schema: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
    schema["properties"]["kind"]["enum"]
        .as_array()
        .unwrap_or_else(|| panic!("{file} lists the kinds it takes"))
        .iter()
        .map(|k| k.as_str().map(str::to_string))
        .collect()
}

#[test]
fn every_kind_and_every_input_topic_has_a_schema_taking_the_kinds_engram_takes() {
    let all: BTreeSet<Option<String>> = EventKind::ALL
        .iter()
        .map(|k| Some(k.as_str().to_string()))
        .chain([None])
        .collect();
    assert_eq!(kinds_taken("event.schema.json"), all);
    for kind in EventKind::ALL {
        let file = format!("{}.schema.json", kind.as_str());
        let own: BTreeSet<Option<String>> = [Some(kind.as_str().to_string()), None].into();
        assert_eq!(kinds_taken(&file), own, "{file}");
    }
    let config = KafkaConfig::default();
    for (topic, topic_kind) in config.input_topics() {
        let name = topic.strip_prefix(&config.topic_prefix).unwrap();
        let taken: BTreeSet<Option<String>> = EventKind::ALL
            .iter()
            .filter(|k| k.topic_kind() == topic_kind)
            .map(|k| Some(k.as_str().to_string()))
            .chain([None])
            .collect();
        assert_eq!(
            kinds_taken(&format!("topic.{name}.schema.json")),
            taken,
            "{topic}"
        );
    }
    // and the corpus has a valid example of every kind, with and without a topic
    let examples = corpus();
    for kind in EventKind::ALL {
        for on_topic in [false, true] {
            assert!(
                examples.iter().any(|e| e.valid
                    && e.kind.as_deref() == Some(kind.as_str())
                    && e.topic.is_some() == on_topic),
                "no valid {kind:?} example (on a topic: {on_topic})"
            );
        }
    }
}

/// `docs/kafka.md` names every `kafka.*` key, links the schema of every input topic, and every
/// schema file it links exists.
#[test]
fn the_kafka_page_names_every_key_and_links_existing_schemas() {
    let page = std::fs::read_to_string(repo().join("docs/kafka.md")).unwrap();
    let config = KafkaConfig::default();
    let keys = serde_json::to_value(&config).unwrap();
    for key in keys.as_object().unwrap().keys() {
        assert!(
            page.contains(&format!("`kafka.{key}`")),
            "docs/kafka.md does not name kafka.{key}"
        );
    }
    for (topic, _) in config.input_topics() {
        let name = topic.strip_prefix(&config.topic_prefix).unwrap();
        let link = format!("](../schemas/json/topic.{name}.schema.json)");
        assert!(page.contains(&link), "docs/kafka.md does not link {link}");
    }
    let linked: Vec<&str> = page
        .split("](../schemas/json/")
        .skip(1)
        .map(|rest| &rest[..rest.find(')').unwrap()])
        .collect();
    assert!(linked.len() >= 10, "{linked:?}");
    for file in linked.iter().filter(|f| !f.is_empty()) {
        assert!(
            schema_dir().join(file).exists(),
            "docs/kafka.md links {file}, which is not in schemas/json/"
        );
    }
}
