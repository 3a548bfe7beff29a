//! What each MCP tool does: its arguments checked, then the very handler the HTTP route calls
//! (in process, not over a loopback connection), so a tool answers exactly as its route does.
//! The handler's answer becomes the tool's result; its error an `isError: true` result whose
//! text says what was wrong, so the model can mend its call.

use super::protocol::{RpcError, INVALID_PARAMS};
use super::tools::TOOL_NAMES;
use crate::auth::{AuthKeyId, AuthTenant};
use crate::routes::memories::UserQuery;
use crate::routes::{events, gdpr, memories, memory, prompt};
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::response::Response;
use axum::Extension;
use engram_engine::audit_log::{AuditAction, AuditEntry, AuditLog};
use engram_engine::Engine;
use serde_json::{json, Map, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The largest handler answer turned into a tool result (a user's whole memory is far less).
const MAX_ANSWER_BYTES: usize = 64 * 1024 * 1024;
/// How long `remember` waits for what it stored to become searchable.
const SEARCHABLE_WAIT: Duration = Duration::from_secs(10);
/// The session of remembered messages when the model names none.
const DEFAULT_SESSION: &str = "mcp";

/// The key's tenant and the engine: what every tool runs with.
pub struct ToolContext {
    pub engine: Arc<Engine>,
    pub auth: AuthTenant,
    pub key_id: AuthKeyId,
    /// Reads and deletions of a user's memory through MCP are audited as the routes' are.
    pub audit: Arc<AuditLog>,
}

impl ToolContext {
    /// Records `action` on `user` in the audit log (route `MCP tools/call <tool>`), with the
    /// status the handler answered.
    fn audit(&self, action: AuditAction, tool: &str, user: Option<&str>, status: u16) {
        let user = user.filter(|u| engram_schemas::validate_name(u).is_ok());
        let route = format!("MCP tools/call {tool}");
        let entry = AuditEntry {
            tenant: &self.auth.0,
            key_id: &self.key_id.0,
            action,
            user,
            route: &route,
            status,
        };
        if let Err(err) = self.audit.append(entry) {
            tracing::error!(%err, tenant = %self.auth.0, ?action, "could not write the audit record");
        }
    }

    /// A handler's response as the tool result, its reading of `user`'s memory audited.
    async fn audited(
        &self,
        action: AuditAction,
        tool: &str,
        user: Option<&str>,
        resp: Response,
    ) -> Value {
        self.audit(action, tool, user, resp.status().as_u16());
        answer(resp).await
    }
}

/// `tools/call`: the tool's result; a JSON-RPC error only for a call that names no known tool.
pub async fn call_tool(ctx: &ToolContext, params: &Value) -> Result<Value, RpcError> {
    let name = params.get("name").and_then(Value::as_str).ok_or_else(|| {
        RpcError::new(
            INVALID_PARAMS,
            format!("tools/call needs `name`: one of {TOOL_NAMES:?}"),
        )
    })?;
    if !TOOL_NAMES.contains(&name) {
        return Err(RpcError::new(
            INVALID_PARAMS,
            format!("unknown tool {name:?}: the tools are {TOOL_NAMES:?}"),
        ));
    }
    let mut args = match params.get("arguments") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(args)) => args.clone(),
        Some(_) => return Ok(failure("`arguments` must be a JSON object")),
    };
    // the key names the tenant; a model never does
    args.remove("tenant");
    let (engine, auth) = (ctx.engine.clone(), ctx.auth.clone());
    let user = args.get("user").and_then(Value::as_str);
    Ok(match name {
        "remember" => remember(ctx, &args).await,
        "recall" => {
            let resp = memory::post_recall(State(engine), Extension(auth), body(&args)).await;
            ctx.audited(AuditAction::Recall, name, user, resp).await
        }
        "build_prompt" => {
            let resp = prompt::post_prompt(State(engine), Extension(auth), body(&args)).await;
            ctx.audited(AuditAction::Prompt, name, user, resp).await
        }
        "feedback" => match crate::backpressure::refusal(&engine) {
            Some(refused) => answer(refused).await,
            None => {
                let resp = events::post_feedback(State(engine), Extension(auth), body(&args));
                answer(resp.await).await
            }
        },
        "memory" => {
            let resp = memory::post_memory(State(engine), Extension(auth), body(&args)).await;
            ctx.audited(AuditAction::Memory, name, user, resp).await
        }
        "forget" => forget(ctx, &args).await,
        _ => unreachable!("checked against TOOL_NAMES"),
    })
}

