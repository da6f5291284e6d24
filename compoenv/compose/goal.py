"""Goal-level requests: what a person would send, not a list of calls.

A ``steps`` request (``render.render_instruction``) spells out every call in order ("Search
hotels in Athens, and take ... Then find restaurants near ..."): the agent only transcribes. A
``goal`` request says who the user is and what they want (the scenario's goal), the decisions
they have made ("go with the cheapest hotel in Athens"), what has to be done, with the facts
the user knows (people, dates, amounts, accounts), the house rules and what to report. It
never names a read: what to look up, with which tool and in which order is the agent's plan.
A message or document is asked for by what it is about and the facts it must carry ("email
each of them about their room and the team dinner, naming the hotel"), never its wording,
and the rubric checks exactly that (``compose.rubric``). ``hints`` adds the one or two
lookups a helpful user would mention.
"""

from __future__ import annotations

import random
import re
from typing import Any

from compoenv.compose.config import GUIDANCE
from compoenv.compose.labels import field_label, fix_articles, plural, singular
from compoenv.compose.records import Binding, Walk
from compoenv.compose.render import NAMED, PEOPLE, identifies, noun, owner_reference, phrase, reference, \
    report_sentences, stated, with_rules
from compoenv.schema import free_text

__all__ = ["GUIDANCE", "render_goal", "free_params", "message_facts", "facts_about", "name_of",
           "lists_fed", "with_facts", "goal_work"]


# the verb a read's phrase opens with, and the words before its noun: "search hotels in
# Athens" -> "hotels in Athens", "list the invoices from Acme" -> "invoices from Acme"
_READ_VERB = re.compile(
    r"^(?:search(?: for)?|find(?: out)?|list|look up|get|show(?: me)?|check|fetch|see|browse|"
    r"pull up|read|open|view|look at|work out|tell me|compare|count|review|summari[sz]e|"
    r"calculate|estimate|total)\s+"
    r"(?:(?:me|all|the|every)\s+)*", re.IGNORECASE)
# the parameters that make a write a message or a document (its wording is the point of it)
_MESSAGE = frozenset({"subject", "body", "title", "content", "message", "text"})
_FAN_LEAD = re.compile(r"^for each ([^,]*?) found((?: other than [^,]+)?), ")
_NAME_FIELDS = ("name", "title", "company", "number", "symbol", "code")


def free_params(walk: Walk) -> dict[int, frozenset[str]]:
    """Per write step, the parameters whose wording a goal-level request leaves to the agent:
    free text the request stated (a subject, a body, a note's text), not a string a house rule
    fixes (a naming scheme) nor one a house rule's own call carries."""
    out: dict[int, frozenset[str]] = {}
    for index, step in enumerate(walk.steps):
        if step.spec.read_only or index in walk.rule_steps:
            continue
        props = step.spec.parameters.get("properties", {})
        names = frozenset(
            b.param for b in step.bindings
            if b.source is None and isinstance(b.value, str)
            and free_text(props.get(b.param, {})) and _wording(b.param, b.value)
            and (step.spec.qualified_name, b.param) not in walk.shown)
        if names:
            out[index] = names
    return out


# the wording parameters that make a call a message or a document (a title alone is not one)
BODIES = frozenset({"body", "content", "message", "text", "note", "notes", "description",
                    "comment"})
# parameters that take wording (a message, a note, a title), not a name or a place to put
# something (a folder called "Handover" is where the files go, whoever words the request)
_WORDING = frozenset({"subject", "body", "title", "content", "message", "text", "note",
                      "notes", "description", "comment", "memo", "reason", "summary",
                      "details", "caption", "bio", "agenda", "instructions", "feedback",
                      "reply", "headline", "topic", "purpose", "special_requests"})


def _wording(param: str, value: str) -> bool:
    """Whether a stated string is wording left to the agent: a wording parameter's, or prose
    (three words or more) in any other."""
    return param.casefold() in _WORDING or len(value.split()) >= 3


def name_of(walk: Walk, index: int, item: int) -> str | None:
    """What a person calls item ``item`` of list step ``index``: its name, title or number."""
    record = walk.steps[index].result
    if not isinstance(record, list) or not 0 <= item < len(record) \
            or not isinstance(record[item], dict):
        return None
    kind = noun(walk.steps[index].spec).casefold().replace(" ", "_")
    # its "name" or "restaurant_name", else its own id (an order is ORD-4443, not the company
    # it bought), else another field that tells it apart (a number, a symbol)
    for fields in (_NAME_FIELDS[:2], ("id",), _NAME_FIELDS[2:]):
        for field in (*fields, *(f"{kind}_{f}" for f in fields)):
            value = record[item].get(field)
            if isinstance(value, str) and 2 <= len(value) <= 80:
                return value
    return None


