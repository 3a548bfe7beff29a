//! The OpenAI-compatible chat endpoint (`POST /v1/chat/completions`, `GET /v1/models`): any
//! OpenAI client, pointed at engram with a tenant API key, chats with memory. See
//! docs/openai.md.
//!
//! - **Who.** The tenant is the API key's. The user is the request's `user` field or the
//!   `X-Engram-User` header (required: `400`, code `missing_user`, without one; both must agree
//!   when both are given). The session the exchange is stored in is the `X-Engram-Session`
//!   header or `metadata.session`, by default `openai-<UTC date>` (one session a day).
//!   `metadata.exchange_id` names the exchange (a retry with the same id stores nothing twice).
//! - **Messages.** The last message must be the user's: it is the query engram recalls memory
//!   for and stores. The model gets engram's prompt for it (system part, memory, the session's
//!   last turns, the query), the client's system and developer messages appended to engram's
//!   system part, and the client's earlier user / assistant turns just before the query —
//!   in place of the session's last turns, which they would repeat. Only text content; no
//!   tools, `n` = 1.
//! - **Sampling.** `temperature`, `top_p`, `stop`, `seed` and the penalties are passed on;
//!   `max_tokens` / `max_completion_tokens` is capped at `llm.max_tokens`; temperature is 0
//!   unless asked. `model` must be the configured `llm.model` (`GET /v1/models` lists it).
//! - **Answer.** A `chat.completion` (or, with `stream`, `chat.completion.chunk` server-sent
//!   events ending `data: [DONE]`), with engram's provenance in the extra field `engram`
//!   (`message_id` to give feedback on, `exchange_id`, `user`, `session`, `skill_id`,
//!   `tokens`, `provenance`, and once stored, `stored`). Usage is counted with the Qwen3
//!   tokenizer. The query and the answer are stored as for `POST /v1/chat`.
//! - **Errors** are in OpenAI's shape ([`errors`]).

mod errors;
mod request;

pub use errors::openai_error_shape;

use super::chat::{chat_server_failed, prepare_exchange, relay_answer, sse_response};
use super::chat::{stored_summary, Exchange};
use crate::auth::AuthTenant;
use crate::request::parse_body;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::Event;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use engram_connectors::chat_template::TemplateMessage;
use engram_engine::llm::{ChatMessage, LlmError};
use engram_engine::prompt::{AssembledPrompt, PromptRequest};
use engram_engine::Engine;
use errors::openai_error;
use request::{CompletionRequest, Conversation, Identity};
use serde_json::{json, Value};
use std::sync::Arc;

/// `GET /v1/models`: the one model engram answers with, the configured `llm.model`.
pub(crate) async fn get_models(State(engine): State<Arc<Engine>>) -> Response {
    Json(json!({"object": "list", "data": [
        {"id": engine.config.llm.model, "object": "model", "created": 0, "owned_by": "engram"}
    ]}))
    .into_response()
}

