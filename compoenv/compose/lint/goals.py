"""Goal-level checks: a request says what the user wants, not how to get it.

A request is read as sentences (house-rule lines and quoted text left out): the *steps* are
sentences led by "Then" (or "Next", "After that", "Finally") or by the verb of one of its
solution's tools ("Find restaurants in London", "Book ..."); the *report* is "tell me ...";
the rest is the *goal* ("A client dinner has to be booked, put in the calendar and everyone
invited"). Three rules read them: a request that dictates its steps, one that shows an
identifier of a service or tool, and a goal that the steps or the solution contradict.
"""

from __future__ import annotations

import re
from functools import cached_property
from typing import Iterator, NamedTuple

from compoenv.compose.labels import singular
from compoenv.compose.lint.context import TaskContext
from compoenv.compose.lint.records import Hit
from compoenv.compose.lint.wording import _BREAK, _near  # sentences and quotes as L107 reads them
from compoenv.service import SEP

__all__ = ["check_dictated_steps", "check_identifiers", "check_goal_contradiction", "sentences",
           "Sentence"]

_RULE_LINE = re.compile(r"^(?:House rules:|- )")
_REQUEST = re.compile(r"^Request: ")
_SEQUENCER = re.compile(r"^(?:Then,? |Next, |After that,? |Afterwards,? |Finally, )")
_LEAD = re.compile(r"^(?:(?:then|next|after that|afterwards|finally|first|also|and|please)"
                   r",? )+", re.IGNORECASE)
_EACH = re.compile(r"^for (?:each|every) [^,]{1,60}, ", re.IGNORECASE)
_REPORT = re.compile(r"^(?:(?:when you are done|when you're done|once done|finally|and),? )?"
                     r"(?:tell|let|give|send|report|show) me\b|^(?:I'd|I would) like to know\b",
                     re.IGNORECASE)
_CLAUSES = re.compile(r",? and then |, then |; |, and |,? and (?=[a-z]+ )|, (?=[a-z]+ )")


class Sentence(NamedTuple):
    """One sentence of the request: where it starts and ends, its text with quoted text
    blanked (same length), and what it is: ``step``, ``report`` or ``goal``."""

    start: int
    end: int
    text: str
    kind: str


class _Reading:
    """The request of one task as the goal checks read it (computed once per task)."""

    def __init__(self, ctx: TaskContext) -> None:
        self.ctx = ctx

    @cached_property
    def masked(self) -> str:
        """The instruction with the inside of every quoted string blanked with "x"."""
        text = self.ctx.text
        for start, end in self.ctx.quoted:
            text = text[:start + 1] + "x" * (end - start - 2) + text[end - 1:]
        return text

    @cached_property
    def verbs(self) -> frozenset[str]:
        """The leading verbs of the solution's lookups ("find", "search", "look", "check"):
        of their phrases, else of their names ("search_hotels" -> "search"); not a verb one
        of its writes also leads with. The writes a user asks for are the goal itself ("book
        a table, invite everyone and email them"); the lookups and their order are the plan
        a goal-level request leaves to the agent."""
        reads, writes = set(), set()
        for call in self.ctx.task.solution:
            spec = self.ctx.vocab.spec(call.name)
            phrase = (spec.phrase if spec is not None else None) or \
                call.name.rpartition(SEP)[2].replace("_", " ")
            first = phrase.split(" ", 1)[0].lower()
            if first.isalpha():
                (reads if spec is None or spec.read_only else writes).add(first)
        return frozenset(reads - writes)

    def led_by_a_verb(self, clause: str) -> bool:
        """Whether the clause is an imperative led by the verb of a solution tool."""
        body = _EACH.sub("", _LEAD.sub("", clause.strip()))
        first = body.split(" ", 1)[0].lower().strip(",;:")
        return first in self.verbs

    @cached_property
    def sentences(self) -> tuple[Sentence, ...]:
        out = []
        offset = 0
        for line in self.masked.split("\n"):
            request = _REQUEST.match(line)
            if _RULE_LINE.match(line) or not line.strip():
                offset += len(line) + 1
                continue
            base = offset + (request.end() if request else 0)
            body = line[request.end():] if request else line
            starts = [0] + [m.end() for m in _BREAK.finditer(body)]
            for s, e in zip(starts, starts[1:] + [len(body)]):
                text = body[s:e].rstrip()
                if not text:
                    continue
                if _REPORT.match(text):
                    kind = "report"
                elif _SEQUENCER.match(text) or self.led_by_a_verb(text):
                    kind = "step"
                else:
                    kind = "goal"
                out.append(Sentence(base + s, base + s + len(text), text, kind))
            offset += len(line) + 1
        return tuple(out)


