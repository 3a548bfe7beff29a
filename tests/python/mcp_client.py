"""Drives engram's MCP server with the official MCP Python SDK (`mcp` on PyPI), as an agent
would: over streamable HTTP at <base>/mcp, and over stdio through `engram mcp`.

Usage: mcp_client.py CONFIG_JSON, where CONFIG_JSON holds base (engram's URL), key (tenant A's
API key), other_key (tenant B's), engram (the binary), marker (a word no other test writes).

It asserts nothing itself: it prints one JSON object of what the client saw (the tool list,
each call's result or error) and tests/tests/mcp.rs asserts on it, so every check names what
engram did.
"""

import asyncio
import json
import sys
import traceback

import httpx2
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client


def result_json(result):
    """A CallToolResult as the wire shows it: content, isError, structuredContent."""
    return result.model_dump(by_alias=True, mode="json", exclude_none=True)


async def outcome(call):
    """A tool call's result, or the exception the client raised for it."""
    try:
        return result_json(await call)
    except Exception as err:  # noqa: BLE001 - the test asserts on which error it was
        return {"raised": type(err).__name__, "message": str(err), "code": getattr(getattr(err, "error", None), "code", None)}


def texts(result):
    """Every recalled turn's content in a recall result (empty for an error)."""
    found = result.get("structuredContent", {}).get("results", [])
    return [hit["content"] for hit in found]


def http_client(key):
    return httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=60)


def over_http(base, key):
    """A client of <base>/mcp with this key (the SDK's default, auto-negotiating mode)."""
    return Client(streamable_http_client(f"{base}/mcp", http_client=http_client(key)))


async def recall_until(client, user, query, marker, present, tries=40):
    """Recalls until the marker is (or is no longer) in the results, or tries run out."""
    result = {}
    for _ in range(tries):
        result = await outcome(client.call_tool("recall", {"user": user, "query": query, "k": 5}))
        if any(marker in t for t in texts(result)) == present:
            break
        await asyncio.sleep(0.25)
    return result


async def http_session(cfg, seen):
    marker = cfg["marker"]
    said = f"My cat is called {marker} and she sleeps on the piano"
    async with http_client(cfg["key"]) as http, Client(
        streamable_http_client(f"{cfg['base']}/mcp", http_client=http)
    ) as client:
        seen["protocol_version"] = client.protocol_version
        seen["server_name"] = client.server_info.name if client.server_info else None
        seen["instructions"] = client.instructions
        listed = await client.list_tools()
        seen["tools"] = [t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in listed.tools]
        seen["ping"] = (await client.send_ping()).model_dump(mode="json")

        remembered = await outcome(client.call_tool("remember", {
            "user": "alice", "session": "s1",
            "messages": [{"role": "user", "content": said},
                         {"role": "assistant", "content": "Noted: your cat sleeps on the piano."}],
            "facts": [{"subject": "user", "attribute": "home city", "value": f"Lisbon{marker}"}],
        }))
        seen["remember"] = remembered
        ids = remembered.get("structuredContent", {}).get("event_ids", [])
        seen["recall_alice"] = await recall_until(client, "alice", "what is my cat called", marker, True)
        seen["recall_bob"] = await outcome(client.call_tool("recall", {"user": "bob", "query": "what is my cat called"}))
        seen["memory_alice"] = await outcome(client.call_tool("memory", {"user": "alice"}))
        seen["build_prompt"] = await outcome(client.call_tool("build_prompt", {"user": "alice", "query": "where does my cat sleep?", "session": "s1"}))
        if len(ids) >= 2:
            seen["feedback"] = await outcome(client.call_tool("feedback", {"user": "alice", "message_id": ids[1], "skill_id": "default", "reward": 1}))

        seen["bad"] = {
            "recall_without_query": await outcome(client.call_tool("recall", {"user": "alice"})),
            "remember_nothing": await outcome(client.call_tool("remember", {"user": "alice"})),
            "remember_bad_role": await outcome(client.call_tool("remember", {"user": "alice", "messages": [{"role": "narrator", "content": "x"}]})),
            "forget_both": await outcome(client.call_tool("forget", {"user": "alice", "memory_id": "x", "all_memories": True})),
            "forget_unknown_id": await outcome(client.call_tool("forget", {"user": "alice", "memory_id": "no-such-memory"})),
            "feedback_bad_reward": await outcome(client.call_tool("feedback", {"user": "alice", "message_id": "m", "skill_id": "default", "reward": 7})),
            "no_user": await outcome(client.call_tool("memory", {})),
            "unknown_tool": await outcome(client.call_tool("teleport", {"user": "alice"})),
        }

        if ids:
            seen["forget_one"] = await outcome(client.call_tool("forget", {"user": "alice", "memory_id": ids[0]}))
            seen["recall_after_forget"] = await recall_until(client, "alice", "what is my cat called", marker, False)


