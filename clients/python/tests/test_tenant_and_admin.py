"""The tenant's status, audit log and dashboard stream, and the admin API: tenants, keys,
audit, events of any tenant, a whole tenant erased."""

from __future__ import annotations

import datetime as dt

import pytest

from engram_client import Engram, EngramAdmin, Unauthorized
from conversations import SISTER
from waiting import wait_caught_up


def test_status_health_metrics_and_openapi_as_the_tenant_sees_them(
        engram: Engram, admin: EngramAdmin, tenant: str, fresh) -> None:
    engram.remember(fresh("alice"), fresh("s1"), SISTER)
    wait_caught_up(admin)
    status = engram.status()
    assert (status["view"], status["tenant"], status["up"]) == ("tenant", tenant, True)
    assert status["episodes"] >= 3 and "log_end" not in status
    assert engram.health() is True
    assert f'engram_tenant_episodes{{tenant="{tenant}"}}' in engram.metrics()
    assert "engram_log_end_offset" not in engram.metrics()
    assert "/v1/recall" in engram.openapi()["paths"]
    operator = admin.status()
    assert operator["view"] == "operator" and operator["log_end"] >= status["episodes"]


def test_the_audit_log_records_reads_and_pages(engram: Engram, fresh) -> None:
    alice = fresh("alice")
    first = engram.audit(limit=1000)
    engram.recall(alice, "Where does my sister live?")
    engram.export(alice)
    page = engram.audit(since=first["next_since"], limit=1)
    assert len(page["records"]) == 1 and page["next_since"] == first["next_since"] + 1
    rest = engram.audit(since=first["next_since"], limit=100)["records"]
    mine = [(r["action"], r["route"]) for r in rest if r.get("user") == alice]
    assert mine == [("recall", "POST /v1/recall"), ("export", "POST /v1/export")]


def test_the_dashboard_stream_starts_with_the_tenants_snapshot(
        engram: Engram, admin: EngramAdmin, tenant: str, fresh) -> None:
    alice = fresh("alice")
    engram.remember(alice, fresh("s1"), SISTER)
    wait_caught_up(admin)
    with engram.dashboard_stream(user=alice) as stream:
        snapshot = next(iter(stream))
    assert snapshot["event"] == "snapshot"
    assert (snapshot["data"]["tenant"], snapshot["data"]["user"]) == (tenant, alice)
    users = [row for row in snapshot["data"]["rows"] if row.get("table") == "user"]
    assert any(row["key"] == alice for row in users), users


def test_a_tenant_is_created_keyed_audited_and_erased(url: str, admin: EngramAdmin,
                                                      fresh) -> None:
    name = fresh("acme")
    first = admin.create_tenant(name)
    assert first["tenant"] == name and first["api_key"].startswith("engram_")
    second = admin.issue_key(name)
    [listed] = [t for t in admin.list_tenants() if t["tenant"] == name]
    assert len(listed["keys"]) == 2

    note = {"kind": "interaction", "event_id": "n1", "tenant": name, "user": "ana",
            "session": "s1", "role": "user", "content": "I live in Porto.",
            "ts": dt.datetime.now(dt.timezone.utc).isoformat()}
    assert admin.add_events(note)["accepted"] == 1
    wait_caught_up(admin)
    with Engram(url, api_key=second["api_key"]) as engram:
        assert [e["content"] for e in engram.export("ana")["episodes"]] == ["I live in Porto."]
    audit = admin.tenant_audit(name)
    assert [r["action"] for r in audit["records"]] == ["export"]

    receipt = admin.erase_tenant(name)
    assert receipt["tenant"] == name and receipt["tenant_keys_removed"] is True
    with Engram(url, api_key=first["api_key"]) as engram:
        with pytest.raises(Unauthorized):
            engram.status()
