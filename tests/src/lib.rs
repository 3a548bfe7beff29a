//! A harness for end-to-end tests: starts the real `engram` binary on a loopback port with its
//! own data folder, talks to it over HTTP, and can kill it with SIGKILL.

pub mod browser;
pub mod correction_sets;
pub mod model_server;
pub mod stated_sets;
pub mod tansu;

use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The `engram` binary: `$ENGRAM_BIN` (the test command sets it), else next to the test binary.
pub fn engram_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("ENGRAM_BIN") {
        return p.into();
    }
    let exe = std::env::current_exe().unwrap();
    let debug_dir = exe.parent().and_then(Path::parent).unwrap();
    let bin = debug_dir.join("engram");
    assert!(
        bin.exists(),
        "{} not found: build it with `cargo build --bin engram` or set ENGRAM_BIN",
        bin.display()
    );
    bin
}

/// `engram produce --brokers BROKERS FILE` (each event to its kind's topic); what it printed
/// (`{sent, invalid}`).
pub fn produce_file(brokers: &str, file: &Path) -> Value {
    let out = Command::new(engram_bin())
        .args(["produce", "--brokers", brokers])
        .arg(file)
        .env("ENGRAM_LOG", "warn")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Where `scripts/setup --tests` installed the Python packages the tests drive engram with
/// (`scripts/python_clients.txt`): a `PYTHONPATH` entry.
pub fn python_clients_dir() -> PathBuf {
    std::env::var_os("ENGRAM_MODELS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/engram/models")
        })
        .join("clientpy")
}

/// Runs `tests/python/<script>` with `args` and the installed clients on `PYTHONPATH`; its
/// standard output once it exited 0. Its standard error goes to the test's, as it comes (a
/// transcript). Killed, and the test failed, past `deadline`.
pub fn run_python_client(script: &str, args: &[&str], deadline: Duration) -> String {
    let clients = python_clients_dir();
    assert!(
        clients.exists(),
        "the Python clients are not in {}: run `bash scripts/setup --tests`",
        clients.display()
    );
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("python")
        .join(script);
    let mut child = Command::new("python3")
        .arg(&path)
        .args(args)
        .env("PYTHONPATH", &clients)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("python3");
    // read while it runs: a full pipe would stall the script
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut out = String::new();
        stdout.read_to_string(&mut out).map(|_| out)
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{script} did not finish within {deadline:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let out = reader.join().unwrap().unwrap();
    assert!(
        status.success(),
        "{script} failed ({status}); it printed: {out}"
    );
    out
}

pub struct Server {
    child: Child,
    pub base: String,
    pub data_dir: PathBuf,
    /// The admin key this server was started with (random per start).
    pub admin_key: String,
    /// API keys the harness has obtained, by tenant.
    keys: std::sync::Mutex<BTreeMap<String, String>>,
    http: reqwest::blocking::Client,
}

/// The tenant a request body is for: its `tenant`, or its first event's; requests that name
/// none (malformed bodies) go with the key of the tenant `harness`.
fn tenant_of(body: &Value) -> String {
    body.get("tenant")
        .or_else(|| body.get(0).and_then(|e| e.get("tenant")))
        .and_then(Value::as_str)
        .unwrap_or("harness")
        .to_string()
}

/// Every file under `dir` whose bytes contain `needle`.
pub fn files_containing(dir: &Path, needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = match std::fs::read_dir(&d) {
            Ok(entries) => entries,
            // removed while the server runs (a version folder Lance cleaned up): holds nothing
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && d != dir => continue,
            Err(e) => panic!("reading {}: {e}", d.display()),
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if let Ok(bytes) = std::fs::read(&path) {
                if bytes.windows(needle.len()).any(|w| w == needle.as_bytes()) {
                    found.push(path.display().to_string());
                }
            }
        }
    }
    found
}

/// `ENGRAM_LOG_DISCARD_AFTER_BYTES` for the servers the tests start.
pub const SMALL_LOG_FILE: &str = "16384";

/// The offset of the first record the log file under `data_dir` holds: above 0 once records
/// in the Lance events table have left the file (they are then read from the table).
pub fn log_file_base(data_dir: &Path) -> u64 {
    let bytes = std::fs::read(data_dir.join("log").join("events.log")).unwrap_or_default();
    match bytes.get(..16) {
        Some(header) if header[..8] == engram_connectors::event_log::MAGIC[..] => {
            u64::from_le_bytes(header[8..].try_into().unwrap())
        }
        _ => 0,
    }
}