/// `POST /v1/chat/completions`: an OpenAI chat request answered with the user's memory (see
/// the module's documentation for who, which messages and what is stored).
pub(crate) async fn post_chat_completions(
    State(engine): State<Arc<Engine>>,
    Extension(auth): Extension<AuthTenant>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let (req, who, conversation, sampling) = match read_request(&engine, &headers, &body) {
        Ok(read) => read,
        Err(resp) => return resp,
    };
    let prompt_req: PromptRequest = match serde_json::from_value(json!({
        "tenant": auth.0, "user": who.user, "session": who.session, "query": conversation.query,
    })) {
        Ok(r) => r,
        Err(e) => {
            return openai_error(StatusCode::INTERNAL_SERVER_ERROR, None, None, e.to_string())
        }
    };
    let prepared = prepare_exchange(&engine, prompt_req, who.session, who.exchange_id).await;
    let (llm, exchange, assembled) = match prepared {
        Ok(p) => p,
        Err(resp) => return resp,
    };
    let forwarded = request::forwarded_messages(
        &assembled.messages,
        assembled.provenance.recent_turns.len(),
        &conversation,
        |text| defused(&engine, text),
    );
    let messages: Vec<ChatMessage> = forwarded
        .iter()
        .map(|m| ChatMessage::new(&m.role, m.content.clone()))
        .collect();
    let head = Head {
        id: format!("chatcmpl-{}", exchange.id),
        created: chrono::Utc::now().timestamp(),
        model: engine.config.llm.model.clone(),
    };
    if req.stream {
        let include_usage = req.stream_options.is_some_and(|o| o.include_usage);
        let pieces = match llm.stream_with(&messages, &sampling).await {
            Ok(rx) => rx,
            Err(err) => return chat_server_failed(err, &exchange.tenant),
        };
        let answer = Answer {
            exchange,
            assembled,
            forwarded,
            head,
        };
        return stream_completion(engine.clone(), answer, pieces, include_usage);
    }
    let mut completion = match llm.complete_with(&messages, &sampling).await {
        Ok(c) => c,
        Err(err) => return chat_server_failed(err, &exchange.tenant),
    };
    let (mut exchange, mut assembled) = (exchange, assembled);
    completion.content = exchange.transform(&engine, &mut assembled, completion.content);
    let stored = match exchange.store(&engine, &completion.content).await {
        Ok(r) => r,
        Err(resp) => return resp,
    };
    let answer = Answer {
        exchange,
        assembled,
        forwarded,
        head,
    };
    let mut engram = answer.engram();
    engram["stored"] = stored_summary(&stored);
    Json(json!({
        "id": answer.head.id, "object": "chat.completion", "created": answer.head.created,
        "model": answer.head.model, "system_fingerprint": null,
        "choices": [{"index": 0, "logprobs": null,
                     "finish_reason": completion.finish_reason.as_deref().unwrap_or("stop"),
                     "message": {"role": "assistant", "content": completion.content,
                                 "refusal": null}}],
        "usage": usage(&engine, &answer.forwarded, &completion.content),
        "engram": engram,
    }))
    .into_response()
}

