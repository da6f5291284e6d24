"""Instruction rendering: per-tool phrase templates joined into one request."""

from __future__ import annotations

import random
import re
import string
from typing import Any
from collections import Counter

from compoenv.compose.identity import person_group
from compoenv.compose.labels import (
    enum_words, field_label, fix_articles, plural, singular, words,
)
from compoenv.compose.records import Binding, Walk
from compoenv.roles import KIND_OF, label as role_label
from compoenv.schema import extract
from compoenv.service import ToolSpec

__all__ = ["render_instruction", "report_sentences", "with_rules", "reference", "phrase", "without", "noun", "words", "singular", "plural"]

_QUOTED = frozenset({"Text", "EmailSubject", None})
NAMED = "per the naming rule"  # compoenv.compose.house_rules.NAMED
_KEYS = frozenset({"FlightNumber", "BookingReference"})
_THE_THE = re.compile(r"\bthe the\b")
_FLAG = re.compile(r"^(?:has|is|with|include|includes)_")  # a yes/no filter's own prefix
_PARTS = frozenset({"Address"})  # objects that are part of a record, not one of their own
# a unit written after a placeholder reads twice once the value is a reference
_UNIT_AFTER = re.compile(r"\{(\w+)\}(-| )(minutes?|nights?|days?|hours?|shares?|tickets?)\b")


def _root(spec: ToolSpec, path: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    """The outermost tagged object above ``path`` (its noun) and the path below it."""
    best = None
    for slot in spec.outputs:
        if slot.interface in _PARTS:
            continue  # a listing's address is part of the listing: "the listing's city"
        if slot.kind == "object" and path[: len(slot.path)] == slot.path and slot.path != path:
            if best is None or len(slot.path) < len(best.path):
                best = slot
    if best is None:  # "find_real_estate_agents" -> "real estate agent", unless the spec says
        items = spec.returns.get("items") if spec.returns.get("type") == "array" else None
        named = spec.returns.get("x-noun") or (items or {}).get("x-noun")
        return (named if isinstance(named, str) else _tool_noun(spec.name)), path
    if best.role is not None and best.interface in ("Contact", "Profile"):
        return role_label(best.role), path[len(best.path):]
    return words(best.interface), path[len(best.path):]


_PREPOSITIONS = frozenset({"by", "with", "for", "in", "of", "from", "to", "on", "at", "near",
                           "about", "between", "after", "before"})


def _tool_noun(name: str) -> str:
    """What a tool's result is, from its name: ``search_reviews_by_reviewer`` -> "review",
    ``list_transactions_with`` -> "transaction", ``get_fare_estimate`` -> "fare estimate"."""
    parts = name.split("_")[1:] or name.split("_")
    cut = next((i for i, w in enumerate(parts) if w in _PREPOSITIONS), len(parts))
    return singular(" ".join(parts[:cut] or parts))


def reference(spec: ToolSpec, path: tuple[str, ...], interface: str | None) -> str:
    """How the instruction names a value found by an earlier step: "the contact's email"."""
    path = tuple("*" if p[:1] == "#" else p for p in path)  # a picked item reads as its kind
    noun_, rest = _root(spec, path)
    if not [p for p in rest if p != "*"]:
        return f"that {words(interface or 'result')}"
    return f"the {noun_}'s {field_label(spec.returns, path, noun_)}"


_WHO = frozenset({"PersonName", "EmailAddress", "OrganizationName"})
# records that are someone (not a profile or an account of them): "the developer"
PEOPLE = frozenset({"developer", "journalist", "person", "user", "lead", "candidate",
                    "employee", "contact", "customer", "patient", "guest", "agent", "trainer"})
_OWN = frozenset({"name", "email"})
# "look up the contact whose email is {email}" needs the address itself, not its owner
_SAYS_WHICH = re.compile(r"(?:email|name|named|called|address|is) $")


def _who(spec: ToolSpec, binding: Binding, full: str) -> str | None:
    """A carried name or email as the one it belongs to, where that is plain and enough:
    "the repository's maintainer" for "the repository's maintainer's email", "the candidate"
    for "the candidate's email", "the restaurant" for "the restaurant's name". None where
    the field is not a person's or business's own (the invoice's billing email, the
    interaction's email), or its owner is no one a person writes to (a press desk)."""
    if binding.interface not in _WHO or not full.startswith("the "):
        return None
    path = tuple("*" if p[:1] == "#" else p for p in binding.path)
    slot = next((s for s in spec.outputs if s.path == path), None)
    role = slot.role if slot is not None else None
    if role is None or KIND_OF.get(role) not in ("person", "organization") or role in (
            "business_contact", "self"):
        return None
    owner, _, field = full[4:].rpartition("'s ")
    who = role_label(role)
    if field not in _OWN or not owner:
        return None
    if role == "press":  # a company's press desk
        return f"the {owner} contact" if owner.endswith("press") else None
    if "'s " in owner or owner.split()[-1] in (who.split()[-1], *PEOPLE):
        return f"the {owner}"  # the account's manager, the candidate, the journalist contact
    return None


def _day_of(producer: ToolSpec, binding: Binding) -> str:
    """A found value as the request names it; a day taken from a found time reads "the day
    of the event's start time"."""
    path = tuple("*" if p[:1] == "#" else p for p in binding.path)
    slot = next((s for s in producer.outputs if s.path == path), None)
    named = reference(producer, binding.path, binding.interface)
    if binding.interface == "Date" and slot is not None and slot.interface == "DateTime":
        return "the day of " + named.removesuffix("'s start time")  # "of the event"
    return named


def owner_reference(producer: ToolSpec, binding: Binding) -> str | None:
    """How the request names the person (or business) a found name or email belongs to ("the
    contact", "the repository's maintainer"), if it reads as someone (``_who``)."""
    return _who(producer, binding, reference(producer, binding.path, binding.interface))


def _show(binding: Binding, schema: dict | None = None) -> str:
    value = binding.value
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    if schema is not None and "enum" in schema:
        return enum_words(value, schema)  # a plan called "class_pack" reads "class pack"
    if isinstance(value, str) and binding.interface in _QUOTED:
        return f'"{value}"'
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))  # a budget of 19400, not 19400.0
    return str(value)