def message_facts(walk: Walk, index: int) -> list[tuple[str, str]]:
    """The facts the message or document of write step ``index`` must carry, as (the thing's
    kind, its name): each item the job chose before it that what the message is about names
    ("their room at the hotel" names the hotel the job chose)."""
    return facts_about(walk, walk.about.get(index, ""), index)


def facts_about(walk: Walk, about: str, before: int) -> list[tuple[str, str]]:
    """(kind, name) of each item the job chose before step ``before`` that ``about`` names."""
    about = about.casefold()
    out: list[tuple[str, str]] = []
    chosen = [(noun(walk.steps[step].spec), step, item)
              for step, (_, item) in sorted(walk.choices.items()) if step < before]
    heads = [_head(kind) for kind, _, _ in chosen]
    for (kind, list_step, item), head in zip(chosen, heads):
        name = name_of(walk, list_step, item)
        # the thing by its kind ("the cookbook recipe"), or by its last word when no other
        # thing the job chose shares it ("naming the recipe")
        said = re.search(r"\b%s\b" % re.escape(kind.casefold()), about) or (
            heads.count(head) == 1 and re.search(r"\b%s\b" % re.escape(head), about))
        if name is not None and said and kind not in (k for k, _ in out):
            out.append((kind, name))
    # what the author says it names that is no chosen thing ("naming the medication" of the
    # prescription the job chose, "naming the company" of the stock it found): that field of
    # the records the job found before it
    for word in re.findall(r"\bnaming the ([a-z]+)\b", about):
        if any(_head(k) == word for k, _ in out):
            continue
        value = _field_named(walk, word, before)
        if value is not None:
            out.append((word, value))
    return out


def _field_named(walk: Walk, word: str, before: int) -> str | None:
    """The ``word`` (or ``<word>_name``) of the latest item chosen or record found before
    step ``before``."""
    records = [walk.steps[step].result[item] for step, (_, item) in
               sorted(walk.choices.items(), reverse=True) if step < before
               and isinstance(walk.steps[step].result, list)
               and 0 <= item < len(walk.steps[step].result)]
    records += [walk.steps[i].result for i in range(min(before, len(walk.steps)) - 1, -1, -1)
                if isinstance(walk.steps[i].result, dict)]
    for record in records:
        for field in (word, f"{word}_name"):
            value = record.get(field) if isinstance(record, dict) else None
            if isinstance(value, str) and 2 <= len(value) <= 80:
                return value
    return None


def _head(kind: str) -> str:
    """A thing's last word, how a request may name it ("recipe" of a cookbook recipe); the
    whole kind where the last word says too little alone ("pull request", not "request")."""
    head = kind.casefold().rsplit(" ", 1)[-1]
    return kind.casefold() if head in _VAGUE_HEADS else head


# last words that name nothing alone in a request (the user's own request, a report)
_VAGUE_HEADS = frozenset({"request", "report", "summary", "info", "information", "result",
                          "item", "entry", "record", "detail", "details", "profile"})


def with_facts(text: str, facts: list[tuple[str, str]]) -> str:
    """A message's text that carries ``facts``: "... for the visit. Hotel: Lantern Lodge."."""
    missing = [(k, v) for k, v in facts if v.casefold() not in text.casefold()]
    if not missing:
        return text
    text = text.rstrip()
    text += "" if text.endswith((".", "!", "?")) else "."
    return text + "".join(f" {k[0].upper() + k[1:]}: {v}." for k, v in missing)


def lists_fed(walk: Walk) -> dict[int, int]:
    """List step -> the first segment whose calls go through its items one by one."""
    out: dict[int, int] = {}
    for at, segment in enumerate(walk.segments):
        for index in segment.steps:
            for b in walk.steps[index].bindings:
                if b.source is not None and b.path[:1] and b.path[0][:1] == "#" \
                        and b.source not in walk.choices and _FAN_LEAD.match(segment.text or ""):
                    out.setdefault(b.source, at)
    return out


