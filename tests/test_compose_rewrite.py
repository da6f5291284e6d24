"""Composer + LLM rewrite: accepted rewrites are recorded and re-verified; bad ones are dropped."""

from __future__ import annotations

import pytest

pytest.importorskip("openai")

from chat_server import ChatServer  # noqa: E402

from compoenv.compose import Composer, ComposerConfig, replay  # noqa: E402
from compoenv.llm import EndpointConfig  # noqa: E402


def draft(request: dict) -> str:
    text = request["messages"][-1]["content"]
    if "Draft request:" not in text:  # a retry: answer from the first user turn
        text = next(m["content"] for m in request["messages"] if "Draft request:" in
                    m["content"])
    return text.split("Draft request:\n", 1)[1].split("\n\nValues that", 1)[0]


def composer(url: str) -> Composer:
    endpoint = EndpointConfig(base_url=url, model="tiny", timeout_s=2.0, max_retries=0)
    return Composer(config=ComposerConfig(rewrite=endpoint))


def test_a_faithful_rewrite_replaces_the_template_and_records_it():
    with ChatServer(responder=lambda r: "Hi! Could you help me with this? " + draft(r)) as srv:
        c = composer(srv.url)
        tasks = list(c.generate(3, seed=1))
    for t in tasks:
        assert t.instruction.startswith("Hi! Could you help me with this?")
        template = t.recorded["rewrite"]["template"]
        assert " ".join(template.split()) in t.instruction
        assert t.recorded["rewrite"]["model"] == "tiny"
        assert t.id == t.content_hash() and replay(t).rubric_score == 1.0
    assert c.rewrite_stats.accepted == 3


def test_a_rewrite_that_drops_a_stated_value_keeps_the_template():
    with ChatServer(responder=lambda r: "Please do the usual thing for me, thanks a lot.") as srv:
        c = composer(srv.url)
        task = next(c.generate(1, seed=1))
    assert "rewrite" not in task.recorded
    assert c.rewrite_stats.accepted == 0 and c.rewrite_stats.rejected


def test_an_unreachable_endpoint_keeps_the_template():
    with ChatServer() as srv:
        url = srv.url
    task = next(composer(url).generate(1, seed=1))
    assert "rewrite" not in task.recorded and task.instruction


def _goal_composer(url: str) -> Composer:
    endpoint = EndpointConfig(base_url=url, model="tiny", timeout_s=2.0, max_retries=0)
    return Composer(config=ComposerConfig(rewrite=endpoint, scenarios=("team_hotel_block",),
                                          guidance=(("goal", 1.0),)))


def test_a_goal_request_rewrite_keeps_its_facts_and_leaks_nothing():
    """A goal-level request rewritten: kept when every stated fact survives; refused when a
    value the agent must find (the chosen hotel's name) is added, or a fact is dropped."""
    with ChatServer(responder=lambda r: "Hello there. " + draft(r)) as srv:
        c = _goal_composer(srv.url)
        task = next(c.generate(1, seed=2))
    request = task.instruction.rpartition("Request: ")[2]
    assert task.guidance == "goal" and request.startswith("Hello there.")
    # the house rules are kept as stated, a list by design
    assert task.instruction.rpartition("Request: ")[0] == \
        task.recorded["rewrite"]["template"].rpartition("Request: ")[0]
    assert replay(task).rubric_score == 1.0
    template = task.recorded["rewrite"]["template"]
    hotel = next(c.mentions[0] for c in task.rubric if getattr(c, "mentions", None)) \
        if any(getattr(c, "mentions", None) for c in task.rubric) else None

    def leaky(request: dict) -> str:
        return draft(request) + f" The hotel is {hotel or task.answer[0]}."

    with ChatServer(responder=leaky) as srv:
        c = _goal_composer(srv.url)
        leaked = next(c.generate(1, seed=2))
    assert "rewrite" not in leaked.recorded and leaked.instruction == template
    assert c.rewrite_stats.rejected["leaked_value"] >= 1

    def dropping(request: dict) -> str:
        text = draft(request)
        return text.replace(next(w for w in text.split() if w[:1].isdigit()), "soon")

    with ChatServer(responder=dropping) as srv:
        c = _goal_composer(srv.url)
        dropped = next(c.generate(1, seed=2))
    assert "rewrite" not in dropped.recorded
    assert c.rewrite_stats.rejected["missing_value"] >= 1