def identifies(binding: Binding) -> bool:
    """A reference to an entity's own key, which reads best as "that <noun>"."""
    kind = binding.interface or ""
    return binding.source is not None and (kind.endswith("Id") or kind in _KEYS)


# words that end the noun before an id ("comment on | pull request {id}"), and the
# determiners "that" takes the place of ("show the | insurance policy {id}")
_NOT_NOUN = frozenset({"to", "on", "of", "for", "in", "at", "by", "with", "from", "into",
                       "up", "and", "as", "rent"})
_DETERMINERS = frozenset({"the", "a", "an", "my", "that"})


def _that(template: str, param: str) -> str:
    """The template with ``{param}`` read as "that <noun>": the (at most two) words of the
    noun before it stay, an article before them goes ("show the insurance policy {id}" ->
    "show that insurance policy", "comment on pull request {id}" -> "comment on that pull
    request")."""
    slot = "{%s}" % param
    at = template.find(slot)
    if at <= 0:
        return template
    words_ = template[:at].split()
    noun_: list[str] = []
    while (words_ and len(noun_) < 2 and len(words_) > 1 and words_[-1] not in _NOT_NOUN
           and words_[-1] not in _DETERMINERS and "{" not in words_[-1]):
        noun_.insert(0, words_.pop())
    if not noun_:
        return template
    if words_ and words_[-1] in _DETERMINERS:
        words_.pop()
    head = " ".join(words_ + ["that"] + noun_)
    return head + template[at + len(slot):]


# the words that lead a free-wording value in a phrase ("with subject {subject} and body
# {body}", "titled {title}"): they go with it when the request leaves the wording open
_LEADS = (r"\s+(?:with|and|titled|called|named|saying|noting|containing|reading|stating|for|"
          r"about|regarding|because of|because|as)"
          r"(?:\s+(?:the|a|an|subject|body|text|content|note|notes|message|description|memo|"
          r"details))*")


def without(template: str, params: frozenset[str] | set[str]) -> str:
    """``template`` with the placeholders of ``params`` taken out, with the words that lead
    them: "send an email to {to} with subject {subject} and body {body}" without subject and
    body reads "send an email to {to}"."""
    for param in params:
        slot = r"\s+\{%s\}" % re.escape(param)
        template, n = re.subn(_LEADS + slot, "", template)
        if not n:  # "add a note {text} to ticket {id}": the noun stays
            template = re.sub(slot, "", template)
    return template


