//! engram's MCP server against the official MCP Python SDK (`mcp` on PyPI, installed by
//! `scripts/setup --tests`) as the client, end to end: `tests/python/mcp_client.py` talks to a
//! real `engram serve` over streamable HTTP at `/mcp` and over stdio through `engram mcp`, and
//! prints what it saw; the checks here are on that.

use engram_tests::{engram_bin, python_clients_dir, run_python_client, Server};
use serde_json::{json, Value};
use std::time::Duration;

/// The whole client run, bounded (seconds on an idle machine).
const CLIENT_DEADLINE: Duration = Duration::from_secs(540);
/// The tools a client should list, in order.
const TOOLS: &str = "remember recall build_prompt feedback memory forget";

/// Runs the client script with `config`; what it saw. Killed past [`CLIENT_DEADLINE`].
fn run_client(config: &Value) -> Value {
    assert!(
        python_clients_dir().join("mcp").exists(),
        "the MCP SDK is not in {}: run `bash scripts/setup --tests`",
        python_clients_dir().display()
    );
    let out = run_python_client("mcp_client.py", &[&config.to_string()], CLIENT_DEADLINE);
    let seen: Value = serde_json::from_str(out.trim())
        .unwrap_or_else(|e| panic!("the client printed no JSON ({e}): {out}"));
    assert!(
        seen.get("step_errors").is_none(),
        "client steps failed: {}",
        seen["step_errors"]
    );
    seen
}

/// Every recalled turn's content in a recall result.
fn recalled(result: &Value) -> Vec<&str> {
    result["structuredContent"]["results"]
        .as_array()
        .map(|hits| hits.iter().filter_map(|h| h["content"].as_str()).collect())
        .unwrap_or_default()
}

fn mentions(result: &Value, marker: &str) -> bool {
    recalled(result).iter().any(|c| c.contains(marker))
}

/// The text of a tool result that must have failed, checked to say `expected`.
fn error_text<'a>(result: &'a Value, expected: &str) -> &'a str {
    assert_eq!(result["isError"], true, "should have failed: {result}");
    let text = result["content"][0]["text"].as_str().unwrap_or("");
    assert!(
        text.contains(expected),
        "the error should say {expected:?}: {text}"
    );
    text
}

fn succeeded(result: &Value) {
    assert_eq!(result["isError"], false, "should have worked: {result}");
}

