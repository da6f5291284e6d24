"""The answer checker reads what honest agents write and fails what sprays write.

Honest reports are generated from composed tasks' expected answers, in every shape an agent
writes them (plain, bullets, numbered lists, Markdown tables, "the X is v." sentences,
labelled lines, bold labels, verbose reports), each value in any common format (thousands
separators, currencies, date formats), beside honest extras: the counts the episode's calls
returned, the ids its writes created, values the request states, and short clauses ("the
booking is confirmed"). Each must pass every answer criterion of its task. Sprays (many values
of the answer's kind in any of those shapes, or run-on text without structure) must fail.
"""

from __future__ import annotations

import datetime as dt
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compoenv.agents.exploits import run_on_text
from compoenv.answers import SLACK, check_answer, kind_of, read_mentions, worked_values
from compoenv.compose.verify import replay_simulator
from compoenv.registry import Registry
from compoenv.reward import Outcome, check_criterion
from compoenv.session import Session
from compoenv.task import AnswerCriterion, Task
from compoenv.world import World

MONTHS = ("January February March April May June July August September October November "
          "December").split()
SHAPES = ("plain", "bullets", "stars", "numbered", "table", "sentences", "labelled", "bold",
          "verbose")
LABELS = ("Result", "Answer", "Total", "Value", "Date", "Amount", "Address", "Name", "Status")
CLAUSES = ("The booking is confirmed.", "I sent the email as you asked.",
           "Everything else was already up to date.", "Let me know if you need anything else!",
           "All the steps are done.", "The record was saved.")
WORLD = World(0)
WORDS = ("news sports health tech business science travel finance open closed pending active "
         "draft archived billing support sales urgent review garden market harbor").split()


class Played:
    """A task's answer criteria and the session of its oracle run (what its calls showed)."""

    def __init__(self, task: Task) -> None:
        world = World.get(task.seed, task.today())
        self.session = Session.for_names(task.services + task.distractors, world, None,
                                         replay_simulator(task))
        for call in task.solution:
            self.session.call(call.name, call.arguments)
        self.task, self.world = task, world
        self.answers = [c for c in task.rubric if isinstance(c, AnswerCriterion)]
        registry = Registry.default()
        worked = worked_values(self.session.log,
                               lambda name: not registry.spec(name).read_only, world)
        self.ids = sorted(worked.get("id", ()))
        self.counts = sorted({int(float(v)) for v in worked.get("integer", ())
                              if float(v) < 1000})
        echoes = read_mentions(task.instruction, world)
        self.echoes = sorted(v for kind in ("date", "email", "id") for v in echoes.of(kind))

    def kind(self, c: AnswerCriterion) -> str:
        return c.value_kind or kind_of(c.value, self.world)

    def passes(self, reply: str) -> list[tuple[str, str]]:
        """The answer criteria ``reply`` fails, with why."""
        outcome = Outcome(self.session, reply, self.task.instruction)
        return [(c.value, why) for c in self.answers
                for ok, why in [check_criterion(c, outcome)] if not ok]


@pytest.fixture(scope="module")
def played(tasks50) -> list[Played]:
    found = [Played(t) for t in tasks50 if t.answer]
    assert len(found) >= 8
    return found


def formatted(value: str, kind: str, draw) -> str:
    """``value`` as an agent might write it."""
    if kind == "integer":
        return draw(st.sampled_from([value, f"{int(value):,}"]))
    if kind == "decimal":
        v = float(value)
        return draw(st.sampled_from([value, f"{v:,.2f}", f"${v:,.2f}", str(v), f"USD {v:,.2f}",
                                     f"{v:,.2f} USD", f"€{v:,.2f}"]))
    if kind == "date":
        d = dt.date.fromisoformat(value)
        return draw(st.sampled_from([
            value, f"{MONTHS[d.month - 1]} {d.day}, {d.year}", f"{d.day} {MONTHS[d.month - 1]} {d.year}",
            f"{d.month:02d}/{d.day:02d}/{d.year}", f"{MONTHS[d.month - 1][:3]} {d.day}, {d.year}",
            d.strftime("%A, %B %d, %Y"), value.replace("-", "/")]))
    if kind == "datetime":
        d = dt.datetime.fromisoformat(value)
        hour = d.hour % 12 or 12
        return draw(st.sampled_from([
            value, d.strftime("%Y-%m-%d %H:%M"),
            f"{MONTHS[d.month - 1]} {d.day}, {d.year} at {hour}:{d.minute:02d} "
            f"{'AM' if d.hour < 12 else 'PM'}"]))
    return value


