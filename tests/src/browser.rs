//! Headless Chromium driven over the W3C WebDriver protocol (Debian's `chromium` and
//! `chromedriver`, which `scripts/setup` installs), for end-to-end tests of the dashboard page.
//! The driver listens on a loopback port; every wait is bounded.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Chromium flags for a machine without internet: no background requests, updates or sync
/// (their connections would be refused, many at a time), no GPU, no sandbox (tests run as root).
pub const CHROMIUM_ARGS: [&str; 9] = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
];

fn executable(env: &str, default: &str) -> PathBuf {
    std::env::var_os(env)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(default))
}

/// A chromedriver process with one browser session.
pub struct Browser {
    driver: Child,
    endpoint: String,
    session: String,
    http: reqwest::blocking::Client,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Starts chromedriver (`$CHROMEDRIVER`, else /usr/bin/chromedriver) and a headless
    /// Chromium (`$CHROMIUM`, else /usr/bin/chromium) with a fresh profile, `width`×`height`.
    pub fn start(width: u32, height: u32) -> Browser {
        let driver_bin = executable("CHROMEDRIVER", "/usr/bin/chromedriver");
        let chromium = executable("CHROMIUM", "/usr/bin/chromium");
        assert!(
            driver_bin.exists() && chromium.exists(),
            "{} or {} is missing: scripts/setup installs Debian's chromium and chromium-driver",
            driver_bin.display(),
            chromium.display()
        );
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut driver = Command::new(&driver_bin)
            .arg(format!("--port={port}"))
            .arg("--allowed-ips=127.0.0.1")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver");
        // it prints "... started successfully" when it listens
        let stdout = driver.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if line.contains("started successfully") {
                    let _ = tx.send(());
                }
            }
        });
        rx.recv_timeout(Duration::from_secs(30))
            .expect("chromedriver did not start within 30 s");
        let endpoint = format!("http://127.0.0.1:{port}");
        let http = reqwest::blocking::Client::builder()
            .timeout(Duration::from_secs(60))
            .build()
            .unwrap();
        let profile = tempfile::tempdir().unwrap();
        let mut args: Vec<String> = CHROMIUM_ARGS.iter().map(|a| a.to_string()).collect();
        args.push(format!("--user-data-dir={}", profile.path().display()));
        args.push(format!("--window-size={width},{height}"));
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": chromium, "args": args},
        }}});
        let resp: Value = http
            .post(format!("{endpoint}/session"))
            .json(&caps)
            .send()
            .and_then(|r| r.json())
            .expect("new WebDriver session");
        let session = resp["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session: {resp}"))
            .to_string();
        Browser {
            driver,
            endpoint,
            session,
            http,
            _profile: profile,
        }
    }

    fn command(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let url = format!("{}/session/{}{}", self.endpoint, self.session, path);
        let mut req = self.http.request(method, url);
        if let Some(body) = body {
            req = req.json(&body);
        }
        let resp: Value = req.send().and_then(|r| r.json()).expect("WebDriver call");
        if let Some(err) = resp["value"].get("error") {
            panic!("WebDriver {path}: {err}: {}", resp["value"]["message"]);
        }
        resp["value"].clone()
    }

    /// Loads `url` (waits for the document to load, not for the page's streams).
    pub fn open(&self, url: &str) {
        self.command(reqwest::Method::POST, "/url", Some(json!({"url": url})));
    }

    /// Runs `script` (a function body; `return` gives the result) in the page.
    pub fn eval(&self, script: &str) -> Value {
        self.command(
            reqwest::Method::POST,
            "/execute/sync",
            Some(json!({"script": script, "args": []})),
        )
    }

    /// Evaluates `script` every 50 ms until it returns something other than `null`/`false`,
    /// and returns that; panics with `what` and the page's last value after `timeout`.
    pub fn wait_for(&self, what: &str, script: &str, timeout: Duration) -> Value {
        let start = Instant::now();
        loop {
            let v = self.eval(script);
            if !(v.is_null() || v == Value::Bool(false)) {
                return v;
            }
            assert!(
                start.elapsed() < timeout,
                "timed out after {timeout:?} waiting for {what}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Saves a PNG of the whole page (the window is resized to the document's height first).
    pub fn screenshot(&self, path: &Path) {
        let height = self
            .eval("return Math.ceil(document.documentElement.scrollHeight)")
            .as_u64()
            .unwrap_or(2000)
            .min(8000);
        let width = self
            .eval("return window.outerWidth")
            .as_u64()
            .unwrap_or(1400);
        self.command(
            reqwest::Method::POST,
            "/window/rect",
            Some(json!({"width": width, "height": height + 120})),
        );
        let png = self.command(reqwest::Method::GET, "/screenshot", None);
        use base64::Engine as _;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(png.as_str().expect("base64 screenshot"))
            .expect("a base64 screenshot");
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).unwrap();
        }
        std::fs::write(path, bytes).unwrap();
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self
            .http
            .delete(format!("{}/session/{}", self.endpoint, self.session))
            .timeout(Duration::from_secs(10))
            .send();
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}
