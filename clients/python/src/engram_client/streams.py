"""Server-sent event streams: a streamed chat answer and the dashboard's live rows.

A stream is a context manager (leaving it closes the connection) and an iterator of
:class:`~engram_client.types.ServerSentEvent`. Opening it raises the mapped exception when the
server refuses the request (``429`` when too many streams are open, ``423`` for a restricted
user, …).
"""

from __future__ import annotations

import json
from typing import Any, AsyncIterator, Callable, Dict, Iterator, List, Optional

import httpx

from ._calls import Call, read_body
from .errors import ChatStreamError, error_from_response, transport_error
from .types import ServerSentEvent


class SSEDecoder:
    """Lines of a ``text/event-stream`` to events: ``event:`` and ``data:`` lines, a blank
    line ends an event, lines starting with ``:`` (keep-alives) are skipped."""

    def __init__(self) -> None:
        self._event = "message"
        self._data: List[str] = []

    def feed(self, line: str) -> Optional[ServerSentEvent]:
        line = line.rstrip("\r\n")
        if not line:
            if not self._data:
                self._event = "message"
                return None
            raw = "\n".join(self._data)
            try:
                data: Any = json.loads(raw)
            except json.JSONDecodeError:
                data = raw
            event = ServerSentEvent(event=self._event, data=data)
            self._event, self._data = "message", []
            return event
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        return None


def _raise_for_chat_error(event: ServerSentEvent) -> None:
    if event["event"] == "error":
        err = event["data"].get("error", {}) if isinstance(event["data"], dict) else {}
        raise ChatStreamError(str(err.get("reason", event["data"])), field=err.get("field"))


class EventStream:
    """A server-sent event stream read synchronously."""

    def __init__(self, http: httpx.Client, call: Call[Any], timeout_given: bool = False):
        self._http, self._call, self._timeout_given = http, call, timeout_given
        self._response: Optional[httpx.Response] = None

    def __enter__(self) -> "EventStream":
        request = self._http.build_request(self._call.method, self._call.path,
                                           **self._call.request_args(self._timeout_given))
        try:
            response = self._http.send(request, stream=True)
        except httpx.TransportError as err:
            raise transport_error(err) from err
        if response.status_code >= 400:
            response.read()
            response.close()
            raise error_from_response(response, read_body(response))
        self._response = response
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        if self._response is not None:
            self._response.close()

    def __iter__(self) -> Iterator[ServerSentEvent]:
        if self._response is None:
            raise RuntimeError("use the stream in a `with` block")
        decoder = SSEDecoder()
        try:
            for line in self._response.iter_lines():
                event = decoder.feed(line)
                if event is not None:
                    self._on_event(event)
                    yield event
        except httpx.TransportError as err:
            raise transport_error(err) from err

    def _on_event(self, event: ServerSentEvent) -> None:
        """Hook for subclasses: called on every event before it is yielded."""


class AsyncEventStream:
    """A server-sent event stream read with ``async for``."""

    def __init__(self, http: httpx.AsyncClient, call: Call[Any], timeout_given: bool = False):
        self._http, self._call, self._timeout_given = http, call, timeout_given
        self._response: Optional[httpx.Response] = None

    async def __aenter__(self) -> "AsyncEventStream":
        request = self._http.build_request(self._call.method, self._call.path,
                                           **self._call.request_args(self._timeout_given))
        try:
            response = await self._http.send(request, stream=True)
        except httpx.TransportError as err:
            raise transport_error(err) from err
        if response.status_code >= 400:
            await response.aread()
            await response.aclose()
            raise error_from_response(response, read_body(response))
        self._response = response
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._response is not None:
            await self._response.aclose()

    async def __aiter__(self) -> AsyncIterator[ServerSentEvent]:
        if self._response is None:
            raise RuntimeError("use the stream in an `async with` block")
        decoder = SSEDecoder()
        try:
            async for line in self._response.aiter_lines():
                event = decoder.feed(line)
                if event is not None:
                    self._on_event(event)
                    yield event
        except httpx.TransportError as err:
            raise transport_error(err) from err

    def _on_event(self, event: ServerSentEvent) -> None:
        """Hook for subclasses: called on every event before it is yielded."""


class _ChatState:
    """What a streamed chat has said so far: ``prompt`` (ids, tokens, provenance), the
    answer's pieces, and ``done`` (the whole answer, once stored)."""

    prompt: Optional[Dict[str, Any]]
    done: Optional[Dict[str, Any]]
    pieces: List[str]

    def _reset(self) -> None:
        self.prompt, self.done, self.pieces = None, None, []

    def _on_event(self, event: ServerSentEvent) -> None:
        _raise_for_chat_error(event)
        if event["event"] == "prompt":
            self.prompt = event["data"]
        elif event["event"] == "delta":
            self.pieces.append(event["data"]["content"])
        elif event["event"] == "done":
            self.done = event["data"]

    @property
    def answer(self) -> str:
        """The answer so far (the whole answer once ``done``)."""
        return self.done["answer"] if self.done else "".join(self.pieces)


def _only_deltas(event: ServerSentEvent) -> Optional[str]:
    return event["data"]["content"] if event["event"] == "delta" else None


class ChatStream(_ChatState, EventStream):
    """``POST /v1/chat`` with ``stream: true``; raises :class:`ChatStreamError` on an
    ``error`` event."""

    def __init__(self, http: httpx.Client, call: Call[Any], timeout_given: bool = False):
        EventStream.__init__(self, http, call, timeout_given)
        self._reset()

    def text(self) -> Iterator[str]:
        """The answer's pieces as they come (thinking left out)."""
        return _filter(iter(self), _only_deltas)


class AsyncChatStream(_ChatState, AsyncEventStream):
    """``POST /v1/chat`` with ``stream: true``, async."""

    def __init__(self, http: httpx.AsyncClient, call: Call[Any], timeout_given: bool = False):
        AsyncEventStream.__init__(self, http, call, timeout_given)
        self._reset()

    async def text(self) -> AsyncIterator[str]:
        async for event in self:
            piece = _only_deltas(event)
            if piece is not None:
                yield piece


def _filter(events: Iterator[ServerSentEvent],
            pick: Callable[[ServerSentEvent], Optional[str]]) -> Iterator[str]:
    for event in events:
        value = pick(event)
        if value is not None:
            yield value
