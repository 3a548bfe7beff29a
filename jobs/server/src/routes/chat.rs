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
use engram_engine::llm::{strip_thinking, ChatClient, ChatMessage, LlmError, ThinkingFilter};
use engram_engine::prompt::{
    transform_answer, transforms_asked, AssembledPrompt, PromptRequest, StreamedTransform,
};
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
        prompt: req,
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
    let tenant = req.tenant.clone();
    let (llm, exchange, assembled) =
        match prepare_exchange(&engine, req, session, exchange_id).await {
            Ok(prepared) => prepared,
            Err(resp) => return resp,
        };
    let messages: Vec<ChatMessage> = assembled
        .messages
        .iter()
        .map(|m| ChatMessage::new(&m.role, m.content.clone()))
        .collect();
    let max_tokens = engine.config.llm.max_tokens;
    if stream {
        let pieces = match llm.stream(&messages, max_tokens).await {
            Ok(rx) => rx,
            Err(err) => return chat_server_failed(err, &tenant),
        };
        return stream_chat(engine.clone(), exchange, assembled, pieces);
    }
    let answer = match llm.complete(&messages, max_tokens).await {
        Ok(a) => a,
        Err(err) => return chat_server_failed(err, &tenant),
    };
    let mut exchange = exchange;
    let mut assembled = assembled;
    let answer = exchange.transform(&engine, &mut assembled, answer);
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
        "explanation": exchange.explanation,
        "stored": stored_summary(&stored),
    }))
    .into_response()
}

/// The start of an exchange in `session`, shared by `/v1/chat` and the OpenAI-compatible
/// route: the user's processing not restricted, the exchange id valid (default: a new UUID),
/// a chat server configured, and the prompt for `req` assembled (thinking off, as the chat
/// client asks).
pub(super) async fn prepare_exchange<'e>(
    engine: &'e Engine,
    mut req: PromptRequest,
    session: String,
    exchange_id: Option<String>,
) -> Result<(&'e ChatClient, Exchange, AssembledPrompt), Response> {
    check_not_restricted(engine, &req.tenant, &req.user)?;
    let exchange = exchange_id.unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    if let Err(reason) = engram_schemas::validate_name(&exchange) {
        return Err(error(StatusCode::BAD_REQUEST, "exchange_id", reason));
    }
    let Some(llm) = &engine.llm else {
        return Err(error(
            StatusCode::SERVICE_UNAVAILABLE,
            "$",
            "no chat server configured: set llm.url (ENGRAM_LLM_URL) to an OpenAI-compatible endpoint",
        ));
    };
    req.enable_thinking = Some(false);
    let asked_at = chrono::Utc::now();
    let assembled = engine
        .assemble_prompt(&req)
        .await
        .map_err(|e| prompt_error(e, &req.tenant))?;
    // kept in the answer's event: retrievable by its message id for as long as it exists
    let stored = engram_engine::prompt::stored_provenance(&assembled.provenance);
    let exchange = Exchange {
        tenant: req.tenant,
        user: req.user,
        session,
        id: exchange,
        query: req.query,
        asked_at,
        skill_id: assembled
            .provenance
            .skill
            .as_ref()
            .map(|s| s.skill_id.clone())
            .unwrap_or_default(),
        prompt_tokens: assembled.tokens.total,
        provenance: stored.0,
        explanation: stored.1,
        // the user's own memories the answer was built with (episodes, facts, summaries):
        // their recall counts and the feedback on this answer feed the MARK scores, and a
        // use not voted down strengthens their retention
        memories: used_memories(&assembled.provenance),
    };
    Ok((llm, exchange, assembled))
}