async def other_tenant(cfg, seen):
    """Tenant B's key, asking for tenant A's user by name."""
    async with http_client(cfg["other_key"]) as http, Client(
        streamable_http_client(f"{cfg['base']}/mcp", http_client=http)
    ) as client:
        seen["recall_other_tenant"] = await outcome(client.call_tool("recall", {"user": "alice", "query": "what is my cat called"}))


async def wrong_key(cfg, seen):
    try:
        async with http_client("not-a-key") as http, Client(
            streamable_http_client(f"{cfg['base']}/mcp", http_client=http)
        ) as client:
            await client.list_tools()
            seen["wrong_key"] = {"connected": True}
    except BaseException as err:  # noqa: BLE001 - an ExceptionGroup from the SDK's task group included
        seen["wrong_key"] = {"connected": False, "raised": type(err).__name__, "message": str(err)}


async def raw_transport(cfg, seen):
    """The transport's rules, seen as plain HTTP: sessions, versions, GET."""
    url = f"{cfg['base']}/mcp"
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-03-26", "capabilities": {},
                       "clientInfo": {"name": "raw", "version": "0"}}}
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    async with http_client(cfg["key"]) as http:
        def shown(resp):
            try:
                body = resp.json()
            except ValueError:
                body = resp.text
            return {"status": resp.status_code, "body": body,
                    "session": resp.headers.get("mcp-session-id")}
        seen["raw"] = raw = {}
        raw["wrong_key"] = shown(await httpx2.AsyncClient().post(url, json=init, headers={"Authorization": "Bearer nope"}))
        raw["initialize_old_version"] = first = shown(await http.post(url, json=init))
        session = first["session"]
        raw["no_session"] = shown(await http.post(url, json=listing))
        raw["unknown_session"] = shown(await http.post(url, json=listing, headers={"mcp-session-id": "f" * 32}))
        raw["bad_version"] = shown(await http.post(url, json=listing, headers={"mcp-session-id": session, "mcp-protocol-version": "1999-01-01"}))
        raw["not_json"] = shown(await http.post(url, content=b"{oops", headers={"mcp-session-id": session}))
        raw["unknown_method"] = shown(await http.post(url, json={"jsonrpc": "2.0", "id": 3, "method": "resources/list"}, headers={"mcp-session-id": session}))
        raw["notification"] = shown(await http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers={"mcp-session-id": session}))
        raw["get"] = shown(await http.get(url, headers={"mcp-session-id": session}))
        raw["delete"] = shown(await http.delete(url, headers={"mcp-session-id": session}))
        raw["after_delete"] = shown(await http.post(url, json=listing, headers={"mcp-session-id": session}))
        raw["other_tenant_session"] = None
        async with http_client(cfg["other_key"]) as other:
            mine = shown(await http.post(url, json=init))
            raw["other_tenant_session"] = shown(await other.post(url, json=listing, headers={"mcp-session-id": mine["session"]}))


async def over_stdio(cfg, seen):
    """`engram mcp` as a desktop agent starts it: a subprocess speaking MCP on stdin/stdout."""
    params = StdioServerParameters(
        command=cfg["engram"],
        args=["mcp", "--url", cfg["base"]],
        env={"ENGRAM_API_KEY": cfg["key"], "ENGRAM_LOG": "warn"},
    )
    async with Client(params) as client:
        listed = await client.list_tools()
        seen["stdio_tools"] = [t.name for t in listed.tools]
        seen["stdio_remember"] = await outcome(client.call_tool("remember", {
            "user": "carol", "messages": [{"role": "user", "content": f"My bicycle is named {cfg['marker']}bike"}]}))
        seen["stdio_recall"] = await recall_until(client, "carol", "what is my bicycle named", cfg["marker"], True)
        seen["stdio_bad"] = await outcome(client.call_tool("recall", {"user": "carol"}))
        seen["stdio_erase"] = await outcome(client.call_tool("forget", {"user": "carol", "all_memories": True}))
        seen["stdio_recall_after_erase"] = await recall_until(client, "carol", "what is my bicycle named", cfg["marker"], False)
    bad = StdioServerParameters(command=cfg["engram"], args=["mcp", "--url", cfg["base"]],
                                env={"ENGRAM_API_KEY": "not-a-key", "ENGRAM_LOG": "warn"})
    try:
        async with Client(bad) as client:
            await client.list_tools()
            seen["stdio_wrong_key"] = {"connected": True}
    except BaseException as err:  # noqa: BLE001
        seen["stdio_wrong_key"] = {"connected": False, "raised": type(err).__name__, "message": str(err)}


async def main():
    cfg = json.loads(sys.argv[1])
    seen = {}
    for step in (http_session, other_tenant, wrong_key, raw_transport, over_stdio):
        try:
            await asyncio.wait_for(step(cfg, seen), timeout=120)
        except BaseException as err:  # noqa: BLE001 - recorded; the Rust test says which step failed
            seen.setdefault("step_errors", {})[step.__name__] = "".join(traceback.format_exception(err))
    print(json.dumps(seen))


if __name__ == "__main__":
    asyncio.run(main())
