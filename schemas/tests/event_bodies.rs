//! The body of `POST /v1/events` ([`parse_body`]) under hostile input: one result per element,
//! each the same as validating that element's text alone; an array longer than
//! [`MAX_EVENTS_PER_BODY`] refused whole, counted rather than built; deep nesting anywhere
//! stopped by serde_json's recursion limit, never by the stack.

use engram_schemas::*;
use proptest::prelude::*;

fn event(id: &str, content: &str) -> String {
    serde_json::json!({"event_id": id, "tenant": "acme", "user": "u1",
        "ts": "2024-05-01T10:00:00Z", "role": "user", "content": content})
    .to_string()
}

/// Array elements: valid events, events with hostile content, and things that are no event.
fn element() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>().prop_map(|c| event("e1", &c)),
        "[a-z0-9\u{202e}\u{200d}\u{301}\u{1f600}\"\\\\]{0,12}".prop_map(|id| event(&id, "hi")),
        prop::sample::select(vec![
            "null",
            "1",
            "-0",
            "1e308",
            "\"x\"",
            "[]",
            "{}",
            "[[[[1]]]]",
            r#"{"kind":"control"}"#,
            r#"{"tenant":"acme","tenant":"a b"}"#,
        ])
        .prop_map(str::to_string),
        (1usize..140).prop_map(|d| format!("{}{}", "[".repeat(d), "]".repeat(d))),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn each_element_is_validated_as_its_own_text(
        elements in prop::collection::vec(element(), 0..12),
        spaces in "[ \t\r\n]{0,3}",
    ) {
        let body = format!("{spaces}[{}]", elements.join(","));
        let (results, originals) = parse_body(body.as_bytes());
        prop_assert_eq!(results.len(), originals.len());
        match serde_json::from_str::<Vec<serde_json::Value>>(&body) {
            Ok(values) => {
                prop_assert_eq!(results.len(), values.len());
                for ((result, original), value) in results.iter().zip(&originals).zip(&values) {
                    prop_assert_eq!(original, &value.to_string());
                    prop_assert_eq!(result, &parse_event(original.as_bytes(), None));
                }
            }
            // too deep for one JSON text: the body is refused whole
            Err(_) => {
                prop_assert_eq!(results.len(), 1);
                prop_assert_eq!(&results[0].as_ref().unwrap_err().field, "$");
                prop_assert_eq!(&originals[0], &body);
            }
        }
    }

    #[test]
    fn a_single_event_body_is_validated_as_is(element in element()) {
        prop_assume!(!element.starts_with('['));
        let (results, originals) = parse_body(element.as_bytes());
        prop_assert_eq!(&originals, &vec![element.clone()]);
        prop_assert_eq!(&results, &vec![parse_event(element.as_bytes(), None)]);
    }

    #[test]
    fn arbitrary_bytes_give_one_result_per_original(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
        let (results, originals) = parse_body(&bytes);
        prop_assert_eq!(results.len(), originals.len());
        prop_assert!(!results.is_empty() || bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'['));
    }
}

#[test]
fn the_element_limit_is_exact() {
    let body = |n: usize| format!("[{}]", vec!["{}"; n].join(","));
    let (results, _) = parse_body(body(MAX_EVENTS_PER_BODY).as_bytes());
    assert_eq!(results.len(), MAX_EVENTS_PER_BODY);
    let (results, originals) = parse_body(body(MAX_EVENTS_PER_BODY + 1).as_bytes());
    assert_eq!((results.len(), originals.len()), (1, 1));
    let err = results[0].as_ref().unwrap_err();
    assert_eq!(err.field, "$");
    assert!(err.reason.starts_with("10001 events in one body"), "{err}");
}

#[test]
fn deep_nesting_in_any_element_is_refused_whole_without_overflowing_the_stack() {
    let deep = format!("{}{}", "[".repeat(200_000), "]".repeat(200_000));
    // within the element limit, and as the whole body: the recursion limit stops the parse
    for body in [format!("[{},{deep}]", event("e1", "hi")), deep.clone()] {
        let (results, _) = parse_body(body.as_bytes());
        assert_eq!(results.len(), 1);
        let err = results[0].as_ref().unwrap_err();
        assert_eq!(err.field, "$");
        assert!(err.reason.contains("recursion limit"), "{err}");
    }
    // past the limit elements are skipped unbuilt (serde_json skips without recursing), and
    // counted
    let past = format!("[{},{deep}]", vec!["{}"; MAX_EVENTS_PER_BODY].join(","));
    let (results, _) = parse_body(past.as_bytes());
    let err = results[0].as_ref().unwrap_err();
    assert!(err.reason.starts_with("10001 events in one body"), "{err}");
}