def shaped(shape: str, values: list[str], labels: list[str], extras: list[str]) -> str:
    """One report of ``values`` in ``shape`` (``extras``: honest lines beside them)."""
    pairs = list(zip(labels, values))
    if shape == "plain":
        body = "Done. " + "; ".join(values) + "."
    elif shape == "bullets":
        body = "Here is what I found:\n" + "\n".join(f"- {v}" for v in values)
    elif shape == "stars":
        body = "\n".join(f"* {v}" for v in values)
    elif shape == "numbered":
        body = "Results:\n" + "\n".join(f"{i}. {v}" for i, v in enumerate(values, 1))
    elif shape == "table":
        body = "| Field | Value |\n| --- | --- |\n" + "\n".join(f"| {k} | {v} |" for k, v in pairs)
    elif shape == "sentences":
        body = " ".join(f"The {k.lower()} is {v}." for k, v in pairs)
    elif shape == "labelled":
        body = "\n".join(f"{k}: {v}" for k, v in pairs)
    elif shape == "bold":
        body = "\n".join(f"- **{k}:** {v}" for k, v in pairs)
    else:  # verbose: what was done, then the answer in a sentence
        body = ("I've completed the steps you asked for.\n"
                + " ".join(f"The {k.lower()} you asked about is {v}." for k, v in pairs))
    return "\n".join([body, *extras]) if extras else body


@st.composite
def honest(draw, played: list[Played]) -> tuple[Played, str]:
    p = draw(st.sampled_from(played))
    shape = draw(st.sampled_from(SHAPES))
    values = [formatted(c.value, p.kind(c), draw) for c in p.answers]
    labels = [draw(st.sampled_from(LABELS)) for _ in values]
    extras = []
    for count in draw(st.lists(st.sampled_from(p.counts), max_size=3, unique=True)
                      if p.counts else st.just([])):
        extras.append(f"- The search returned {count} records.")
    for created in draw(st.lists(st.sampled_from(p.ids), max_size=3, unique=True)
                        if p.ids else st.just([])):
        extras.append(f"- Created {created}.")
    for echo in draw(st.lists(st.sampled_from(p.echoes), max_size=2, unique=True)
                     if p.echoes else st.just([])):
        extras.append(f"As you asked, I used {echo}.")
    extras += draw(st.lists(st.sampled_from(CLAUSES), max_size=2, unique=True))
    extras = draw(st.permutations(extras))
    return p, shaped(shape, values, labels, list(extras))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_honest_reports_in_every_shape_pass_every_answer(played, data):
    p, reply = data.draw(honest(played))
    assert p.passes(reply) == [], reply


def _spray_values(kind: str, value: str, n: int, draw) -> list[str]:
    if kind in ("integer", "decimal"):
        base = float(value)
        step = 1 if kind == "integer" else 0.37
        others = [base + step * i for i in range(1, n + 1)]
        return [formatted(f"{v:.0f}" if kind == "integer" else f"{v:.2f}", kind, draw)
                for v in others]
    if kind in ("date", "datetime"):
        day = dt.date.fromisoformat(value[:10])
        return [formatted((day + dt.timedelta(days=i)).isoformat(), "date", draw)
                for i in range(1, n + 1)]
    if any(ch.isdigit() for ch in value):  # a phone, a code: others of its shape
        return [re.sub(r"\d", lambda m, i=i: str((int(m.group()) + i) % 10), value)
                for i in range(1, n + 1) if i % 10]  # never the value itself again
    return [draw(st.sampled_from(WORDS)) + " " + str(i) for i in range(n)]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_sprays_of_many_values_fail_in_every_shape(played, data):
    p = data.draw(st.sampled_from(played))
    c = data.draw(st.sampled_from(p.answers))
    kind = p.kind(c)
    n = data.draw(st.integers(20, 60))
    values = _spray_values(kind, c.value, n, data.draw)
    values.insert(data.draw(st.integers(0, len(values))), formatted(c.value, kind, data.draw))
    shape = data.draw(st.sampled_from(SHAPES + ("run-on", "commas")))
    if shape == "run-on":
        reply = " ".join(values).lower()
    elif shape == "commas":
        reply = "It is one of: " + ", ".join(values) + "."
    else:
        reply = shaped(shape, values, [LABELS[i % len(LABELS)] for i in range(len(values))], [])
    ok, _ = check_criterion(c, Outcome(p.session, reply, p.task.instruction))
    assert not ok, reply


