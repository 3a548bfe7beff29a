//! The reference pages in `docs/` against the code they describe: `docs/http-api.md` names every
//! route of the OpenAPI document and no other, and `docs/configuration.md` is exactly what
//! `engram config reference` prints from the configuration types.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

const METHODS: [&str; 5] = ["GET", "POST", "PUT", "PATCH", "DELETE"];

fn repo_file(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(path)
}

fn read(path: &str) -> String {
    std::fs::read_to_string(repo_file(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// `METHOD /path` for every operation of `jobs/server/src/openapi.json`.
fn openapi_routes() -> BTreeSet<String> {
    let doc: serde_json::Value =
        serde_json::from_str(&read("jobs/server/src/openapi.json")).unwrap();
    let mut routes = BTreeSet::new();
    for (path, operations) in doc["paths"].as_object().expect("paths") {
        for method in operations.as_object().unwrap().keys() {
            let method = method.to_uppercase();
            if METHODS.contains(&method.as_str()) {
                routes.insert(format!("{method} {path}"));
            }
        }
    }
    routes
}

/// Every `` `METHOD /path` `` the page names in code spans (a query string left out), and the
/// routes of its `### ` headings, which are the page's list of routes.
fn documented_routes(page: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let mut mentioned = BTreeSet::new();
    for span in page.split('`').skip(1).step_by(2) {
        if let Some((method, path)) = span.split_once(' ') {
            if METHODS.contains(&method) && path.starts_with('/') && !path.contains(' ') {
                let path = path.split('?').next().unwrap();
                mentioned.insert(format!("{method} {path}"));
            }
        }
    }
    let headed = page
        .lines()
        .filter_map(|line| line.strip_prefix("### `"))
        .filter_map(|rest| rest.split('`').next())
        .map(|route| route.split('?').next().unwrap().to_string())
        .collect();
    (mentioned, headed)
}

#[test]
fn http_api_page_names_exactly_the_openapi_routes() {
    let spec = openapi_routes();
    assert!(
        spec.len() > 20,
        "the OpenAPI document lists {} routes",
        spec.len()
    );
    let (mentioned, headed) = documented_routes(&read("docs/http-api.md"));
    let missing: Vec<_> = spec.difference(&headed).collect();
    let unknown: Vec<_> = mentioned
        .union(&headed)
        .filter(|r| !spec.contains(*r))
        .collect();
    assert!(
        missing.is_empty(),
        "routes of jobs/server/src/openapi.json without a `### `METHOD /path`` section in docs/http-api.md: {missing:?}"
    );
    assert!(
        unknown.is_empty(),
        "docs/http-api.md names routes jobs/server/src/openapi.json lacks: {unknown:?}"
    );
}

#[test]
fn configuration_page_is_the_generated_reference() {
    let output = Command::new(engram_tests::engram_bin())
        .args(["config", "reference"])
        .output()
        .expect("run engram config reference");
    assert!(
        output.status.success(),
        "engram config reference failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let generated = String::from_utf8(output.stdout).unwrap();
    let page = read("docs/configuration.md");
    assert!(
        page == generated,
        "docs/configuration.md is not what `engram config reference` prints; regenerate it with \
         `$CARGO_TARGET_DIR/debug/engram config reference > docs/configuration.md` \
         (descriptions live in jobs/engine/src/config_reference.rs)"
    );
}