def _listing(walk: Walk, index: int) -> str:
    """What a read found, as a noun phrase with the user's facts: "hotels in Athens"."""
    step = walk.steps[index]
    said = phrase(step.spec, walk, step.bindings)
    rest = _READ_VERB.sub("", said, count=1)
    if rest == said:
        return f"the {plural(noun(step.spec))} ({said})"
    rest = re.sub(r"^of (?=the |my |our )", "", rest)  # "list all of the pools"
    rest = re.sub(r"^your ", "my ", rest)  # "list your target groups": the user's own
    kind = noun(step.spec)
    if plural(rest) == plural(kind) or singular(rest) == singular(kind):
        return plural(kind)  # "list sink": the sinks
    return rest if rest != said else f"the {plural(noun(step.spec))} ({said})"


def _decision(walk: Walk, index: int) -> str:
    """The item a pick took, as the user's decision: "the cheapest hotel in Athens"."""
    says, _ = walk.choices[index]
    kind = noun(walk.steps[index].spec)
    listing = _listing(walk, index)
    for many in (plural(kind), f"my {plural(kind)}"):
        if listing.startswith(many + " ") and kind in says:
            qualifiers = listing[len(many) + 1:]
            at = says.index(kind) + len(kind)
            return says[:at] + " " + qualifiers + says[at:]
        if listing == many:
            return says
    return f"{says} among {_article(listing)}"


def _article(listing: str) -> str:
    """"the" before a listing, unless it has its own determiner or opens with a name
    ("Jonas Sorensen in my contacts", "flight LX792" stays "flight LX792")."""
    first = listing.split(" ", 1)[0]
    if first in ("my", "the", "all", "every", "a", "an", "how", "what", "which", "who",
                 "whether", "when", "where") or first[:1].isdigit() or (
                     first[:1].isupper() and not first.isupper()):  # a name, not "CRM"
        return listing
    return "the " + listing


def asked_reads(walk: Walk) -> set[int]:
    """The reads a goal-level request asks for as acts, and the outcome rubric checks: a read
    of the job's own that is no search and no pick, and takes a value only the user states
    ("scale that recipe to 20 servings", "export that document as PDF"). Nothing else shows
    that the job did it."""
    fed = lists_fed(walk)
    out: set[int] = set()
    for segment in walk.segments:
        steps = [i for i in segment.steps if i not in walk.rule_steps]
        if not steps or not all(walk.steps[i].spec.read_only for i in steps):
            continue
        index = steps[0]
        step = walk.steps[index]
        if index in walk.choices or index in fed or not any(
                b.source is None and not isinstance(b.value, bool) for b in step.bindings):
            continue
        said = phrase(step.spec, walk, step.bindings)
        if _READ_VERB.sub("", said, count=1) == said:
            out.add(index)
    return out


def _feeds_work(walk: Walk) -> set[int]:
    """Steps whose results reach, through any chain of calls, a write or a reported value."""
    out = {i for i, s in enumerate(walk.steps) if not s.spec.read_only
           and i not in walk.rule_steps} | {b.source for b in walk.answers
                                            if b.source is not None}
    todo = list(out)
    while todo:
        for b in walk.steps[todo.pop()].bindings:
            if b.source is not None and b.source not in out:
                out.add(b.source)
                todo.append(b.source)
    return out


def _used(walk: Walk) -> set[int]:
    """Steps whose results later calls or the report use."""
    used = {b.source for s in walk.steps for b in s.bindings if b.source is not None}
    return used | {b.source for b in walk.answers if b.source is not None}


def _alike(walk: Walk) -> dict[int, str]:
    """The reads whose result writes act on as "that <kind>" while another such read finds
    the same kind of thing ("order 4 of that product" for three products): each as the user
    names it ("the cheapest in-stock product in the office category"), so that every write
    says which one it means."""
    kinds: dict[str, set[int]] = {}
    for step in walk.steps:
        if step.spec.read_only:
            continue
        for b in step.bindings:
            if b.source is not None and walk.steps[b.source].spec.read_only:
                kinds.setdefault(noun(walk.steps[b.source].spec), set()).add(b.source)
    return {s: (_decision(walk, s) if s in walk.choices else _article(_listing(walk, s)))
            for many in kinds.values() if len(many) > 1 for s in many}


def _which(walk: Walk, step_index: int, text: str, named: dict[int, str],
           said: set[int]) -> str:
    """``text`` with each "that <kind>" of a read in ``named`` said as that read's item."""
    for b in walk.steps[step_index].bindings:
        if b.source in named and b.source not in said:
            that = f"that {noun(walk.steps[b.source].spec)}"
            if that in text:
                text = text.replace(that, named[b.source], 1)
                said.add(b.source)
    return text


