//! The OpenAI chat completions request as engram reads it: who asks (user, session), what the
//! conversation is (the client's instructions, earlier turns, the query), and how to sample.

use super::errors::openai_error;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use engram_connectors::chat_template::TemplateMessage;
use engram_engine::llm::Sampling;
use serde::Deserialize;
use serde_json::Value;

/// Header naming the user whose memory the exchange uses (instead of the body's `user`).
pub(super) const USER_HEADER: &str = "x-engram-user";
/// Header naming the session the exchange is stored in (instead of `metadata.session`).
pub(super) const SESSION_HEADER: &str = "x-engram-session";

/// The fields of OpenAI's request that engram reads; others (`logprobs`, `response_format`,
/// `store`, …) are accepted and ignored.
#[derive(Debug, Deserialize)]
pub(super) struct CompletionRequest {
    pub(super) model: String,
    pub(super) messages: Vec<ClientMessage>,
    #[serde(default)]
    pub(super) stream: bool,
    #[serde(default)]
    pub(super) stream_options: Option<StreamOptions>,
    #[serde(default)]
    temperature: Option<f64>,
    #[serde(default)]
    top_p: Option<f64>,
    #[serde(default)]
    max_tokens: Option<u32>,
    #[serde(default)]
    max_completion_tokens: Option<u32>,
    #[serde(default)]
    stop: Option<Stop>,
    #[serde(default)]
    seed: Option<i64>,
    #[serde(default)]
    presence_penalty: Option<f64>,
    #[serde(default)]
    frequency_penalty: Option<f64>,
    #[serde(default)]
    n: Option<u32>,
    #[serde(default)]
    tools: Option<Vec<Value>>,
    #[serde(default)]
    functions: Option<Vec<Value>>,
    #[serde(default)]
    user: Option<String>,
    #[serde(default)]
    metadata: Option<serde_json::Map<String, Value>>,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct StreamOptions {
    #[serde(default)]
    pub(super) include_usage: bool,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Stop {
    One(String),
    Many(Vec<String>),
}

#[derive(Debug, Deserialize)]
pub(super) struct ClientMessage {
    role: String,
    #[serde(default)]
    content: Option<Content>,
}

/// A message's content: a string, or parts of which only text is understood.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Content {
    Text(String),
    Parts(Vec<ContentPart>),
}

#[derive(Debug, Deserialize)]
struct ContentPart {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    text: Option<String>,
}

/// Whose memory is used and where the exchange is stored.
#[derive(Debug, PartialEq)]
pub(super) struct Identity {
    pub(super) user: String,
    pub(super) session: String,
    /// `metadata.exchange_id`: the same id again is a duplicate, not stored twice.
    pub(super) exchange_id: Option<String>,
}

/// The client's messages, sorted: its system / developer instructions, the earlier turns it
/// carries, and the query (the last message, a user's).
#[derive(Debug, PartialEq)]
pub(super) struct Conversation {
    pub(super) instructions: Vec<String>,
    pub(super) history: Vec<TemplateMessage>,
    pub(super) query: String,
}

fn bad_request(param: &str, code: &str, message: impl Into<String>) -> Response {
    openai_error(StatusCode::BAD_REQUEST, Some(param), Some(code), message)
}

/// A value given at most once, by a header or by the body: both may name it only alike.
fn one_of(
    headers: &HeaderMap,
    header: &str,
    body: Option<&str>,
    param: &str,
) -> Result<Option<String>, Response> {
    let from_header = match headers.get(header) {
        Some(v) => Some(v.to_str().map_err(|_| {
            bad_request(
                param,
                "invalid_header",
                format!("the {header} header is not text"),
            )
        })?),
        None => None,
    };
    match (from_header, body) {
        (Some(h), Some(b)) if h != b => Err(bad_request(
            param,
            "conflicting_values",
            format!("the {header} header ({h:?}) and the body's {param} ({b:?}) differ"),
        )),
        (h, b) => Ok(h.or(b).map(str::to_string)),
    }
}

fn metadata_text<'a>(req: &'a CompletionRequest, key: &str) -> Result<Option<&'a str>, Response> {
    match req.metadata.as_ref().and_then(|m| m.get(key)) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(bad_request(
            &format!("metadata.{key}"),
            "invalid_type",
            format!("metadata.{key} must be a string"),
        )),
    }
}

/// The user (`X-Engram-User` or `user`, required), the session (`X-Engram-Session` or
/// `metadata.session`; default `openai-<UTC date>`, one session a day) and the exchange id
/// (`metadata.exchange_id`).
pub(super) fn identity(
    headers: &HeaderMap,
    req: &CompletionRequest,
    today: chrono::NaiveDate,
) -> Result<Identity, Response> {
    let user = one_of(headers, USER_HEADER, req.user.as_deref(), "user")?.ok_or_else(|| {
        bad_request(
            "user",
            "missing_user",
            "engram needs to know whose memory to use: set `user` in the request or the X-Engram-User header",
        )
    })?;
    let session = one_of(
        headers,
        SESSION_HEADER,
        metadata_text(req, "session")?,
        "metadata.session",
    )?
    .unwrap_or_else(|| format!("openai-{today}"));
    let exchange_id = metadata_text(req, "exchange_id")?.map(str::to_string);
    let names = [
        ("user", Some(user.as_str())),
        ("metadata.session", Some(session.as_str())),
        ("metadata.exchange_id", exchange_id.as_deref()),
    ];
    for (param, name) in names {
        if let Some(name) = name {
            engram_schemas::validate_name(name)
                .map_err(|reason| bad_request(param, "invalid_value", reason))?;
        }
    }
    Ok(Identity {
        user,
        session,
        exchange_id,
    })
}