/// The ids of the user's own memories a prompt was built with (`meta.memories` of the answer):
/// episodes, then facts, then summaries; the tenant's shared ones are not the user's to judge.
fn used_memories(provenance: &engram_engine::prompt::Provenance) -> Vec<String> {
    let episodes = provenance
        .memories
        .iter()
        .filter(|m| !m.domain)
        .map(|m| &m.id);
    let facts = provenance.facts.iter().filter(|f| !f.domain).map(|f| &f.id);
    let summaries = provenance
        .summaries
        .iter()
        .filter(|s| !s.domain)
        .map(|s| &s.id);
    episodes.chain(facts).chain(summaries).cloned().collect()
}

/// `502`: the chat server refused or failed (logged with the tenant).
pub(super) fn chat_server_failed(err: LlmError, tenant: &str) -> Response {
    tracing::warn!(%err, tenant, "the chat server failed");
    error(StatusCode::BAD_GATEWAY, "$", err)
}

/// Passes the chat server's streamed `pieces` on: each piece that can be shown (a leading
/// `<think>` block left out) to `show`, in order. The whole answer, thinking removed, once the
/// server is done; its error when it failed part-way.
///
/// With `transform`, what is shown goes through it (a paragraph at a time), and the answer is
/// what was shown, trimmed: the user sees and engram stores the same text.
pub(super) async fn relay_answer<F, Fut>(
    pieces: &mut tokio::sync::mpsc::Receiver<Result<String, LlmError>>,
    mut transform: Option<&mut StreamedTransform>,
    mut show: F,
) -> Result<String, LlmError>
where
    F: FnMut(String) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let mut raw = String::new();
    let mut shown_all = String::new();
    let mut filter = ThinkingFilter::default();
    let mut finished = false;
    while !finished {
        let shown = match pieces.recv().await {
            Some(piece) => {
                let piece = piece?;
                raw.push_str(&piece);
                filter.push(&piece)
            }
            None => {
                finished = true;
                std::mem::take(&mut filter).finish()
            }
        };
        let mut shown = match transform.as_deref_mut() {
            Some(t) => t.push(&shown),
            None => shown,
        };
        if finished {
            if let Some(t) = transform.as_deref_mut() {
                shown.push_str(&t.finish());
            }
        }
        if !shown.is_empty() {
            shown_all.push_str(&shown);
            show(shown).await;
        }
    }
    Ok(match transform {
        Some(_) => shown_all.trim().to_string(),
        None => strip_thinking(&raw).to_string(),
    })
}

/// What storing an exchange did: `{accepted, duplicates, log_end}`.
pub(super) fn stored_summary(stored: &engram_engine::ingest::IngestReport) -> Value {
    json!({"accepted": stored.accepted, "duplicates": stored.duplicates, "log_end": stored.log_end})
}

/// One chat exchange, to be stored as two interaction events of its session once answered.
pub(super) struct Exchange {
    pub(super) tenant: String,
    pub(super) user: String,
    pub(super) session: String,
    pub(super) id: String,
    query: String,
    asked_at: chrono::DateTime<chrono::Utc>,
    pub(super) skill_id: String,
    prompt_tokens: usize,
    /// The prompt's provenance as the answer's event stores it, and its one-sentence
    /// explanation ([`engram_engine::prompt::stored_provenance`]).
    provenance: Value,
    pub(super) explanation: String,
    memories: Vec<String>,
}

impl Exchange {
    /// The answer after the transforms the active preferences ask for (when
    /// `prompt.answer_transforms` is on), which are then listed in the response's and the
    /// stored provenance.
    pub(super) fn transform(
        &mut self,
        engine: &Engine,
        assembled: &mut AssembledPrompt,
        answer: String,
    ) -> String {
        if !engine.config.prompt.answer_transforms {
            return answer;
        }
        let (answer, applied) = transform_answer(&answer, &assembled.provenance.preferences);
        if !applied.is_empty() {
            self.provenance["transforms"] = json!(applied);
            assembled.provenance.transforms = applied;
        }
        answer
    }