def _want(walk: Walk, index: int, free: dict[int, frozenset[str]],
          named: dict[int, str] | None = None, said: set[int] | None = None) -> str:
    """One write of the job as the user asks for it: its phrase, with a message's wording
    left to the agent and what it is about (and must name) said instead; a thing one of
    several alike reads found is said as that read's item (``_alike``)."""
    step = walk.steps[index]
    drop = free.get(index, frozenset())
    text = phrase(step.spec, walk, step.bindings, drop=drop)
    if named:
        text = _which(walk, index, text, named, said if said is not None else set())
    if not drop:
        return text
    about = walk.about.get(index)
    if about is None:
        if not drop & _MESSAGE:
            return text  # a note or a reason the agent words: nothing to say of it
        topic = next((step.arguments[p] for p in ("subject", "title", "name") if p in drop),
                     None)
        about = f'"{topic}"' if topic else "the job"
    text += f" about {about}"
    # what the author's own words already say it names ("..., naming the document") is not
    # said twice
    named_by_author = about.casefold().partition("naming ")[2]
    facts = [(kind, name) for kind, name in message_facts(walk, index)
             if not re.search(r"\b%s\b" % re.escape(_head(kind)), named_by_author)]
    if facts:
        text += ", naming " + _and([f"the {kind}" for kind, _ in facts])
    return text