/// Every record of the reject files under `data_dir` (`log/rejects/`), with its file relative
/// to that folder: files in name order (`_unknown.jsonl`, then `tenants/<tenant>.jsonl`, each
/// before its rotated copies), records in file order.
pub fn reject_records(data_dir: &Path) -> Vec<(String, Value)> {
    let root = data_dir.join("log").join("rejects");
    let mut files = Vec::new();
    for dir in [root.clone(), root.join("tenants")] {
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            if e.path().is_file() {
                files.push(e.path());
            }
        }
    }
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let rel = f.strip_prefix(&root).unwrap().display().to_string();
        for line in std::fs::read_to_string(&f).unwrap().lines() {
            out.push((rel.clone(), serde_json::from_str(line).unwrap()));
        }
    }
    out
}

impl Server {
    /// Starts `engram serve` on `data_dir` (port chosen by the OS, demo off), and waits until it
    /// listens.
    pub fn start(data_dir: &Path) -> Server {
        Self::start_with(data_dir, &[])
    }

    pub fn start_with(data_dir: &Path, extra: &[&str]) -> Server {
        Self::start_with_env(data_dir, extra, &[])
    }

    /// Like [`Server::start_with`], with extra environment variables.
    pub fn start_with_env(data_dir: &Path, extra: &[&str], env: &[(&str, &str)]) -> Server {
        let admin_key = format!("admin-{:032x}", rand::random::<u128>());
        let mut child = Command::new(engram_bin())
            .args([
                "serve",
                "--http-addr",
                "127.0.0.1:0",
                "--no-demo",
                "--data-dir",
            ])
            .arg(data_dir)
            .args(extra)
            .env("ENGRAM_LOG", "warn")
            .env("ENGRAM_ADMIN_KEY", &admin_key)
            // the log file drops what Lance holds after a few dozen events, so every test
            // (restarts, erasures, exports) also reads through the events table
            .env("ENGRAM_LOG_DISCARD_AFTER_BYTES", SMALL_LOG_FILE)
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start engram");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(url) = line.strip_prefix("engram listening on ") {
                    let _ = tx.send(url.to_string());
                }
            }
        });
        let base = rx
            .recv_timeout(Duration::from_secs(120))
            .expect("engram did not start listening within 120 s");
        Server {
            child,
            base,
            data_dir: data_dir.to_path_buf(),
            admin_key,
            keys: Default::default(),
            http: reqwest::blocking::Client::builder()
                .timeout(Duration::from_secs(60))
                .build()
                .unwrap(),
        }
    }

    /// Forgets the harness's key for `tenant` (after the tenant's keys were revoked), so the
    /// next request gets a fresh one.
    pub fn forget_key(&self, tenant: &str) {
        self.keys.lock().unwrap().remove(tenant);
    }

    /// The API key of `tenant` (the tenant is created through the admin API on first use; a
    /// restarted server on the same data folder issues the harness a new key).
    pub fn try_key_for(&self, tenant: &str) -> Result<String, reqwest::Error> {
        if let Some(k) = self.keys.lock().unwrap().get(tenant) {
            return Ok(k.clone());
        }
        let admin = |path: String, body: Option<Value>| {
            let req = self
                .http
                .post(format!("{}{}", self.base, path))
                .bearer_auth(&self.admin_key);
            let req = match body {
                Some(b) => req.json(&b),
                None => req,
            };
            req.send()
        };
        let mut resp = admin(
            "/v1/admin/tenants".into(),
            Some(json!({ "tenant": tenant })),
        )?;
        if resp.status().as_u16() == 409 {
            resp = admin(format!("/v1/admin/tenants/{tenant}/keys"), None)?;
        }
        let status = resp.status().as_u16();
        let body: Value = resp.json()?;
        assert_eq!(status, 201, "creating tenant {tenant}: {body}");
        let key = body["api_key"].as_str().unwrap().to_string();
        self.keys
            .lock()
            .unwrap()
            .insert(tenant.to_string(), key.clone());
        Ok(key)
    }

    pub fn key_for(&self, tenant: &str) -> String {
        self.try_key_for(tenant).expect("admin API")
    }

    /// POSTs `body` with the API key of the tenant it names (see [`tenant_of`]).
    pub fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        self.try_post(path, body).expect("request")
    }

    /// Like `post`, but a failed connection is an `Err` instead of a panic.
    pub fn try_post(&self, path: &str, body: &Value) -> Result<(u16, Value), reqwest::Error> {
        let key = self.try_key_for(&tenant_of(body))?;
        self.try_post_as(Some(&key), path, body)
    }

    /// POSTs `body` with exactly this API key (or none).
    pub fn post_as(&self, key: Option<&str>, path: &str, body: &Value) -> (u16, Value) {
        self.try_post_as(key, path, body).expect("request")
    }

    pub fn try_post_as(
        &self,
        key: Option<&str>,
        path: &str,
        body: &Value,
    ) -> Result<(u16, Value), reqwest::Error> {
        let mut req = self.http.post(format!("{}{}", self.base, path)).json(body);
        if let Some(k) = key {
            req = req.bearer_auth(k);
        }
        let resp = req.send()?;
        let status = resp.status().as_u16();
        Ok((status, resp.json().unwrap_or(Value::Null)))
    }

    /// POSTs a raw body with the key of the tenant it names (or of `harness`).
    pub fn post_raw(&self, path: &str, body: &str) -> (u16, Value) {
        let tenant = serde_json::from_str(body)
            .map(|v: Value| tenant_of(&v))
            .unwrap_or_else(|_| "harness".into());
        let resp = self
            .http
            .post(format!("{}{}", self.base, path))
            .header("content-type", "application/json")
            .bearer_auth(self.key_for(&tenant))
            .body(body.to_string())
            .send()
            .expect("request");
        let status = resp.status().as_u16();
        (status, resp.json().unwrap_or(Value::Null))
    }

    pub fn get(&self, path: &str) -> (u16, String) {
        self.get_as(None, path)
    }

    /// GETs `path` with exactly this key (or none).
    pub fn get_as(&self, key: Option<&str>, path: &str) -> (u16, String) {
        let mut req = self.http.get(format!("{}{}", self.base, path));
        if let Some(k) = key {
            req = req.bearer_auth(k);
        }
        let resp = req.send().expect("request");
        (resp.status().as_u16(), resp.text().unwrap_or_default())
    }

    /// The server process's id (for its resident memory in `/proc`).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `/v1/status` as the operator sees it (with the admin key: the engine-wide figures).
    pub fn status(&self) -> Value {
        serde_json::from_str(&self.get_as(Some(&self.admin_key), "/v1/status").1).unwrap()
    }

    /// `/metrics` as the operator sees it (with the admin key).
    pub fn metrics(&self) -> String {
        self.get_as(Some(&self.admin_key), "/metrics").1
    }

    /// The value of `name`, a metric without labels, in `/metrics`.
    pub fn metric(&self, name: &str) -> u64 {
        let text = self.metrics();
        let prefix = format!("{name} ");
        let value = text.lines().find_map(|l| l.strip_prefix(&prefix));
        let value = value.unwrap_or_else(|| panic!("{name} missing from /metrics:\n{text}"));
        value.trim().parse().unwrap()
    }

    /// Waits until the log holds exactly `end` events (Kafka input arrives on its own time).
    pub fn wait_for_log_end(&self, end: u64, within: Duration) {
        let start = Instant::now();
        loop {
            let status = self.status();
            if status["log_end"] == end {
                return;
            }
            assert!(
                start.elapsed() < within,
                "log_end never reached {end}: {status}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until every accepted event is in the views and every episode is in Lance.
    pub fn wait_caught_up(&self, timeout: Duration) -> Duration {
        let start = Instant::now();
        loop {
            let s = self.status();
            let end = s["log_end"].as_u64().unwrap();
            let views = s["views_as_of"].as_u64().unwrap();
            let pending = s["pending_episodes"].as_u64().unwrap();
            if views >= end && pending == 0 {
                return start.elapsed();
            }
            assert!(
                start.elapsed() < timeout,
                "not caught up after {timeout:?}: {s}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn recall(&self, tenant: &str, user: &str, query: &str, k: usize) -> Value {
        let (status, body) = self.post(
            "/v1/recall",
            &json!({"tenant": tenant, "user": user, "query": query, "k": k}),
        );
        assert_eq!(status, 200, "{body}");
        body
    }

    /// Opens a server-sent event stream (`GET path`) with exactly this key (or none); the
    /// status and JSON body when it is refused. The stream gives up after `limit`.
    pub fn events(
        &self,
        key: Option<&str>,
        path: &str,
        limit: Duration,
    ) -> Result<EventStream, (u16, Value)> {
        let url = format!("{}{}", self.base, path);
        open_events(stream_client(limit).get(url), key)
    }

    /// Like [`Server::events`], for a POST of `body` that answers with an event stream (a
    /// streamed chat).
    pub fn post_events(
        &self,
        key: Option<&str>,
        path: &str,
        body: &Value,
        limit: Duration,
    ) -> Result<EventStream, (u16, Value)> {
        let url = format!("{}{}", self.base, path);
        open_events(stream_client(limit).post(url).json(body), key)
    }

    /// SIGKILL: no shutdown code runs.
    pub fn kill9(mut self) {
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGKILL);
        }
        let _ = self.child.wait();
    }

    /// SIGKILL without waiting (another thread may still be talking to the server); the process
    /// is reaped when the `Server` is dropped.
    pub fn kill9_now(&self) {
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGKILL);
        }
    }

    /// SIGINT (Ctrl-C) and wait for a clean exit.
    pub fn interrupt(mut self) -> std::process::ExitStatus {
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGINT);
        }
        self.child.wait().unwrap()
    }
}

