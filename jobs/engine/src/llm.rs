//! A client for OpenAI-compatible chat servers (vLLM, llama.cpp's server, Ollama): the LLM runs
//! elsewhere (on a GPU); engram only sends the messages it assembled and reads the answer.

use serde::{Deserialize, Serialize};
use std::time::Duration;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ChatMessage {
    pub role: String,
    pub content: String,
}

impl ChatMessage {
    pub fn new(role: &str, content: impl Into<String>) -> Self {
        ChatMessage {
            role: role.to_string(),
            content: content.into(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    #[error("LLM server {url}: request failed: {source}")]
    Request { url: String, source: reqwest::Error },
    #[error("LLM server {url}: HTTP {status}: {body}")]
    Status {
        url: String,
        status: u16,
        body: String,
    },
    #[error("LLM server {url}: unexpected answer: {reason}")]
    Answer { url: String, reason: String },
}

/// How an answer is sampled: engram's own calls decode greedily ([`Sampling::greedy`]); the
/// OpenAI-compatible route passes on what its client asked for. Unset options are not sent
/// (the server's defaults apply).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Sampling {
    pub max_tokens: u32,
    pub temperature: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stop: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub presence_penalty: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frequency_penalty: Option<f64>,
    /// OpenAI's `response_format` (e.g. `{"type": "json_schema", …}`: servers that support it
    /// constrain the answer to that schema).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_format: Option<serde_json::Value>,
}

impl Sampling {
    /// Temperature 0 and at most `max_tokens`.
    pub fn greedy(max_tokens: u32) -> Self {
        Sampling {
            max_tokens,
            ..Sampling::default()
        }
    }
}

/// A whole answer: its text (thinking removed) and why the server stopped (`stop`, `length`,
/// …; absent when the server did not say).
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    pub content: String,
    pub finish_reason: Option<String>,
    /// Tokens of the prompt and of the answer, as the server's `usage` says (0 when it says
    /// nothing).
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

pub struct ChatClient {
    endpoint: String,
    model: String,
    http: reqwest::Client,
}

impl ChatClient {
    /// `base_url` is the server's root or its `/v1` (both are accepted); `model` the name the
    /// server knows the model by.
    pub fn new(base_url: &str, model: &str, timeout: Duration) -> Result<Self, LlmError> {
        let base = base_url.trim_end_matches('/');
        let base = base.strip_suffix("/v1").unwrap_or(base);
        let endpoint = format!("{base}/v1/chat/completions");
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .build()
            .map_err(|source| LlmError::Request {
                url: endpoint.clone(),
                source,
            })?;
        Ok(ChatClient {
            endpoint,
            model: model.to_string(),
            http,
        })
    }

    /// The answer to `messages` (greedy decoding, Qwen3's thinking turned off; a `<think>` block
    /// that comes back anyway is removed).
    pub async fn complete(
        &self,
        messages: &[ChatMessage],
        max_tokens: u32,
    ) -> Result<String, LlmError> {
        let greedy = Sampling::greedy(max_tokens);
        Ok(self.complete_with(messages, &greedy).await?.content)
    }

    /// The answer to `messages` sampled as `sampling` says (Qwen3's thinking turned off; a
    /// `<think>` block that comes back anyway is removed), with the server's finish reason.
    pub async fn complete_with(
        &self,
        messages: &[ChatMessage],
        sampling: &Sampling,
    ) -> Result<Completion, LlmError> {
        let body = self.request_body(messages, sampling, false);
        let url = self.endpoint.clone();
        let resp = self
            .http
            .post(&url)
            .json(&body)
            .send()
            .await
            .map_err(|source| LlmError::Request {
                url: url.clone(),
                source,
            })?;
        let status = resp.status().as_u16();
        let text = resp.text().await.map_err(|source| LlmError::Request {
            url: url.clone(),
            source,
        })?;
        if !(200..300).contains(&status) {
            return Err(LlmError::Status {
                url,
                status,
                body: text.chars().take(500).collect(),
            });
        }
        let value: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| LlmError::Answer {
                url: url.clone(),
                reason: format!("not JSON: {e}"),
            })?;
        let choice = &value["choices"][0];
        let content = choice["message"]["content"]
            .as_str()
            .ok_or_else(|| LlmError::Answer {
                url: url.clone(),
                reason: "no choices[0].message.content".into(),
            })?;
        Ok(Completion {
            content: strip_thinking(content).to_string(),
            finish_reason: choice["finish_reason"].as_str().map(str::to_string),
            prompt_tokens: value["usage"]["prompt_tokens"].as_u64().unwrap_or(0),
            completion_tokens: value["usage"]["completion_tokens"].as_u64().unwrap_or(0),
        })
    }

    /// The answer to `messages` as the server streams it, decoded greedily: see
    /// [`ChatClient::stream_with`].
    pub async fn stream(
        &self,
        messages: &[ChatMessage],
        max_tokens: u32,
    ) -> Result<tokio::sync::mpsc::Receiver<Result<String, LlmError>>, LlmError> {
        self.stream_with(messages, &Sampling::greedy(max_tokens))
            .await
    }

    /// The answer to `messages` as the server streams it (`stream: true`, server-sent events of
    /// `choices[0].delta.content`): the raw pieces, in order, thinking included (see
    /// [`ThinkingFilter`]). A refused request is an error here; a failure part-way is the
    /// stream's last item.
    pub async fn stream_with(
        &self,
        messages: &[ChatMessage],
        sampling: &Sampling,
    ) -> Result<tokio::sync::mpsc::Receiver<Result<String, LlmError>>, LlmError> {
        let body = self.request_body(messages, sampling, true);
        let url = self.endpoint.clone();
        let request_failed = |source| LlmError::Request {
            url: url.clone(),
            source,
        };
        let mut resp = self
            .http
            .post(&url)
            .json(&body)
            .send()
            .await
            .map_err(request_failed)?;
        let status = resp.status().as_u16();
        if !(200..300).contains(&status) {
            let text = resp.text().await.unwrap_or_default();
            return Err(LlmError::Status {
                url,
                status,
                body: text.chars().take(500).collect(),
            });
        }
        let (tx, rx) = tokio::sync::mpsc::channel(64);
        tokio::spawn(async move {
            let mut pending = Vec::<u8>::new();
            loop {
                let chunk = match resp.chunk().await {
                    Ok(Some(chunk)) => chunk,
                    Ok(None) => return,
                    Err(source) => {
                        let _ = tx.send(Err(LlmError::Request { url, source })).await;
                        return;
                    }
                };
                pending.extend_from_slice(&chunk);
                // whole lines only: a piece of UTF-8 or JSON may be cut between chunks
                while let Some(end) = pending.iter().position(|b| *b == b'\n') {
                    let line: Vec<u8> = pending.drain(..=end).collect();
                    let line = String::from_utf8_lossy(&line);
                    let Some(data) = line.trim().strip_prefix("data:") else {
                        continue;
                    };
                    let data = data.trim();
                    if data == "[DONE]" {
                        return;
                    }
                    let piece = match serde_json::from_str::<serde_json::Value>(data) {
                        Ok(v) => v["choices"][0]["delta"]["content"]
                            .as_str()
                            .unwrap_or_default()
                            .to_string(),
                        Err(e) => {
                            let reason = format!("a streamed event is not JSON: {e}");
                            let _ = tx.send(Err(LlmError::Answer { url, reason })).await;
                            return;
                        }
                    };
                    if !piece.is_empty() && tx.send(Ok(piece)).await.is_err() {
                        return; // nobody listens any more
                    }
                }
            }
        });
        Ok(rx)
    }

    /// The chat completions request: `sampling`'s fields beside the model, the messages and
    /// Qwen3's thinking turned off.
    fn request_body(
        &self,
        messages: &[ChatMessage],
        sampling: &Sampling,
        stream: bool,
    ) -> serde_json::Value {
        let mut body = serde_json::json!({
            "model": self.model,
            "messages": messages,
            "stream": stream,
            "chat_template_kwargs": {"enable_thinking": false},
        });
        if let (Some(body), Ok(serde_json::Value::Object(fields))) =
            (body.as_object_mut(), serde_json::to_value(sampling))
        {
            body.extend(fields);
        }
        body
    }
}

/// [`strip_thinking`] for an answer that arrives in pieces: each piece in, what can be shown of
/// it out. The pieces shown, joined and trimmed, equal `strip_thinking` of the whole answer.
#[derive(Debug, Default)]
pub struct ThinkingFilter {
    /// Text held back: a possible `<think>` opening, or the thinking itself.
    held: String,
    state: FilterState,
}

#[derive(Debug, Default, Clone, Copy, PartialEq)]
enum FilterState {
    /// Nothing shown yet: the answer may still open with `<think>`.
    #[default]
    Start,
    /// Inside a leading `<think>` block.
    Thinking,
    /// After the block: whitespace before the answer is dropped.
    AfterThinking,
    /// Showing everything.
    Answer,
}

impl ThinkingFilter {
    /// What to show of `piece`.
    pub fn push(&mut self, piece: &str) -> String {
        match self.state {
            FilterState::Answer => piece.to_string(),
            FilterState::AfterThinking => {
                let rest = piece.trim_start();
                if !rest.is_empty() {
                    self.state = FilterState::Answer;
                }
                rest.to_string()
            }
            FilterState::Start | FilterState::Thinking => {
                self.held.push_str(piece);
                self.advance()
            }
        }
    }

