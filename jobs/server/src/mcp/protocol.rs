//! MCP's JSON-RPC 2.0 messages: what a client sent, classified; the answers and errors we send
//! back; protocol-version negotiation and the `initialize` result.

use serde_json::{json, Value};

/// The handshake-era protocol versions engram speaks, newest first. A client asking for one of
/// them gets it; any other request is answered with the newest (the client then decides).
pub const SUPPORTED_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// JSON-RPC error codes (JSON-RPC 2.0 §5.1).
pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;

/// One JSON-RPC message from the client.
#[derive(Debug, PartialEq)]
pub enum Incoming {
    /// A call that wants an answer.
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    /// A call that wants none (`notifications/initialized`, `notifications/cancelled`, …).
    Notification { method: String },
    /// The client's answer to a request of ours: engram sends none, so it is dropped.
    Response,
    /// Not a JSON-RPC 2.0 message; answered with an `INVALID_REQUEST` error for `id`.
    Invalid { id: Value, reason: String },
}

impl Incoming {
    /// Classifies one message (an element of a batch, or the whole body).
    pub fn classify(message: &Value) -> Incoming {
        let Some(obj) = message.as_object() else {
            return Incoming::Invalid {
                id: Value::Null,
                reason: "a JSON-RPC message is a JSON object".into(),
            };
        };
        let id = obj.get("id").cloned();
        if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return Incoming::Invalid {
                id: id.unwrap_or(Value::Null),
                reason: "`jsonrpc` must be \"2.0\"".into(),
            };
        }
        if let Some(id) = &id {
            if !(id.is_string() || id.is_i64() || id.is_u64()) {
                return Incoming::Invalid {
                    id: Value::Null,
                    reason: "`id` must be a string or an integer".into(),
                };
            }
        }
        let method = match obj.get("method") {
            Some(Value::String(m)) => m.clone(),
            Some(_) => {
                return Incoming::Invalid {
                    id: id.unwrap_or(Value::Null),
                    reason: "`method` must be a string".into(),
                }
            }
            None if id.is_some() && (obj.contains_key("result") || obj.contains_key("error")) => {
                return Incoming::Response
            }
            None => {
                return Incoming::Invalid {
                    id: id.unwrap_or(Value::Null),
                    reason: "no `method`".into(),
                }
            }
        };
        let params = obj.get("params").cloned().unwrap_or(json!({}));
        match id {
            Some(id) => Incoming::Request { id, method, params },
            None => Incoming::Notification { method },
        }
    }
}

/// A JSON-RPC error: the code and a message saying what to do about it.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
        }
    }

    /// The error response to request `id`.
    pub fn to_response(&self, id: Value) -> Value {
        json!({"jsonrpc": "2.0", "id": id,
            "error": {"code": self.code, "message": self.message}})
    }
}

/// The success response to request `id`.
pub fn result_response(id: Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// The version to speak with a client that asked for `requested`: the same when engram speaks
/// it, else engram's newest.
pub fn negotiate(requested: Option<&str>) -> &'static str {
    SUPPORTED_VERSIONS
        .iter()
        .find(|v| Some(**v) == requested)
        .copied()
        .unwrap_or(SUPPORTED_VERSIONS[0])
}

/// Whether `version` (an `MCP-Protocol-Version` header) is one engram speaks.
pub fn is_supported(version: &str) -> bool {
    SUPPORTED_VERSIONS.contains(&version)
}

/// What the model reads first: when to use which tool.
const INSTRUCTIONS: &str = "engram is the long-term memory of the conversations with each user. \
Every tool takes `user`: the id of the person you are talking with (the same id every time, so \
their memory follows them across sessions). Call `remember` with the user's messages and your \
answers as the conversation goes (and with facts the user states or corrections they make); call \
`recall` before answering anything that may depend on what was said before; `memory` lists what \
engram knows about the user (facts, preferences, skills); `build_prompt` assembles a whole prompt \
with the relevant memories; `feedback` records a thumbs up or down on an answer; `forget` removes \
one memory, or everything about the user when they ask for it.";

/// The `initialize` result for the negotiated `version`.
pub fn initialize_result(version: &str) -> Value {
    json!({
        "protocolVersion": version,
        "capabilities": {"tools": {"listChanged": false}},
        "serverInfo": {
            "name": "engram",
            "title": "engram long-term memory",
            "version": env!("CARGO_PKG_VERSION"),
        },
        "instructions": INSTRUCTIONS,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_classified_by_id_and_method() {
        let request = json!({"jsonrpc": "2.0", "id": 7, "method": "ping"});
        assert_eq!(
            Incoming::classify(&request),
            Incoming::Request {
                id: json!(7),
                method: "ping".into(),
                params: json!({})
            }
        );
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(
            Incoming::classify(&note),
            Incoming::Notification {
                method: "notifications/initialized".into()
            }
        );
        let answer = json!({"jsonrpc": "2.0", "id": "a", "result": {}});
        assert_eq!(Incoming::classify(&answer), Incoming::Response);
        for bad in [
            json!([1]),
            json!({"id": 1, "method": "ping"}),
            json!({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}),
            json!({"jsonrpc": "2.0", "id": 1, "method": 3}),
            json!({"jsonrpc": "2.0", "id": 1}),
        ] {
            assert!(
                matches!(Incoming::classify(&bad), Incoming::Invalid { .. }),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_supported_version_is_echoed_and_any_other_gets_the_newest() {
        assert_eq!(negotiate(Some("2025-03-26")), "2025-03-26");
        assert_eq!(negotiate(Some("2099-01-01")), SUPPORTED_VERSIONS[0]);
        assert_eq!(negotiate(None), SUPPORTED_VERSIONS[0]);
        assert!(is_supported("2024-11-05") && !is_supported("2026-07-28"));
    }
}
