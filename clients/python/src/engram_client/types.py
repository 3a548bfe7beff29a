"""The shapes of engram's requests and answers, as typed dictionaries.

Answers are returned as the JSON the server sent (plain ``dict``s), typed here so editors and
type checkers know their fields; fields the server may leave out are in the ``total=False``
parts. Deeper parts that carry scoring detail are ``Dict[str, Any]``.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

try:  # Literal and TypedDict are in typing from 3.8
    from typing import Literal, TypedDict
except ImportError:  # pragma: no cover
    from typing_extensions import Literal, TypedDict  # type: ignore

Role = Literal["user", "assistant", "system", "tool"]
Reward = Literal[-1, 0, 1]


class Message(TypedDict):
    """One turn of a conversation, for :meth:`Engram.remember`."""

    role: str
    content: str


class Context(TypedDict, total=False):
    """The skill's trigger and context bucket: missing parts default on the server."""

    intent: str
    sentiment: str
    time_of_day: str


class Rejection(TypedDict):
    index: int
    field: str
    reason: str


class IngestReport(TypedDict, total=False):
    """``POST /v1/events``: what was stored."""

    accepted: int
    duplicates: int
    rejected: List[Rejection]
    first_offset: int
    log_end: int


class Traversal(TypedDict, total=False):
    """``POST /v1/recall``'s ``traversal``: a walk over the user's memory graph, any field in
    place of ``recall.traversal``'s (docs/configuration.md)."""

    walk: Literal["none", "bfs", "beam", "a_star"]
    max_depth: int
    max_breadth: int
    max_vertices: int
    beam_width: int
    seed_episodes: int
    goal_similarity: float
    hub_share: float
    vertex_kinds: List[str]
    edge_kinds: List[str]
    weight: float


class _RecallHitBase(TypedDict):
    id: str
    event_id: str
    role: str
    content: str
    ts: str
    score: float
    why: Dict[str, Any]


class RecallHit(_RecallHitBase, total=False):
    session: str
    prev_id: str
    next_id: str
    domain: bool


class FactHit(TypedDict, total=False):
    fact_id: str
    subject: str
    attribute: str
    value: str
    valid_from: str
    valid_to: str
    superseded_by: str
    current: bool
    score: float
    why: Dict[str, Any]
    domain: bool


class SummaryHit(TypedDict, total=False):
    id: str
    event_id: str
    ts: str
    content: str
    covers: List[str]
    score: float
    why: Dict[str, Any]
    domain: bool


class RecallResponse(TypedDict):
    """``POST /v1/recall``: episodes (turns), facts and summaries, best first."""

    results: List[RecallHit]
    facts: List[FactHit]
    summaries: List[SummaryHit]
    views_as_of: int
    took_ms: float


class Fact(TypedDict, total=False):
    """A fact version in a user's memory (every version, with its validity)."""

    id: str
    subject: str
    attribute: str
    value: str
    current: bool
    evidence: str
    valid_from: str
    valid_to: Optional[str]
    superseded_by: Optional[str]


class UserMemory(TypedDict, total=False):
    """``POST /v1/memory``: what engram knows about one user, at one view timestamp."""

    tenant: str
    user: str
    views_as_of: int
    engine_time: str
    facts: List[Fact]
    entities: List[Dict[str, Any]]
    co_mentions: List[Dict[str, Any]]
    edges: List[Dict[str, Any]]
    corrections: List[Dict[str, Any]]
    #: ids of corrections too unsure to learn from, oldest first
    needs_clarification: List[str]
    correction_clusters: List[Dict[str, Any]]
    preferences: List[Dict[str, Any]]
    stated_preferences: List[Dict[str, Any]]
    skills: List[Dict[str, Any]]
    skill_confidence: Dict[str, Any]
    marks: List[Dict[str, Any]]
    style: Optional[Dict[str, Any]]
    summaries: List[Dict[str, Any]]
    #: typed edges an extractor read (subject, relation, object), with their evidence episodes
    relations: List[Dict[str, Any]]
    team: Optional[Any]