/// Creates `tenant` in the registry of `data_dir` with `engram tenant create`, before any server
/// runs there (a server consuming Kafka sends events of unknown tenants to the DLQ). Nothing
/// happens when it exists already.
pub fn create_tenant(data_dir: &Path, tenant: &str) {
    let out = Command::new(engram_bin())
        .args(["tenant", "create", tenant, "--data-dir"])
        .arg(data_dir)
        .env("ENGRAM_LOG", "warn")
        .output()
        .expect("engram tenant create");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() || stderr.contains("exists"),
        "engram tenant create {tenant}: {stderr}"
    );
}

/// An HTTP client whose requests give up after `limit` (streams included).
fn stream_client(limit: Duration) -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder()
        .timeout(limit)
        .build()
        .unwrap()
}

/// Sends `req` with `key`; the event stream, or the status and JSON body of a refusal.
fn open_events(
    mut req: reqwest::blocking::RequestBuilder,
    key: Option<&str>,
) -> Result<EventStream, (u16, Value)> {
    if let Some(k) = key {
        req = req.bearer_auth(k);
    }
    let resp = req.send().expect("request");
    let status = resp.status().as_u16();
    if status != 200 {
        return Err((status, resp.json().unwrap_or(Value::Null)));
    }
    Ok(EventStream {
        lines: BufReader::new(Box::new(resp)),
        raw: String::new(),
    })
}

