"""Waiting for the server's asynchronous work (the dataflow, Lance) in tests."""

from __future__ import annotations

import time
from typing import Callable, TypeVar

from engram_client import EngramAdmin

T = TypeVar("T")


def wait_caught_up(admin: EngramAdmin, timeout: float = 60.0) -> None:
    """Until the views reflect every accepted event and Lance holds every episode (the
    operator's status says so)."""
    deadline = time.monotonic() + timeout
    while True:
        s = admin.status()
        if s["views_as_of"] >= s["log_end"] and s["pending_episodes"] == 0:
            return
        assert time.monotonic() < deadline, f"not caught up after {timeout} s: {s}"
        time.sleep(0.05)


def eventually(read: Callable[[], T], holds: Callable[[T], bool], timeout: float = 30.0) -> T:
    """``read()`` again until ``holds`` its value (then that value), or fail with the last."""
    deadline = time.monotonic() + timeout
    while True:
        value = read()
        if holds(value):
            return value
        assert time.monotonic() < deadline, f"still not so after {timeout} s: {value!r}"
        time.sleep(0.1)
