"""What the real server's tests cannot provoke at will, against httpx's in-process mock
transport: a streamed chat ending in an ``error`` event, a failing chat server (502) and an
unavailable one (503, with Retry-After), and the parsing of server-sent events."""

from __future__ import annotations

import json

import httpx
import pytest

from engram_client import (BadGateway, ChatStreamError, Engram, ServerError,
                           ServiceUnavailable)
from engram_client.streams import SSEDecoder


def test_server_sent_events_are_parsed_with_keep_alives_skipped() -> None:
    decoder = SSEDecoder()
    lines = [": keep-alive", "event: delta", 'data: {"content": "Lis"}', "", "",
             "data: line one", "data: line two", ""]
    events = [e for e in map(decoder.feed, lines) if e is not None]
    assert events == [{"event": "delta", "data": {"content": "Lis"}},
                      {"event": "message", "data": "line one\nline two"}]


def stream_of(*events: tuple) -> bytes:
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode()


def client_answering(status: int, body: bytes, headers: dict) -> Engram:
    def answer(request: httpx.Request) -> httpx.Response:
        assert request.headers["authorization"] == "Bearer k"
        return httpx.Response(status, content=body, headers=headers)

    http = httpx.Client(base_url="http://engram.test", transport=httpx.MockTransport(answer),
                        headers={"authorization": "Bearer k"})
    return Engram("http://engram.test", api_key="k", http_client=http)


def test_a_streamed_chat_that_fails_midway_raises_with_what_came_before() -> None:
    body = stream_of(("prompt", {"message_id": "x.a"}), ("delta", {"content": "Lis"}),
                     ("error", {"error": {"field": "$", "reason": "the chat server failed"}}))
    engram = client_answering(200, body, {"content-type": "text/event-stream"})
    with engram.chat_stream("alice", "s1", "Where?") as chat:
        with pytest.raises(ChatStreamError) as failed:
            for _ in chat.text():
                pass
    assert failed.value.message == "the chat server failed" and failed.value.field == "$"
    assert (chat.answer, chat.done) == ("Lis", None)


@pytest.mark.parametrize("status, cls, retry_after", [
    (502, BadGateway, None), (503, ServiceUnavailable, 1.0), (500, ServerError, None)])
def test_server_failures_map_to_server_errors(status: int, cls: type,
                                              retry_after: object) -> None:
    body = json.dumps({"error": {"field": "$", "reason": "no chat server configured"}})
    headers = {"content-type": "application/json", "retry-after": "1"}
    engram = client_answering(status, body.encode(), headers)
    with pytest.raises(cls) as failed:
        engram.chat("alice", "s1", "Where?")
    assert isinstance(failed.value, ServerError) and failed.value.status == status
    assert getattr(failed.value, "retry_after", None) == retry_after
