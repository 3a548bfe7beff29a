"""Every route of the server's own OpenAPI document has a call in the client (but those other
clients serve: the OpenAI-compatible endpoint, MCP, and the dashboard's web page)."""

from __future__ import annotations

from urllib.parse import unquote

from engram_client import Engram
from engram_client import _calls as calls

#: Served by other clients: the openai SDK, an MCP client, a browser.
NOT_WRAPPED = {"/v1/chat/completions", "/v1/models", "/mcp", "/dashboard"}

#: One call of each builder, path parameters named as the document names them.
BUILT = [
    calls.events([]), calls.recall(None, "u", "q"), calls.memory(None, "u"),
    calls.prompt(None, "u", "q"), calls.chat(None, "u", "s", "q"),
    calls.feedback(None, "u", "m", "s", 1), calls.export(None, "u"), calls.erase(None, "u"),
    calls.forget_memory("u", "{id}"), calls.rectify_fact("u", "{id}", "v"), calls.audit(),
    calls.answer_provenance("u", "{id}"),
    calls.dashboard_stream(), calls.status(), calls.health(), calls.metrics(), calls.openapi(),
    calls.create_tenant("t"), calls.list_tenants(), calls.erase_tenant("{tenant}"),
    calls.issue_key("{tenant}"), calls.revoke_key("{tenant}", "{key_id}"),
    calls.tenant_audit("{tenant}"), calls.admin_events([]),
]


def test_every_documented_route_has_a_call(engram: Engram) -> None:
    documented = {(method.upper(), path)
                  for path, methods in engram.openapi()["paths"].items()
                  if path not in NOT_WRAPPED
                  for method in methods}
    wrapped = {(call.method, unquote(call.path)) for call in BUILT}
    assert documented - wrapped == set(), "routes the client lacks"
    assert wrapped - documented == set(), "calls of routes the server does not document"