def phrase(spec: ToolSpec, walk: Walk, bindings: list[Binding],
           drop: frozenset[str] = frozenset()) -> str:
    """The tool's phrase with its arguments filled in: stated values, or references; the
    parameters in ``drop`` (wording the agent chooses) are not said."""
    if any(b.source is not None for b in bindings):
        items = _items_used(walk)
        bindings = [_first_said(walk, b, items) or b for b in bindings]
    template = spec.phrase or f"use {spec.qualified_name} ({spec.description.rstrip('.')})"
    if drop:
        verb, _, rest = template.partition(" ")
        for param in drop:  # "schedule {title} at ...": the thing made stays, as its kind
            if rest.startswith("{%s}" % param):
                template = f"{verb} a {noun(spec)}{rest[len(param) + 2:]}"
        template = without(template, drop)
        bindings = [b for b in bindings if b.param not in drop]
    for b in bindings:  # "cancel hotel reservation {id}" -> "cancel that hotel reservation"
        if identifies(b):
            template = _that(template, b.param)
    carried = {b.param for b in bindings if b.source is not None}
    template = _UNIT_AFTER.sub(lambda m: "{%s}" % m.group(1) if m.group(1) in carried
                               else m.group(0), template)
    for b in bindings:  # "schedule {title} at ..." with the title a house rule sets
        if walk.shown.get((spec.qualified_name, b.param)) == NAMED:
            slot, kind = "{%s}" % b.param, noun(spec)
            if f"{kind} {slot}" in template:  # "save a new file {name}"
                template = template.replace(f"{kind} {slot}", f"{kind} titled {slot}")
            else:
                template = re.sub(r"(?<!titled )(?<!called )(?<!named )%s" % re.escape(slot),
                                  f"a {kind} titled {slot}", template)
    template, said = _one_source(template, bindings, walk)
    template, whole = _one_person(template, bindings, walk)
    said = said | whole.keys()
    fields = {name for _, name, _, _ in string.Formatter().parse(template) if name}
    values: dict[str, str] = {}
    extras = []
    props = spec.parameters.get("properties", {})
    shorter = {**_people(spec, walk, bindings, template), **whole}
    for b in bindings:
        if (spec.qualified_name, b.param) in walk.shown:  # a house rule says what goes here
            shown = walk.shown[(spec.qualified_name, b.param)]
        elif b.source is None:
            shown = stated(spec, b)
        else:
            shown = shorter.get(b.param) or _day_of(walk.steps[b.source].spec, b)
            if (b.interface not in _WHO and shown.startswith("the ")
                    and shown.endswith("'s name") and "'s " not in shown[4:-7]):
                shown = shown[:-7]  # "at the parking's name" reads "at the parking"
        if b.param in fields:
            values[b.param] = shown
        elif b.param in said:
            continue
        elif isinstance(b.value, bool) and b.source is None:  # "(with ev charging)"
            extras.append(f"{'with' if b.value else 'without'} {words(_FLAG.sub('', b.param))}")
        elif not (identifies(b) and b.param in spec.phrase if spec.phrase else False):
            extras.append(f"{words(b.param)}: {shown}")  # "(category: travel)"
    for name in fields - values.keys():
        values[name] = "the default"
    text = fix_articles(_THE_THE.sub("the", template.format(**values)))
    text = _MAILED_TO.sub(_mailed_to, text)
    return text + (f" ({'; '.join(extras)})" if extras else "")


def _mailed_to(match: re.Match[str]) -> str:
    """ "an email to the gym's email" is to the gym; to "the claim's adjuster email", to its
    adjuster; to "the invoice's billing email", to its billing address."""
    word = match.group(3)
    if word is None:
        return match.group(1)
    return f"{match.group(1)} {word}" + ("" if word.endswith(_ROLE_ENDINGS) else " address")


_ROLE_ENDINGS = ("er", "or", "ist", "ant", "ent")
_MAILED_TO = re.compile(r"(\bemail to the [\w' -]+?)('s| (\w+)) email\b(?! address)")


# what a record says again of something the request named or found first: its name, its
# city, its day (amounts are left alone: an equal figure may still be another amount)
_SAID_AGAIN = frozenset({"OrganizationName", "PersonName", "EmailAddress", "City", "Date",
                         "DateTime", "StreetAddress", "JobTitle"})


def _items_used(walk: Walk) -> dict[int, set[str]]:
    """The list items later steps used ("#2"), per list step."""
    items: dict[int, set[str]] = {}
    for b in (b for s in walk.steps for b in s.bindings):
        if b.source is not None and b.path[:1] and b.path[0][:1] == "#":
            items.setdefault(b.source, set()).add(b.path[0])
    return items


