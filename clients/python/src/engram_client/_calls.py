"""Each route's request, built once for the sync and the async clients, and the decoding of
answers (an error status becomes the matching exception)."""

from __future__ import annotations

import datetime as _dt
import json
import uuid
from dataclasses import dataclass, field
from typing import Any, Dict, Generic, Iterable, List, Mapping, Optional, Sequence, TypeVar, Union
from urllib.parse import quote

import httpx

from .errors import error_from_response
from .types import (AnswerProvenance, AssembledPrompt, AuditPage, ChatAnswer, Context,
                    ErasureReceipt, FeedbackReceipt, IngestReport, Message, RecallResponse,
                    Rectification, Status, TenantInfo, TenantKey, Traversal, UserMemory)

Json = Any
#: One event (a JSON object) or a list of them.
Events = Union[Mapping[str, Any], Sequence[Mapping[str, Any]]]
Timestamp = Union[str, _dt.datetime]

#: Bounded by default: connecting, each read (a streamed answer's pause between pieces
#: included; engram sends a keep-alive every 15 s) and each write. A chat waits on a model
#: server, so its reads get longer.
DEFAULT_TIMEOUT = httpx.Timeout(30.0, connect=5.0)
CHAT_TIMEOUT = httpx.Timeout(120.0, connect=5.0)


T = TypeVar("T")


@dataclass
class Call(Generic[T]):
    """One request: method, path, JSON body, query parameters; ``T`` is its answer's type."""

    method: str
    path: str
    body: Json = None
    params: Dict[str, Any] = field(default_factory=dict)
    timeout: Optional[httpx.Timeout] = None

    def request_args(self, client_timeout_given: bool = False) -> Dict[str, Any]:
        """httpx's request arguments; the call's own timeout (a chat's) unless the client was
        given one, which then bounds every call."""
        args: Dict[str, Any] = {"params": self.params or None}
        if self.body is not None:
            args["json"] = self.body
        if self.timeout is not None and not client_timeout_given:
            args["timeout"] = self.timeout
        return args


def read_body(response: httpx.Response) -> Json:
    """The answer's JSON (its text when not JSON, ``None`` when empty); the body must have
    been read."""
    if not response.content:
        return None
    if "json" in response.headers.get("content-type", ""):
        try:
            return response.json()
        except json.JSONDecodeError:
            pass
    return response.text


def decode(response: httpx.Response) -> Json:
    """The answer's body, or the exception its error status maps to."""
    body = read_body(response)
    if response.status_code >= 400:
        raise error_from_response(response, body)
    return body


def _drop_none(body: Mapping[str, Any]) -> Dict[str, Any]:
    """The body without the fields left unset (the server's defaults then apply)."""
    return {k: v for k, v in body.items() if v is not None}


def _timestamp(ts: Optional[Timestamp]) -> Optional[str]:
    if isinstance(ts, _dt.datetime):
        if ts.tzinfo is None:
            raise ValueError("timestamps need a time zone (e.g. datetime.now(timezone.utc))")
        return ts.isoformat()
    return ts


def _segment(value: str) -> str:
    """A path segment, escaped (ids may hold ``:``, ``@`` or ``+``)."""
    return quote(value, safe="")


# --- tenant routes -------------------------------------------------------------------------


def events(events: Events) -> Call[IngestReport]:
    body = dict(events) if isinstance(events, Mapping) else [dict(e) for e in events]
    return Call("POST", "/v1/events", body)


def interaction_events(
    tenant: str,
    user: str,
    session: str,
    messages: Iterable[Message],
    *,
    start: Optional[_dt.datetime] = None,
    id_prefix: Optional[str] = None,
) -> List[Dict[str, Any]]:
    """Interaction events for a conversation: one per message, a microsecond apart (so their
    order is the messages'), ids ``{prefix}-{n}`` with a fresh prefix unless given."""
    start = start or _dt.datetime.now(_dt.timezone.utc)
    prefix = id_prefix or f"{session}-{uuid.uuid4().hex[:12]}"
    out = []
    for n, message in enumerate(messages):
        event: Dict[str, Any] = {
            "kind": "interaction",
            "event_id": f"{prefix}-{n}",
            "tenant": tenant,
            "user": user,
            "session": session,
            "ts": (start + _dt.timedelta(microseconds=n)).isoformat(),
        }
        event.update(dict(message))
        out.append(event)
    return out


def recall(
    tenant: Optional[str],
    user: str,
    query: str,
    *,
    k: Optional[int] = None,
    as_of: Optional[Timestamp] = None,
    include_domain: Optional[bool] = None,
    include_archived: Optional[bool] = None,
    traversal: Optional[Traversal] = None,
) -> Call[RecallResponse]:
    body = {"tenant": tenant, "user": user, "query": query, "k": k,
            "as_of": _timestamp(as_of), "include_domain": include_domain,
            "include_archived": include_archived, "traversal": traversal}
    return Call("POST", "/v1/recall", _drop_none(body))


