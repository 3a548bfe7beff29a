//! The body of a `POST /v1/events` request (one event, or an array of at most
//! [`MAX_EVENTS_PER_BODY`]) as validated events, in one pass: the same parse for every HTTP
//! route that takes events, and the one the fuzz targets (`fuzz/`) run.

use crate::event::Event;
use crate::validate::{check_event_size, parse_event_value, EventError};
use serde_json::Value;

/// One submitted item (`original_len`: its size as submitted) as an event, or why not: the
/// same checks for HTTP bodies and replayed files.
pub fn validate_item(item: &Value, original_len: usize) -> Result<Event, EventError> {
    check_event_size(original_len).and_then(|_| parse_event_value(item, None))
}

/// At most this many events in one body: what a request costs in memory, in its answer and in
/// the reject log stays bounded. A longer array is refused whole; elements past the limit are
/// counted, not built.
pub const MAX_EVENTS_PER_BODY: usize = 10_000;

/// A JSON array's elements, or (`Err`) how many it has when that is more than
/// [`MAX_EVENTS_PER_BODY`]: one pass, building no element past the limit.
struct BoundedArray(Result<Vec<Value>, usize>);

impl<'de> serde::Deserialize<'de> for BoundedArray {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Elements;
        impl<'de> serde::de::Visitor<'de> for Elements {
            type Value = BoundedArray;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON array")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<BoundedArray, A::Error> {
                let mut items = Vec::new();
                while items.len() < MAX_EVENTS_PER_BODY {
                    match seq.next_element::<Value>()? {
                        Some(v) => items.push(v),
                        None => return Ok(BoundedArray(Ok(items))),
                    }
                }
                let mut n = items.len();
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {
                    n += 1;
                }
                Ok(BoundedArray(if n > MAX_EVENTS_PER_BODY {
                    Err(n)
                } else {
                    Ok(items)
                }))
            }
        }
        d.deserialize_seq(Elements)
    }
}

/// A JSON body (one event or an array of events) as validated events, each with its input text.
pub fn parse_body(body: &[u8]) -> (Vec<Result<Event, EventError>>, Vec<String>) {
    let whole = |error: EventError| {
        (
            vec![Err(error)],
            vec![String::from_utf8_lossy(body).into_owned()],
        )
    };
    let not_json = |e: serde_json::Error| EventError::new("$", format!("not valid JSON: {e}"));
    if body.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'[') {
        return match serde_json::from_slice::<Value>(body) {
            Ok(v) => (
                vec![validate_item(&v, body.len())],
                vec![String::from_utf8_lossy(body).into_owned()],
            ),
            Err(e) => whole(not_json(e)),
        };
    }
    match serde_json::from_slice::<BoundedArray>(body) {
        Ok(BoundedArray(Ok(items))) => items
            .iter()
            .map(|v| {
                let text = v.to_string();
                (validate_item(v, text.len()), text)
            })
            .unzip(),
        Ok(BoundedArray(Err(n))) => whole(EventError::new(
            "$",
            format!("{n} events in one body; at most {MAX_EVENTS_PER_BODY} per request: send them in several"),
        )),
        Err(e) => whole(not_json(e)),
    }
}