/// The text of message `i`: a string, or its text parts joined.
fn message_text(i: usize, m: &ClientMessage) -> Result<String, Response> {
    match &m.content {
        None => Ok(String::new()),
        Some(Content::Text(t)) => Ok(t.clone()),
        Some(Content::Parts(parts)) => parts
            .iter()
            .map(|p| match (p.kind.as_str(), &p.text) {
                ("text", Some(t)) => Ok(t.as_str()),
                (kind, _) => Err(bad_request(
                    &format!("messages[{i}].content"),
                    "unsupported_content",
                    format!("only text content is supported, not {kind:?}"),
                )),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(|texts| texts.join("\n")),
    }
}

/// The client's messages sorted into instructions, earlier turns and the query.
pub(super) fn conversation(messages: &[ClientMessage]) -> Result<Conversation, Response> {
    let mut instructions = Vec::new();
    let mut turns = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let text = message_text(i, m)?;
        match m.role.as_str() {
            "system" | "developer" => instructions.push(text),
            "user" | "assistant" => turns.push(TemplateMessage::new(m.role.clone(), text)),
            other => {
                return Err(bad_request(
                    &format!("messages[{i}].role"),
                    "unsupported_role",
                    format!("role {other:?} is not supported: engram relays system, developer, user and assistant messages (no tools)"),
                ))
            }
        }
    }
    let last_is_user = messages.last().is_some_and(|m| m.role == "user");
    let query = match turns.pop() {
        Some(q) if last_is_user && !q.content.trim().is_empty() => q.content,
        _ => {
            return Err(bad_request(
                "messages",
                "missing_query",
                "the last message must be a user's, with text: it is the query engram recalls memory for",
            ))
        }
    };
    Ok(Conversation {
        instructions,
        history: turns,
        query,
    })
}

/// The messages sent to the model: engram's `assembled` prompt (system part, memory, the
/// session's last turns, the query) with the client's instructions appended to the system
/// part, and — when the client carries its own earlier turns — those in place of the
/// session's last `recent_turns` messages, which would repeat them.
pub(super) fn forwarded_messages(
    assembled: &[TemplateMessage],
    recent_turns: usize,
    conversation: &Conversation,
    defuse: impl Fn(&str) -> String,
) -> Vec<TemplateMessage> {
    let mut messages = assembled.to_vec();
    let query = messages.pop();
    if !conversation.history.is_empty() {
        // the system message stays whatever the count says
        let keep = messages.len().saturating_sub(recent_turns).max(1);
        messages.truncate(keep);
    }
    if !conversation.instructions.is_empty() {
        let instructions = defuse(&conversation.instructions.join("\n\n"));
        match messages.first_mut() {
            Some(system) if system.role == "system" => {
                system.content = format!("{}\n\n{instructions}", system.content);
            }
            _ => messages.insert(0, TemplateMessage::new("system", instructions)),
        }
    }
    messages.extend(
        conversation
            .history
            .iter()
            .map(|m| TemplateMessage::new(m.role.clone(), defuse(&m.content))),
    );
    messages.extend(query);
    messages
}

/// How to sample, from the request: the client's options, `max_tokens` capped at the
/// configured `llm.max_tokens` (its default), temperature 0 unless asked.
pub(super) fn sampling(req: &CompletionRequest, max_tokens: u32) -> Result<Sampling, Response> {
    if req.n.is_some_and(|n| n != 1) {
        return Err(bad_request(
            "n",
            "unsupported_value",
            "engram answers with one choice: n must be 1",
        ));
    }
    for (param, list) in [("tools", &req.tools), ("functions", &req.functions)] {
        if list.as_ref().is_some_and(|l| !l.is_empty()) {
            return Err(bad_request(
                param,
                "unsupported_parameter",
                "tools and functions are not supported by engram's chat endpoint",
            ));
        }
    }
    let asked = req.max_completion_tokens.or(req.max_tokens);
    if asked == Some(0) {
        return Err(bad_request(
            "max_tokens",
            "invalid_value",
            "max_tokens must be at least 1",
        ));
    }
    let ranges = [
        ("temperature", req.temperature, 0.0, 2.0),
        ("top_p", req.top_p, 0.0, 1.0),
        ("presence_penalty", req.presence_penalty, -2.0, 2.0),
        ("frequency_penalty", req.frequency_penalty, -2.0, 2.0),
    ];
    for (param, value, low, high) in ranges {
        if value.is_some_and(|v| !(low..=high).contains(&v)) {
            return Err(bad_request(
                param,
                "invalid_value",
                format!("{param} must be between {low} and {high}"),
            ));
        }
    }
    let stop = match &req.stop {
        None => Vec::new(),
        Some(Stop::One(s)) => vec![s.clone()],
        Some(Stop::Many(list)) if list.len() <= 4 => list.clone(),
        Some(Stop::Many(_)) => {
            return Err(bad_request(
                "stop",
                "invalid_value",
                "at most 4 stop sequences",
            ))
        }
    };
    Ok(Sampling {
        max_tokens: asked.map_or(max_tokens, |a| a.min(max_tokens)),
        temperature: req.temperature.unwrap_or(0.0),
        top_p: req.top_p,
        stop,
        seed: req.seed,
        presence_penalty: req.presence_penalty,
        frequency_penalty: req.frequency_penalty,
        response_format: None,
    })
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