fn body(args: &Map<String, Value>) -> Bytes {
    Bytes::from(serde_json::to_vec(args).expect("JSON"))
}

/// A successful tool result: the answer as JSON text, and as structured content.
fn success(answer: Value) -> Value {
    let mut result = json!({
        "content": [{"type": "text", "text": answer.to_string()}],
        "isError": false,
    });
    if answer.is_object() {
        result["structuredContent"] = answer;
    }
    result
}

/// A failed tool result: what went wrong, for the model to read.
fn failure(message: impl Into<String>) -> Value {
    json!({"content": [{"type": "text", "text": message.into()}], "isError": true})
}

/// A route handler's response as a tool result: a 2xx body is the result, an error body
/// (`{"error": {"field", "reason"}}`) an `isError` result naming the argument.
async fn answer(resp: Response) -> Value {
    let status = resp.status();
    let body = match axum::body::to_bytes(resp.into_body(), MAX_ANSWER_BYTES).await {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned())),
        Err(err) => return failure(format!("reading engram's answer failed: {err}")),
    };
    if status.is_success() {
        return success(body);
    }
    let reason = body["error"]["reason"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| body.to_string());
    match body["error"]["field"].as_str() {
        Some(field) if field != "$" && !field.is_empty() => {
            failure(format!("{reason} (argument `{field}`; HTTP {status})"))
        }
        _ => failure(format!("{reason} (HTTP {status})")),
    }
}

/// The `user` argument, or why it is missing.
fn user_arg(args: &Map<String, Value>) -> Result<String, Value> {
    match args.get("user") {
        Some(Value::String(user)) => engram_schemas::validate_name(user)
            .map(|()| user.clone())
            .map_err(|reason| failure(format!("`user`: {reason}"))),
        Some(_) => Err(failure("`user` must be a string")),
        None => Err(failure(
            "`user` is required: the id of the person the conversation is with",
        )),
    }
}

/// `remember`: the messages, facts and corrections as events (as `POST /v1/events` takes
/// them), all checked before any is stored; answers once they are searchable.
async fn remember(ctx: &ToolContext, args: &Map<String, Value>) -> Value {
    let user = match user_arg(args) {
        Ok(user) => user,
        Err(failed) => return failed,
    };
    let session = match args.get("session") {
        None | Some(Value::Null) => DEFAULT_SESSION.to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(_) => return failure("`session` must be a string"),
    };
    let header = EventHeader {
        tenant: &ctx.auth.0,
        user: &user,
        session: &session,
        now: chrono::Utc::now(),
    };
    let events = match remembered_events(args, &header) {
        Ok(events) => events,
        Err(failed) => return failed,
    };
    let event_ids: Vec<Value> = events.iter().map(|e| e["event_id"].clone()).collect();
    if let Some(refused) = crate::backpressure::refusal(&ctx.engine) {
        return answer(refused).await;
    }
    let resp = events::post_events(
        State(ctx.engine.clone()),
        Extension(ctx.auth.clone()),
        Bytes::from(serde_json::to_vec(&events).expect("JSON")),
    )
    .await;
    let mut stored = answer(resp).await;
    if stored["isError"] == true {
        return stored;
    }
    let report = stored["structuredContent"].take();
    let log_end = report["log_end"].as_u64().unwrap_or(0);
    let searchable = wait_searchable(&ctx.engine, log_end).await;
    success(json!({
        "event_ids": event_ids,
        "stored": report["accepted"],
        "duplicates": report["duplicates"],
        "searchable": searchable,
        "note": if searchable { "stored and searchable" }
                else { "stored; still being indexed, recall may miss it for a few seconds" },
    }))
}

/// What every remembered event shares.
struct EventHeader<'a> {
    tenant: &'a str,
    user: &'a str,
    session: &'a str,
    now: chrono::DateTime<chrono::Utc>,
}

