//! A loopback stand-in for an OpenAI-compatible model server whose answers a test writes: each
//! `POST /v1/chat/completions` is passed to the test's function, which returns the HTTP status
//! and the assistant's content (or, for a status other than 200, the error body). Requests are
//! served one at a time, at most `max_requests`, until `deadline`.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub struct StandInModel {
    pub url: String,
    /// Every request body received, in order.
    pub requests: Arc<Mutex<Vec<Value>>>,
}

/// The request line and the JSON body (`null` when it is not JSON) of the HTTP request on
/// `stream` (set to blocking, with a 10 s read timeout); `None` when it cannot be read.
pub fn read_http_request(stream: &TcpStream) -> Option<(String, Value)> {
    stream.set_nonblocking(false).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok()?;
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line).ok()?;
    let mut length = 0;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).is_err() || header.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap_or(0);
            }
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some((
        request_line,
        serde_json::from_slice(&body).unwrap_or(Value::Null),
    ))
}

impl StandInModel {
    pub fn serve(
        max_requests: usize,
        deadline: Duration,
        answer: impl Fn(&Value) -> (u16, String) + Send + 'static,
    ) -> StandInModel {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let record = requests.clone();
        std::thread::spawn(move || {
            let started = Instant::now();
            let mut served = 0;
            while served < max_requests && started.elapsed() < deadline {
                let Ok((stream, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                };
                let Some((request_line, request)) = read_http_request(&stream) else {
                    continue;
                };
                let (status, payload) = if request_line.starts_with("POST /v1/chat/completions ") {
                    record.lock().unwrap().push(request.clone());
                    let (status, content) = answer(&request);
                    let payload = if status == 200 {
                        json!({"id": "x", "object": "chat.completion", "choices": [
                            {"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": content}}],
                            "usage": {"prompt_tokens": 100, "completion_tokens": 20}})
                    } else {
                        json!({"error": {"message": content}})
                    };
                    (status, payload.to_string())
                } else {
                    (404, json!({"error": "not found"}).to_string())
                };
                let mut stream = stream;
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{payload}",
                    payload.len()
                );
                served += 1;
            }
        });
        StandInModel { url, requests }
    }

    /// The turns of a request as the enrichment job writes them: `(event id, speaker, text)`
    /// of each `[id] date time (weekday) speaker: text` line of its last message.
    pub fn turns_of(request: &Value) -> Vec<(String, String, String)> {
        let messages = request["messages"].as_array().cloned().unwrap_or_default();
        let text = messages
            .last()
            .and_then(|m| m["content"].as_str())
            .unwrap_or_default()
            .to_string();
        text.lines()
            .filter_map(|line| {
                let rest = line.strip_prefix('[')?;
                let (id, rest) = rest.split_once("] ")?;
                // "2023-05-08 13:56 (Monday) speaker: text"
                let (_, rest) = rest.split_once(") ")?;
                let (speaker, text) = rest.split_once(": ")?;
                Some((id.to_string(), speaker.to_string(), text.to_string()))
            })
            .collect()
    }
}
