"""Value-flow checks: arguments of the solution's calls that no request would pair."""

from __future__ import annotations

import re
from collections import defaultdict
from functools import lru_cache
from typing import Iterator

from compoenv.compose.lint.context import Argument, TaskContext
from compoenv.compose.lint.records import Hit
from compoenv.magnitudes import RANGES, plausible
from compoenv.roles import FEEDS, infer_role
from compoenv.world import Person

__all__ = ["check_same_endpoints", "check_identity_mismatch", "check_self_link",
           "check_role_mismatch", "check_magnitude", "ENDPOINTS", "BUSINESS_ROLES",
           "NOT_THE_USER", "SURE_MONEY_ROLES"]

# the two ends of a trip, a span or a conversion: a parameter naming one end and its partner
ENDPOINTS: tuple[tuple[str, str], ...] = (
    ("origin", "destination"), ("pickup", "dropoff"), ("pickup", "return"), ("from", "to"),
    ("source", "target"), ("check_in", "check_out"), ("departure", "arrival"),
)
# organisation roles that only a business of that kind fills (an employer is none of them)
BUSINESS_ROLES = frozenset({"restaurant", "gym", "hotel", "pharmacy", "insurer", "airline",
                            "bank", "parking_operator", "clinic", "venue", "car_rental"})
# person roles the user never takes in their own request: one does not interview, pay,
# message, review, approve or hire oneself, nor add oneself as a contact or a lead
NOT_THE_USER = frozenset({"candidate", "interviewer", "hiring_manager", "employee",
                          "recipient", "payee", "reviewer", "approver", "lead", "contact",
                          "trainer", "translator", "advisor", "agent", "landlord"})
# roles a parameter's name tells reliably enough to judge its magnitude; others ("budget" of a
# project or of an ad's day, "value" of a house or of a goal) need an explicit x-role
SURE_MONEY_ROLES = frozenset({"salary", "income", "pay", "bonus", "rent", "premium", "fare",
                              "deposit"})
_IDENTITY = frozenset({"PersonName", "EmailAddress", "PhoneNumber"})
_SUFFIX = re.compile(r"_?(?:name|email|phone|phone_number)$")


@lru_cache(maxsize=4096)
def _partners(param: str) -> tuple[str, ...]:
    """The other ends of a parameter: ``origin_city`` -> ``("destination_city",)``."""
    out = []
    for one, other in ENDPOINTS:
        swapped, n = re.subn(rf"(^|_){one}(_|$)", rf"\g<1>{other}\g<2>", param)
        if n == 1:
            out.append(swapped)
    return tuple(out)


def check_same_endpoints(ctx: TaskContext) -> Iterator[Hit]:
    """One value at both ends of a call: a midpoint between Chicago and Chicago, a ride from
    an address to itself, a swap of an asset into itself."""
    for i, call in enumerate(ctx.task.solution):
        args = call.arguments
        for param, value in args.items():
            if not isinstance(value, str) or not value.strip():
                continue
            for partner in _partners(param):
                if partner in args and \
                        str(args[partner]).strip().lower() == value.strip().lower():
                    yield Hit(f'{param} and {partner} are both "{value}"', call=i,
                              argument=param)


def _people(ctx: TaskContext, call: int) -> list[tuple[Argument, Person]]:
    """The call's identity arguments (name, email, phone) and the World's person of each."""
    out = []
    for arg in ctx.arguments:
        if arg.call == call and arg.interface in _IDENTITY:
            person = ctx.person(arg.interface, arg.value)
            if person is not None:
                out.append((arg, person))
    return out


def _calls(ctx: TaskContext) -> list[int]:
    return sorted({a.call for a in ctx.arguments if a.interface in _IDENTITY})


