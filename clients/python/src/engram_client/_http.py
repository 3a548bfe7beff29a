"""The httpx clients behind :class:`Engram`, :class:`AsyncEngram` and the admin clients: base
URL, key, bounded timeouts, and transport failures as the client's own exceptions."""

from __future__ import annotations

import os
from typing import Any, Dict, Optional, TypeVar, Union, cast

import httpx

from . import __version__
from ._calls import DEFAULT_TIMEOUT, Call, decode
from .errors import transport_error

DEFAULT_BASE_URL = "http://127.0.0.1:8687"
TimeoutArg = Union[float, httpx.Timeout]
T = TypeVar("T")


def client_options(
    base_url: Optional[str], key: Optional[str], timeout: TimeoutArg
) -> Dict[str, Any]:
    """httpx client settings: the key as a bearer token (none: only the public routes
    answer), and the timeout (a number bounds every phase)."""
    headers = {"user-agent": f"engram-client-python/{__version__}"}
    if key:
        headers["authorization"] = f"Bearer {key}"
    base = base_url or os.environ.get("ENGRAM_URL") or DEFAULT_BASE_URL
    return {
        "base_url": base.rstrip("/"),
        "headers": headers,
        "timeout": timeout if isinstance(timeout, httpx.Timeout) else httpx.Timeout(timeout),
    }


class SyncTransport:
    """Sends :class:`Call`s with one ``httpx.Client``; closes it if it made it."""

    def __init__(self, base_url: Optional[str], key: Optional[str],
                 timeout: TimeoutArg = DEFAULT_TIMEOUT,
                 http_client: Optional[httpx.Client] = None):
        self._owns_http = http_client is None
        self._timeout_given = timeout is not DEFAULT_TIMEOUT or http_client is not None
        self._http = http_client or httpx.Client(**client_options(base_url, key, timeout))

    def _send(self, call: Call[T]) -> T:
        try:
            args = call.request_args(self._timeout_given)
            response = self._http.request(call.method, call.path, **args)
        except httpx.TransportError as err:
            raise transport_error(err) from err
        return cast(T, decode(response))

    def close(self) -> None:
        if self._owns_http:
            self._http.close()

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class AsyncTransport:
    """Sends :class:`Call`s with one ``httpx.AsyncClient``; closes it if it made it."""

    def __init__(self, base_url: Optional[str], key: Optional[str],
                 timeout: TimeoutArg = DEFAULT_TIMEOUT,
                 http_client: Optional[httpx.AsyncClient] = None):
        self._owns_http = http_client is None
        self._timeout_given = timeout is not DEFAULT_TIMEOUT or http_client is not None
        self._http = http_client or httpx.AsyncClient(**client_options(base_url, key, timeout))

    async def _send(self, call: Call[T]) -> T:
        try:
            args = call.request_args(self._timeout_given)
            response = await self._http.request(call.method, call.path, **args)
        except httpx.TransportError as err:
            raise transport_error(err) from err
        return cast(T, decode(response))

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    async def __aenter__(self) -> Any:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()