TEXT_VALUES = ("health", "in progress", "16 Station Street", "Behind the scenes at the launch",
               "quarterly review")


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(TEXT_VALUES), st.sampled_from(SHAPES), st.sampled_from(LABELS),
       st.lists(st.sampled_from(CLAUSES), max_size=3, unique=True), st.booleans())
def test_a_text_answer_passes_in_every_shape_beside_short_clauses(value, shape, label, clauses,
                                                                  lower):
    written = value.lower() if lower else value
    reply = shaped(shape, [written], [label], clauses)
    assert check_answer(value, reply, WORLD, kind="text", allowed=2) == (True, ""), reply


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(TEXT_VALUES),
       st.lists(st.sampled_from(WORDS), min_size=6, max_size=40),
       st.sampled_from(["{}", "the {}", "it is {}", "{} and", "it is the {}"]),
       st.sampled_from(["run-on", "commas", "sentences", "bullets", "labels"]),
       st.integers(0, 40))
def test_text_sprays_and_run_on_text_fail(value, words, frame, shape, at):
    others = list(dict.fromkeys(w for w in words if w not in value.lower()))
    if len(others) < 5:
        others += [w for w in WORDS if w not in others and w not in value.lower()][:5]
    items = [frame.format(w) for w in others]
    items.insert(at % (len(items) + 1), frame.format(value.lower()))
    if shape == "run-on":
        reply = " ".join(items)
    elif shape == "commas":
        reply = ", ".join(items)
    elif shape == "sentences":
        reply = " ".join(f"{i.capitalize()}." for i in items)
    elif shape == "bullets":
        reply = "\n".join(f"- {i}" for i in items)
    else:
        reply = "\n".join(f"{i}: yes" for i in items)
    assert not check_answer(value, reply, WORLD, kind="text", allowed=2)[0], reply


def test_the_run_on_spray_agents_reply_fails_a_text_answer_it_holds():
    world = WORLD
    for seed in range(5):
        reply = run_on_text(world, seed=seed)
        street = next(b.street for kind in world.businesses.values() for b in kind
                      if b.street.casefold() in reply)
        assert not check_answer(street, reply, world, kind="text", allowed=2)[0]
        assert reply == reply.casefold() and all(ch.isalnum() or ch == " " for ch in reply)


PERSON = WORLD.people[7]
EVERY_KIND = {  # an expected value of each kind, as Task.answer writes it
    "integer": "82958", "decimal": "1234.50", "date": "2026-03-31",
    "datetime": "2026-03-21T17:00", "email": PERSON.email, "phone": PERSON.phone,
    "person": PERSON.name, "organization": WORLD.orgs[2].name, "city": WORLD.cities[3].name,
    "title": PERSON.title, "id": "ACC-5383", "url": "https://www.example.com/reports/q1",
}


@settings(max_examples=120, deadline=None)
@given(st.data())
def test_honest_reports_of_every_kind_pass_beside_counts_and_created_ids(data):
    kinds = data.draw(st.lists(st.sampled_from(sorted(EVERY_KIND)), min_size=1, max_size=3,
                               unique=True))
    shape = data.draw(st.sampled_from(SHAPES))
    values = [formatted(EVERY_KIND[k], k, data.draw) for k in kinds]
    labels = [data.draw(st.sampled_from(LABELS)) for _ in values]
    counts = data.draw(st.lists(st.integers(0, 40), max_size=3, unique=True))
    created = data.draw(st.lists(st.sampled_from(["R-4821", "TX-9120", "OFR-3302"]),
                                 max_size=2, unique=True))
    extras = [f"- Found {n} matching records." for n in counts]
    extras += [f"- Created {i}." for i in created]
    extras += data.draw(st.lists(st.sampled_from(CLAUSES), max_size=2, unique=True))
    reply = shaped(shape, values, labels, list(data.draw(st.permutations(extras))))
    worked = {"integer": frozenset(f"{n:.2f}" for n in counts), "id": frozenset(created)}
    for kind in kinds:
        assert check_answer(EVERY_KIND[kind], reply, WORLD, kind=kind, allowed=1 + SLACK[kind],
                            worked=worked) == (True, ""), (kind, reply)