    /// The transform an answer streamed to the user goes through, when
    /// `prompt.answer_transforms` is on and an active preference asks for one.
    pub(super) fn streamed_transform(
        engine: &Engine,
        assembled: &AssembledPrompt,
    ) -> Option<StreamedTransform> {
        let preferences = &assembled.provenance.preferences;
        (engine.config.prompt.answer_transforms && transforms_asked(preferences))
            .then(|| StreamedTransform::new(preferences.clone()))
    }

    /// Lists what a streamed transform did in the provenance the answer's event stores.
    pub(super) fn record_transforms(&mut self, transform: Option<&StreamedTransform>) {
        if let Some(applied) = transform.map(StreamedTransform::applied) {
            if !applied.is_empty() {
                self.provenance["transforms"] = json!(applied);
            }
        }
    }

    pub(super) fn query_id(&self) -> String {
        format!("{}.q", self.id)
    }

    pub(super) fn answer_id(&self) -> String {
        format!("{}.a", self.id)
    }

    /// Stores the query and `answer` (after it, with the skill and the memories used).
    pub(super) async fn store(
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
             "meta": {"prompt_tokens": self.prompt_tokens, "memories": self.memories,
                      "provenance": self.provenance, "explanation": self.explanation}},
        ]);
        store_events(engine, "chat", &self.tenant, &events).await
    }
}

/// The streamed chat answer: `prompt` (ids, tokens, provenance), a `delta` per piece of the
/// answer shown (thinking left out; a paragraph at a time when the preferences ask for
/// transforms), then `done` (the whole answer and its transforms, once stored) or `error`
/// (nothing stored). The exchange is stored even if the client has gone.
fn stream_chat(
    engine: Arc<Engine>,
    mut exchange: Exchange,
    assembled: AssembledPrompt,
    mut pieces: tokio::sync::mpsc::Receiver<Result<String, LlmError>>,
) -> Response {
    use axum::response::sse::Event;
    let (tx, rx) = tokio::sync::mpsc::channel::<Event>(64);
    let event = |name: &str, data: Value| Event::default().event(name).data(data.to_string());
    tokio::spawn(async move {
        let _ = tx
            .send(event(
                "prompt",
                json!({"message_id": exchange.answer_id(), "query_event_id": exchange.query_id(),
                       "skill_id": exchange.skill_id, "tokens": assembled.tokens,
                       "provenance": assembled.provenance,
                       "explanation": exchange.explanation}),
            ))
            .await;
        let delta = |content: String| {
            let tx = tx.clone();
            async move {
                let _ = tx.send(event("delta", json!({ "content": content }))).await;
            }
        };
        let mut transform = Exchange::streamed_transform(&engine, &assembled);
        let answer = match relay_answer(&mut pieces, transform.as_mut(), delta).await {
            Ok(answer) => answer,
            Err(err) => {
                tracing::warn!(%err, tenant = %exchange.tenant, "the chat server failed mid-answer");
                let body = json!({"error": {"field": "$", "reason": err.to_string()}});
                let _ = tx.send(event("error", body)).await;
                return;
            }
        };
        exchange.record_transforms(transform.as_ref());
        let done = match exchange.store(&engine, &answer).await {
            Ok(stored) => event(
                "done",
                json!({"answer": answer, "message_id": exchange.answer_id(),
                       "transforms": transform.as_ref().map_or(&[][..], |t| t.applied()),
                       "stored": stored_summary(&stored)}),
            ),
            Err(_) => event(
                "error",
                json!({"error": {"field": "$", "reason": "the exchange could not be stored"}}),
            ),
        };
        let _ = tx.send(done).await;
    });
    sse_response(rx)
}

/// A server-sent events response of what arrives on `rx`, until its sender is dropped.
pub(super) fn sse_response(
    rx: tokio::sync::mpsc::Receiver<axum::response::sse::Event>,
) -> Response {
    use axum::response::sse::{KeepAlive, Sse};
    let events = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|e| (Ok::<_, std::convert::Infallible>(e), rx))
    });
    Sse::new(events)
        .keep_alive(KeepAlive::default())
        .into_response()
}
