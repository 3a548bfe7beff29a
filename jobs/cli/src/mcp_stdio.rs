//! `engram mcp`: MCP over stdin/stdout for desktop agents, relayed to the MCP server of a
//! running engram (`POST <url>/mcp`, the tenant's API key). A relay rather than an engine of its
//! own: a data folder is written by the one `engram serve` that holds it, so a second process
//! opening it would race that one; and every tool then behaves exactly as it does over HTTP.
//!
//! Messages are JSON, one a line (MCP's stdio transport). Only MCP messages go to stdout; logs go
//! to stderr. When engram forgets the session (a restart, or an idle session ended) the relay
//! initializes again with the client's own `initialize` and sends the message once more.

use anyhow::Context;
use serde_json::{json, Value};
use std::io::{BufRead, Write};
use std::net::SocketAddr;
use tracing_subscriber::EnvFilter;

const SESSION_HEADER: &str = "mcp-session-id";
const VERSION_HEADER: &str = "mcp-protocol-version";
/// JSON-RPC code of an answer engram's HTTP layer gave instead of the MCP server (a refused
/// key, a rate limit, a body too large): the message names the HTTP status and the reason.
const HTTP_REFUSAL: i64 = -32001;
/// JSON-RPC code for an engram that could not be reached.
const UNREACHABLE: i64 = -32002;

/// Logs to stderr: stdout carries the protocol.
pub fn init_logging(json: bool) {
    let filter = EnvFilter::try_from_env("ENGRAM_LOG").unwrap_or_else(|_| EnvFilter::new("warn"));
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    if json {
        logs.json().init();
    } else {
        logs.init();
    }
}

/// The engram to relay to when no `--url` is given: the configured listen address, on
/// loopback when that listens on every interface.
pub fn default_url(http_addr: SocketAddr) -> String {
    let mut addr = http_addr;
    if addr.ip().is_unspecified() {
        addr.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
    }
    format!("http://{addr}")
}

/// One MCP client's connection to engram's `/mcp`.
struct Relay {
    http: reqwest::Client,
    endpoint: String,
    api_key: String,
    session: Option<String>,
    version: Option<String>,
    /// The client's `initialize`, sent again when engram has forgotten the session.
    initialize: Option<Value>,
}

/// Relays stdin to `<url>/mcp` and the answers to stdout until stdin closes; then ends the
/// session.
pub async fn run(url: &str, api_key: String) -> anyhow::Result<()> {
    let http = reqwest::Client::builder()
        // engram closes a kept-alive connection after `limits.header_read_timeout_s` (10 s)
        // idle; a pooled connection reused just as the server closes it fails the request, so
        // one idle for half that is not reused
        .pool_idle_timeout(std::time::Duration::from_secs(5))
        .build()?;
    let mut relay = Relay {
        http,
        endpoint: format!("{}/mcp", url.trim_end_matches('/')),
        api_key,
        session: None,
        version: None,
        initialize: None,
    };
    // stdin is read on a thread of its own (blocking reads), one line at a time
    let (lines_tx, mut lines) = tokio::sync::mpsc::channel::<std::io::Result<String>>(16);
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            if lines_tx.blocking_send(line).is_err() {
                break;
            }
        }
    });
    let mut stdout = std::io::stdout();
    while let Some(line) = lines.recv().await {
        let line = line.context("reading stdin")?;
        if line.trim().is_empty() {
            continue;
        }
        if let Some(answer) = relay.relay_line(&line).await {
            let mut text = serde_json::to_string(&answer).expect("JSON");
            text.push('\n');
            stdout.write_all(text.as_bytes())?;
            stdout.flush()?;
        }
    }
    relay.end_session().await;
    Ok(())
}