def _first_said(walk: Walk, binding: Binding, items: dict[int, set[str]]) -> Binding | None:
    """A carried value as the request first gave it: stated ("on 2026-03-20", not "on the
    table's date") or found by an earlier step ("at the restaurant", not "at the table's
    restaurant"); None when it comes first from its own source. Only values one record
    echoes (never items a motif goes through one by one, nor amounts)."""
    source, value = binding.source, binding.value
    if (source is None or binding.interface not in _SAID_AGAIN or not isinstance(value, str)
            or not value or binding.path[:1] == ("*",)):
        return None
    if binding.path[0][:1] == "#" and len(items.get(source, ())) != 1:
        return None  # one item of several the request goes through
    for step in walk.steps[:source + 1]:
        for b in step.bindings:
            if b.source is None and b.value == value and b.interface == binding.interface:
                return Binding(binding.param, value, interface=binding.interface)
    for index, step in enumerate(walk.steps[:source]):
        used = items.get(index, ())
        data, item = step.result, next(iter(used)) if len(used) == 1 else None  # one pick
        for slot in step.spec.outputs:
            if slot.interface != binding.interface or slot.kind in ("object", "array"):
                continue
            if isinstance(data, dict) and "*" not in slot.path:
                path = slot.path
            elif isinstance(data, list) and item is not None and slot.path[:1] == ("*",) \
                    and "*" not in slot.path[1:]:
                path = (item,) + slot.path[1:]
            else:
                continue
            found = extract(data, path)
            if len(found) == 1 and found[0] == value:
                return Binding(binding.param, value, index, path, binding.interface)
    return None


def _people(spec: ToolSpec, walk: Walk, bindings: list[Binding], template: str,
            ) -> dict[str, str]:
    """The carried names and emails of this call that read as whom they belong to
    (``_who``), unless two of them would then read alike ("book the hotel for the guest
    (the guest)") or the phrase asks for the value itself ("whose email is ...")."""
    out: dict[str, str] = {}
    if not any(b.source is not None and b.interface in _WHO for b in bindings):
        return out
    slots = {s.path[0]: s for s in spec.inputs if len(s.path) == 1}
    # a call's name and email of one person: "for Ana Kim (the guest's email)", never
    # "for Ana Kim (the guest)"
    groups = Counter(person_group(slots[b.param]) for b in bindings
                     if b.param in slots and slots[b.param].interface in _WHO)
    for b in bindings:
        if b.source is None or b.interface not in _WHO or (
                spec.qualified_name, b.param) in walk.shown:
            continue
        if b.param in slots and groups[person_group(slots[b.param])] > 1:
            continue
        at = template.find("{%s}" % b.param)
        if at >= 0 and _SAYS_WHICH.search(template[:at]):
            continue
        producer = walk.steps[b.source].spec
        who = owner_reference(producer, b)
        if who is not None:
            out[b.param] = who
    seen = Counter(out.values())
    return {param: who for param, who in out.items() if seen[who] == 1}


_ASIDE = re.compile(r"\{(\w+)\} \(([^()]*)\)")


def _one_source(template: str, bindings: list[Binding], walk: Walk,
                ) -> tuple[str, frozenset[str]]:
    """"add {name} ({email}, {title} at {company}) to my contacts" with every value from the
    one record that gave the name reads "add {name} (with their email, title and company
    from that <record>) to my contacts": the record says it once. Returns the template and
    the parameters it no longer names."""
    source = {b.param: b.source for b in bindings}
    for m in _ASIDE.finditer(template):
        lead, aside = m.group(1), m.group(2)
        inner = [name for _, name, _, _ in string.Formatter().parse(aside) if name]
        step = source.get(lead)
        if step is None or len(inner) < 2 or any(source.get(n) != step for n in inner):
            continue
        names = [words(n) for n in inner]
        listed = ", ".join(names[:-1]) + " and " + names[-1]
        noun_ = noun(walk.steps[step].spec)
        return (template[:m.start()] + "{%s} (with their %s from that %s)" % (lead, listed, noun_)
                + template[m.end():]), frozenset(inner)
    return template, frozenset()