#[test]
fn the_official_mcp_sdk_uses_engrams_memory_over_http_and_stdio() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("data"));
    let marker = format!("Quokka{:08x}", rand::random::<u32>());
    let key = server.key_for("mcpacme");
    let config = json!({
        "base": server.base, "key": key, "other_key": server.key_for("mcpglobex"),
        "engram": engram_bin(), "marker": marker,
    });
    let seen = run_client(&config);

    // the tools as the client lists them: each described, its arguments a schema needing `user`
    let tools = seen["tools"].as_array().expect("tools");
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    let expected: Vec<&str> = TOOLS.split(' ').collect();
    assert_eq!(names, expected, "{}", seen["tools"]);
    for tool in tools {
        assert!(
            tool["description"].as_str().unwrap_or("").len() > 40,
            "{tool}"
        );
        assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
        assert!(
            tool["inputSchema"]["required"]
                .as_array()
                .is_some_and(|r| r.contains(&json!("user"))),
            "{tool}"
        );
    }
    assert_eq!(seen["server_name"], "engram");
    assert_eq!(seen["protocol_version"], "2025-11-25");
    assert!(seen["instructions"]
        .as_str()
        .unwrap_or("")
        .contains("recall"));

    // remember, then recall finds it for that user only
    let remembered = &seen["remember"];
    succeeded(remembered);
    assert_eq!(remembered["structuredContent"]["stored"], 3, "{remembered}");
    assert_eq!(remembered["structuredContent"]["searchable"], true);
    assert_eq!(
        remembered["structuredContent"]["event_ids"]
            .as_array()
            .map(Vec::len),
        Some(3)
    );
    assert!(
        mentions(&seen["recall_alice"], &marker),
        "{}",
        seen["recall_alice"]
    );
    succeeded(&seen["recall_bob"]);
    assert!(
        !mentions(&seen["recall_bob"], &marker),
        "bob recalled alice: {}",
        seen["recall_bob"]
    );
    succeeded(&seen["recall_other_tenant"]);
    assert!(
        !mentions(&seen["recall_other_tenant"], &marker),
        "another tenant recalled alice: {}",
        seen["recall_other_tenant"]
    );

    // what engram knows, a prompt with the memory in it, a vote
    succeeded(&seen["memory_alice"]);
    assert!(seen["memory_alice"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains(&format!("Lisbon{marker}")));
    succeeded(&seen["build_prompt"]);
    assert!(
        seen["build_prompt"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains(&marker),
        "the prompt lacks the memory: {}",
        seen["build_prompt"]
    );
    succeeded(&seen["feedback"]);

    // bad arguments: results that say what is wrong, or a JSON-RPC error for no such tool
    let bad = &seen["bad"];
    error_text(&bad["recall_without_query"], "query");
    error_text(&bad["remember_nothing"], "nothing to remember");
    error_text(&bad["remember_bad_role"], "messages[0].role");
    error_text(&bad["forget_both"], "exactly one");
    error_text(&bad["forget_unknown_id"], "no-such-memory");
    error_text(&bad["feedback_bad_reward"], "reward");
    error_text(&bad["no_user"], "user");
    assert_eq!(
        bad["unknown_tool"]["code"], -32602,
        "{}",
        bad["unknown_tool"]
    );
    assert!(bad["unknown_tool"]["message"]
        .as_str()
        .unwrap()
        .contains("teleport"));

    // forget removes the message
    succeeded(&seen["forget_one"]);
    assert!(
        !mentions(&seen["recall_after_forget"], &marker),
        "still recalled after forget: {}",
        seen["recall_after_forget"]
    );

    // a wrong key gets nowhere
    assert_eq!(
        seen["wrong_key"]["connected"], false,
        "{}",
        seen["wrong_key"]
    );
    assert_eq!(
        seen["stdio_wrong_key"]["connected"], false,
        "{}",
        seen["stdio_wrong_key"]
    );

    // the MCP reads are in the tenant's audit log
    let (status, audit) = server.get_as(Some(&key), "/v1/audit");
    assert_eq!(status, 200, "{audit}");
    assert!(audit.contains("MCP tools/call recall"), "{audit}");
    assert!(audit.contains("MCP tools/call forget"), "{audit}");

    check_transport(&seen["raw"]);
    check_stdio(&seen, &marker);
}

/// The streamable HTTP transport's rules, as plain HTTP saw them.
fn check_transport(raw: &Value) {
    assert_eq!(raw["wrong_key"]["status"], 401, "{}", raw["wrong_key"]);
    let init = &raw["initialize_old_version"];
    assert_eq!(init["status"], 200, "{init}");
    assert_eq!(init["body"]["result"]["protocolVersion"], "2025-03-26");
    assert!(
        init["session"].as_str().is_some_and(|s| s.len() >= 16),
        "{init}"
    );
    for (case, status, code) in [
        ("no_session", 400, -32600),
        ("unknown_session", 404, -32600),
        ("bad_version", 400, -32600),
        ("not_json", 400, -32700),
        ("get", 405, -32600),
        ("after_delete", 404, -32600),
        ("other_tenant_session", 404, -32600),
    ] {
        assert_eq!(raw[case]["status"], status, "{case}: {}", raw[case]);
        assert_eq!(
            raw[case]["body"]["error"]["code"], code,
            "{case}: {}",
            raw[case]
        );
    }
    assert_eq!(raw["unknown_method"]["status"], 200);
    assert_eq!(raw["unknown_method"]["body"]["error"]["code"], -32601);
    assert_eq!(
        raw["notification"]["status"], 202,
        "{}",
        raw["notification"]
    );
    assert_eq!(raw["delete"]["status"], 204, "{}", raw["delete"]);
}

/// `engram mcp`: the same tools through the stdio relay.
fn check_stdio(seen: &Value, marker: &str) {
    let expected: Vec<&str> = TOOLS.split(' ').collect();
    assert_eq!(seen["stdio_tools"], json!(expected));
    succeeded(&seen["stdio_remember"]);
    assert!(
        mentions(&seen["stdio_recall"], &format!("{marker}bike")),
        "{}",
        seen["stdio_recall"]
    );
    error_text(&seen["stdio_bad"], "query");
    succeeded(&seen["stdio_erase"]);
    assert!(
        recalled(&seen["stdio_recall_after_erase"]).is_empty(),
        "carol was erased: {}",
        seen["stdio_recall_after_erase"]
    );
}