impl Relay {
    /// The answer to one line from the client: engram's, or a JSON-RPC error saying why there
    /// is none; `None` for a notification or a response.
    async fn relay_line(&mut self, line: &str) -> Option<Value> {
        let message: Value = match serde_json::from_str(line) {
            Ok(m) => m,
            Err(err) => return Some(rpc_error(Value::Null, -32700, format!("not JSON: {err}"))),
        };
        let id = request_id(&message);
        let is_initialize = message["method"] == "initialize";
        if is_initialize {
            self.initialize = Some(message.clone());
            self.session = None;
            self.version = None;
        }
        let mut answer = self.post(&message).await;
        if matches!(answer, Posted::SessionGone) && !is_initialize && self.reinitialize().await {
            answer = self.post(&message).await;
        }
        match answer {
            Posted::Answer(answer) => {
                if is_initialize {
                    self.version = answer["result"]["protocolVersion"]
                        .as_str()
                        .map(str::to_string);
                }
                Some(answer)
            }
            Posted::Nothing => None,
            Posted::SessionGone => {
                id.map(|id| rpc_error(id, -32600, "engram ended the MCP session; initialize again"))
            }
            Posted::Refused(code, reason) => {
                tracing::warn!(%reason, "engram refused a message");
                id.map(|id| rpc_error(id, code, reason))
            }
        }
    }

    /// POSTs one message with the session's headers.
    async fn post(&mut self, message: &Value) -> Posted {
        let mut req = self
            .http
            .post(&self.endpoint)
            .bearer_auth(&self.api_key)
            .header("accept", "application/json, text/event-stream")
            .json(message);
        if let Some(session) = &self.session {
            req = req.header(SESSION_HEADER, session);
        }
        if let Some(version) = &self.version {
            req = req.header(VERSION_HEADER, version);
        }
        let resp = match req.send().await {
            Ok(resp) => resp,
            Err(err) => {
                return Posted::Refused(
                    UNREACHABLE,
                    format!("engram at {} cannot be reached: {err}", self.endpoint),
                )
            }
        };
        let status = resp.status();
        if let Some(session) = resp.headers().get(SESSION_HEADER) {
            self.session = session.to_str().ok().map(str::to_string);
        }
        if status == reqwest::StatusCode::ACCEPTED {
            return Posted::Nothing;
        }
        if status == reqwest::StatusCode::NOT_FOUND && self.session.is_some() {
            return Posted::SessionGone;
        }
        let body: Value = resp.json().await.unwrap_or(Value::Null);
        // the MCP server's own errors are JSON-RPC already; the HTTP layer's are not
        if body.get("jsonrpc").is_some() {
            return Posted::Answer(body);
        }
        let reason = body["error"]["reason"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| body.to_string());
        Posted::Refused(
            HTTP_REFUSAL,
            format!("engram answered HTTP {status}: {reason}"),
        )
    }

    /// Opens a new session with the client's `initialize` (and `notifications/initialized`);
    /// whether it worked.
    async fn reinitialize(&mut self) -> bool {
        let Some(initialize) = self.initialize.clone() else {
            return false;
        };
        self.session = None;
        self.version = None;
        let Posted::Answer(answer) = self.post(&initialize).await else {
            return false;
        };
        self.version = answer["result"]["protocolVersion"]
            .as_str()
            .map(str::to_string);
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        self.session.is_some() && matches!(self.post(&initialized).await, Posted::Nothing)
    }

    /// `DELETE /mcp`: engram can drop the session now rather than when it goes idle.
    async fn end_session(&self) {
        let Some(session) = &self.session else { return };
        let sent = self
            .http
            .delete(&self.endpoint)
            .bearer_auth(&self.api_key)
            .header(SESSION_HEADER, session)
            .send()
            .await;
        if let Err(err) = sent {
            tracing::debug!(%err, "ending the MCP session");
        }
    }
}

/// What engram made of one POST.
enum Posted {
    /// A JSON-RPC answer (result or error) from the MCP server.
    Answer(Value),
    /// Accepted, with nothing to answer (a notification or a response).
    Nothing,
    /// The session is unknown to engram.
    SessionGone,
    /// Not answered by the MCP server: the JSON-RPC error code and why.
    Refused(i64, String),
}

/// The id of a request (a message with a method and an id); `None` for anything else.
fn request_id(message: &Value) -> Option<Value> {
    let id = message.get("id")?;
    (message.get("method").is_some() && !id.is_null()).then(|| id.clone())
}

fn rpc_error(id: Value, code: i64, message: impl Into<String>) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message.into()}})
}