def _and(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def _fan(walk: Walk, segment_steps: list[int], list_step: int, other: str,
         free: dict[int, frozenset[str]]) -> str:
    """A write for every item of a list, as the user asks for it: "for each of my contacts
    who work at Acme, book ... and email ...". Each tool is said once, for its first item."""
    firsts: dict[str, int] = {}
    for index in segment_steps:
        firsts.setdefault(walk.steps[index].spec.qualified_name, index)
    wants = [_want(walk, index, free) for index in firsts.values()]
    listing = _listing(walk, list_step)
    return f"for each of {_article(listing)}{other}, " + _and(wants)


# how people put it: a request draws one of each (by its seed), so two tasks of one job do not
# open every sentence alike
_DECIDE = ("Go with {}.", "Pick {}.", "It should be {}.", "Use {}.", "Choose {}.")
_FIRST = ("I need you to {}.", "Please {}.", "Could you {}?", "Can you {}?",
          "I'd like you to {}.")
_MORE = ("Also {}.", "On top of that, {}.", "And please {}.", "As well as that, {}.")
# what a person asks to exist rather than to be done: "I'd like a document about ..."
_WANT = ("I'd like {}.", "I need {}.", "What I need is {}.")
_WANT_MORE = ("I'd also like {}.", "I also need {}.", "There should be {} as well.")
# a write that makes one new thing: said as the thing ("send an email to ..." -> "an email to")
_MAKES = re.compile(r"^(?:create|send|open|post|publish|write|log|add|draft|file) "
                    r"(?=(?:a|an) )")
_ABOUT = ("This is about {}.", "It concerns {}.", "The job concerns {}.")
_NAMING = ("In what you send and write, name {}.", "Whatever you send or write should name {}.",
           "Be sure to name {} in what you send and write.")
_HINT = ("Hint: it helps to {}.", "Tip: you can {}.", "A pointer: you may want to {}.")


def _say(frames: tuple[str, ...], text: str, rng: random.Random | None) -> str:
    frame = frames[0] if rng is None else rng.choice(frames)
    said = frame.format(text)
    return said[0].upper() + said[1:]


def render_goal(walk: Walk, context: str | None = None, hints: int = 0,
                rng: random.Random | None = None) -> str:
    """A goal-level request: house rules, who the user is and what they want, the decisions
    they made, what has to be done (writes only, no order, no reads), what to report.

    Args:
        walk: The composed job.
        context: The persona and goal sentence.
        hints: How many lookups to mention besides (``hints`` guidance: 2; ``goal``: 0).
        rng: Draws how each sentence is put (the first phrasing of each without one).
    """
    free = free_params(walk)
    fed = lists_fed(walk)
    used, asked, worked = _used(walk), asked_reads(walk), _feeds_work(walk)
    named, said_in_wants = _alike(walk), set()
    decided: list[int] = []
    wants: list[list[str] | str] = []  # runs of single writes, and fan-outs (a str each)
    needs: list[str] = []
    needed: list[int] = []  # the read of each need
    asks: list[str] = []
    lookups: list[int] = []
    for segment in walk.segments:
        steps = [i for i in segment.steps if i not in walk.rule_steps]
        if steps and all(walk.steps[i].spec.read_only for i in steps):
            lookups.append(steps[0])
            if steps[0] in walk.choices:
                if steps[0] in worked:  # a pick no work or report comes of is no decision
                    decided.append(steps[0])
            elif steps[0] not in fed and (steps[0] in used or steps[0] in asked) and any(
                    b.source is None for b in walk.steps[steps[0]].bindings):
                # what the user must say for it: what to look for ("hotels in Athens"), or,
                # where the read is not a search, the read itself ("export that document
                # as PDF")
                step = walk.steps[steps[0]]
                said = phrase(step.spec, walk, step.bindings)
                rest = _READ_VERB.sub("", said, count=1)
                if rest != said:
                    needs.append(rest)
                    needed.append(steps[0])
                else:
                    asks.append(said)
    stated_ = " ".join(
        [context or "", *walk.rules, *needs, *asks, *(_decision(walk, i) for i in decided)])
    goal_says, to_name = goal_work(walk, free, stated_, context or "")
    details = told_writes(walk, free, goal_says, stated_, context or "")
    goal_says = goal_says | details.keys()
    for index in details:  # what a message among them must name is asked with the rest
        to_name += [k for k, _ in message_facts(walk, index) if k not in to_name]
    for segment in walk.segments:
        steps = [i for i in segment.steps if i not in walk.rule_steps]
        if not steps or all(walk.steps[i].spec.read_only for i in steps):
            continue
        lead = _FAN_LEAD.match(segment.text or "")
        lists = {b.source for i in steps for b in walk.steps[i].bindings
                 if b.source in fed and b.path[:1] and b.path[0][:1] == "#"}
        if lead is not None and len(lists) == 1:
            list_step = lists.pop()
            if all(i in goal_says for i in steps if not walk.steps[i].spec.read_only):
                # the goal says it ("every booking I hold cancelled"): what the list is of is
                # said once, as what the job is about, where the user states something of it
                # or leaves someone out ("the leads at Acme other than Wei Ibrahim")
                if lead.group(2) or any(b.source is None
                                        for b in walk.steps[list_step].bindings):
                    needs.append(_listing(walk, list_step) + lead.group(2))
                    needed.append(list_step)
                continue
            wants.append(_fan(walk, steps, list_step, lead.group(2), free))
            continue
        if not wants or isinstance(wants[-1], str):
            wants.append([])
        run = wants[-1]
        assert isinstance(run, list)
        run.extend(_want(walk, i, free, named, said_in_wants) for i in dict.fromkeys(steps)
                   if not walk.steps[i].spec.read_only and i not in goal_says)
        if not run:
            wants.pop()
    if asks:
        wants.append(asks)
    # a decision a write already says (``_alike``) is not said again
    decisions = [_decision(walk, i) for i in decided if i not in said_in_wants]
    sentences: list[str] = []
    said = " ".join(w if isinstance(w, str) else " ".join(w) for w in wants + decisions)
    # a lookup whose every stated value the request says anyway needs no sentence of its own
    told = f"{context or ''} {said}".casefold()
    needs = [n for n, i in zip(needs, needed) if n.casefold() not in said.casefold() and (
        " other than " in n or not all(
        re.search(r"(?<![\w.@-])%s(?![\w@-]|\.\w)" % re.escape(_show_value(b.value).casefold()),
                  told) for b in walk.steps[i].bindings if b.source is None))]
    if needs:
        sentences.append(_say(_ABOUT, _and([_article(n) for n in needs]), rng))
    if decisions:
        sentences.append(_say(_DECIDE, _and(decisions), rng))
    sentences += fact_sentences(walk, details)
    opened = False
    for want in wants:
        if isinstance(want, str):
            sentences.append(_sentence(want))
        elif want:  # what is to be done, then what is to exist ("a document about ...")
            acts = [w for w in want if not _MAKES.match(w)]
            things = [_MAKES.sub("", w, count=1) for w in want if _MAKES.match(w)]
            for run, first, more in ((acts, _FIRST, _MORE), (things, _WANT, _WANT_MORE)):
                if run:
                    sentences.append(_say(more if opened else first, _and(run), rng))
                    opened = True
    if to_name:  # by its last word where no other thing to name shares it ("the recipe")
        heads = [_head(kind) for kind in to_name]
        sentences.append(_say(_NAMING, _and([
            f"the {head if heads.count(head) == 1 else kind}"
            for kind, head in zip(to_name, heads)]), rng))
    if hints and lookups:
        tips = [phrase(walk.steps[i].spec, walk, walk.steps[i].bindings) for i in lookups[:hints]]
        sentences.append(_say(_HINT, _and(tips), rng))
    sentences = [fix_articles(_pronouns(_SOMEONES_NAME.sub(r"the \1", s)))
                 for s in sentences] + \
        report_sentences(walk, rng)
    return plain(with_rules(walk, " ".join(([context] if context else []) + sentences)))


# a title a house rule fixes is the rule's to state, not each request's ("an event titled per
# the naming rule", "(memo per the naming rule)")
_PER_RULE = re.compile(r" \((?:[a-z]+:? ){0,2}%s\)| (?:titled|called|named) %s" % ((NAMED,) * 2))
# "the listing's agent's email" reads "the email of the listing's agent"
_CHAIN = re.compile(r"\bthe ((?:[a-z]+ ){0,2}[a-z]+)'s ((?:[a-z]+ )?[a-z]+)'s "
                    r"(email address|phone number|email|phone|name|job title|title|city)\b")


# "for the lead's name (wei@...)" is for the lead; "a salary of the candidate's expected
# salary" is the candidate's expected salary
_NAME_THEN_EMAIL = re.compile(r"\bthe ((?:[a-z]+ )?[a-z]+)'s name \(")
_A_X_OF_THE_X = re.compile(r"\ba ([a-z]+) of (the (?:[a-z]+ )?[a-z]+'s (?:[a-z]+ )?\1)\b")


# what the job found is named as itself in what is asked ("connect with the profile", "at the
# parking"), never by "the profile's name"; what is reported keeps it ("the product's name")
_SOMEONES_NAME = re.compile(r"\bthe ((?:[a-z]+ )?[a-z]+)'s name\b(?! \()")


_POSSESSOR = re.compile(r"\bthe ((?:[a-z]+ )?[a-z]+)'s (?=[a-z])")


# whose things are "theirs": people, and the roles a record names someone by
_THEIRS = PEOPLE | {"author", "owner", "manager", "maintainer", "respondent", "assignee",
                    "reviewer", "applicant", "member"}


def _pronouns(sentence: str) -> str:
    """"at the reservation's start time for the reservation's duration" reads "at the
    reservation's start time for its duration": the same owner again, with no other owner
    between, is "its" (a person's: "their")."""
    out, last, at = [], None, 0
    for m in _POSSESSOR.finditer(sentence):
        owner = m.group(1)
        if owner == last:
            out.append(sentence[at:m.start()])
            out.append("their " if owner.split()[-1] in _THEIRS else "its ")
            at = m.end()
        last = owner
    return "".join(out) + sentence[at:]


def plain(text: str) -> str:
    """A goal-level request as a person writes it: no title the house rules already fix
    restated, no chain of possessives, no name said as "the lead's name (email)"."""
    text = _CHAIN.sub(r"the \3 of the \1's \2", _PER_RULE.sub("", text))
    return _A_X_OF_THE_X.sub(r"\2", _NAME_THEN_EMAIL.sub(r"the \1 (", text))


def _show_value(value: Any) -> str:
    """A stated value as a request writes it (a budget of 19400, not 19400.0)."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return str(value)


def goal_work(walk: Walk, free: dict[int, frozenset[str]], stated: str,
              goal: str = "") -> tuple[set[int], list[str]]:
    """The writes a goal-level request need not ask for one by one, and the kinds of thing
    their messages must name. They are work of the scenario's own stages, which its goal
    speaks of ("the HR lead told, the work logged on their lead"), that take nothing the
    request leaves unsaid. Each argument is wording left to the agent, a string a house rule
    fixes, the key of a thing the job found or chose, a value the request states (the
    lead's email), or someone or something the job found that the goal names by its
    role ("its maintainer should get a warning" for the repository's maintainer's email).
    What such a message must name ("the campaign") is asked once for all of them."""
    goal = goal.casefold()
    writes = [i for i, step in enumerate(walk.steps) if not step.spec.read_only
              and i not in walk.extras and i not in walk.rule_steps]
    own = _fanned(walk)

    def implied(said: dict[int, str]) -> set[int]:
        return {i for i in writes if all(
            b.param in free.get(i, frozenset())
            or walk.shown.get((walk.steps[i].spec.qualified_name, b.param)) == NAMED
            or identifies(b)
            or (b.source is not None and b.source == own.get(i))
            or (isinstance(b.value, str) and len(b.value) >= 3 and not _addressed(free, i, b)
                and b.value.casefold() in said.get(i, stated))
            or _goal_names(walk, b, goal) for b in walk.steps[i].bindings)}

    # what the other writes still asked for state is said too ("book that flight for Tom
    # Okafor (tom.okafor@...)" says whom "the colleague sent the plan" is sent to)
    stated = stated.casefold()
    first = implied(dict.fromkeys(writes, stated))
    literal = {i: [b.value for b in step.bindings if b.source is None and
                   isinstance(b.value, str)]
               for i, step in enumerate(walk.steps) if not step.spec.read_only and i not in first}
    out = first | implied(_said(stated, literal, first))
    while True:  # only what a write still asked for states counts (not two unasked alike)
        kept = first | implied(_said(stated, literal, out)) & out
        if kept == out:
            break
        out = kept
    kinds: list[str] = []
    for index in sorted(out):
        kinds += [k for k, _ in message_facts(walk, index) if k not in kinds]
    return out, kinds


def _its_own(walk: Walk, binding: Binding) -> bool:
    """Whether a found value is the chosen item's own field of the parameter's name (the
    restaurant's ``restaurant_name`` and ``city`` for a reservation there): a write about the
    thing the user decided on takes it without being told."""
    return binding.source in walk.choices and binding.path[-1:] == (binding.param,)


# the verbs of tools that change a record that was there: what they set is its "new" value
_CHANGES = frozenset({"update", "set", "move", "reschedule", "mark", "close", "rename",
                      "edit", "change", "assign", "flag", "pause", "resume"})
_UNITS = re.compile(r"_(minutes|hours|days|nights|weeks|months|years)$")


def _unit(param: str) -> str:
    """The unit a parameter's name carries and its label does not ("duration_minutes": the
    duration is 30 minutes)."""
    unit = _UNITS.search(param)
    return f" {unit.group(1)}" if unit else ""


def told_writes(walk: Walk, free: dict[int, frozenset[str]], said: set[int], stated: str,
                goal: str = "") -> dict[int, list[Binding]]:
    """The writes the goal covers but for values only the user knows (a table for 10 at
    19:00, each case's priority): the request states those as facts of the thing ("For the
    reservation, the party size is 10 and the time is 19:00") instead of asking for the call.
    A message is still asked for as one (its facts are what it must say); a tool the job
    uses for more than one thing, each with its own values, is asked for each."""
    stated, goal = stated.casefold(), goal.casefold()
    own = _fanned(walk)
    writes = [i for i, step in enumerate(walk.steps) if not step.spec.read_only
              and i not in said and i not in walk.extras and i not in walk.rule_steps]
    out: dict[int, list[Binding]] = {}
    for i in writes:
        step = walk.steps[i]
        if free.get(i, frozenset()) & _MESSAGE and i not in own:
            continue  # a message is asked for as one, but for the goal's own fan-out
        facts = [b for b in step.bindings if b.source is None
                 and b.param not in free.get(i, frozenset())
                 and walk.shown.get((step.spec.qualified_name, b.param)) != NAMED]
        if facts and all(
                b in facts or b.param in free.get(i, frozenset())
                or walk.shown.get((step.spec.qualified_name, b.param)) == NAMED
                or identifies(b) or (b.source is not None and b.source == own.get(i))
                or _its_own(walk, b) or _goal_names(walk, b, goal) for b in step.bindings):
            out[i] = facts
    tools: dict[str, set[tuple[Any, ...]]] = {}
    for i, step in enumerate(walk.steps):  # one fact sentence per tool: "the task" is one,
        if not step.spec.read_only:        # or alike for every item of one list
            tools.setdefault(step.spec.qualified_name, set()).add(
                (own.get(i, -1 - i), tuple((b.param, repr(b.value)) for b in out.get(i, ()))))
    named = _alike(walk)
    return {i: facts for i, facts in out.items()
            if len(tools[walk.steps[i].spec.qualified_name]) == 1 or _apart(walk, i, out, named)}


def _apart(walk: Walk, index: int, told_: dict[int, list[Binding]], named: dict[int, str]) -> bool:
    """Whether every write of ``index``'s tool is told, each by one value of one parameter, on
    a thing the request names apart ("4 of the cheapest office product, 3 of the cheapest
    kitchen one"): said as one sentence of values ("The quantities are 4 for ..., 3 for ...")."""
    name = walk.steps[index].spec.qualified_name
    alike = [i for i, step in enumerate(walk.steps) if step.spec.qualified_name == name]
    return all(i in told_ and len(told_[i]) == 1 and told_[i][0].param == told_[index][0].param
               and _thing(walk, i, named) for i in alike)


def _thing(walk: Walk, index: int, named: dict[int, str]) -> str | None:
    """How the request names the thing a write acts on, where it names it apart."""
    return next((named[b.source] for b in walk.steps[index].bindings
                 if identifies(b) and b.source in named), None)


def fact_sentences(walk: Walk, told_: dict[int, list[Binding]]) -> list[str]:
    """The fact sentences of ``told_writes``, one per tool: "For the reservation, the party
    size is 10 and the time is 19:00."; "For each support ticket, the priority is high.";
    a change to a found record says the new value ("For the event, the new start time is
    ...")."""
    own, named = _fanned(walk), _alike(walk)
    out: list[str] = []
    done: set[str] = set()
    for i, facts in told_.items():
        spec = walk.steps[i].spec
        if spec.qualified_name in done:
            continue
        done.add(spec.qualified_name)
        kind = noun(spec)
        alike = [j for j in told_ if walk.steps[j].spec.qualified_name == spec.qualified_name]
        if len(alike) > 1 and i not in own:  # "The quantities are 4 for ..., 3 for ..."
            label = plural(field_label(spec.parameters, (facts[0].param,), kind))
            out.append(_sentence(f"the {label} are " + _and([
                f"{stated(spec, told_[j][0])}{_unit(facts[0].param)} for "
                f"{_thing(walk, j, named)}" for j in alike])))
            continue
        new = "new " if spec.name.split("_", 1)[0] in _CHANGES else ""
        parts = [f"the {new}{field_label(spec.parameters, (b.param,), kind)} is "
                 f"{stated(spec, b)}{_unit(b.param)}" for b in facts]
        whose = f"each {kind}" if i in own else f"the {kind}"
        out.append(f"For {whose}, {_and(parts)}.")
    return out


def _addressed(free: dict[int, frozenset[str]], index: int, binding: Binding) -> bool:
    """Whether ``binding`` is the address a message goes to, as the user states it: that
    the request says the address elsewhere (whose file it is) does not say the message goes
    there, so the message is asked for with it ("an email to hana@... about ...")."""
    return binding.interface == "EmailAddress" and bool(free.get(index, frozenset()) & _MESSAGE)


def _fanned(walk: Walk) -> dict[int, int]:
    """Write -> the list a fan-out segment does it for, item by item: what such a write takes
    of its own item (each lead's name and email, for "each of them made a lead") goes without
    saying once the goal says the fan-out."""
    out: dict[int, int] = {}
    for segment in walk.segments:
        if _FAN_LEAD.match(segment.text or "") is None:
            continue
        for index in segment.steps:
            sources = {b.source for b in walk.steps[index].bindings if b.source is not None
                       and b.path[:1] and b.path[0][:1] == "#" and b.source not in walk.choices}
            if len(sources) == 1:
                out[index] = sources.pop()
    return out


def _said(stated: str, literal: dict[int, list[str]], unasked: set[int]) -> dict[int, str]:
    """For each write, the request's words and the literal values of the other writes it
    still asks for."""
    return {i: " ".join([stated, *(v for j, values in literal.items() if j != i
                                   and j not in unasked for v in values)]).casefold()
            for i in literal}


# found values a goal may name by whose they are ("the HR lead told", "its website saved")
_FOUND = frozenset({"PersonName", "EmailAddress", "OrganizationName", "Url"})


def _goal_names(walk: Walk, binding: Binding, goal: str) -> bool:
    """Whether ``goal`` names the one a found value belongs to, by the last word of how the
    request would say it ("the account's manager" -> "manager")."""
    if binding.source is None or binding.interface not in _FOUND or not goal:
        return False
    producer = walk.steps[binding.source].spec
    said = owner_reference(producer, binding) or \
        reference(producer, binding.path, binding.interface)
    if not said.startswith("the "):
        return False
    head = _head(said)
    return re.search(r"\b(?:%s|%s)\b" % (re.escape(head), re.escape(plural(head))),
                     goal) is not None


def _sentence(text: str) -> str:
    text = text.strip()
    return text[0].upper() + text[1:] + ("" if text.endswith(".") else ".")