def _reading(ctx: TaskContext) -> _Reading:
    if "goals" not in ctx.memo:
        ctx.memo["goals"] = _Reading(ctx)
    return ctx.memo["goals"]


def sentences(ctx: TaskContext) -> tuple[Sentence, ...]:
    """The request's sentences, each a step, the report or part of the goal."""
    return _reading(ctx).sentences


def _opening(text: str, words: int = 5) -> str:
    parts = text.split(" ")
    return " ".join(parts[:words]) + (" ..." if len(parts) > words else "")


# -- dictated steps ------------------------------------------------------------------------------

def check_dictated_steps(ctx: TaskContext) -> Iterator[Hit]:
    """A request that lists three or more calls as steps: two or more sentences led by "Then"
    after a first one, or three or more imperative clauses in a row, each led by the verb of
    one of the solution's lookups ("Search hotels in Madrid, find restaurants near it and
    check tables"). Asking for the writes the job needs, in no order, is stating the goal."""
    reading = _reading(ctx)
    said = reading.sentences
    sequenced = [i for i, s in enumerate(said) if _SEQUENCER.match(s.text)]
    if len(sequenced) >= 2:
        first = sequenced[0] - 1 if sequenced[0] > 0 and said[sequenced[0] - 1].kind == "step" \
            else sequenced[0]
        steps = [said[first]] + [said[i] for i in sequenced if i != first]
        if len(steps) < 3:
            return
        yield _dictated(ctx.text, (steps[0].start, steps[0].end),
                        (steps[-1].start, steps[-1].end), len(steps))
        return
    run: list[tuple[int, int]] = []
    best: list[tuple[int, int]] = []
    for sentence in said:
        if sentence.kind == "report":
            run = []
            continue
        at = 0
        for part in _CLAUSES.split(sentence.text):
            start = sentence.text.index(part, at) if part else at
            at = start + len(part)
            if part and reading.led_by_a_verb(part):
                run.append((sentence.start + start, sentence.start + at))
                if len(run) > len(best):
                    best = list(run)
            else:
                run = []
    if len(best) >= 3:
        yield _dictated(ctx.text, best[0], best[-1], len(best))


def _dictated(text: str, first: tuple[int, int], last: tuple[int, int], count: int) -> Hit:
    """The finding: the count, and the openings of the first and last steps, quoted from the
    instruction (the span is the first one's opening, the text it quotes)."""
    opening = _opening(text[first[0]:first[1]])
    return Hit(f'dictates {count} steps in order: "{opening}" to '
               f'"{_opening(text[last[0]:last[1]])}"',
               span=(first[0], first[0] + len(opening.removesuffix(" ..."))))


# -- identifiers ---------------------------------------------------------------------------------

_TOKEN = re.compile(r"(?<![\w@./:-])[a-z][a-z0-9]*(?:(?:__?|\.)[a-z0-9]+)+(?![\w@/-]|\.[a-z0-9])")
_LINK = re.compile(r"\S+@\S+|\b(?:https?://|www\.)\S+|\b[\w-]+\.(?:com|org|net|io|dev|app)\b\S*")


def _identifiers(ctx: TaskContext) -> dict[str, str]:
    """Every raw identifier of the registry, with what it is: services with an underscore or
    a dot, qualified tool names, and tool names with an underscore."""
    vocab = ctx.vocab
    known = getattr(vocab, "_identifiers", None)
    if known is None:
        known = {}
        for info_name in vocab.registry.names():
            if "_" in info_name or "." in info_name:
                known[info_name] = "the service"
        for signature in vocab.registry.signatures():
            known[signature.qualified_name] = "the tool"
            if "_" in signature.name:
                known.setdefault(signature.name, "the tool")
        vocab._identifiers = known  # type: ignore[attr-defined]  # read once per registry
    return known


def check_identifiers(ctx: TaskContext) -> Iterator[Hit]:
    """A raw identifier in the request: a service's name (``real_estate``), a tool's qualified
    or bare name (``hotels__search_hotels``, ``search_hotels``) or any other snake_case token,
    outside quoted values (a quoted raw value is rule L104's) and outside emails and links."""
    links = [m.span() for m in _LINK.finditer(ctx.text)]
    known = _identifiers(ctx)
    for m in _TOKEN.finditer(ctx.text):
        token, (start, end) = m.group(0), m.span()
        if any(a <= start < b for a, b in links) or ctx.in_quotes(start):
            continue
        what = known.get(token)
        if what is None and SEP in token:
            what = "the tool"
        if what is None and ("_" not in token or "." in token):
            continue  # a dotted word that names nothing here ("e.g")
        quote = _near(ctx.text, (start, end))
        yield Hit(f'names {what or "the identifier"} {token}: "{quote}"', span=(start, end))


