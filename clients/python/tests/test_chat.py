"""Chat through the server's configured chat server (the end-to-end harness's stand-in, which
answers "stand-in answer" after a thinking block): plain and streamed, stored in the session,
and feedback on the answer."""

from __future__ import annotations

import os

import pytest

from engram_client import Engram, EngramAdmin
from waiting import wait_caught_up

pytestmark = pytest.mark.skipif(os.environ.get("ENGRAM_TEST_CHAT") != "1",
                                reason="the server has no chat server configured")

LISBON = [{"role": "user", "content": "My sister Ana moved to Lisbon last spring."}]


def test_a_chat_is_answered_with_memory_stored_and_takes_feedback(
        engram: Engram, admin: EngramAdmin, fresh) -> None:
    alice, session = fresh("alice"), fresh("s2")
    engram.remember(alice, fresh("s1"), LISBON)
    wait_caught_up(admin)

    chat = engram.chat(alice, session, "Where does my sister live?", exchange_id=fresh("x1"))
    assert chat["answer"] == "stand-in answer"
    assert (chat["message_id"], chat["query_event_id"]) == (fresh("x1") + ".a", fresh("x1") + ".q")
    assert chat["stored"]["accepted"] == 2
    assert chat["provenance"]["memories"], chat["provenance"]

    wait_caught_up(admin)
    stored = {e["event_id"]: e["content"] for e in engram.export(alice)["episodes"]}
    assert stored[fresh("x1") + ".q"] == "Where does my sister live?"
    assert stored[fresh("x1") + ".a"] == "stand-in answer"

    vote = engram.feedback(alice, chat["message_id"], chat["skill_id"], 1, session=session,
                           context={"intent": "question"})
    assert vote["accepted"] == 1 and vote["event_id"].startswith("fb-")
    wait_caught_up(admin)
    [skill] = engram.memory(alice)["skills"]
    assert (skill["skill_id"], skill["successes"]) == (chat["skill_id"], 1)


def test_a_streamed_chat_comes_in_pieces_without_the_thinking(
        engram: Engram, admin: EngramAdmin, fresh) -> None:
    alice = fresh("alice")
    engram.remember(alice, fresh("s1"), LISBON)
    wait_caught_up(admin)

    with engram.chat_stream(alice, fresh("s2"), "And her name?", exchange_id=fresh("x2")) as chat:
        pieces = list(chat.text())
    assert len(pieces) > 1
    assert "".join(pieces) == "stand-in answer" == chat.answer
    assert "think" not in "".join(pieces)
    assert chat.prompt is not None and chat.prompt["message_id"] == fresh("x2") + ".a"
    assert chat.done is not None and chat.done["stored"]["accepted"] == 2

    wait_caught_up(admin)
    stored = [e["event_id"] for e in engram.export(alice)["episodes"]]
    assert fresh("x2") + ".a" in stored
