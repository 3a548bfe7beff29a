//! `POST /v1/chat`: a prompt answered by the configured chat server, the exchange stored in
//! its session.

use super::events::store_events;
use crate::auth::{check_not_restricted, AuthTenant};
use crate::error::{error, prompt_error};
use crate::request::parse_for_tenant;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use engram_engine::prompt::PromptRequest;
use engram_engine::Engine;
use serde_json::{json, Value};
use std::sync::Arc;

#[derive(serde::Deserialize)]
struct ChatRequest {
    #[serde(flatten)]
    prompt: PromptRequest,
    /// Id of this exchange: the query is stored as event `{id}.q`, the answer as `{id}.a` (the
    /// `message_id` to give feedback on). Default: a new UUID.
    #[serde(default)]
    exchange_id: Option<String>,
    /// Stream the answer as server-sent events (`prompt`, `delta`…, then `done` or `error`).
    #[serde(default)]
    stream: bool,
}

/// Assembles the prompt, asks the configured chat server, stores the query and the answer as
/// interaction events of the session, and returns the answer with the prompt's provenance.
pub(crate) async fn post_chat(
    State(engine): State<Arc<Engine>>,
    Extension(auth): Extension<AuthTenant>,
    body: Bytes,
) -> Response {
    let ChatRequest {
        prompt: mut req,
        exchange_id,
        stream,
    } = match parse_for_tenant(&body, "chat", &auth, |r: &mut ChatRequest| {
        &mut r.prompt.tenant
    }) {
        Ok(r) => r,
        Err(resp) => return resp,
    };
    let Some(session) = req.session.clone() else {
        return error(
            StatusCode::BAD_REQUEST,
            "session",
            "a chat needs a session: the exchange is stored in it",
        );
    };
    if let Err(resp) = check_not_restricted(&engine, &req.tenant, &req.user) {
        return resp;
    }
    let exchange = exchange_id.unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    if let Err(reason) = engram_schemas::validate_name(&exchange) {
        return error(StatusCode::BAD_REQUEST, "exchange_id", reason);
    }
    let Some(llm) = &engine.llm else {
        return error(
            StatusCode::SERVICE_UNAVAILABLE,
            "$",
            "no chat server configured: set llm.url (ENGRAM_LLM_URL) to an OpenAI-compatible endpoint",
        );
    };
    // The chat client asks with thinking off; count the prompt the same way.
    req.enable_thinking = Some(false);
    let asked_at = chrono::Utc::now();
    let assembled = match engine.assemble_prompt(&req).await {
        Ok(p) => p,
        Err(e) => return prompt_error(e, &req.tenant),
    };
    let messages: Vec<engram_engine::llm::ChatMessage> = assembled
        .messages
        .iter()
        .map(|m| engram_engine::llm::ChatMessage::new(&m.role, m.content.clone()))
        .collect();
    let skill_id = assembled
        .provenance
        .skill
        .as_ref()
        .map(|s| s.skill_id.clone())
        .unwrap_or_default();
    let exchange = Exchange {
        tenant: req.tenant.clone(),
        user: req.user.clone(),
        session,
        id: exchange,
        query: req.query.clone(),
        asked_at,
        skill_id,
        prompt_tokens: assembled.tokens.total,
        // the user's own memories the answer was built with: their recall counts and the
        // feedback on this answer feed the MARK scores
        memories: assembled
            .provenance
            .memories
            .iter()
            .filter(|m| !m.domain)
            .map(|m| m.id.clone())
            .collect(),
    };
    let max_tokens = engine.config.llm.max_tokens;
    if stream {
        let pieces = match llm.stream(&messages, max_tokens).await {
            Ok(rx) => rx,
            Err(err) => {
                tracing::warn!(%err, tenant = %req.tenant, "the chat server failed");
                return error(StatusCode::BAD_GATEWAY, "$", err);
            }
        };
        return stream_chat(engine.clone(), exchange, assembled, pieces);
    }
    let answer = match llm.complete(&messages, max_tokens).await {
        Ok(a) => a,
        Err(err) => {
            tracing::warn!(%err, tenant = %req.tenant, "the chat server failed");
            return error(StatusCode::BAD_GATEWAY, "$", err);
        }
    };
    let stored = match exchange.store(&engine, &answer).await {
        Ok(r) => r,
        Err(resp) => return resp,
    };
    Json(json!({
        "answer": answer,
        "message_id": exchange.answer_id(),
        "query_event_id": exchange.query_id(),
        "skill_id": exchange.skill_id,
        "tokens": assembled.tokens,
        "provenance": assembled.provenance,
        "stored": {"accepted": stored.accepted, "duplicates": stored.duplicates, "log_end": stored.log_end},
    }))
    .into_response()
}

