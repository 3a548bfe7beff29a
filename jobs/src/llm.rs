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
        let body = serde_json::json!({
            "model": self.model,
            "messages": messages,
            "max_tokens": max_tokens,
            "temperature": 0.0,
            "stream": false,
            "chat_template_kwargs": {"enable_thinking": false},
        });
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
        let content = value["choices"][0]["message"]["content"]
            .as_str()
            .ok_or_else(|| LlmError::Answer {
                url: url.clone(),
                reason: "no choices[0].message.content".into(),
            })?;
        Ok(strip_thinking(content).to_string())
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
