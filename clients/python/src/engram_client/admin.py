""":class:`EngramAdmin` and :class:`AsyncEngramAdmin`: the operator's API (the admin key,
``ENGRAM_ADMIN_KEY`` on the server): tenants, their keys, audit logs, any tenant's events."""

from __future__ import annotations

import os
from typing import List, Optional

import httpx

from . import _calls as calls
from ._calls import DEFAULT_TIMEOUT, Events
from ._http import AsyncTransport, SyncTransport, TimeoutArg
from .types import AuditPage, ErasureReceipt, IngestReport, Status, TenantInfo, TenantKey

def _admin_key(admin_key: Optional[str]) -> Optional[str]:
    return admin_key or os.environ.get("ENGRAM_ADMIN_KEY")


class EngramAdmin(SyncTransport):
    """The admin API: ``EngramAdmin(url, admin_key=…)`` (default: ``$ENGRAM_ADMIN_KEY``).
    ``Forbidden`` when the server has no admin key set, ``Unauthorized`` for a wrong one."""

    def __init__(self, base_url: Optional[str] = None, admin_key: Optional[str] = None, *,
                 timeout: TimeoutArg = DEFAULT_TIMEOUT,
                 http_client: Optional[httpx.Client] = None):
        super().__init__(base_url, _admin_key(admin_key), timeout, http_client)

    def create_tenant(self, tenant: str) -> TenantKey:
        """Creates a tenant; answers with its first API key (``Conflict`` if it exists)."""
        return self._send(calls.create_tenant(tenant))

    def list_tenants(self) -> List[TenantInfo]:
        """Every tenant with its key ids (never the secrets)."""
        return self._send(calls.list_tenants())["tenants"]

    def issue_key(self, tenant: str) -> TenantKey:
        """Another API key for the tenant."""
        return self._send(calls.issue_key(tenant))

    def revoke_key(self, tenant: str, key_id: str) -> None:
        """Revokes a key by its id (as :meth:`list_tenants` shows it)."""
        self._send(calls.revoke_key(tenant, key_id))

    def erase_tenant(self, tenant: str) -> ErasureReceipt:
        """Erases a whole tenant: its users' data and its keys."""
        return self._send(calls.erase_tenant(tenant))

    def tenant_audit(self, tenant: str, since: int = 0, limit: Optional[int] = None
                     ) -> AuditPage:
        """A tenant's audit records after ``since``, oldest first."""
        return self._send(calls.tenant_audit(tenant, since, limit))

    def add_events(self, events: Events) -> IngestReport:
        """Events of any existing tenant, tenant-scope control events included."""
        return self._send(calls.admin_events(events))

    def status(self) -> Status:
        """The operator's view: the whole engine and every tenant's counts."""
        return self._send(calls.status())

    def metrics(self) -> str:
        """Prometheus metrics, engine-wide and per tenant."""
        return self._send(calls.metrics())


class AsyncEngramAdmin(AsyncTransport):
    """:class:`EngramAdmin` for asyncio: the same methods, each awaited."""

    def __init__(self, base_url: Optional[str] = None, admin_key: Optional[str] = None, *,
                 timeout: TimeoutArg = DEFAULT_TIMEOUT,
                 http_client: Optional[httpx.AsyncClient] = None):
        super().__init__(base_url, _admin_key(admin_key), timeout, http_client)

    async def create_tenant(self, tenant: str) -> TenantKey:
        return await self._send(calls.create_tenant(tenant))

    async def list_tenants(self) -> List[TenantInfo]:
        return (await self._send(calls.list_tenants()))["tenants"]

    async def issue_key(self, tenant: str) -> TenantKey:
        return await self._send(calls.issue_key(tenant))

    async def revoke_key(self, tenant: str, key_id: str) -> None:
        await self._send(calls.revoke_key(tenant, key_id))

    async def erase_tenant(self, tenant: str) -> ErasureReceipt:
        return await self._send(calls.erase_tenant(tenant))

    async def tenant_audit(self, tenant: str, since: int = 0, limit: Optional[int] = None
                           ) -> AuditPage:
        return await self._send(calls.tenant_audit(tenant, since, limit))

    async def add_events(self, events: Events) -> IngestReport:
        return await self._send(calls.admin_events(events))

    async def status(self) -> Status:
        return await self._send(calls.status())

    async def metrics(self) -> str:
        return await self._send(calls.metrics())
