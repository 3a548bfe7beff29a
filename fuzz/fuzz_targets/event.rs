//! Event parsing and validation from arbitrary bytes: `parse_event`, what HTTP, Kafka (with
//! the topic's kind as the hint) and replay run on untrusted input, and
//! `Event::from_canonical_json`, what engram runs on its own log's records.
#![no_main]

use engram_schemas::{parse_event, Event, EventKind, Redacted};
use libfuzzer_sys::fuzz_target;

/// What must hold for an event engram accepted or read: its canonical JSON reads back as the
/// same event, and validating that JSON again accepts the same event.
fn check_canonical(event: &Event) {
    let json = event.to_json();
    let back = Event::from_canonical_json(json.as_bytes())
        .unwrap_or_else(|e| panic!("canonical JSON does not read back ({e}): {json}"));
    assert_eq!(&back, event, "{json}");
    let again = parse_event(json.as_bytes(), None);
    assert_eq!(again.as_ref(), Ok(event), "{json}");
}

fuzz_target!(|data: &[u8]| {
    // no hint (HTTP, replay), or the kind of a Kafka topic
    let topics = EventKind::ALL.into_iter().filter(|k| k.topic_kind() == *k);
    let hints = std::iter::once(None).chain(topics.map(Some));
    for hint in hints {
        match parse_event(data, hint) {
            Ok(event) => {
                if let Some(h) = hint {
                    assert_eq!(event.kind().topic_kind(), h);
                }
                check_canonical(&event);
            }
            Err(err) => assert!(!err.field.is_empty() && !err.reason.is_empty()),
        }
    }
    if let Ok(event) = Event::from_canonical_json(data) {
        let json = event.to_json();
        assert_eq!(
            Event::from_canonical_json(json.as_bytes()).as_ref().ok(),
            Some(&event)
        );
    }
    if let Some(r) = Redacted::from_record(data) {
        assert_eq!(Redacted::from_record(r.to_json().as_bytes()), Some(r));
    }
});
