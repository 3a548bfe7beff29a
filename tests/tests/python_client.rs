//! The Python client (`clients/python`, package `engram-client`) against the real server: its
//! pytest tests run with the URL, the admin key and a tenant's key of a fresh `engram serve`
//! (chats answered by the loopback stand-in model server, at most two dashboard streams per
//! tenant so the cap's 429 is reachable), and must all pass.

use engram_tests::{python_clients_dir, stand_in_llm, Server};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The tests in `clients/python/tests`: every one must run and pass (a skipped one fails here).
const PYTHON_TESTS: usize = 31;
/// The whole pytest run, bounded (it takes seconds on an idle machine).
const PYTEST_DEADLINE: Duration = Duration::from_secs(600);
const STREAMS_PER_TENANT: &str = "2";

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// `(passed, the rest of the summary)` from pytest's last line, e.g. `25 passed in 5.18s`.
fn pytest_summary(output: &str) -> (usize, Vec<String>) {
    let last = output
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    let mut passed = 0;
    let mut others = Vec::new();
    for part in last.split(" in ").next().unwrap_or("").split(", ") {
        match part.trim().split_once(' ') {
            Some((n, "passed")) => passed = n.parse().unwrap_or(0),
            // a warning (a deprecation in a dependency, say) fails nothing
            Some((_, "warning" | "warnings")) => {}
            _ => others.push(part.trim().to_string()),
        }
    }
    (passed, others)
}

#[test]
fn the_python_client_passes_its_tests_against_a_real_server() {
    let clients = python_clients_dir();
    assert!(
        clients.join("pytest").exists() && clients.join("httpx").exists(),
        "pytest and httpx are not in {}: run `bash scripts/setup --tests`",
        clients.display()
    );
    let dir = tempfile::tempdir().unwrap();
    let (llm_url, _seen) = stand_in_llm(20, PYTEST_DEADLINE + Duration::from_secs(60));
    let server = Server::start_with_env(
        &dir.path().join("data"),
        &[],
        &[
            ("ENGRAM_LLM_URL", &llm_url),
            (
                "ENGRAM_LIMIT_DASHBOARD_STREAMS_PER_TENANT",
                STREAMS_PER_TENANT,
            ),
        ],
    );
    let tenant = "pyclient";
    let key = server.key_for(tenant);
    let python_path = format!(
        "{}:{}",
        clients.display(),
        repo_root().join("clients/python/src").display()
    );
    let log_path = dir.path().join("pytest.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let mut pytest = Command::new("python3")
        .args([
            "-m",
            "pytest",
            "clients/python/tests",
            "-q",
            "-p",
            "no:cacheprovider",
        ])
        .current_dir(repo_root())
        .env("PYTHONPATH", python_path)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("ENGRAM_TEST_URL", &server.base)
        .env("ENGRAM_TEST_ADMIN_KEY", &server.admin_key)
        .env("ENGRAM_TEST_TENANT", tenant)
        .env("ENGRAM_TEST_TENANT_KEY", &key)
        .env("ENGRAM_TEST_STREAMS_PER_TENANT", STREAMS_PER_TENANT)
        .env("ENGRAM_TEST_CHAT", "1")
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("python3");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = pytest.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > PYTEST_DEADLINE {
            let _ = pytest.kill();
            let _ = pytest.wait();
            panic!(
                "pytest ran past {PYTEST_DEADLINE:?}:\n{}",
                std::fs::read_to_string(&log_path).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let output = std::fs::read_to_string(&log_path).unwrap();
    assert!(status.success(), "pytest failed ({status}):\n{output}");
    let (passed, others) = pytest_summary(&output);
    assert_eq!(
        (passed, others),
        (PYTHON_TESTS, vec![]),
        "expected {PYTHON_TESTS} passed and nothing else:\n{output}"
    );
}

#[test]
fn the_pytest_summary_is_read() {
    assert_eq!(pytest_summary("..\n25 passed in 5.18s\n"), (25, vec![]));
    assert_eq!(
        pytest_summary("F.\n1 failed, 24 passed in 3.00s"),
        (24, vec!["1 failed".to_string()])
    );
    assert_eq!(
        pytest_summary("24 passed, 1 skipped, 2 warnings in 1.0s"),
        (24, vec!["1 skipped".to_string()])
    );
}