    fn advance(&mut self) -> String {
        const OPEN: &str = "<think>";
        const CLOSE: &str = "</think>";
        if self.state == FilterState::Start {
            let text = self.held.trim_start();
            if text.is_empty() || (OPEN.starts_with(text) && text.len() < OPEN.len()) {
                return String::new(); // not yet known
            }
            if !text.starts_with(OPEN) {
                self.state = FilterState::Answer;
                let shown = text.to_string();
                self.held.clear();
                return shown;
            }
            self.state = FilterState::Thinking;
        }
        match self.held.find(CLOSE) {
            Some(end) => {
                let rest = self.held[end + CLOSE.len()..].to_string();
                self.held.clear();
                self.state = FilterState::AfterThinking;
                self.push(&rest)
            }
            None => String::new(),
        }
    }

    /// What is left to show once the answer is complete: a thinking block that never closed is
    /// part of the answer after all (as [`strip_thinking`] has it).
    pub fn finish(self) -> String {
        match self.state {
            FilterState::Start | FilterState::Thinking => self.held.trim_start().to_string(),
            _ => String::new(),
        }
    }
}

/// The answer without a leading `<think>…</think>` block.
pub fn strip_thinking(answer: &str) -> &str {
    match answer.find("</think>") {
        Some(end) if answer.trim_start().starts_with("<think>") => {
            answer[end + "</think>".len()..].trim()
        }
        _ => answer.trim(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Shows `answer` cut at `cuts` through a filter, joined.
    fn filtered(answer: &str, cuts: &[usize]) -> String {
        let mut filter = ThinkingFilter::default();
        let mut shown = String::new();
        let mut last = 0;
        for &cut in cuts.iter().chain([answer.len()].iter()) {
            if cut >= last && answer.is_char_boundary(cut) {
                shown.push_str(&filter.push(&answer[last..cut]));
                last = cut;
            }
        }
        shown.push_str(&filter.finish());
        shown
    }

    #[test]
    fn streamed_answers_lose_their_thinking_however_they_are_cut() {
        let answers = [
            "<think>\nhmm, the memories say Lisbon\n</think>\n\nShe lives in Lisbon.",
            "  <think></think>Paris",
            "Paris, not <think> Rome",
            "Paris, not </think> Rome",
            "<think> never closed, so it stays",
            "<thin",
            "",
            "   ",
            "<think>x</think>   ",
        ];
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        for answer in answers {
            // every single cut, then random sets of cuts
            for cut in 0..=answer.len() {
                assert_eq!(
                    filtered(answer, &[cut]).trim(),
                    strip_thinking(answer),
                    "{answer:?} at {cut}"
                );
            }
            for _ in 0..200 {
                let mut cuts: Vec<usize> = (0..4)
                    .map(|_| {
                        state ^= state << 13;
                        state ^= state >> 7;
                        state ^= state << 17;
                        (state % (answer.len() as u64 + 1)) as usize
                    })
                    .collect();
                cuts.sort_unstable();
                assert_eq!(
                    filtered(answer, &cuts).trim(),
                    strip_thinking(answer),
                    "{answer:?} {cuts:?}"
                );
            }
        }
    }

    #[test]
    fn thinking_is_removed_only_when_it_leads() {
        assert_eq!(strip_thinking("<think>\nhmm\n</think>\n\nParis"), "Paris");
        assert_eq!(strip_thinking("  Paris "), "Paris");
        assert_eq!(
            strip_thinking("Paris, not </think> Rome"),
            "Paris, not </think> Rome"
        );
    }
}