# -- goal against steps and solution ---------------------------------------------------------------

_DIRECTION = {"latest": "late", "newest": "late", "most recent": "late", "earliest": "early",
              "oldest": "early", "cheapest": "low", "least expensive": "low",
              "lowest-priced": "low", "most expensive": "high", "priciest": "high",
              "highest": "high", "lowest": "low"}
_OPPOSITE = {"late": "early", "early": "late", "low": "high", "high": "low"}
_GOAL_EXTREME = re.compile(r"\b(most recent|least expensive|most expensive|lowest-priced|"
                           r"latest|newest|earliest|oldest|cheapest|priciest|highest|lowest)"
                           r"((?: [a-z-]+){0,3})")
_STEP_EXTREME = re.compile(r"\btake the ((?:[a-z-]+ ){0,3}?[a-z-]+) with the "
                           r"(highest|lowest|earliest|latest) ([a-z' -]{2,60}?)"
                           r"(?=[,.;)]|$| and | in | on | at | for )")
_FUNCTION_WORD = re.compile(r" (?:in|on|at|of|for|to|with|from|and|or|by|that|which|near)\b")
_PRICE = re.compile(r"\b(?:price|prices|cost|fare|fee|rate|rent|premium|amount|budget|salary|"
                    r"total|spend|value)\b")
_BOUND = re.compile(r"\b(below|under|less than|at most|above|over|more than|at least) "
                    r"(\d[\d,]*(?:\.\d+)?)\b")
_BOUND_SIDE = {"below": "low", "under": "low", "less than": "low", "at most": "low",
               "above": "high", "over": "high", "more than": "high", "at least": "high"}

# what a goal says is done, and the writes of the solution that do it (by qualified name)
_CLAIMS: tuple[tuple[re.Pattern[str], str, re.Pattern[str]], ...] = tuple(
    (re.compile(rf"\b(?:{words})\b"), what, re.compile(writes)) for words, what, writes in (
        (r"invited", "invites anyone", r"invite|attendee"),
        (r"e-?mailed|told|written to|thanked|notified|informed|messaged|welcomed|briefed|"
         r"reminded|contacted", "writes to anyone", r"email__|send|message|reply|invite|notify"),
        (r"paid|settled", "pays anything", r"pay|paid|transfer|settle|deposit|order|book"),
        (r"booked|reserved|scheduled", "books anything",
         r"book|reserv|schedule|order|create_event"),
        (r"cancell?ed|voided|deleted|removed|called off", "cancels anything",
         r"cancel|void|delete|remove|archive|close"),
        (r"ordered|bought|purchased", "orders anything", r"order|buy|purchase|book"),
        (r"filed|logged|recorded|noted|documented", "records anything",
         r"log|note|record|document|file|expense|report|memo|comment|submit|create_|add_|"
         r"update_"),
        (r"saved|bookmarked", "saves anything", r"save|bookmark|reading|store|file|create_|add_"),
        (r"posted|published", "posts anything", r"post|publish"),
        (r"connected with", "connects with anyone", r"connect"),
        (r"tracked|monitored|watched|alerted", "tracks anything",
         r"alert|track|watch|follow|subscrib"),
        (r"(?:put|added|entered) (?:in|on|into|to) (?:the|my|our|their|your) calendar",
         "writes to a calendar", r"calendar__|create_event|add_attendee"),
        (r"sent", "sends anything",
         r"send|email|message|reply|invite|share|transfer|payment|tickets"),
    ))
# a participle after these is a fact about the past ("already booked", "they asked for") or
# part of a noun ("a tracked follow-up"), not work the request asks for
_NOT_A_CLAIM = re.compile(r"(?:\b(?:already|have|has|had|'ve|was|were|been|being|I|we|they|he|"
                          r"she|you|who|a|an|the|their|its|our|my|your|not|never)|n't)\s+$",
                          re.IGNORECASE)


