//! Hostile input against event validation (issue 29): unicode that plays tricks (RTL overrides,
//! zero-width and combining characters, astral planes, lone surrogate escapes), control
//! characters, numbers out of every range, deep nesting, duplicate keys, very long strings and
//! wrong types. Whatever the bytes, [`parse_event`] either accepts an event whose canonical JSON
//! reads back as the same event (and is accepted again as it), or rejects it with an error that
//! names a field; it never panics and never overflows the stack.

use engram_schemas::*;
use proptest::prelude::*;

/// Every field validation may name, besides `$` (the event as a whole).
const FIELDS: &[&str] = &[
    "event_id",
    "tenant",
    "user",
    "ts",
    "session",
    "kind",
    "role",
    "content",
    "turn",
    "importance",
    "skill_id",
    "meta",
    "target_event_id",
    "original",
    "corrected",
    "correction_type",
    "expected_behavior",
    "context",
    "domain",
    "confidence",
    "signals",
    "message_id",
    "reward",
    "reason",
    "free_text",
    "subject",
    "attribute",
    "value",
    "source_event_id",
    "covers",
    "action",
    "scope",
    "team",
];

/// Validates `bytes` as an untrusted event and checks what must hold whatever they were.
fn check(bytes: &[u8]) -> Result<Event, EventError> {
    let result = parse_event(bytes, None);
    match &result {
        Ok(event) => assert_sound(event),
        Err(err) => assert_names_a_field(err),
    }
    result
}

fn assert_names_a_field(err: &EventError) {
    let root = err.field.split(['.', '[']).next().unwrap_or_default();
    assert!(
        err.field == "$" || FIELDS.contains(&root),
        "the error names no field: {err:?}"
    );
    assert!(!err.reason.is_empty(), "{err:?}");
}

/// An accepted event: well-formed names and ids, and its canonical JSON reads back as itself,
/// both as engram reads its own log and as untrusted input (a replayed export).
fn assert_sound(event: &Event) {
    let h = &event.header;
    validate_name(&h.tenant).unwrap();
    if !(h.user.is_empty()
        && matches!(&event.body, Body::Control(c) if c.scope == ControlScope::Tenant))
    {
        validate_name(&h.user).unwrap();
    }
    assert!(!h.event_id.is_empty() && !h.event_id.chars().any(char::is_control));
    let json = event.to_json();
    let back = Event::from_canonical_json(json.as_bytes())
        .unwrap_or_else(|e| panic!("canonical JSON does not read back ({e}): {json}"));
    assert_eq!(&back, event, "{json}");
    assert_eq!(
        parse_event(json.as_bytes(), None).as_ref(),
        Ok(event),
        "{json}"
    );
}

/// A JSON object as (key, raw JSON text) pairs, written in order (duplicates kept).
fn object(fields: &[(String, String)]) -> String {
    let body: Vec<String> = fields
        .iter()
        .map(|(k, v)| format!("{}:{v}", serde_json::to_string(k).unwrap()))
        .collect();
    format!("{{{}}}", body.join(","))
}