def check_identity_mismatch(ctx: TaskContext) -> Iterator[Hit]:
    """One person's name with another person's email or phone in the same role of a call."""
    for i in _calls(ctx):
        by_stem: dict[str, list[tuple[Argument, Person]]] = defaultdict(list)
        for arg, person in _people(ctx, i):
            by_stem[_SUFFIX.sub("", arg.param)].append((arg, person))
        for group in by_stem.values():
            (first, who), *rest = group
            for arg, person in rest:
                if person != who:
                    yield Hit(f'{first.param} "{first.value}" and {arg.param} "{arg.value}" '
                              f'name different people ({who.name}, {person.name})', call=i,
                              argument=arg.param)


def _role(arg: Argument) -> str | None:
    """The argument's role; a bare ``name``/``email`` reads its role from the tool's name
    (``add_contact``'s name is a contact's)."""
    if arg.role is not None or not arg.interface:
        return arg.role
    for word in reversed(arg.spec.name.split("_")):
        role = infer_role(arg.interface, f"{word}_{arg.param}")
        if role is not None:
            return role
    return None


def check_self_link(ctx: TaskContext) -> Iterator[Hit]:
    """A person linked to themself: the user interviewing, paying or messaging themself in a
    write, or two person arguments of one call (interviewer and candidate) naming one person."""
    user = ctx.world.user
    for i in _calls(ctx):
        people = _people(ctx, i)
        for arg, person in people:
            role = _role(arg)
            if person == user and role in NOT_THE_USER and not arg.spec.read_only:
                yield Hit(f'{arg.param} "{arg.value}" is the user ({user.name}) acting as '
                          f'their own {role.replace("_", " ")}', call=i, argument=arg.param)
        stems: dict[Person, Argument] = {}
        for arg, person in people:
            other = stems.setdefault(person, arg)
            if _SUFFIX.sub("", other.param) != _SUFFIX.sub("", arg.param):
                yield Hit(f'{other.param} "{other.value}" and {arg.param} "{arg.value}" are the '
                          f'same person ({person.name})', call=i, argument=arg.param)


def check_role_mismatch(ctx: TaskContext) -> Iterator[Hit]:
    """An employer used as a business it is not: a pharmacy, gym or restaurant named after a
    company people work for, or a business of another kind."""
    employers = {o.name.lower() for o in ctx.world.orgs}
    for arg in ctx.arguments:
        if arg.interface != "OrganizationName" or arg.role not in BUSINESS_ROLES \
                or not isinstance(arg.value, str):
            continue
        label = arg.role.replace("_", " ")
        business = ctx.world.business(arg.value)
        accepted = FEEDS.get(arg.role, frozenset({arg.role}))
        if business is not None and business.kind not in accepted:
            yield Hit(f'{arg.param} "{arg.value}" is a {business.kind.replace("_", " ")}, '
                      f'not a {label}', call=arg.call, argument=arg.param)
        elif business is None and arg.value.strip().lower() in employers:
            yield Hit(f'{arg.param} "{arg.value}" is an employer, not a {label}',
                      call=arg.call, argument=arg.param)


def check_magnitude(ctx: TaskContext) -> Iterator[Hit]:
    """A money value outside the range its role takes: a salary of 8.28. The role is the
    parameter's ``x-role``, else one of ``SURE_MONEY_ROLES`` read from its name."""
    for arg in ctx.arguments:
        value = arg.value
        if arg.interface != "Money" or isinstance(value, bool) or \
                not isinstance(value, (int, float)) or arg.role not in RANGES:
            continue
        if arg.role not in SURE_MONEY_ROLES and not arg.explicit:
            continue
        if not plausible(arg.role, value):
            low, high, _ = RANGES[arg.role]
            yield Hit(f'{arg.role.replace("_", " ")} of {_num(value)} is outside the plausible '
                      f'{_num(low)}-{_num(high)} ({arg.param})', call=arg.call,
                      argument=arg.param)


def _num(value: float) -> str:
    """``8.28``, ``260000``: a money value as a request would write it."""
    return f"{value:.2f}".rstrip("0").rstrip(".")