/// The events of `remember`'s lists (messages, then facts, then corrections), each checked
/// against the event contract; an `isError` result naming the first bad item.
fn remembered_events(args: &Map<String, Value>, header: &EventHeader) -> Result<Vec<Value>, Value> {
    let mut events = Vec::new();
    for (list, kind) in [
        ("messages", "interaction"),
        ("facts", "fact"),
        ("corrections", "correction"),
    ] {
        let items = match args.get(list) {
            None | Some(Value::Null) => continue,
            Some(Value::Array(items)) => items,
            Some(_) => return Err(failure(format!("`{list}` must be an array"))),
        };
        for (i, item) in items.iter().enumerate() {
            let Some(item) = item.as_object() else {
                return Err(failure(format!("`{list}[{i}]` must be an object")));
            };
            let event = event_of(item, kind, header, events.len());
            if let Err(e) = engram_schemas::parse_event_value(&event, None) {
                let at = match e.field.as_str() {
                    "$" | "" => format!("{list}[{i}]"),
                    field => format!("{list}[{i}].{field}"),
                };
                return Err(failure(format!(
                    "`{at}`: {} (nothing was stored)",
                    e.reason
                )));
            }
            events.push(event);
        }
    }
    if events.is_empty() {
        return Err(failure(
            "nothing to remember: give at least one of `messages`, `facts`, `corrections`",
        ));
    }
    if events.len() > engram_schemas::MAX_EVENTS_PER_BODY {
        return Err(failure(format!(
            "at most {} items a call; send the rest in another call",
            engram_schemas::MAX_EVENTS_PER_BODY
        )));
    }
    Ok(events)
}

/// One item as an event of `kind`: its own fields, with the header filled in; the `position`-th
/// of the call, a millisecond after the one before so the conversation keeps its order.
fn event_of(item: &Map<String, Value>, kind: &str, header: &EventHeader, position: usize) -> Value {
    let mut event = Value::Object(item.clone());
    if kind == "correction" {
        // the contract spells the types in capitals; a model may not
        if let Some(Value::String(t)) = event.get("correction_type") {
            event["correction_type"] = Value::String(t.to_uppercase());
        }
    }
    if !event["event_id"].is_string() {
        event["event_id"] = json!(format!("mcp-{}", uuid::Uuid::new_v4().simple()));
    }
    event["kind"] = json!(kind);
    event["tenant"] = json!(header.tenant);
    event["user"] = json!(header.user);
    event["session"] = json!(header.session);
    let ts = header.now + chrono::Duration::milliseconds(position as i64);
    event["ts"] = json!(ts.to_rfc3339_opts(chrono::SecondsFormat::Millis, true));
    event
}

/// Waits (at most [`SEARCHABLE_WAIT`]) until the views have read the log up to `log_end` and
/// every episode is in Lance; whether they got there.
async fn wait_searchable(engine: &Engine, log_end: u64) -> bool {
    let deadline = Instant::now() + SEARCHABLE_WAIT;
    loop {
        let progress = engine.progress();
        if progress.views_as_of >= log_end && progress.pending_episodes == 0 {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `forget`: one memory (the `DELETE /v1/memories/{id}` handler) or the whole user (the
/// `POST /v1/erase` handler).
async fn forget(ctx: &ToolContext, args: &Map<String, Value>) -> Value {
    let user = match user_arg(args) {
        Ok(user) => user,
        Err(failed) => return failed,
    };
    let (engine, auth) = (ctx.engine.clone(), ctx.auth.clone());
    match (args.get("memory_id"), args.get("all_memories")) {
        (Some(Value::String(id)), None | Some(Value::Bool(false))) => {
            let query = Query(UserQuery {
                user: Some(user.clone()),
            });
            let resp = memories::delete_memory(State(engine), Extension(auth), Path(id.clone()), query).await;
            ctx.audited(AuditAction::Forget, "forget", Some(&user), resp).await
        }
        (None, Some(Value::Bool(true))) => {
            let body = Bytes::from(json!({ "user": user }).to_string());
            let resp = gdpr::post_erase(State(engine), Extension(auth), body).await;
            ctx.audited(AuditAction::Erase, "forget", Some(&user), resp).await
        }
        (Some(id), _) if !id.is_string() => failure("`memory_id` must be a string"),
        _ => failure(
            "give exactly one of `memory_id` (forget that one memory) or `all_memories: true` (forget everything about the user)",
        ),
    }
}