/// The request parsed and checked: the model, the messages, the sampling options, then who
/// asks (every error a `400`, but a wrong model's `404`).
fn read_request(
    engine: &Engine,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<
    (
        CompletionRequest,
        Identity,
        Conversation,
        engram_engine::llm::Sampling,
    ),
    Response,
> {
    let req: CompletionRequest = parse_body(body, "chat completions")?;
    let model = &engine.config.llm.model;
    if &req.model != model {
        return Err(openai_error(
            StatusCode::NOT_FOUND,
            Some("model"),
            Some("model_not_found"),
            format!("the model {:?} does not exist here: engram answers with {model:?} (GET /v1/models)", req.model),
        ));
    }
    let conversation = request::conversation(&req.messages)?;
    let sampling = request::sampling(&req, engine.config.llm.max_tokens)?;
    let who = request::identity(headers, &req, chrono::Utc::now().date_naive())?;
    Ok((req, who, conversation, sampling))
}

/// `text` with the tokenizer's control tokens made plain, as engram's own prompt parts are.
fn defused(engine: &Engine, text: &str) -> String {
    match &engine.chat_template {
        Ok(chat) => chat.defuse(text).into_owned(),
        Err(_) => text.to_string(),
    }
}

/// Tokens of the messages sent (as the Qwen3 template renders them) and of the answer.
fn usage(engine: &Engine, sent: &[TemplateMessage], answer: &str) -> Value {
    let Ok(chat) = &engine.chat_template else {
        return Value::Null;
    };
    let prompt = chat
        .render(sent, true, Some(false))
        .and_then(|p| chat.count_tokens(&p));
    match (prompt, chat.count_tokens(answer)) {
        (Ok(prompt), Ok(completion)) => json!({"prompt_tokens": prompt,
            "completion_tokens": completion, "total_tokens": prompt + completion}),
        _ => Value::Null,
    }
}

/// What every response object of one completion starts with.
struct Head {
    id: String,
    created: i64,
    model: String,
}

/// One completion under way: the exchange to store, engram's prompt and what was sent.
struct Answer {
    exchange: Exchange,
    assembled: AssembledPrompt,
    forwarded: Vec<TemplateMessage>,
    head: Head,
}

impl Answer {
    /// engram's extra field: the ids to give feedback with, and the prompt's provenance.
    fn engram(&self) -> Value {
        let x = &self.exchange;
        json!({"message_id": x.answer_id(), "query_event_id": x.query_id(), "exchange_id": x.id,
               "user": x.user, "session": x.session, "skill_id": x.skill_id,
               "tokens": self.assembled.tokens, "provenance": self.assembled.provenance})
    }

    /// A `chat.completion.chunk` with `choices` (and `extra` fields beside them).
    fn chunk(&self, choices: Value, extra: Value) -> Event {
        let mut chunk = json!({"id": self.head.id, "object": "chat.completion.chunk",
                               "created": self.head.created, "model": self.head.model,
                               "system_fingerprint": null, "choices": choices});
        if let (Some(chunk), Value::Object(extra)) = (chunk.as_object_mut(), extra) {
            chunk.extend(extra);
        }
        Event::default().data(chunk.to_string())
    }
}

/// A chunk's one choice: `delta`, and why the answer ended (on the last chunk).
fn choice(delta: Value, finish_reason: Option<&str>) -> Value {
    json!([{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish_reason}])
}

/// The streamed completion: a first chunk (the assistant's role and `engram`'s provenance), a
/// chunk per piece of the answer (thinking left out; a paragraph at a time when the preferences
/// ask for transforms), the last chunk (`finish_reason`, and
/// `engram.stored` once the exchange is stored), the usage chunk when asked, `[DONE]`. A
/// failure of the chat server or of the store ends the stream with an OpenAI error object and
/// no `[DONE]`. The exchange is stored even if the client has gone.
fn stream_completion(
    engine: Arc<Engine>,
    mut answer: Answer,
    mut pieces: tokio::sync::mpsc::Receiver<Result<String, LlmError>>,
    include_usage: bool,
) -> Response {
    let (tx, rx) = tokio::sync::mpsc::channel::<Event>(64);
    let failure = |message: String| {
        let error = json!({"error": {"message": message, "type": "server_error", "param": null,
                                     "code": null}});
        Event::default().data(error.to_string())
    };
    tokio::spawn(async move {
        let first = choice(json!({"role": "assistant", "content": ""}), None);
        let engram = json!({ "engram": answer.engram() });
        let _ = tx.send(answer.chunk(first, engram)).await;
        let piece = |content: String| {
            let event = answer.chunk(choice(json!({ "content": content }), None), Value::Null);
            let tx = tx.clone();
            async move {
                let _ = tx.send(event).await;
            }
        };
        let mut transform = Exchange::streamed_transform(&engine, &answer.assembled);
        let text = match relay_answer(&mut pieces, transform.as_mut(), piece).await {
            Ok(text) => text,
            Err(err) => {
                tracing::warn!(%err, tenant = %answer.exchange.tenant, "the chat server failed mid-answer");
                let _ = tx.send(failure(err.to_string())).await;
                return;
            }
        };
        answer.exchange.record_transforms(transform.as_ref());
        let stored = match answer.exchange.store(&engine, &text).await {
            Ok(stored) => stored,
            Err(_) => {
                let _ = tx
                    .send(failure("the exchange could not be stored".into()))
                    .await;
                return;
            }
        };
        let last = choice(json!({}), Some("stop"));
        let applied = transform.as_ref().map_or(&[][..], |t| t.applied());
        let engram = json!({"engram": {"message_id": answer.exchange.answer_id(),
                                       "transforms": applied,
                                       "stored": stored_summary(&stored)}});
        let _ = tx.send(answer.chunk(last, engram)).await;
        if include_usage {
            let usage = json!({ "usage": usage(&engine, &answer.forwarded, &text) });
            let _ = tx.send(answer.chunk(json!([]), usage)).await;
        }
        let _ = tx.send(Event::default().data("[DONE]")).await;
    });
    sse_response(rx)
}