/// A server-sent event stream, read event by event.
pub struct EventStream {
    lines: BufReader<Box<dyn Read + Send>>,
    /// Everything read so far, verbatim.
    pub raw: String,
}

impl EventStream {
    /// The next event's name and JSON data (keep-alive comments skipped); `None` when the stream
    /// ends or its time limit passes.
    pub fn next_event(&mut self) -> Option<(String, Value)> {
        let (mut name, mut data) = (String::from("message"), String::new());
        loop {
            let mut line = String::new();
            if self.lines.read_line(&mut line).ok()? == 0 {
                return None;
            }
            self.raw.push_str(&line);
            let line = line.trim_end_matches(['\r', '\n']);
            if line.is_empty() {
                if !data.is_empty() {
                    return Some((name, serde_json::from_str(&data).expect("JSON event data")));
                }
            } else if let Some(v) = line.strip_prefix("event:") {
                name = v.trim().to_string();
            } else if let Some(v) = line.strip_prefix("data:") {
                data.push_str(v.strip_prefix(' ').unwrap_or(v));
            }
        }
    }

    /// Reads events until `wanted` accepts one (returned), the stream ends or `timeout` passes.
    pub fn until(
        &mut self,
        timeout: Duration,
        mut wanted: impl FnMut(&str, &Value) -> bool,
    ) -> Option<(String, Value)> {
        let start = Instant::now();
        while start.elapsed() < timeout {
            let (name, data) = self.next_event()?;
            if wanted(&name, &data) {
                return Some((name, data));
            }
        }
        None
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An interaction event.
pub fn interaction(
    tenant: &str,
    user: &str,
    event_id: &str,
    session: &str,
    minute: u32,
    content: &str,
) -> Value {
    json!({
        "kind": "interaction", "event_id": event_id, "tenant": tenant, "user": user,
        "session": session, "ts": format!("2025-01-01T{:02}:{:02}:00Z", minute / 60 % 24, minute % 60),
        "role": "user", "content": content,
    })
}

/// Event number `i` of the crash tests: tenant `acme`, users `u0`–`u2` in turn, id
/// `ev-{i:05}`, 20 a session, a text that names a topic and a place.
pub fn numbered_event(i: u64) -> Value {
    interaction(
        "acme",
        &format!("u{}", i % 3),
        &format!("ev-{i:05}"),
        &format!("s{}", i / 20),
        (i % 1440) as u32,
        &format!(
            "message {i}: note about topic {} and place {}",
            i % 17,
            i % 11
        ),
    )
}

/// How many times each event id is stored among the given users' episodes, read straight from
/// the Lance dataset in `data_dir`.
pub fn stored_event_ids(data_dir: &Path, tenant: &str, users: &[&str]) -> BTreeMap<String, usize> {
    // a process killed before its first commit leaves no dataset (or a folder without versions)
    if !data_dir.join("lance/episodes.lance/_versions").is_dir() {
        return BTreeMap::new();
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let store = engram_connectors::EpisodeStore::open(
            &data_dir.join("lance/episodes.lance"),
            384,
            engram_connectors::IndexPolicy::default(),
        )
        .await
        .unwrap();
        let mut counts = BTreeMap::new();
        for user in users {
            for row in store.user_episodes(tenant, user).await.unwrap() {
                *counts.entry(row.event_id).or_insert(0) += 1;
            }
        }
        counts
    })
}

/// How many times each event id is in the Lance events table of `data_dir` (read straight
/// from the dataset, with the server stopped).
pub fn events_in_lance(data_dir: &Path) -> BTreeMap<String, usize> {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let table = engram_connectors::EventTable::open(&data_dir.join("lance/events.lance"))
            .await
            .unwrap();
        let mut counts = BTreeMap::new();
        for (_, bytes) in table.read(0, table.end()).await.unwrap() {
            let id = engram_schemas::Event::from_canonical_json(&bytes)
                .map(|e| e.header.event_id)
                .or_else(|_| {
                    engram_schemas::Redacted::from_record(&bytes)
                        .map(|r| r.event_id)
                        .ok_or(())
                })
                .expect("an event or a redaction");
            *counts.entry(id).or_insert(0) += 1;
        }
        counts
    })
}