fn fields(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    let header = [
        ("event_id", r#""e-1""#),
        ("tenant", r#""acme""#),
        ("user", r#""u1""#),
        ("ts", r#""2024-05-01T10:00:00Z""#),
        ("session", r#""s1""#),
    ];
    header
        .iter()
        .chain(pairs)
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// One valid event of each kind.
fn valid_events() -> Vec<Vec<(String, String)>> {
    vec![
        fields(&[
            ("role", r#""user""#),
            ("content", r#""I moved to Lisbon""#),
            ("turn", "3"),
            ("importance", "0.4"),
            ("skill_id", r#""sk""#),
            ("meta", r#"{"client":"web","n":[1,2.5,null,true]}"#),
        ]),
        fields(&[
            ("target_event_id", r#""e-0""#),
            ("original", r#""a long answer""#),
            ("corrected", r#""short""#),
            ("correction_type", r#""LENGTH""#),
            ("expected_behavior", r#""be brief""#),
            ("context", r#""external client""#),
            ("domain", r#""travel""#),
            ("signals", r#"{"voice":{"confidence":0.9,"agreement":0.8}}"#),
        ]),
        fields(&[
            ("message_id", r#""m1""#),
            ("skill_id", r#""sk""#),
            ("reward", "-1"),
            (
                "context",
                r#"{"intent":"plan","sentiment":"neg","time_of_day":"am"}"#,
            ),
            ("reason", r#""too long""#),
            ("free_text", r#""meh""#),
        ]),
        fields(&[
            ("subject", r#""user""#),
            ("attribute", r#""city""#),
            ("value", r#""Lisbon""#),
            ("source_event_id", "17"),
            ("confidence", "1"),
        ]),
        fields(&[
            ("kind", r#""summary""#),
            ("content", r#""they travel""#),
            ("covers", r#"["e-1","e-0","e-1"]"#),
        ]),
        fields(&[("action", r#""erase""#), ("scope", r#""user""#)]),
        fields(&[("action", r#""set_team""#), ("team", r#""ops""#)]),
        fields(&[
            ("kind", r#""control""#),
            ("action", r#""restrict""#),
            ("scope", r#""tenant""#),
        ]),
    ]
}

/// Characters that render, order or compare in surprising ways.
const TRICKY: &[char] = &[
    'a',
    'Z',
    '0',
    ' ',
    '"',
    '\\',
    '\'',
    '`',
    '/',
    '\u{0}',
    '\u{1}',
    '\t',
    '\n',
    '\r',
    '\u{1b}',
    '\u{7f}',
    '\u{85}',
    '\u{a0}',
    '\u{200b}',
    '\u{200c}',
    '\u{200d}',
    '\u{200e}',
    '\u{200f}',
    '\u{202a}',
    '\u{202e}',
    '\u{2066}',
    '\u{2069}',
    '\u{2028}',
    '\u{2029}',
    '\u{feff}',
    '\u{fffd}',
    '\u{301}',
    '\u{36f}',
    '\u{5d0}',
    '\u{627}',
    'é',
    'ß',
    'İ',
    '\u{1f600}',
    '\u{1f468}',
    '\u{10ffff}',
    '\u{e0001}',
    '<',
    '|',
    '>',
];

fn tricky_string() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::collection::vec(prop::sample::select(TRICKY), 0..24).prop_map(String::from_iter),
        any::<String>(),
    ]
}

/// Raw JSON texts that are out of range, of the wrong type, or not quite JSON.
const RAW: &[&str] = &[
    "1e400",
    "-1e400",
    "1e-400",
    "-0",
    "-0.0",
    "0",
    "1",
    "-1",
    "2",
    "0.5",
    "1.0000000000000002",
    "18446744073709551615",
    "18446744073709551616",
    "-9223372036854775809",
    "4294967296",
    "1e2",
    "NaN",
    "Infinity",
    r#""NaN""#,
    r#""Infinity""#,
    r#""-0""#,
    "true",
    "null",
    "[]",
    "{}",
    r#""""#,
    r#""   ""#,
    r#""\ud800""#,
    r#""\udc00\ud800""#,
    r#""a\ud800b""#,
    r#""\ud83d\ude00""#,
    r#""\u0000""#,
    r#""9999-12-31T23:59:59-23:59""#,
    r#""0000-01-01T00:00:00+23:59""#,
    r#""2016-12-31T23:59:60Z""#,
    r#""2024-02-30T10:00:00Z""#,
    r#""user""#,
    r#""tenant""#,
    r#""erase""#,
    r#""interaction""#,
    r#"{"confidence":2,"agreement":"x"}"#,
    r#"{"voice":{"confidence":1e400}}"#,
];

/// A hostile JSON value as text.
fn hostile_value() -> impl Strategy<Value = String> {
    prop_oneof![
        tricky_string().prop_map(|s| serde_json::to_string(&s).unwrap()),
        prop::sample::select(RAW).prop_map(str::to_string),
        any::<f64>().prop_map(|x| x.to_string()),
        any::<i128>().prop_map(|x| x.to_string()),
        (1usize..300).prop_map(|d| format!("{}1{}", "[".repeat(d), "]".repeat(d))),
        (1usize..300).prop_map(|d| format!("{}{}", r#"{"a":"#.repeat(d), "}".repeat(d))),
        (0usize..70_000).prop_map(|n| serde_json::to_string(&"é".repeat(n)).unwrap()),
    ]
}

#[derive(Debug, Clone)]
enum Edit {
    /// The field at this index (modulo the count) gets this value.
    Replace(usize, String),
    /// Removes the field at this index.
    Remove(usize),
    /// Adds a field, possibly one already there (a duplicate key).
    Add(String, String),
}

fn edit() -> impl Strategy<Value = Edit> {
    let name = prop_oneof![
        prop::sample::select(FIELDS).prop_map(str::to_string),
        tricky_string(),
    ];
    prop_oneof![
        (any::<usize>(), hostile_value()).prop_map(|(i, v)| Edit::Replace(i, v)),
        any::<usize>().prop_map(Edit::Remove),
        (name, hostile_value()).prop_map(|(k, v)| Edit::Add(k, v)),
    ]
}

fn apply(mut fields: Vec<(String, String)>, edits: &[Edit]) -> Vec<(String, String)> {
    for e in edits {
        match e {
            Edit::Replace(i, v) if !fields.is_empty() => {
                let i = i % fields.len();
                fields[i].1 = v.clone();
            }
            Edit::Remove(i) if !fields.is_empty() => {
                let i = i % fields.len();
                fields.remove(i);
            }
            Edit::Add(k, v) => fields.push((k.clone(), v.clone())),
            _ => {}
        }
    }
    fields
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Valid events with hostile edits: accepted and round-tripping, or rejected naming a field.
    #[test]
    fn hostile_edits_are_accepted_soundly_or_rejected_naming_a_field(
        base in 0usize..8,
        edits in prop::collection::vec(edit(), 1..4),
    ) {
        let text = object(&apply(valid_events()[base].clone(), &edits));
        check(text.as_bytes()).ok();
    }

    /// Any text in a string field is either kept exactly or rejected naming that field.
    #[test]
    fn tricky_text_is_kept_exactly_or_rejected_naming_its_field(
        base in 0usize..8,
        field in 0usize..16,
        text in tricky_string(),
    ) {
        let mut fields = valid_events()[base].clone();
        let strings: Vec<usize> = (0..fields.len())
            .filter(|&i| fields[i].1.starts_with('"') && fields[i].0 != "kind")
            .collect();
        let i = strings[field % strings.len()];
        fields[i].1 = serde_json::to_string(&text).unwrap();
        let name = fields[i].0.clone();
        match check(object(&fields).as_bytes()) {
            Ok(event) => {
                let json: serde_json::Value = serde_json::from_str(&event.to_json()).unwrap();
                if name == "ts" {
                    // a time is kept as the instant it names, in UTC
                } else if name == "covers" {
                    prop_assert!(json["covers"].as_array().unwrap().contains(&text.clone().into()));
                } else {
                    prop_assert_eq!(json[&name].as_str(), Some(text.as_str()));
                }
            }
            Err(err) => prop_assert_eq!(err.field, name),
        }
    }

    /// A duplicate key counts with its last value, exactly as if it were the only one.
    #[test]
    fn the_last_of_duplicate_keys_counts(
        base in 0usize..8,
        field in any::<usize>(),
        first in hostile_value(),
    ) {
        // a first value that is not JSON (or too deep inside an event) fails the whole parse
        prop_assume!(serde_json::from_str::<serde_json::Value>(&format!("[{first}]")).is_ok());
        let fields = valid_events()[base].clone();
        let (name, last) = fields[field % fields.len()].clone();
        let mut duplicated = vec![(name, first)];
        duplicated.extend(fields.iter().cloned());
        let once = check(object(&fields).as_bytes());
        let twice = check(object(&duplicated).as_bytes());
        prop_assert_eq!(twice, once, "{}", last);
    }

    /// Arbitrary bytes, and valid events cut or flipped at random.
    #[test]
    fn arbitrary_bytes_never_panic(
        base in 0usize..8,
        cut in any::<usize>(),
        flip in any::<(usize, u8)>(),
        noise in prop::collection::vec(any::<u8>(), 0..64),
    ) {
        check(&noise).ok();
        let mut text = object(&valid_events()[base]).into_bytes();
        let at = flip.0 % text.len();
        text[at] ^= flip.1;
        check(&text).ok();
        text.truncate(cut % text.len());
        check(&text).ok();
    }
}

#[test]
fn every_valid_event_is_accepted() {
    for fields in valid_events() {
        let text = object(&fields);
        check(text.as_bytes()).unwrap_or_else(|e| panic!("{e}: {text}"));
    }
}

fn interaction_with(field: &str, raw: &str) -> String {
    let mut fields = valid_events()[0].clone();
    fields.retain(|(k, _)| k != field);
    fields.push((field.to_string(), raw.to_string()));
    object(&fields)
}

#[test]
fn numbers_out_of_range_are_rejected_naming_the_field_or_the_event() {
    for (field, raw, named) in [
        ("importance", "1e400", "$"),
        ("importance", "-1e400", "$"),
        ("importance", "1.0000000000000002", "importance"),
        ("importance", r#""NaN""#, "importance"),
        ("importance", "NaN", "$"),
        ("importance", "18446744073709551616", "importance"),
        ("turn", "18446744073709551616", "turn"),
        ("turn", "4294967296", "turn"),
        ("turn", "-0", "turn"),
        ("turn", "1e2", "turn"),
        ("turn", r#""3""#, "turn"),
    ] {
        let err = check(interaction_with(field, raw).as_bytes()).unwrap_err();
        assert_eq!(err.field, named, "{field} = {raw}: {err}");
    }
    for (raw, importance) in [("-0", -0.0f32), ("1e-400", 0.0), ("1", 1.0)] {
        let event = check(interaction_with("importance", raw).as_bytes()).unwrap();
        let Body::Interaction(i) = event.body else {
            panic!("{raw}")
        };
        assert_eq!(i.importance, Some(importance), "{raw}");
    }
}

#[test]
fn lone_surrogate_escapes_are_rejected_and_pairs_decoded() {
    for raw in [
        r#""\ud800""#,
        r#""\udc00""#,
        r#""a\ud800b""#,
        r#""\ud800\ud800""#,
    ] {
        let err = check(interaction_with("content", raw).as_bytes()).unwrap_err();
        assert_eq!(err.field, "$", "{raw}: {err}");
    }
    let event = check(interaction_with("content", r#""\ud83d\ude00""#).as_bytes()).unwrap();
    let Body::Interaction(i) = event.body else {
        panic!()
    };
    assert_eq!(i.content, "\u{1f600}");
}

#[test]
fn times_outside_four_digit_years_in_utc_are_rejected() {
    // accepted, they would be written as "+10000-…" or "-0001-…": not RFC 3339
    for ts in ["9999-12-31T23:59:59-23:59", "0000-01-01T00:00:00+00:01"] {
        let err = check(interaction_with("ts", &format!("{ts:?}")).as_bytes()).unwrap_err();
        assert_eq!(err.field, "ts", "{ts}: {err}");
    }
    for ts in [
        "9999-12-31T23:59:59Z",
        "0000-01-01T00:00:00Z",
        "2016-12-31T23:59:60Z",
    ] {
        check(interaction_with("ts", &format!("{ts:?}")).as_bytes()).unwrap();
    }
}

#[test]
fn a_tenant_scope_control_is_accepted_as_engram_writes_it() {
    // engram writes a tenant-wide control's user as "": a replay of what it wrote must pass
    for user in [None, Some(r#""""#)] {
        let mut fields = valid_events()[7].clone();
        fields.retain(|(k, _)| k != "user");
        fields.extend(user.map(|u| ("user".to_string(), u.to_string())));
        let event = check(object(&fields).as_bytes()).unwrap();
        assert_eq!(event.header.user, "");
        assert!(event.to_json().contains(r#""user":"""#));
    }
}

/// `depth` nested arrays in the interaction's `meta`.
fn nested_meta(depth: usize) -> String {
    let meta = format!(r#"{{"a":{}1{}}}"#, "[".repeat(depth), "]".repeat(depth));
    interaction_with("meta", &meta)
}

#[test]
fn deep_nesting_is_refused_by_the_recursion_limit_not_the_stack() {
    for depth in [130, 10_000, 100_000] {
        let err = check(nested_meta(depth).as_bytes()).unwrap_err();
        assert_eq!(err.field, "$");
        assert!(err.reason.contains("recursion limit"), "{err}");
    }
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    assert_eq!(check(deep.as_bytes()).unwrap_err().field, "$");
}

#[test]
fn the_deepest_accepted_meta_reads_back_on_a_small_stack() {
    // the deepest nesting the limit lets through, read back through the canonical (flattened,
    // buffered) deserializer on a thread with a blocking-pool-sized stack
    let deepest = (1..130)
        .rev()
        .find(|&d| parse_event(nested_meta(d).as_bytes(), None).is_ok())
        .unwrap();
    assert!(deepest > 100, "{deepest}");
    let event = parse_event(nested_meta(deepest).as_bytes(), None).unwrap();
    let json = event.to_json();
    let back = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || Event::from_canonical_json(json.as_bytes()).unwrap())
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(back, event);
}

#[test]
fn strings_at_the_limits() {
    // 3-byte characters (an RTL override) up to the content limit, and one byte more
    let at_limit = format!("{}a", "\u{202e}".repeat(validate::MAX_CONTENT_BYTES / 3));
    assert_eq!(at_limit.len(), validate::MAX_CONTENT_BYTES);
    let raw = serde_json::to_string(&at_limit).unwrap();
    check(interaction_with("content", &raw).as_bytes()).unwrap();
    let over = serde_json::to_string(&format!("{at_limit}a")).unwrap();
    let err = check(interaction_with("content", &over).as_bytes()).unwrap_err();
    assert_eq!(err.field, "content");
    // a whole event over the byte limit is refused before it is parsed
    let huge = serde_json::to_string(&"x".repeat(MAX_EVENT_BYTES)).unwrap();
    let err = check(interaction_with("skill_id", &huge).as_bytes()).unwrap_err();
    assert_eq!(err.field, "$");
}
