"""Each exception class raised by a real answer of the server (or by no answer): the status,
the field the server named, and what the class carries (Retry-After, the ingest report)."""

from __future__ import annotations

import datetime as dt
import os
import socket
import threading
import time
from typing import Iterator

import pytest

from engram_client import (APIStatusError, BadRequest, Conflict, Engram, EngramAdmin,
                           EngramConnectionError, EngramError, EngramTimeoutError,
                           EventsRejected, Forbidden, Locked, NotFound, PayloadTooLarge,
                           RateLimited, Unauthorized, UnprocessableEntity)
from waiting import wait_caught_up


def test_a_bad_field_is_a_bad_request_naming_it(engram: Engram, fresh) -> None:
    with pytest.raises(BadRequest) as bad:
        engram.recall(fresh("alice"), "Where does my sister live?", k=0)
    assert (bad.value.status, bad.value.field) == (400, "k")
    assert "1 to" in bad.value.message
    assert isinstance(bad.value, EngramError) and isinstance(bad.value, APIStatusError)

    with pytest.raises(BadRequest) as bad_user:
        engram.memory("not a valid name")
    assert bad_user.value.field == "user"


def test_a_wrong_key_is_unauthorized(url: str) -> None:
    with Engram(url, api_key="engram_" + "0" * 64) as stranger:
        with pytest.raises(Unauthorized) as refused:
            stranger.recall("alice", "anything")
    assert (refused.value.status, refused.value.field) == (401, "authorization")
    assert refused.value.headers["www-authenticate"] == "Bearer"


def test_another_tenant_named_is_forbidden(url: str, tenant_key: str, tenant: str) -> None:
    with Engram(url, api_key=tenant_key, tenant=tenant + "-other") as wrong:
        with pytest.raises(Forbidden) as refused:
            wrong.recall("alice", "anything")
    assert (refused.value.status, refused.value.field) == (403, "tenant")
    with Engram(url, api_key=tenant_key, tenant=tenant) as right:
        assert right.recall("alice", "anything")["results"] is not None


def test_rejected_events_carry_the_report(engram: Engram, fresh) -> None:
    good = {"kind": "interaction", "event_id": fresh("ok"), "tenant": engram.tenant(),
            "user": fresh("alice"), "session": "s1", "role": "user", "content": "Hello",
            "ts": dt.datetime.now(dt.timezone.utc).isoformat()}
    bad = {**{k: v for k, v in good.items() if k != "role"}, "event_id": fresh("bad")}
    with pytest.raises(EventsRejected) as rejected:
        engram.add_events([good, bad])
    report = rejected.value.report
    assert (report["accepted"], rejected.value.status) == (1, 422)
    assert [(r["index"], r["field"]) for r in report["rejected"]] == [(1, "role")]
    assert rejected.value.field == "role"


def test_a_budget_too_small_is_unprocessable(engram: Engram, fresh) -> None:
    with pytest.raises(UnprocessableEntity) as refused:
        engram.prompt(fresh("alice"), "What did I say about my sister?", budget_tokens=5)
    assert (refused.value.status, refused.value.field) == (422, "budget_tokens")
    assert not isinstance(refused.value, EventsRejected)


def test_a_restricted_user_is_locked(engram: Engram, admin: EngramAdmin, fresh) -> None:
    alice = fresh("alice")
    engram.add_events({"kind": "control", "event_id": fresh("restrict"),
                       "tenant": engram.tenant(), "user": alice, "action": "restrict",
                       "scope": "user", "ts": dt.datetime.now(dt.timezone.utc).isoformat()})
    wait_caught_up(admin)
    with pytest.raises(Locked) as locked:
        engram.recall(alice, "Where does my sister live?")
    assert (locked.value.status, locked.value.field) == (423, "user")


def test_a_body_over_the_limit_is_too_large(url: str, admin: EngramAdmin, fresh) -> None:
    # a tenant of its own: the 33 MiB count against its byte rate, not the shared tenant's
    key = admin.create_tenant(fresh("big"))["api_key"]
    with Engram(url, api_key=key) as engram:
        event = {"kind": "interaction", "event_id": "big", "tenant": fresh("big"),
                 "user": "alice", "session": "s1", "role": "user", "content": "x" * (33 << 20),
                 "ts": dt.datetime.now(dt.timezone.utc).isoformat()}
        with pytest.raises(PayloadTooLarge) as refused:
            engram.add_events(event)
    assert refused.value.status == 413


def test_too_many_streams_is_rate_limited_with_retry_after(url: str, admin: EngramAdmin,
                                                           fresh) -> None:
    cap = int(os.environ["ENGRAM_TEST_STREAMS_PER_TENANT"])
    key = admin.create_tenant(fresh("streams"))["api_key"]
    with Engram(url, api_key=key) as engram:
        streams = [engram.dashboard_stream().__enter__() for _ in range(cap)]
        try:
            with pytest.raises(RateLimited) as limited:
                engram.dashboard_stream().__enter__()
        finally:
            for stream in streams:
                stream.close()
        assert (limited.value.status, limited.value.retry_after) == (429, 1.0)
        # a place freed: a stream opens again
        time.sleep(0.5)
        with engram.dashboard_stream() as again:
            assert next(iter(again))["event"] == "snapshot"


def test_admin_errors_conflict_not_found_and_wrong_key(url: str, admin: EngramAdmin,
                                                       tenant: str, fresh) -> None:
    with pytest.raises(Conflict) as exists:
        admin.create_tenant(tenant)
    assert (exists.value.status, exists.value.field) == (409, "tenant")
    with pytest.raises(NotFound) as unknown:
        admin.issue_key(fresh("nobody"))
    assert (unknown.value.status, unknown.value.field) == (404, "tenant")
    with pytest.raises(BadRequest) as bad_name:
        admin.create_tenant("two words")
    assert bad_name.value.field == "tenant"
    with EngramAdmin(url, admin_key="not-the-admin-key-at-all") as wrong:
        with pytest.raises(Unauthorized):
            wrong.list_tenants()


@pytest.fixture()
def silent_server() -> Iterator[str]:
    """A loopback port that accepts connections and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    held = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except socket.timeout:
                pass

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    listener.close()


def test_no_answer_in_time_is_a_timeout(silent_server: str) -> None:
    with Engram(silent_server, api_key="k", timeout=0.5) as engram:
        started = time.monotonic()
        with pytest.raises(EngramTimeoutError) as late:
            engram.recall("alice", "anything")
    assert time.monotonic() - started < 5
    assert late.value.status is None


def test_nobody_listening_is_a_connection_error() -> None:
    with socket.socket() as s:  # a port just freed: nothing listens there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with Engram(f"http://127.0.0.1:{port}", api_key="k") as engram:
        with pytest.raises(EngramConnectionError) as unreachable:
            engram.status()
    assert not isinstance(unreachable.value, EngramTimeoutError)