class ChatMessage(TypedDict):
    role: str
    content: str


class SectionTokens(TypedDict):
    system: int
    few_shot: int
    memory: int
    recent_turns: int
    query: int
    total: int


class Provenance(TypedDict):
    """Where every part of an assembled prompt came from."""

    preferences: List[Dict[str, Any]]
    session_corrections: List[str]
    #: this session's corrections too unsure to act on: the model is to ask about them
    unclear_corrections: List[str]
    few_shot: List[Dict[str, Any]]
    facts: List[Dict[str, Any]]
    summaries: List[Dict[str, Any]]
    memories: List[Dict[str, Any]]
    recent_turns: List[str]
    skill: Optional[Dict[str, Any]]


class AssembledPrompt(TypedDict):
    """``POST /v1/prompt``: the rendered prompt, as text and as chat messages."""

    prompt: str
    messages: List[ChatMessage]
    tokens: SectionTokens
    budget_tokens: int
    dropped: Dict[str, int]
    provenance: Provenance
    views_as_of: int
    consistent: bool
    took_ms: float


class Stored(TypedDict):
    accepted: int
    duplicates: int
    log_end: int


class ChatAnswer(TypedDict):
    """``POST /v1/chat``: the answer, the id to give feedback on, and the prompt's provenance."""

    answer: str
    message_id: str
    query_event_id: str
    skill_id: str
    tokens: SectionTokens
    provenance: Provenance
    #: one sentence on why the answer was built that way (also kept: ``Engram.provenance``)
    explanation: str
    stored: Stored


class FeedbackReceipt(TypedDict):
    event_id: str
    accepted: int
    duplicates: int
    log_end: int


class ErasureReceipt(TypedDict, total=False):
    """``POST /v1/erase``, ``DELETE /v1/memories/{id}``, ``DELETE /v1/admin/tenants/{t}``."""

    erase_event_id: str
    offset: int
    tenant: str
    user: Optional[str]
    target_event_id: str
    log_records_redacted: int
    events_redacted: int
    rejections_removed: int
    episodes_erased: int
    passages_erased: int
    facts_erased: int
    summaries_erased: int
    tenant_keys_removed: bool
    completed_at: str
    took_ms: float
    #: ``DELETE /v1/memories/{id}`` only: the memory named and the event behind it.
    memory: Dict[str, str]


class Rectification(TypedDict):
    """``PATCH /v1/memories/{id}``: the new fact version superseding the old one."""

    fact_id: str
    supersedes: str
    subject: str
    attribute: str
    value: str
    event_id: str
    offset: int


class AnswerProvenance(TypedDict):
    """``GET /v1/messages/{id}/provenance``: why an answer engram built was built that way."""

    message_id: str
    session: Optional[str]
    ts: str
    skill_id: Optional[str]
    #: the prompt's provenance when the answer was built (as ``/v1/chat`` returned it)
    provenance: Dict[str, Any]
    #: one sentence a person can read
    explanation: str


class AuditRecord(TypedDict, total=False):
    seq: int
    at: str
    tenant: str
    key_id: str
    action: str
    user: Optional[str]
    route: str
    status: int


class AuditPage(TypedDict):
    """A page of the audit log, oldest first; ``next_since`` is the next page's ``since``."""

    tenant: str
    records: List[AuditRecord]
    next_since: int


class Status(TypedDict, total=False):
    """``GET /v1/status``: ``view`` is ``public`` (no key), ``tenant`` or ``operator``."""

    view: str
    up: bool
    uptime_seconds: float
    tenant: str
    users: int
    episodes: int
    episodes_stored: int
    pending_episodes: int
    tenants: Dict[str, Any]


class TenantKey(TypedDict):
    """A new API key (the secret is shown only here)."""

    tenant: str
    api_key: str


class KeyInfo(TypedDict):
    key_id: str
    created: str


class TenantInfo(TypedDict):
    tenant: str
    created: str
    keys: List[KeyInfo]


class ServerSentEvent(TypedDict):
    """One event of a stream: its name and its JSON data."""

    event: str
    data: Any
