""":class:`Engram`: the tenant API, synchronously."""

from __future__ import annotations

import datetime as _dt
import os
from typing import Any, Dict, Iterable, Optional

import httpx

from . import _calls as calls
from ._calls import DEFAULT_TIMEOUT, Events, Timestamp
from ._http import SyncTransport, TimeoutArg
from .streams import ChatStream, EventStream
from .types import (AnswerProvenance, AssembledPrompt, AuditPage, ChatAnswer, Context,
                    ErasureReceipt, FeedbackReceipt, IngestReport, Message, RecallResponse,
                    Rectification, Status, Traversal, UserMemory)


class Engram(SyncTransport):
    """A tenant's client: ``Engram("http://127.0.0.1:8687", api_key="engram_…")``.

    The key (default: ``$ENGRAM_API_KEY``) names the tenant; ``tenant`` need not be given (the
    server fills it in), and when it is, the server checks it against the key (``Forbidden``
    otherwise). Every call raises an :class:`~engram_client.EngramError` subclass on failure.
    ``timeout`` (seconds, or an ``httpx.Timeout``) bounds each request; by default 30 s for
    each read or write, and 120 s for a chat's reads (it waits on the model server).
    """

    def __init__(self, base_url: Optional[str] = None, api_key: Optional[str] = None, *,
                 tenant: Optional[str] = None, timeout: TimeoutArg = DEFAULT_TIMEOUT,
                 http_client: Optional[httpx.Client] = None):
        super().__init__(base_url, api_key or os.environ.get("ENGRAM_API_KEY"), timeout,
                         http_client)
        self._tenant = tenant
        self._tenant_of_key: Optional[str] = tenant

    def tenant(self) -> str:
        """The key's tenant (asked of ``/v1/status`` once, unless given)."""
        if self._tenant_of_key is None:
            self._tenant_of_key = self.status()["tenant"]
        return self._tenant_of_key

    # --- writing memory ----------------------------------------------------------------

    def add_events(self, events: Events) -> IngestReport:
        """Stores events (SPEC §2: interaction, correction, feedback, fact, summary, control).
        Raises :class:`~engram_client.EventsRejected` (with the report) if any was rejected:
        the others were stored."""
        return self._send(calls.events(events))

    def remember(self, user: str, session: str, messages: Iterable[Message], *,
                 start: Optional[_dt.datetime] = None, id_prefix: Optional[str] = None
                 ) -> IngestReport:
        """Stores a conversation: each message (``role``, ``content``, any other interaction
        field) as an interaction event of ``session``, in order, dated from ``start`` (now)."""
        events = calls.interaction_events(self.tenant(), user, session, messages,
                                          start=start, id_prefix=id_prefix)
        return self.add_events(events)

    def feedback(self, user: str, message_id: str, skill_id: str, reward: int, *,
                 context: Optional[Context] = None, session: Optional[str] = None,
                 reason: Optional[str] = None, free_text: Optional[str] = None,
                 event_id: Optional[str] = None) -> FeedbackReceipt:
        """A thumbs up (1), neutral (0) or down (-1) on an answer (``message_id`` and
        ``skill_id`` as a chat returned them)."""
        return self._send(calls.feedback(
            self._tenant, user, message_id, skill_id, reward, context=context,
            session=session, reason=reason, free_text=free_text, event_id=event_id))

    # --- reading memory ----------------------------------------------------------------

    def recall(self, user: str, query: str, *, k: Optional[int] = None,
               as_of: Optional[Timestamp] = None, include_domain: Optional[bool] = None,
               include_archived: Optional[bool] = None,
               traversal: Optional[Traversal] = None) -> RecallResponse:
        """The user's turns, facts and summaries closest to ``query``, best first; with
        ``traversal`` (``{"walk": "bfs" | "beam" | "a_star", "max_depth": …}``) also a walk over
        the user's memory graph, each turn it reached with its path in ``why["walk"]``."""
        return self._send(calls.recall(self._tenant, user, query, k=k, as_of=as_of,
                                       include_domain=include_domain,
                                       include_archived=include_archived,
                                       traversal=traversal))

    def memory(self, user: str, *, as_of: Optional[Timestamp] = None) -> UserMemory:
        """What engram knows about the user: facts (every version), entities, preferences,
        skills, style…; with ``as_of`` (an event time) the graph's time-stamped parts as they
        stood then."""
        return self._send(calls.memory(self._tenant, user, as_of))

    def prompt(self, user: str, query: str, *, session: Optional[str] = None,
               context: Optional[Context] = None, skill_id: Optional[str] = None,
               budget_tokens: Optional[int] = None, as_of: Optional[Timestamp] = None,
               seed: Optional[int] = None, enable_thinking: Optional[bool] = None,
               situation: Optional[str] = None) -> AssembledPrompt:
        """The prompt for ``query`` with the user's memory, within ``budget_tokens``, as text
        and as chat messages, with where each part came from."""
        return self._send(calls.prompt(
            self._tenant, user, query, session=session, context=context, skill_id=skill_id,
            budget_tokens=budget_tokens, as_of=as_of, seed=seed,
            enable_thinking=enable_thinking, situation=situation))

    # --- chat --------------------------------------------------------------------------

    def chat(self, user: str, session: str, query: str, *, exchange_id: Optional[str] = None,
             context: Optional[Context] = None, skill_id: Optional[str] = None,
             budget_tokens: Optional[int] = None, seed: Optional[int] = None,
             situation: Optional[str] = None) -> ChatAnswer:
        """Asks the server's configured chat model with the user's memory; the exchange is
        stored in ``session`` (query ``{exchange_id}.q``, answer ``{exchange_id}.a``)."""
        return self._send(calls.chat(
            self._tenant, user, session, query, exchange_id=exchange_id, context=context,
            skill_id=skill_id, budget_tokens=budget_tokens, seed=seed, situation=situation))

    def chat_stream(self, user: str, session: str, query: str, *,
                    exchange_id: Optional[str] = None, context: Optional[Context] = None,
                    skill_id: Optional[str] = None, budget_tokens: Optional[int] = None,
                    seed: Optional[int] = None, situation: Optional[str] = None
                    ) -> ChatStream:
        """The chat's answer as it comes: ``with client.chat_stream(...) as s: for piece in
        s.text(): …``; then ``s.done`` holds the stored answer and ``s.prompt`` the ids and
        provenance."""
        call = calls.chat(
            self._tenant, user, session, query, exchange_id=exchange_id, stream=True,
            context=context, skill_id=skill_id, budget_tokens=budget_tokens, seed=seed,
            situation=situation)
        return ChatStream(self._http, call, self._timeout_given)

    # --- a user's data: export, erase, forget, rectify ---------------------------------

    def export(self, user: str) -> Dict[str, Any]:
        """The user's whole subgraph: episodes and every view."""
        return self._send(calls.export(self._tenant, user))

    def erase(self, user: str) -> ErasureReceipt:
        """Erases the user everywhere; answers once done."""
        return self._send(calls.erase(self._tenant, user))

    def forget(self, user: str, memory_id: str) -> ErasureReceipt:
        """Forgets one memory (an event id, or an episode, summary or fact id) and all that
        was derived from the event behind it."""
        return self._send(calls.forget_memory(user, memory_id))

    def rectify(self, user: str, fact_id: str, value: str) -> Rectification:
        """Replaces the current value of a fact (``fact_id``: its current version's id)."""
        return self._send(calls.rectify_fact(user, fact_id, value))

    def provenance(self, user: str, message_id: str) -> AnswerProvenance:
        """Why the answer ``message_id`` (a chat's ``message_id``) was built the way it was:
        its stored provenance and a one-sentence explanation."""
        return self._send(calls.answer_provenance(user, message_id))

    # --- the tenant's audit log, dashboard and status ----------------------------------

    def audit(self, since: int = 0, limit: Optional[int] = None) -> AuditPage:
        """The tenant's audit records after ``since``, oldest first."""
        return self._send(calls.audit(since, limit))

    def dashboard_stream(self, user: Optional[str] = None) -> EventStream:
        """The dashboard's rows, live: a ``snapshot`` event, then ``changes`` and
        ``health``. Use in a ``with`` block."""
        return EventStream(self._http, calls.dashboard_stream(user),
                                self._timeout_given)

    def status(self) -> Status:
        """The server's status as this key sees it (``view: tenant``: the tenant's counts)."""
        return self._send(calls.status())

    def health(self) -> bool:
        """Whether the server answers."""
        return self._send(calls.health()) == "ok"

    def metrics(self) -> str:
        """Prometheus metrics (the tenant's own series)."""
        return self._send(calls.metrics())

    def openapi(self) -> Dict[str, Any]:
        """The OpenAPI document of the server's API."""
        return self._send(calls.openapi())