def _one_person(template: str, bindings: list[Binding], walk: Walk,
                ) -> tuple[str, dict[str, str]]:
    """"for {name} ({email})" with both the name and the email of one found person reads "for
    the contact": they are said once, by whom they belong to. Returns the template and, for
    the name's parameter, how it reads (the email's parameter is then no longer named)."""
    given = {b.param: b for b in bindings}
    for m in _ASIDE.finditer(template):
        name, email = given.get(m.group(1)), given.get(m.group(2).strip("{}"))
        if (name is None or email is None or email.source is None
                or m.group(2) != "{%s}" % email.param
                or (name.interface, email.interface) != ("PersonName", "EmailAddress")):
            continue
        if name.source is None:  # "for Kenji Ito (whose email is on the reservation)"
            if email.path[-1:] != ("email",) and _beside(walk, email, name.value):
                noun_ = noun(walk.steps[email.source].spec)
                return (template[:m.end(1) + 2] + f"(whose email is on the {noun_})"
                        + template[m.end():], {email.param: ""})
            continue
        if name.source != email.source or name.path[:-1] != email.path[:-1]:
            continue
        producer = walk.steps[name.source].spec
        who = owner_reference(producer, name)
        if who is not None:
            return (template[:m.start()] + "{%s}" % name.param + template[m.end():],
                    {name.param: who, email.param: who})
    return template, {}


def _beside(walk: Walk, email: Binding, name: Any) -> bool:
    """Whether the record that gave ``email`` names ``name`` beside it (the reservation's
    guest is Kenji Ito): then the email is that person's."""
    if email.source is None:
        return False
    record = extract(walk.steps[email.source].result, email.path[:-1]) if email.path[:-1] \
        else [walk.steps[email.source].result]
    return any(isinstance(r, dict) and name in r.values() for r in record)


def stated(spec: ToolSpec, binding: Binding) -> str:
    """A value the request states for one of ``spec``'s parameters, as the request writes it
    (an enum as its words, text quoted, 19400 not 19400.0)."""
    return _show(binding, _plain_schema(spec.parameters.get("properties", {}).get(binding.param)))


def _plain_schema(schema: dict | None) -> dict | None:
    """The non-null branch of an optional parameter's schema."""
    if schema and "anyOf" in schema:
        return next((b for b in schema["anyOf"] if b.get("type") != "null"), schema)
    return schema


def noun(spec: ToolSpec) -> str:
    """What a tool's result is called: "invoice" for a list of Invoice, "contact" for one."""
    noun_, _ = _root(spec, ("*", "x") if any(s.path[:1] == ("*",) for s in spec.outputs)
                     else ("x",))
    return noun_


def render_instruction(walk: Walk, context: str | None = None) -> str:
    """One request: house rules, a line of context, the steps in order, then what to report."""
    sentences = []
    for i, segment in enumerate(walk.segments):
        text = segment.text
        if text is None:
            step = walk.steps[segment.steps[0]]
            text = phrase(step.spec, walk, step.bindings)
        if i and segment.lead:
            text = "then " + text
        sentences.append(text[0].upper() + text[1:] + ("" if text.endswith(".") else "."))
    request = " ".join(([context] if context else []) + sentences + report_sentences(walk))
    return with_rules(walk, request)


# how people ask for the values back (``report_sentences`` draws one when given a rng)
_ASK_BACK = ("When you are done, tell me {}.", "When you're done, let me know {}.",
             "Once done, send me {}.", "When you're done, give me {}.",
             "I'd like to know {} once it's all done.")


def report_sentences(walk: Walk, rng: random.Random | None = None) -> list[str]:
    """The request's last sentence: what the final message must report, if anything (put
    one of the ways people ask for it back, drawn by ``rng``; the first without one)."""
    if len(walk.reports) > 1:
        asked = walk.asks
        frame = _ASK_BACK[0] if rng is None else rng.choice(_ASK_BACK)
        return [frame.format(", ".join(asked[:-1]) + " and " + asked[-1])]
    if walk.report_text is not None:
        return [walk.report_text]
    if walk.report is not None and walk.report.source is not None:
        producer = walk.steps[walk.report.source].spec
        return [f"Tell me {reference(producer, walk.report.path, walk.report.interface)}."]
    return []


def with_rules(walk: Walk, request: str) -> str:
    """The request with the house rules stated before it."""
    if len(walk.rules) > 1:
        return "House rules:\n" + "".join(f"- {r}\n" for r in walk.rules) + "Request: " + request
    if walk.rules:
        return "House rules: " + " ".join(walk.rules) + "\nRequest: " + request
    return request
