"""The synchronous client against the real server: a conversation remembered, recalled for its
user only, in the prompt and in the user's memory; facts rectified; one memory forgotten; the
user exported, then erased."""

from __future__ import annotations

import datetime as dt

import pytest

from engram_client import Conflict, Engram, EngramAdmin, NotFound
from conversations import DOG, SISTER, contents
from waiting import eventually, wait_caught_up


def test_a_conversation_is_recalled_for_its_user_and_not_another(engram: Engram, fresh) -> None:
    alice, carol = fresh("alice"), fresh("carol")
    report = engram.remember(alice, fresh("s1"), SISTER)
    assert report["accepted"] == 3 and report["rejected"] == []
    assert engram.remember(carol, fresh("s1"), DOG)["accepted"] == 2

    found = eventually(lambda: engram.recall(alice, "Where does my sister live?", k=5),
                       lambda r: any("Lisbon" in c for c in contents(r)))
    assert contents(found)[0] == SISTER[0]["content"]
    assert all("Rex" not in c for c in contents(found))

    # a walk from Ana, whom the question names, to the turn that names her
    walked = engram.recall(alice, "What does Ana teach?", k=5,
                           traversal={"walk": "bfs", "seed_episodes": 0})
    paths = {r["content"]: r["why"]["walk"]["path"] for r in walked["results"]
             if "walk" in r["why"]}
    assert paths[SISTER[0]["content"]][:2] == [
        {"kind": "entity", "id": "ana"},
        {"edge": "MENTIONS", "kind": "episode", "id": paths[SISTER[0]["content"]][1]["id"]},
    ]

    carols = eventually(lambda: engram.recall(carol, "Where does my sister live?", k=5),
                        lambda r: len(r["results"]) == 2)
    assert all("Lisbon" not in c and "Tagus" not in c for c in contents(carols))


def test_the_prompt_and_the_memory_hold_what_was_said(
        engram: Engram, admin: EngramAdmin, fresh) -> None:
    alice = fresh("alice")
    engram.remember(alice, fresh("s1"), SISTER)
    wait_caught_up(admin)

    prompt = engram.prompt(alice, "What does my sister do for a living?", budget_tokens=2000)
    assert "Ana moved to Lisbon" in prompt["prompt"]
    assert prompt["messages"][0]["role"] == "system"
    assert prompt["messages"][-1]["content"].endswith("What does my sister do for a living?")
    assert prompt["tokens"]["total"] <= 2000
    assert prompt["consistent"] is True
    used = {m["event_id"] for m in prompt["provenance"]["memories"]}
    assert any(event_id.endswith("-0") for event_id in used), used

    memory = engram.memory(alice)
    assert memory["user"] == alice
    assert {"ana", "lisbon"} <= {e["name"] for e in memory["entities"]}


def test_a_fact_is_rectified_once_and_its_old_version_refused(
        engram: Engram, admin: EngramAdmin, fresh) -> None:
    alice = fresh("alice")
    engram.add_events({
        "kind": "fact", "event_id": fresh("f-city"), "tenant": engram.tenant(), "user": alice,
        # an hour ago: the rectification below is later by more than the views' 1 s resolution
        "ts": (dt.datetime.now(dt.timezone.utc) - dt.timedelta(hours=1)).isoformat(),
        "subject": alice, "attribute": "city", "value": "Berlin", "confidence": 0.9,
    })
    wait_caught_up(admin)
    [berlin] = engram.memory(alice)["facts"]
    assert (berlin["value"], berlin["current"]) == ("Berlin", True)

    porto = engram.rectify(alice, berlin["id"], "Porto")
    assert (porto["supersedes"], porto["value"]) == (berlin["id"], "Porto")
    wait_caught_up(admin)
    facts = {f["value"]: f for f in engram.memory(alice)["facts"]}
    assert facts["Porto"]["current"] is True and facts["Berlin"]["current"] is False
    # as of an event time before the rectification, Berlin still held
    before = engram.memory(alice, as_of=berlin["valid_from"])
    assert [(f["value"], f["current"]) for f in before["facts"]] == [("Berlin", True)]
    assert before["as_of"]

    with pytest.raises(Conflict) as refused:
        engram.rectify(alice, berlin["id"], "Faro")
    assert refused.value.status == 409 and refused.value.field == "id"


def test_one_memory_is_forgotten_and_then_not_found(
        engram: Engram, admin: EngramAdmin, fresh) -> None:
    alice = fresh("alice")
    engram.remember(alice, fresh("s1"), DOG, id_prefix=fresh("dog"))
    wait_caught_up(admin)
    receipt = engram.forget(alice, fresh("dog") + "-0")
    assert receipt["memory"]["event_id"] == fresh("dog") + "-0"
    assert receipt["episodes_erased"] == 1

    left = contents(engram.recall(alice, "What is my dog called?", k=5))
    assert left == [DOG[1]["content"]]
    with pytest.raises(NotFound) as missing:
        engram.forget(alice, fresh("dog") + "-0")
    assert missing.value.field == "id"


def test_a_user_is_exported_then_erased(engram: Engram, admin: EngramAdmin, fresh) -> None:
    alice, carol = fresh("alice"), fresh("carol")
    engram.remember(alice, fresh("s1"), SISTER)
    engram.remember(carol, fresh("s1"), DOG)
    wait_caught_up(admin)

    export = engram.export(alice)
    assert sorted(e["content"] for e in export["episodes"]) == sorted(m["content"] for m in SISTER)

    receipt = engram.erase(alice)
    assert (receipt["user"], receipt["episodes_erased"]) == (alice, 3)
    assert engram.export(alice)["episodes"] == []
    assert engram.recall(alice, "Where does my sister live?")["results"] == []
    # carol is untouched
    assert len(engram.export(carol)["episodes"]) == 2
