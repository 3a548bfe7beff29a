"""The exceptions the clients raise: one per kind of answer engram gives.

Every error response of engram's API has the body ``{"error": {"field", "reason"}}``; the
field names the part of the request at fault (``"$"`` for the request as a whole).
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Type

import httpx

__all__ = [
    "EngramError",
    "APIStatusError",
    "BadRequest",
    "Unauthorized",
    "Forbidden",
    "NotFound",
    "RequestTimeout",
    "Conflict",
    "PayloadTooLarge",
    "UnprocessableEntity",
    "EventsRejected",
    "Locked",
    "RateLimited",
    "ServerError",
    "BadGateway",
    "ServiceUnavailable",
    "EngramConnectionError",
    "EngramTimeoutError",
    "ChatStreamError",
]


class EngramError(Exception):
    """Base of every error the clients raise.

    ``status`` is the HTTP status (``None`` when no answer came), ``field`` the request field
    the server named (``"$"``: the request as a whole), ``message`` its reason.
    """

    def __init__(self, message: str, *, status: Optional[int] = None, field: Optional[str] = None):
        super().__init__(message)
        self.message = message
        self.status = status
        self.field = field

    def __str__(self) -> str:
        parts = []
        if self.status is not None:
            parts.append(str(self.status))
        if self.field is not None:
            parts.append(f"field {self.field!r}")
        prefix = " ".join(parts)
        return f"{prefix}: {self.message}" if prefix else self.message


class APIStatusError(EngramError):
    """The server answered with an error status; ``body`` is its parsed JSON (or ``None``)."""

    status: int

    def __init__(
        self,
        message: str,
        *,
        status: int,
        field: Optional[str] = None,
        body: Any = None,
        headers: Optional[httpx.Headers] = None,
    ):
        super().__init__(message, status=status, field=field)
        self.body = body
        self.headers = headers if headers is not None else httpx.Headers()


class BadRequest(APIStatusError):
    """400: a malformed request; ``field`` names the part at fault."""


class Unauthorized(APIStatusError):
    """401: no API key, or an unknown or revoked one."""


class Forbidden(APIStatusError):
    """403: the key may not do this (another tenant named, or the admin API is off)."""


class NotFound(APIStatusError):
    """404: no such tenant, key or memory."""


class RequestTimeout(APIStatusError):
    """408: the request body paused longer than the server waits."""


class Conflict(APIStatusError):
    """409: the tenant exists already, or the fact is no longer the current value."""


class PayloadTooLarge(APIStatusError):
    """413: the request body is larger than the server takes."""


class UnprocessableEntity(APIStatusError):
    """422: understood but refused (a budget too small, the same value again, …)."""


class EventsRejected(UnprocessableEntity):
    """422 from ``POST /v1/events``: some events were rejected, the others were stored.

    ``report`` is the whole ingest report (``accepted``, ``rejected`` with each event's index,
    field and reason, …); ``field`` and ``message`` are the first rejection's.
    """

    @property
    def report(self) -> Dict[str, Any]:
        return self.body if isinstance(self.body, dict) else {}


class Locked(APIStatusError):
    """423: processing of this user's data is restricted."""


class _RetryAfter:
    """Errors whose answer says, in ``Retry-After``, how many seconds to wait."""

    headers: httpx.Headers

    @property
    def retry_after(self) -> Optional[float]:
        value = self.headers.get("retry-after")
        try:
            return float(value) if value is not None else None
        except ValueError:
            return None


class RateLimited(_RetryAfter, APIStatusError):
    """429: over a per-tenant limit or a cap on streams; retry after ``retry_after`` seconds."""


class ServerError(APIStatusError):
    """5xx: the server failed."""


class BadGateway(ServerError):
    """502: the configured chat server failed."""


class ServiceUnavailable(_RetryAfter, ServerError):
    """503: not possible now (no chat server configured, the disk full, views late, …)."""


class EngramConnectionError(EngramError):
    """No answer: the server could not be reached or the connection broke."""


class EngramTimeoutError(EngramConnectionError):
    """No answer within the client's timeout."""


class ChatStreamError(EngramError):
    """A streamed chat ended with an ``error`` event (the chat server failed mid-answer, or
    the exchange could not be stored): nothing of the exchange was stored."""


_BY_STATUS: Dict[int, Type[APIStatusError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    408: RequestTimeout,
    409: Conflict,
    413: PayloadTooLarge,
    422: UnprocessableEntity,
    423: Locked,
    429: RateLimited,
    502: BadGateway,
    503: ServiceUnavailable,
}


def error_class(status: int) -> Type[APIStatusError]:
    """The exception class of an error status."""
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    if status >= 500:
        return ServerError
    return APIStatusError


def error_from_response(response: httpx.Response, body: Any) -> APIStatusError:
    """The exception for an error answer whose body has been read (and parsed as JSON when it
    was JSON: ``body`` is then that value, else the text)."""
    status = response.status_code
    field: Optional[str] = None
    message = body if isinstance(body, str) and body else response.reason_phrase
    cls = error_class(status)
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        err = body["error"]
        field = err.get("field")
        message = str(err.get("reason", message))
    elif isinstance(body, dict) and isinstance(body.get("rejected"), list):
        # an ingest report: some events were refused
        cls = EventsRejected
        first = body["rejected"][0] if body["rejected"] else {}
        field = first.get("field")
        message = (
            f"{len(body['rejected'])} event(s) rejected, {body.get('accepted', 0)} accepted; "
            f"first (index {first.get('index')}): {first.get('reason')}"
        )
    return cls(message, status=status, field=field, body=body, headers=response.headers)


def transport_error(err: httpx.TransportError) -> EngramConnectionError:
    """The client's exception for httpx's failure to get an answer."""
    if isinstance(err, httpx.TimeoutException):
        return EngramTimeoutError(f"no answer in time: {err!r}")
    return EngramConnectionError(f"could not reach engram: {err!r}")
