"""One identity per value: a call's person fields name one person per role, different roles
name different people, nobody acts on themself, and a trip goes somewhere else.

The walk refuses candidate calls that break these rules (``call_problem``); verification checks
every published solution again (``Rejected("identity", ...)``).
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from compoenv.compose.labels import named_for
from compoenv.roles import IDENTITY
from compoenv.schema import Slot
from compoenv.service import ToolSpec
from compoenv.world import Person, World

__all__ = ["person_of", "person_group", "call_problem", "SELF_ROLES"]

# roles the user may hold in a call: their own accounts, their own policies, a passenger or a
# guest they book for themself, a patient they are
SELF_ROLES = frozenset({"self", "policyholder", "passenger", "guest", "patient", "member",
                        "owner", "requester", "organizer", "payer", "sender", "tenant",
                        "driver", "author"})
_PLACES = ("origin", "destination")


def person_of(value: Any, world: World) -> Person | None:
    """The World's person a name or an email refers to (phones are looked up too)."""
    if not isinstance(value, str):
        return None
    return world.person_by_email(value) or world.person(value) or world.person_by_phone(value)


def person_group(slot: Slot) -> str:
    """Which person a person field belongs to in its call: its role, else its name's stem
    (``guest_email`` and ``guest`` are one guest)."""
    return slot.role or slot.path[0].rsplit("_", 1)[0]


def _identity_slots(spec: ToolSpec) -> list[tuple[str, str | None, str]]:
    """(param, role, interface) of the call's top-level person fields."""
    return [(s.path[0], s.role, s.interface) for s in spec.inputs
            if len(s.path) == 1 and s.interface in IDENTITY]


def call_problem(spec: ToolSpec, arguments: Mapping[str, Any], world: World) -> str | None:
    """Why a call with these arguments could not be a real request, or None.

    Returns:
        ``mixed_identity``: one role's name and email belong to different people;
        ``same_person``: two roles of the call are one person (she interviews herself);
        ``self_link``: the user acts on themself where the role is someone else's;
        ``same_place``: origin and destination (or pickup and drop-off, the two ends of a
        range) are one place;
        ``empty_update``: a write that changes a record is given only which record ("update
        the playlist for that id"), nothing to change it to.
    """
    if _changes(spec) and all(_is_key(spec, param) for param in arguments):
        return "empty_update"
    people: dict[str, Person] = {}  # role (or param when untagged) -> the person it names
    for param, role, _ in _identity_slots(spec):
        if param not in arguments:
            continue
        person = person_of(arguments[param], world)
        if person is None:
            continue
        key = role or param.rsplit("_", 1)[0]
        seen = people.get(key)
        if seen is not None and seen != person:
            return "mixed_identity"
        people[key] = person
        if person == world.user and (role or "") not in SELF_ROLES:
            return "self_link"
    if len(set(people.values())) < len(people):
        return "same_person"
    places = {s.role: arguments.get(s.path[0]) for s in spec.inputs
              if len(s.path) == 1 and s.role in _PLACES and s.path[0] in arguments}
    if len(places) == 2 and str(places["origin"]).casefold() == str(
            places["destination"]).casefold():
        return "same_place"
    for key, other_key in _endpoint_pairs(spec):  # a ride from an address to itself
        value, other = arguments.get(key), arguments.get(other_key)
        if value is not None and other is not None and \
                str(value).casefold() == str(other).casefold():
            return "same_place"
    return None


_CHANGE = named_for("update", "patch", "modify", "edit", "change", "replace", "put", "set")


# or its description says so, when an imported operation's name is only numbered
# ("binaryauthorization_projects_2": "Updates an attestor.")
_CHANGE_SAID = re.compile(r"^(update|patch|modif|edit|change|replace|set)(s|ies|y)?\b", re.I)


def _changes(spec: ToolSpec) -> bool:
    """A write named or described for changing a record it is given (``update_playlist``,
    ``patch_user``, an imported ``sourcerepo_projects_repos_patch``)."""
    return not spec.read_only and bool(_CHANGE.search(spec.name)
                                       or _CHANGE_SAID.match(spec.description))


def _is_key(spec: ToolSpec, param: str) -> bool:
    """Whether a parameter only says which record (an id), not what it should become."""
    interface = next((s.interface for s in spec.inputs if s.path == (param,)), "")
    return interface.endswith("Id") or param == "id" or param.endswith("_id")


def _endpoint_pairs(spec: ToolSpec) -> tuple[tuple[str, str], ...]:
    """The (start, end) parameter pairs of a tool, found once per tool."""
    name = spec.qualified_name
    if name not in _PAIRS:
        params = spec.parameters.get("properties", {})
        _PAIRS[name] = tuple((key, end + key[len(start):]) for start, end in _ENDPOINTS
                             for key in params if key == start or key.startswith(start + "_"))
    return _PAIRS[name]


_PAIRS: dict[str, tuple[tuple[str, str], ...]] = {}


# (start, end) name prefixes of the two ends of a trip or a range: origin_city/destination_city,
# pickup_address/dropoff_address, from_date/to_date, start_date/end_date, check_in/check_out
_ENDPOINTS = (("origin", "destination"), ("pickup", "dropoff"), ("from", "to"),
              ("source", "target"), ("start", "end"), ("check_in", "check_out"),
              ("period_start", "period_end"))