/// One chat exchange, to be stored as two interaction events of its session once answered.
struct Exchange {
    tenant: String,
    user: String,
    session: String,
    id: String,
    query: String,
    asked_at: chrono::DateTime<chrono::Utc>,
    skill_id: String,
    prompt_tokens: usize,
    memories: Vec<String>,
}

impl Exchange {
    fn query_id(&self) -> String {
        format!("{}.q", self.id)
    }

    fn answer_id(&self) -> String {
        format!("{}.a", self.id)
    }

    /// Stores the query and `answer` (after it, with the skill and the memories used).
    async fn store(
        &self,
        engine: &Engine,
        answer: &str,
    ) -> Result<engram_engine::ingest::IngestReport, Response> {
        let answered_at = chrono::Utc::now().max(self.asked_at + chrono::Duration::microseconds(1));
        let events = json!([
            {"kind": "interaction", "event_id": self.query_id(), "tenant": self.tenant,
             "user": self.user, "session": self.session, "ts": self.asked_at, "role": "user",
             "content": self.query},
            {"kind": "interaction", "event_id": self.answer_id(), "tenant": self.tenant,
             "user": self.user, "session": self.session, "ts": answered_at, "role": "assistant",
             "content": answer, "skill_id": self.skill_id,
             "meta": {"prompt_tokens": self.prompt_tokens, "memories": self.memories}},
        ]);
        store_events(engine, "chat", &self.tenant, &events).await
    }
}

/// The streamed chat answer: `prompt` (ids, tokens, provenance), a `delta` per piece of the
/// answer shown (thinking left out), then `done` (the whole answer, once stored) or `error`
/// (nothing stored). The exchange is stored even if the client has gone.
fn stream_chat(
    engine: Arc<Engine>,
    exchange: Exchange,
    assembled: engram_engine::prompt::AssembledPrompt,
    mut pieces: tokio::sync::mpsc::Receiver<Result<String, engram_engine::llm::LlmError>>,
) -> Response {
    use axum::response::sse::{Event, KeepAlive, Sse};
    let (tx, rx) = tokio::sync::mpsc::channel::<Event>(64);
    let event = |name: &str, data: Value| Event::default().event(name).data(data.to_string());
    tokio::spawn(async move {
        let _ = tx
            .send(event(
                "prompt",
                json!({"message_id": exchange.answer_id(), "query_event_id": exchange.query_id(),
                       "skill_id": exchange.skill_id, "tokens": assembled.tokens,
                       "provenance": assembled.provenance}),
            ))
            .await;
        let mut raw = String::new();
        let mut filter = engram_engine::llm::ThinkingFilter::default();
        while let Some(piece) = pieces.recv().await {
            let piece = match piece {
                Ok(p) => p,
                Err(err) => {
                    tracing::warn!(%err, tenant = %exchange.tenant, "the chat server failed mid-answer");
                    let body = json!({"error": {"field": "$", "reason": err.to_string()}});
                    let _ = tx.send(event("error", body)).await;
                    return;
                }
            };
            raw.push_str(&piece);
            let shown = filter.push(&piece);
            if !shown.is_empty() {
                let _ = tx.send(event("delta", json!({"content": shown}))).await;
            }
        }
        let rest = filter.finish();
        if !rest.is_empty() {
            let _ = tx.send(event("delta", json!({"content": rest}))).await;
        }
        let answer = engram_engine::llm::strip_thinking(&raw).to_string();
        let done = match exchange.store(&engine, &answer).await {
            Ok(stored) => event(
                "done",
                json!({"answer": answer, "message_id": exchange.answer_id(),
                       "stored": {"accepted": stored.accepted, "duplicates": stored.duplicates,
                                  "log_end": stored.log_end}}),
            ),
            Err(_) => event(
                "error",
                json!({"error": {"field": "$", "reason": "the exchange could not be stored"}}),
            ),
        };
        let _ = tx.send(done).await;
    });
    let events = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|e| (Ok::<_, std::convert::Infallible>(e), rx))
    });
    Sse::new(events)
        .keep_alive(KeepAlive::default())
        .into_response()
}
