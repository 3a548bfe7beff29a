//! The body of `POST /v1/events` (and `POST /v1/admin/events`): `engram_schemas::parse_body`,
//! the one-pass parse of one event or an array of at most `MAX_EVENTS_PER_BODY`.
#![no_main]

use engram_schemas::{parse_body, parse_event, Event, MAX_EVENTS_PER_BODY};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (results, originals) = parse_body(data);
    assert_eq!(results.len(), originals.len());
    assert!(results.len() <= MAX_EVENTS_PER_BODY);
    let array = data.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[');
    assert!(array || results.len() == 1);
    let elements = serde_json::from_slice::<Vec<serde_json::Value>>(data).ok();
    for (i, (result, original)) in results.iter().zip(&originals).enumerate() {
        match result {
            Ok(event) => {
                let json = event.to_json();
                let back = Event::from_canonical_json(json.as_bytes()).unwrap();
                assert_eq!(&back, event, "{json}");
            }
            Err(err) => assert!(!err.field.is_empty() && !err.reason.is_empty()),
        }
        // an element of an array body is validated exactly as its own text would be
        if let Some(values) = elements.as_ref().filter(|v| v.len() == results.len()) {
            assert_eq!(original, &values[i].to_string());
            assert_eq!(result, &parse_event(original.as_bytes(), None));
        }
    }
});
