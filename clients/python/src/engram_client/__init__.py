"""engram-client: a typed Python client for engram, the streaming long-term memory engine.

``Engram`` / ``AsyncEngram`` speak a tenant's API (events, recall, memory, prompt, chat,
feedback, export, erase, forget, rectify, audit, dashboard stream, status);
``EngramAdmin`` / ``AsyncEngramAdmin`` the operator's (tenants and keys). Failures raise
subclasses of ``EngramError``.
"""

__version__ = "0.1.0"

from .admin import AsyncEngramAdmin, EngramAdmin  # noqa: E402
from .async_client import AsyncEngram  # noqa: E402
from .client import Engram  # noqa: E402
from .errors import (  # noqa: E402
    APIStatusError,
    BadGateway,
    BadRequest,
    ChatStreamError,
    Conflict,
    EngramConnectionError,
    EngramError,
    EngramTimeoutError,
    EventsRejected,
    Forbidden,
    Locked,
    NotFound,
    PayloadTooLarge,
    RateLimited,
    RequestTimeout,
    ServerError,
    ServiceUnavailable,
    Unauthorized,
    UnprocessableEntity,
)
from .streams import AsyncChatStream, AsyncEventStream, ChatStream, EventStream  # noqa: E402

__all__ = [
    "Engram", "AsyncEngram", "EngramAdmin", "AsyncEngramAdmin",
    "ChatStream", "AsyncChatStream", "EventStream", "AsyncEventStream",
    "EngramError", "APIStatusError", "BadRequest", "Unauthorized", "Forbidden", "NotFound",
    "RequestTimeout", "Conflict", "PayloadTooLarge", "UnprocessableEntity", "EventsRejected",
    "Locked", "RateLimited", "ServerError", "BadGateway", "ServiceUnavailable",
    "EngramConnectionError", "EngramTimeoutError", "ChatStreamError",
]
