"""The asyncio clients against the real server: remember, recall and prompt awaited (several
users at once), a streamed chat read with ``async for``, the admin API, an async error."""

from __future__ import annotations

import asyncio
import os

import pytest

from engram_client import AsyncEngram, AsyncEngramAdmin, BadRequest, Unauthorized
from conversations import DOG, SISTER, contents


async def wait_caught_up(admin: AsyncEngramAdmin, timeout: float = 60.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        s = await admin.status()
        if s["views_as_of"] >= s["log_end"] and s["pending_episodes"] == 0:
            return
        assert loop.time() < deadline, f"not caught up after {timeout} s: {s}"
        await asyncio.sleep(0.05)


def test_async_remember_recall_and_prompt(url: str, tenant_key: str, fresh) -> None:
    alice, carol = fresh("alice"), fresh("carol")

    async def run() -> None:
        async with AsyncEngram(url, api_key=tenant_key) as engram, \
                AsyncEngramAdmin(url, admin_key=os.environ["ENGRAM_TEST_ADMIN_KEY"]) as admin:
            reports = await asyncio.gather(engram.remember(alice, fresh("s1"), SISTER),
                                           engram.remember(carol, fresh("s1"), DOG))
            assert [r["accepted"] for r in reports] == [3, 2]
            await wait_caught_up(admin)
            alices, carols = await asyncio.gather(
                engram.recall(alice, "Where does my sister live?", k=5),
                engram.recall(carol, "Where does my sister live?", k=5))
            assert contents(alices)[0] == SISTER[0]["content"]
            assert all("Lisbon" not in c for c in contents(carols)) and len(carols["results"]) == 2
            prompt = await engram.prompt(alice, "Which city is my sister in?")
            assert "Lisbon" in prompt["prompt"]
            with pytest.raises(BadRequest) as bad:
                await engram.recall(alice, "   ")
            assert bad.value.field == "query"

    asyncio.run(run())


@pytest.mark.skipif(os.environ.get("ENGRAM_TEST_CHAT") != "1",
                    reason="the server has no chat server configured")
def test_async_streamed_chat(url: str, tenant_key: str, fresh) -> None:
    async def run() -> None:
        async with AsyncEngram(url, api_key=tenant_key) as engram:
            async with engram.chat_stream(fresh("alice"), fresh("s1"), "Hello there") as chat:
                pieces = [piece async for piece in chat.text()]
            assert "".join(pieces) == "stand-in answer"
            assert chat.done is not None and chat.done["message_id"] == chat.prompt["message_id"]

    asyncio.run(run())


def test_async_admin_creates_a_tenant_whose_key_works_until_revoked(url: str, fresh) -> None:
    name = fresh("async-tenant")

    async def run() -> None:
        async with AsyncEngramAdmin(url, admin_key=os.environ["ENGRAM_TEST_ADMIN_KEY"]) as admin:
            created = await admin.create_tenant(name)
            async with AsyncEngram(url, api_key=created["api_key"]) as engram:
                assert (await engram.tenant()) == name
                [listed] = [t for t in await admin.list_tenants() if t["tenant"] == name]
                await admin.revoke_key(name, listed["keys"][0]["key_id"])
                with pytest.raises(Unauthorized):
                    await engram.status()

    asyncio.run(run())
