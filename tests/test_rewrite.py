"""rewrite_instruction: a model rewrite is used only if it keeps every stated value and
leaks no hidden one; otherwise (or when the endpoint fails) the template text stays."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from chat_server import ChatServer

from compoenv.compose.rewrite import RewriteStats, check_rewrite, rewrite_instruction
from compoenv.llm import ChatClient, EndpointConfig

pytest.importorskip("openai")

DRAFT = ('Find the contact Ann Lee. Then send an email to the contact\'s email (subject '
         '"Lunch on Thursday"). Then pay invoice INV-204 of 236.1 USD.')
KEEP = ["Ann Lee", '"Lunch on Thursday"', "INV-204", "236.1"]
FORBID = ["ann.lee@example.com"]
GOOD = ('Could you look up Ann Lee in my contacts, email her with the subject "Lunch on '
        'Thursday", and then pay invoice INV-204 for 236.10 USD?')


class Script:
    """Replies in order; the last one repeats."""

    def __init__(self, *replies: str) -> None:
        self.replies = list(replies)
        self.requests: list[dict[str, Any]] = []

    def __call__(self, request: dict[str, Any]) -> str:
        self.requests.append(request)
        return self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with ChatServer() as srv:
        yield srv


def client_for(server: ChatServer) -> ChatClient:
    return ChatClient(EndpointConfig(base_url=server.url, model=server.model, timeout_s=0.3,
                                     max_retries=1, backoff_s=0.01))


def run(server: ChatServer, *replies: str, keep: list[str] = KEEP,
        forbid: list[str] = FORBID, stats: RewriteStats | None = None) -> str | None:
    server.responder = Script(*replies)
    return rewrite_instruction(DRAFT, keep, forbid, client_for(server), stats=stats)


def test_a_faithful_rewrite_is_accepted(server: ChatServer) -> None:
    stats = RewriteStats()
    assert run(server, GOOD, stats=stats) == GOOD
    assert stats.as_dict() == {"calls": 1, "attempts": 1, "accepted": 1, "rejected": {}}
    system, user = server.bodies[0]["messages"]
    assert system["role"] == "system" and "exactly as written" in system["content"]
    assert DRAFT in user["content"] and all(v in user["content"] for v in KEEP)


def test_labels_quotes_and_line_wrapping_are_cleaned(server: ChatServer) -> None:
    wrapped = GOOD.replace(" and then", "\nand then")
    reply = f"Here is the rewritten request:\n\u201c{wrapped}\u201d"
    assert run(server, reply) == GOOD


def test_a_dropped_value_is_retried_with_feedback(server: ChatServer) -> None:
    stats = RewriteStats()
    dropped = GOOD.replace("INV-204 ", "the invoice ")
    assert run(server, dropped, GOOD, stats=stats) == GOOD
    assert (stats.attempts, stats.accepted, dict(stats.rejected)) == (2, 1, {"missing_value": 1})
    retry = server.bodies[1]["messages"]
    assert retry[-2] == {"role": "assistant", "content": dropped}
    assert '"INV-204"' in retry[-1]["content"]


def test_a_value_dropped_every_time_gives_none(server: ChatServer) -> None:
    stats = RewriteStats()
    assert run(server, GOOD.replace("Ann Lee", "my colleague"), stats=stats) is None
    assert (stats.calls, stats.attempts, stats.accepted) == (1, 2, 0)
    assert stats.rejected == {"missing_value": 2}


def test_a_leaked_hidden_value_gives_none(server: ChatServer) -> None:
    stats = RewriteStats()
    leaked = GOOD.replace("email her", "email her at Ann.Lee@example.com")
    assert run(server, leaked, stats=stats) is None
    assert stats.rejected == {"leaked_value": 2}


@pytest.mark.parametrize("reply", ["Pay INV-204 (236.1) for Ann Lee, \"Lunch on Thursday\".",
                                   GOOD + " Please." * 60])
def test_a_rewrite_of_the_wrong_length_gives_none(server: ChatServer, reply: str) -> None:
    stats = RewriteStats()
    assert run(server, reply, stats=stats) is None
    assert stats.rejected == {"length": 2}


def test_a_list_gives_none(server: ChatServer) -> None:
    stats = RewriteStats()
    listed = GOOD.replace("Could you", "Please:\n- ").replace(", email", "\n- email")
    assert run(server, listed, stats=stats) is None and stats.rejected == {"format": 2}


def test_endpoint_failure_gives_none_at_once_and_prints_nothing(
        capsys: pytest.CaptureFixture[str]) -> None:
    stats = RewriteStats()
    with ChatServer("down") as server:
        assert rewrite_instruction(DRAFT, KEEP, FORBID, client_for(server), stats=stats) is None
    assert (stats.attempts, stats.rejected) == (1, {"llm_error": 1})
    assert capsys.readouterr().out == ""


def test_stats_accumulate_over_calls(server: ChatServer) -> None:
    stats = RewriteStats()
    run(server, GOOD, stats=stats)
    run(server, GOOD.replace("Ann Lee", "her"), GOOD, stats=stats)
    assert stats.as_dict() == {"calls": 2, "attempts": 3, "accepted": 2,
                               "rejected": {"missing_value": 1}}
    total = RewriteStats()
    total.merge(stats)
    total.merge(stats)
    assert (total.calls, total.attempts, total.rejected) == (4, 6, {"missing_value": 2})


@pytest.mark.parametrize(("keep", "text", "ok"), [
    ("236.1", "pay 236.10 USD", True),
    ("236.10", "pay $236.1 now", True),
    ("1200", "transfer 1,200 dollars", True),
    ("3", "book 3 seats", True),
    ("236.1", "pay 1236.1 USD", False),
    ("236.1", "pay 236.15 USD", False),
    ("3", "book the 3rd seat", False),
    ("Ann Lee", "ask ANN LEE", True),
    ("Ann", "ask Annabel", False),
    ('"Hi there"', 'subject "hi there"', True),
])
def test_kept_values_match_verbatim_or_as_the_same_number(keep: str, text: str,
                                                          ok: bool) -> None:
    original = f"Please {text}."
    assert (check_rewrite(original, original, [keep], []) is None) is ok


@pytest.mark.parametrize(("original", "rewrite", "forbid", "reason"), [
    ("Find Ann's order and tell me its total.", "Tell me the total, 42.5, of Ann's order.",
     ["42.50"], "leaked_value"),
    ("Find Ann's order and tell me its total.", "Find Ann's order; what is its total?",
     ["42.50"], None),
    ("Email Jo at jo@x.org about order 77.", "Send Jo an email at jo@x.org about order 77.",
     ["77"], None),  # already in the draft, not repeated: no new leak
    ("Email Jo at jo@x.org about order 77.", "Email Jo about order 77, i.e. 77.",
     ["77"], "leaked_value"),
])
def test_hidden_values_may_not_appear_more_often_than_in_the_draft(
        original: str, rewrite: str, forbid: list[str], reason: str | None) -> None:
    refused = check_rewrite(original, rewrite, [], forbid)
    assert (refused[0] if refused else None) == reason