# what follows a participle that says work is done ("the supplier told.", "invited and
# written to", "logged as a travel expense", "told the plan"); a noun after it makes it part of
# a noun phrase ("paid campaigns"), and "by" says who did it ("paid by us")
_AFTER_A_CLAIM = re.compile(r"$|[,.;:!?)]|\s+(?:and|or|to|as|for|in|on|at|with|about|into|from|"
                            r"before|after|once|then|first|today|afterwards|back|up|the|a|an|"
                            r"their|its|his|her|them|him|us|me|everyone|everything|all|each|"
                            r"what|when|that|where|how)\b")


def check_goal_contradiction(ctx: TaskContext) -> Iterator[Hit]:
    """A goal the request's steps or its solution contradict: the goal asks for the latest
    (cheapest, lowest, ...) and the steps take only the earliest (highest, ...); the goal says
    "below" a figure and a step "above" it; or the goal claims work ("filed", "emailed",
    "invited", "put in the calendar") that no write of the solution does."""
    said = sentences(ctx)
    goals = [s for s in said if s.kind == "goal"]
    steps = [s for s in said if s.kind == "step"]
    yield from _extremes(goals, steps)
    yield from _bounds(goals, steps)
    yield from _claims(ctx, goals)


def _extremes(goals: list[Sentence], steps: list[Sentence]) -> Iterator[Hit]:
    """A superlative of the goal about a thing ("the newest listing") that the steps take
    only the other end of ("take the listing with the earliest publication date"), unless a
    step says the goal's word too."""
    picks = [(_DIRECTION[m.group(2)], singular(m.group(1).split(" ")[-1]), m.group(3).strip())
             for s in steps for m in _STEP_EXTREME.finditer(s.text)]
    if not picks:
        return
    for goal in goals:
        for m in _GOAL_EXTREME.finditer(goal.text):
            word = m.group(1)
            after = _FUNCTION_WORD.split(m.group(2))[0]  # "newest listing in Oslo": "listing"
            if any(word in s.text for s in steps):
                continue
            wanted = _DIRECTION[word]
            pricey = word in ("cheapest", "least expensive", "lowest-priced", "most expensive",
                              "priciest")
            named = {singular(w) for w in after.split()}
            same = [p for p in picks if p[1] in named]
            if word in ("highest", "lowest"):  # of the field the goal names
                same = [p for p in same if named & set(p[2].replace("'s", "").split())]
            elif pricey:
                same = [p for p in same if _PRICE.search(p[2])]
            else:
                same = [p for p in same if p[0] in ("late", "early")]
            if same and all(p[0] == _OPPOSITE[wanted] for p in same):
                _, thing, field = same[0]
                yield Hit(f'the goal asks for the "{(word + after).strip()}" but a step takes '
                          f'the {thing} with the {_WORD[_OPPOSITE[wanted]]} {field}',
                          span=(goal.start + m.start(), goal.start + m.start()
                                + len(word + after)))


_WORD = {"late": "latest", "early": "earliest", "high": "highest", "low": "lowest"}


def _bounds(goals: list[Sentence], steps: list[Sentence]) -> Iterator[Hit]:
    stated = {(m.group(2).replace(",", ""), _BOUND_SIDE[m.group(1)]) for s in steps
              for m in _BOUND.finditer(s.text)}
    for goal in goals:
        for m in _BOUND.finditer(goal.text):
            figure, side = m.group(2).replace(",", ""), _BOUND_SIDE[m.group(1)]
            if (figure, _OPPOSITE[side]) in stated and (figure, side) not in stated:
                other = "above" if side == "low" else "below"
                yield Hit(f'the goal says "{m.group(0)}" but a step says {other} {figure}',
                          span=(goal.start + m.start(), goal.start + m.end()))


def _claims(ctx: TaskContext, goals: list[Sentence]) -> Iterator[Hit]:
    if not goals or not ctx.task.solution:
        return
    writes = [c.name for c in ctx.task.solution
              if (spec := ctx.vocab.spec(c.name)) is None or not spec.read_only]
    for goal in goals:
        for pattern, what, done_by in _CLAIMS:
            for m in pattern.finditer(goal.text):
                if _NOT_A_CLAIM.search(goal.text[:m.start()]) or \
                        not _AFTER_A_CLAIM.match(goal.text[m.end():]):
                    continue
                if not any(done_by.search(name) for name in writes):
                    real = ctx.text[goal.start:goal.end]  # quoted text as written
                    yield Hit(f'the goal says "{_near(real, m.span(), 2)}" but no call of '
                              f'the solution {what}', span=(goal.start + m.start(),
                                                               goal.start + m.end()))
                break  # one finding per kind of work and sentence
