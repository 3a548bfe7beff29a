"""Fixtures for tests against a real `engram serve`, named by the environment:

- ``ENGRAM_TEST_URL``: the server's base URL
- ``ENGRAM_TEST_ADMIN_KEY``: the admin key it was started with
- ``ENGRAM_TEST_TENANT`` and ``ENGRAM_TEST_TENANT_KEY``: a tenant and its API key
- ``ENGRAM_TEST_STREAMS_PER_TENANT``: the server's cap on a tenant's dashboard streams
- ``ENGRAM_TEST_CHAT``: ``1`` when the server has a chat server configured (the stand-in)

``tests/tests/python_client.rs`` starts the server and sets them. Users get a fresh suffix per
run, so the tests can run again against the same server.
"""

from __future__ import annotations

import os
import uuid
from typing import Callable, Iterator

import pytest

from engram_client import Engram, EngramAdmin

def env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        raise RuntimeError(f"{name} is not set: tests/tests/python_client.rs sets it")
    return value


@pytest.fixture(scope="session")
def url() -> str:
    return env("ENGRAM_TEST_URL")


@pytest.fixture(scope="session")
def tenant() -> str:
    return env("ENGRAM_TEST_TENANT")


@pytest.fixture(scope="session")
def tenant_key() -> str:
    return env("ENGRAM_TEST_TENANT_KEY")


@pytest.fixture(scope="session")
def admin(url: str) -> Iterator[EngramAdmin]:
    with EngramAdmin(url, admin_key=env("ENGRAM_TEST_ADMIN_KEY")) as client:
        yield client


@pytest.fixture()
def engram(url: str, tenant_key: str) -> Iterator[Engram]:
    with Engram(url, api_key=tenant_key) as client:
        yield client


@pytest.fixture()
def fresh() -> Callable[[str], str]:
    """A name unique to this run: users, sessions and tenants of one test stay apart."""
    run = uuid.uuid4().hex[:8]
    return lambda name: f"{name}-{run}"