def memory(tenant: Optional[str], user: str,
           as_of: Optional[Timestamp] = None) -> Call[UserMemory]:
    return Call("POST", "/v1/memory",
                _drop_none({"tenant": tenant, "user": user, "as_of": _timestamp(as_of)}))


def prompt_body(
    tenant: Optional[str],
    user: str,
    query: str,
    *,
    session: Optional[str] = None,
    context: Optional[Context] = None,
    skill_id: Optional[str] = None,
    budget_tokens: Optional[int] = None,
    as_of: Optional[Timestamp] = None,
    seed: Optional[int] = None,
    enable_thinking: Optional[bool] = None,
    situation: Optional[str] = None,
) -> Dict[str, Any]:
    return _drop_none({
        "tenant": tenant, "user": user, "query": query, "session": session,
        "context": context, "skill_id": skill_id, "budget_tokens": budget_tokens,
        "as_of": _timestamp(as_of), "seed": seed, "enable_thinking": enable_thinking,
        "situation": situation,
    })


def prompt(tenant: Optional[str], user: str, query: str, **options: Any) -> Call[AssembledPrompt]:
    return Call("POST", "/v1/prompt", prompt_body(tenant, user, query, **options))


def chat(
    tenant: Optional[str],
    user: str,
    session: str,
    query: str,
    *,
    exchange_id: Optional[str] = None,
    stream: bool = False,
    **options: Any,
) -> Call[ChatAnswer]:
    body = prompt_body(tenant, user, query, session=session, **options)
    body.update(_drop_none({"exchange_id": exchange_id, "stream": stream or None}))
    return Call("POST", "/v1/chat", body, timeout=CHAT_TIMEOUT)


def feedback(
    tenant: Optional[str],
    user: str,
    message_id: str,
    skill_id: str,
    reward: int,
    *,
    context: Optional[Context] = None,
    session: Optional[str] = None,
    reason: Optional[str] = None,
    free_text: Optional[str] = None,
    event_id: Optional[str] = None,
) -> Call[FeedbackReceipt]:
    body = {"tenant": tenant, "user": user, "message_id": message_id, "skill_id": skill_id,
            "reward": reward, "context": context, "session": session, "reason": reason,
            "free_text": free_text, "event_id": event_id}
    return Call("POST", "/v1/feedback", _drop_none(body))


def export(tenant: Optional[str], user: str) -> Call[Dict[str, Any]]:
    return Call("POST", "/v1/export", _drop_none({"tenant": tenant, "user": user}))


def erase(tenant: Optional[str], user: str) -> Call[ErasureReceipt]:
    return Call("POST", "/v1/erase", _drop_none({"tenant": tenant, "user": user}))


def forget_memory(user: str, memory_id: str) -> Call[ErasureReceipt]:
    return Call("DELETE", f"/v1/memories/{_segment(memory_id)}", params={"user": user})


def rectify_fact(user: str, fact_id: str, value: str) -> Call[Rectification]:
    return Call("PATCH", f"/v1/memories/{_segment(fact_id)}", {"user": user, "value": value})


def answer_provenance(user: str, message_id: str) -> Call[AnswerProvenance]:
    return Call("GET", f"/v1/messages/{_segment(message_id)}/provenance", params={"user": user})


def audit(since: int = 0, limit: Optional[int] = None) -> Call[AuditPage]:
    return Call("GET", "/v1/audit", params=_drop_none({"since": since, "limit": limit}))


def dashboard_stream(user: Optional[str] = None) -> Call[None]:
    return Call("GET", "/v1/dashboard/stream", params=_drop_none({"user": user}))


# --- routes any key (or none) may call ----------------------------------------------------


def status() -> Call[Status]:
    return Call("GET", "/v1/status")


def health() -> Call[str]:
    return Call("GET", "/healthz")


def metrics() -> Call[str]:
    return Call("GET", "/metrics")


def openapi() -> Call[Dict[str, Any]]:
    return Call("GET", "/v1/openapi.json")


# --- admin routes ------------------------------------------------------------------------


def create_tenant(tenant: str) -> Call[TenantKey]:
    return Call("POST", "/v1/admin/tenants", {"tenant": tenant})


def list_tenants() -> Call[Dict[str, List[TenantInfo]]]:
    return Call("GET", "/v1/admin/tenants")


def erase_tenant(tenant: str) -> Call[ErasureReceipt]:
    return Call("DELETE", f"/v1/admin/tenants/{_segment(tenant)}")


def issue_key(tenant: str) -> Call[TenantKey]:
    return Call("POST", f"/v1/admin/tenants/{_segment(tenant)}/keys")


def revoke_key(tenant: str, key_id: str) -> Call[None]:
    return Call("DELETE", f"/v1/admin/tenants/{_segment(tenant)}/keys/{_segment(key_id)}")


def tenant_audit(tenant: str, since: int = 0, limit: Optional[int] = None) -> Call[AuditPage]:
    params = _drop_none({"since": since, "limit": limit})
    return Call("GET", f"/v1/admin/tenants/{_segment(tenant)}/audit", params=params)


def admin_events(events_: Events) -> Call[IngestReport]:
    call = events(events_)
    call.path = "/v1/admin/events"
    return call