/// librdkafka's mock cluster (one broker, the Kafka protocol on a loopback port, inside the
/// test process) with engram's topics, two partitions each.
pub fn mock_kafka(
) -> rdkafka::mocking::MockCluster<'static, rdkafka::producer::DefaultProducerContext> {
    let mock = rdkafka::mocking::MockCluster::new(1).expect("mock Kafka cluster");
    for topic in [
        "engram.interactions",
        "engram.corrections",
        "engram.feedback",
        "engram.control",
        "engram.dlq",
    ] {
        mock.create_topic(topic, 2, 1).expect("mock topic");
    }
    mock
}

/// A loopback stand-in for an OpenAI-compatible chat server: answers every
/// `POST /v1/chat/completions` with a fixed answer (wrapped in a Qwen3 `<think>` block) and
/// keeps the request bodies. Serves at most `max_requests`, and stops after `deadline`.
pub fn stand_in_llm(max_requests: usize, deadline: Duration) -> (String, Arc<Mutex<Vec<Value>>>) {
    stand_in_llm_answering(max_requests, deadline, "stand-in answer")
}

/// [`stand_in_llm`] answering `answer` (after the same thinking block).
pub fn stand_in_llm_answering(
    max_requests: usize,
    deadline: Duration,
    answer: &str,
) -> (String, Arc<Mutex<Vec<Value>>>) {
    let content = format!("<think>\nlooking at the memories\n</think>\n\n{answer}");
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    std::thread::spawn(move || {
        let started = Instant::now();
        let mut served = 0;
        while served < max_requests && started.elapsed() < deadline {
            let Ok((stream, _)) = listener.accept() else {
                std::thread::sleep(Duration::from_millis(10));
                continue;
            };
            let (request_line, request) =
                model_server::read_http_request(&stream).expect("a readable request");
            let content = content.as_str();
            if request_line.starts_with("POST /v1/chat/completions ") && request["stream"] == true {
                // server-sent events of small deltas, as OpenAI-compatible servers stream
                record.lock().unwrap().push(request);
                let mut stream = stream;
                write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
                )
                .unwrap();
                let chars: Vec<char> = content.chars().collect();
                for piece in chars.chunks(3) {
                    let piece: String = piece.iter().collect();
                    let event = json!({"id": "x", "object": "chat.completion.chunk", "choices": [
                        {"index": 0, "delta": {"content": piece}, "finish_reason": null}]});
                    write!(stream, "data: {event}\n\n").unwrap();
                    stream.flush().unwrap();
                }
                write!(stream, "data: [DONE]\n\n").unwrap();
                served += 1;
                continue;
            }
            let (status, answer) = if request_line.starts_with("POST /v1/chat/completions ") {
                record.lock().unwrap().push(request);
                (
                    "200 OK",
                    json!({"id": "x", "object": "chat.completion", "choices": [
                        {"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}]}),
                )
            } else {
                ("404 Not Found", json!({"error": "not found"}))
            };
            let payload = answer.to_string();
            let mut stream = stream;
            write!(
                stream,
                "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{payload}",
                payload.len()
            )
            .unwrap();
            served += 1;
        }
    });
    (url, seen)
}
