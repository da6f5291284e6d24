"""The service doctor: why the composer uses a service's tools, or why it never does."""

from __future__ import annotations

import json
import random
from collections import Counter
from dataclasses import asdict, dataclass
from itertools import islice
from typing import Any

from compoenv.checks.conventions import is_free_text
from compoenv.compose.generator import Composer, ComposerConfig, select
from compoenv.compose.motifs import _ORDERED, _SUMMABLE, _item_fields, fan_edges, returns_list
from compoenv.compose.values import fresh_arguments, record_arguments
from compoenv.compose.steps import failure, single_result
from compoenv.roles import kind_of_interface
from compoenv.graph import Edge, ToolGraph
from compoenv.interfaces import STATABLE
from compoenv.registry import Registry
from compoenv.service import Service, ToolSpec, split_qualified
from compoenv.session import Session
from compoenv.world import World

__all__ = ["diagnose", "default_usage", "Diagnosis", "ToolDiagnosis", "Composition",
           "DefaultUsage", "Problem", "Join", "Rejection", "REASONS"]

_SAY = "PersonName, EmailAddress, City or Date"
_FEED = ("make its outputs (ids, emails, names) feed tools that take them as required inputs, "
         "and check those calls succeed with the values it returns")
_SIZE = "seed enough records that typical values find 2 to 100 of them"
_ASK = "return a field a user would ask about: a name, an amount, a date"
# reason -> (what it means, how a service author fixes it). Seed reasons come from Rejected
# (walk, motifs, plan, verify, generator); the rest are candidate calls a walk dropped (misses).
REASONS: dict[str, tuple[str, str]] = {
    "no_start_tool": ("no tool can start a walk of the plan's shape",
                      f"give a tool only user-statable required inputs ({_SAY}) and an output "
                      "other tools take"),
    "start_failed": ("no start tool it tried found a usable result with values from its records",
                     "seed records whose fields carry the interfaces of the required parameters, "
                     "and let the tool find records by those values"),
    "dead_end": ("no next step could run after this tool", _FEED),
    "nothing_to_report": ("the walk ended on this read and it returned nothing worth reporting "
                          "(only ids, booleans, currency codes or values the user stated)", _ASK),
    "no_aggregate": ("its list had no numeric or date field to pick the min/max by (or ties)",
                     "give items a field typed Money, DurationMinutes, Quantity, Temperature, "
                     "Percentage, Date or DateTime"),
    "no_fan_out": ("no write could run once for each item of its list",
                   "let a write take an item's id or email as a required input, with any other "
                   "personal value coming from the item"),
    "small_list": ("its list had fewer than 2 items: nothing to count or sum", _SIZE),
    "no_branch": ("no number to decide an if/otherwise on, or no two writes to choose between",
                  "output Money, Percentage, Quantity or DurationMinutes values"),
    "no_house_rule": ("the walk had no if/otherwise to state as a house rule", "none needed"),
    "too_many_hops": ("a motif made the solution longer than max_hops", "none needed"),
    "too_few_services": ("the walk touched fewer services than a task needs (min_services)",
                         "join other services: output interfaces they take as required inputs, "
                         "or take theirs"),
    "missing_required": ("the walk never reached the service",
                         "take as required inputs interfaces other services output (EmailAddress, "
                         "PersonName, City, Date, Money)"),
    "not_reproducible": ("composing the same seed twice gave different tasks",
                         "make tools deterministic: derive ids from the state and randomness from "
                         "world.rng(), never from time or the global random"),
    "leak": ("the instruction would give away an answer or a found value",
             "keep phrases to their {param} placeholders"),
    "oracle_fails": ("replaying the solution on a fresh world did not score 1.0",
                     "make tools deterministic and their effects visible in the state"),
    "no_required": ("the task had no required check", "let writes change recorded state"),
    "trivial": ("an empty run already passed a required check",
                "writes should create or change records the seed does not already have"),
    "insensitive": ("a solution with a wrong argument to this tool still scored 1.0",
                    "make the result or effect depend on that argument (404 on unknown values)"),
    "identity": ("a call named two people for one role, one person for two roles, the user "
                 "acting on themself, or one place as origin and destination",
                 "tag person, city and date fields with the roles they play (compoenv.roles)"),
    "optional_sensitive": ("passing one of this tool's optional parameters explicitly (at its "
                           "default, or at the value the rubric states) broke the solution",
                           "give optional parameters defaults the tool honours, and keep "
                           "records independent of parameters the request leaves open"),
    "tied_pick": ("every business criterion left two of this list's items level (or nearly: "
                  "amounts within 2 %, times within the hour), so the request would have two "
                  "right answers",
                  "seed items whose prices, dates or amounts differ, or give the stage a "
                  "criterion by another field"),
    "no_criterion": ("no field of this list's items is one a person chooses by (a price, a due "
                     "date, a duration)",
                     "give the items such a field, tagged with its role, or give the stage "
                     "'by' criteria"),
    "alternative_fails": ("another valid plan (calls reordered, extra reads, messages worded "
                          "otherwise) scored below 1.0 on this task",
                          "make ids and records independent of the order of independent calls "
                          "and of free wording (salt ids with what the record is, not its text)"),
    "ambiguous_grounding": ("a value carried from this tool's result was found at several places",
                            "return each value once, at one path"),
    "duplicate": ("the task equals one already composed", "more tools and varied records help"),
    "rejected": ("rejected (no explanation for this reason yet)", "see the Rejected detail"),
    "no_arguments": ("as a start, no record of its service held values for every required "
                     "parameter", "seed records with fields of the required parameters' "
                     "interfaces (a PersonName field for a PersonName parameter)"),
    "unbindable": ("as a next step, a required parameter could neither be carried from earlier "
                   "steps nor stated by the user",
                   f"tag required parameters with statable interfaces ({_SAY}), or make them "
                   "optional"),
    "call_failed": ("the call returned an error for the values the walk chose",
                    "accept the values other services produce and find records by them"),
    "found_nothing": ("the call succeeded but returned nothing (null or an empty list)",
                      "seed records that values from other services find"),
    "wrong_size": ("its list had too few or too many items for the motif", _SIZE),
    "changes_nothing": ("the write left the state as it was",
                        "make the write change a record; writing the same value is no task"),
    "same_result": ("the read returned exactly what an earlier step returned",
                    "return something the earlier steps do not already show"),
    "not_reportable": ("as the last step, it returned nothing worth reporting", _ASK),
    "rule_not_needed": ("a solution ignoring one of the task's house rules still passed that "
                        "rule's criteria", "return the values a write was given in its record "
                        "(a title, a memo, an amount), so a rule about them can be checked"),
    "order_dependent": ("run in the solution's order (a house rule's call first), this tool "
                        "returned another value than the walk used",
                        "derive ids and results from the record acted on, not from how many "
                        "calls came before"),
    "over_quota": ("the task's difficulty level already had its share of the set",
                   "none needed: another seed fills the level that is short"),
}


@dataclass(frozen=True)
class Problem:
    """Something that keeps a tool out of composed tasks, and how to fix it."""

    what: str
    fix: str


@dataclass(frozen=True)
class Join:
    """An edge to or from another service: ``tool`` gives or takes a value of ``interface``."""

    interface: str
    tool: str


@dataclass(frozen=True)
class Rejection:
    """How often a reason blamed one tool (``seed``: a rejected seed; else a dropped call)."""

    reason: str
    tool: str
    count: int
    seed: bool
    explanation: str
    fix: str


@dataclass(frozen=True)
class ToolDiagnosis:
    """One tool as the composer sees it.

    Attributes:
        can_start: Whether a walk can start at it (statable inputs, out-edges, a live probe);
            ``start_problems``: why not, and the fixes.
        joins_in / joins_out: Other services' tools it takes values from / gives values to;
            ``inner_in`` / ``inner_out``: how many tools of its own service.
        join_problems: Why it joins no other service, when it joins none.
        motifs: For a list tool, what motifs can do with it; ``motif_problems``: why nothing.
    """

    tool: str
    read_only: bool
    returns_list: bool
    can_start: bool
    start_problems: tuple[Problem, ...]
    joins_in: tuple[Join, ...]
    joins_out: tuple[Join, ...]
    inner_in: int
    inner_out: int
    join_problems: tuple[Problem, ...]
    motifs: tuple[str, ...]
    motif_problems: tuple[Problem, ...]


@dataclass(frozen=True)
class Composition:
    """Tasks composed with walks required to touch the service, and what went wrong."""

    requested: int
    attempted: int
    composed: int
    examples: tuple[str, ...]
    reasons: dict[str, int]
    rejections: tuple[Rejection, ...]


@dataclass(frozen=True)
class DefaultUsage:
    """How often the default generator (``compoenv generate`` without flags) uses a service.

    Attributes:
        sample: Default tasks asked for; ``composed``: how many were composed (fewer only when
            the seeds ran out).
        tasks: Composed tasks whose solution calls the service; ``share``: their share.
        distractor: Composed tasks that list it only as a distractor.
        jobs: The default generator's jobs that use it (declared, declared by a service, or
            derived), out of ``of_jobs``.
        note: The figure in words; when it is 0, why, and the fix.
    """

    sample: int
    composed: int
    tasks: int
    share: float
    distractor: int
    jobs: tuple[str, ...]
    of_jobs: int
    note: str


@dataclass(frozen=True)
class Diagnosis:
    """What the doctor found for one service; ``used`` and ``verdict`` sum up the composition
    that requires it, ``default`` (when asked for) how often default tasks use it."""

    service: str
    tools: tuple[ToolDiagnosis, ...]
    composition: Composition
    used: bool
    verdict: str
    default: DefaultUsage | None = None

    def to_json(self) -> dict[str, Any]:
        return json.loads(json.dumps(asdict(self)))


def _free_note(spec: ToolSpec, param: str) -> str:
    """A word on an untagged parameter that `compoenv verify` takes as free text: accepted,
    but a value nothing can state or feed."""
    schema = spec.parameters.get("properties", {}).get(param, {})
    return (" (verify accepts it as free text, but a composed request has no value for it)"
            if is_free_text(schema) else "")


def _tag_advice(param: str, examples: str) -> str:
    """How to tag a parameter so that `compoenv verify` accepts it: an interface, and the
    role it plays where the interface has roles (a person, organisation, money, place,
    date, link or job title)."""
    return (f"tag `{param}` with an interface from compoenv.interfaces ({examples}) that "
            f"names the value it takes, with its role where the interface has roles, e.g. "
            f"`{param}: Annotated[EmailAddress, Role(\"contact\")]` (compoenv.roles lists "
            f"the roles; verify rejects such an interface without one)")


def _start_problems(spec: ToolSpec, graph: ToolGraph, cls: type[Service]) -> list[Problem]:
    """What keeps ``spec`` from starting a walk (the rules of ``ToolGraph.start_tools``)."""
    tagged = {s.path[0]: s.interface for s in spec.inputs if s.required and len(s.path) == 1}
    names = spec.parameters.get("required", ())
    problems = [] if names else [Problem(
        "it has no required parameter, so a request has nothing to ground it in",
        f"add a required parameter typed with a statable interface ({_SAY})")]
    for param in names:
        interface = tagged.get(param)
        if interface is None:
            problems.append(Problem(
                f"required parameter `{param}` has no x-interface" + _free_note(spec, param),
                _tag_advice(param, f"such as {_SAY}") + ", or give it a default"))
        elif interface not in STATABLE:
            problems.append(Problem(
                f"required parameter `{param}` takes {interface}, which a user cannot state",
                f"fine if other tools output {interface}; to start here, take a statable "
                f"interface ({_SAY}) instead"))
    if not graph.has_out_edges(spec.qualified_name):
        problems.append(Problem("no tool takes any of its outputs",
                                "give the tool an output that other tools take as a required "
                                "input (an id, an email, a name)"))
    return problems or _probe(spec, cls)


def _probe(spec: ToolSpec, cls: type[Service], worlds: int = 3) -> list[Problem]:
    """Start ``spec`` as a walk would, from its records in a few worlds; [] when one works."""
    rng = random.Random(f"doctor:{spec.qualified_name}")
    reason, detail = "no_arguments", ""
    for seed in range(worlds):
        session = Session([cls], World.get(seed))
        args = record_arguments(spec, session.service(spec.service), rng)
        if args is None and spec.simulated:
            args = fresh_arguments(spec, session.world, rng)
        if args is None:
            continue
        result = session.call(spec.qualified_name, args)
        reason = failure(result)
        if reason == "wrong_size" and (single_result(spec) or 2 <= len(result["data"]) <= 100):
            return []  # it found something ("wrong_size" until checked), of a size walks take
        error = result.get("error", {}).get("message")
        detail = f" (called with {args}" + (f": {error}" if error else "") + ")"
    explanation, fix = REASONS[reason]
    if reason == "call_failed" and not spec.read_only:  # "already exists": it is fed instead
        fix = "fine if other tools feed it; a write that creates a record from an existing one "\
              "conflicts with it"
    return [Problem(f"as a start, {explanation.removeprefix('as a start, ')}{detail}", fix)]


def _joins(spec: ToolSpec, into: dict[str, list[Edge]], graph: ToolGraph,
           ) -> tuple[tuple[Join, ...], tuple[Join, ...], int, int]:
    name, service = spec.qualified_name, spec.service
    ins = into.get(name, [])
    outs = graph.out_edges(name)
    joins_in = tuple(dict.fromkeys(Join(e.interface, e.source) for e in ins
                                   if e.cross_service))
    joins_out = tuple(dict.fromkeys(Join(e.interface, e.target) for e in outs
                                    if e.cross_service))
    inner_in = len({e.source for e in ins if not e.cross_service})
    inner_out = len({e.target for e in outs if not e.cross_service})
    return joins_in, joins_out, inner_in, inner_out


@dataclass(frozen=True)
class _Others:
    """What other services' tools take as required (or optional) inputs, and what they give:
    interface -> the services."""

    takes: dict[str, set[str]]
    optional: dict[str, set[str]]
    gives: set[str]

    @classmethod
    def of(cls, graph: ToolGraph, service: str) -> _Others:
        others = cls({}, {}, set())
        for sig in (s for s in graph.signatures.values() if s.service != service):
            for slot in (s for s in sig.inputs if len(s.path) == 1):
                kind = others.takes if slot.required else others.optional
                kind.setdefault(slot.interface, set()).add(sig.service)
            others.gives.update(s.interface for s in sig.outputs)
        return others


def _join_problems(spec: ToolSpec, others: _Others) -> list[Problem]:
    """Why ``spec`` joins no other service: what it gives nobody takes, what it needs nobody
    else gives."""
    takes, optional, gives = others.takes, others.optional, others.gives
    popular = ", ".join(sorted(takes, key=lambda i: (-len(takes[i]), i))[:4])
    problems = []
    outputs = sorted({s.interface for s in spec.outputs})
    if not outputs:
        problems.append(Problem("its result carries no x-interface, so no tool can take it",
                                "return an entity from compoenv.interfaces or type the result's "
                                f"fields with semantic types (e.g. {popular})"))
    elif not any(i in takes for i in outputs):
        note = [f"{i} only as an optional input" for i in outputs if i in optional]
        problems.append(Problem(
            f"no other service takes {', '.join(outputs)} as a required input"
            + (f" ({'; '.join(note)}: edges need required inputs)" if note else ""),
            f"also return interfaces other services take, such as {popular}"))
    tagged = {s.path[0]: s for s in spec.inputs if len(s.path) == 1}
    for param in spec.parameters.get("required", ()):
        slot = tagged.get(param)
        interface = slot.interface if slot is not None else None
        if interface is None:
            problems.append(Problem(f"required parameter `{param}` has no x-interface, so no "
                                    "tool can feed it" + _free_note(spec, param),
                                    _tag_advice(param, f"e.g. {popular}")))
        elif interface not in gives:
            problems.append(Problem(f"no other service outputs {interface} (`{param}`)",
                                    f"take an interface other services output ({popular})"))
    return problems


def _role_problems(spec: ToolSpec) -> list[Problem]:
    """Required inputs of a role-bearing interface without a role: nothing feeds them."""
    problems = []
    for slot in spec.inputs:
        kind = kind_of_interface(slot.interface)
        if kind and slot.role is None and slot.required and len(slot.path) == 1:
            param = slot.path[0]
            problems.append(Problem(
                f"required parameter `{param}` ({slot.interface}) has no x-role, so no tool "
                f"feeds it: an {slot.interface} joins only where its role fits",
                f"tag `{param}` with the role it plays, e.g. Annotated[{slot.interface}, "
                f"Role(...)] with a {kind} role from compoenv.roles"))
    return problems


def _motifs(spec: ToolSpec, graph: ToolGraph, can_start: bool,
            into: dict[str, list[Edge]]) -> tuple[list[str], list[Problem]]:
    """What aggregation and fan-out can do with a list tool, and why nothing when nothing."""
    fed = any(single_result(graph.specs[e.source]) for e in into.get(spec.qualified_name, ()))
    ordered = [s.path[-1] for s in _item_fields(spec, _ORDERED)]
    summed = [s.path[-1] for s in _item_fields(spec, _SUMMABLE)]
    fans = list(dict.fromkeys(e.target for e in fan_edges(graph, spec)))
    motifs = []
    if fed:
        motifs += ["count"] + [f"sum: {', '.join(summed)}"] * bool(summed)
    if ordered and (fed or can_start):
        motifs.append(f"min/max: {', '.join(ordered)}")
    if fans and can_start:
        motifs.append(f"fan-out into: {', '.join(fans[:5])}" + " ..." * (len(fans) > 5))
    problems = []
    if not motifs:
        if not (fed or can_start):
            problems.append(Problem("no walk reaches it: it cannot start a walk and no "
                                    "single-result tool feeds it", "fix its start (see above), "
                                    "or take a required input that other tools output"))
        if not ordered:
            problems.append(Problem("its items have no numeric or date field to pick by",
                                    REASONS["no_aggregate"][1]))
        if not fans:
            problems.append(Problem("no write can run once per item", REASONS["no_fan_out"][1]))
    return motifs, problems


def _compose(service: str, registry: Registry, tasks: int, seed: int,
             ) -> tuple[Composer, Composition]:
    """Up to ``tasks`` tasks that must touch ``service``, from at most ``10 * tasks + 40``
    seeds, with the rejections and dropped calls that name its tools."""
    composer = Composer(registry, ComposerConfig(require=(service,)))
    misses: Counter[tuple[str, str]] = Counter()
    composer.misses = misses
    reasons: Counter[str] = Counter()
    by_tool: Counter[tuple[str, str]] = Counter()
    outcomes = islice(composer.outcomes(seed), 10 * tasks + 40)
    found = list(select(outcomes, tasks, reasons, rejections_by_tool=by_tool))
    mine = [(reason, tool, n, seeds) for counts, seeds in ((by_tool, True), (misses, False))
            for (reason, tool), n in counts.items() if split_qualified(tool)[0] == service]
    rejections = tuple(Rejection(r, t, n, s, *REASONS.get(r, REASONS["rejected"]))
                       for r, t, n, s in sorted(mine, key=lambda r: (-r[2], r[0], r[1])))
    examples = tuple(t.instruction for t in found[:3])
    return composer, Composition(tasks, len(found) + sum(reasons.values()), len(found), examples,
                                 dict(reasons.most_common()), rejections)


def _verdict(tools: tuple[ToolDiagnosis, ...], composition: Composition) -> str:
    if composition.composed:
        return (f"used by the composer when tasks must use it: {composition.composed} of "
                f"{composition.requested} tasks composed in {composition.attempted} attempts")
    if not any(t.can_start or t.joins_in for t in tools):
        first = next((p for t in tools for p in t.start_problems), Problem("no tools", "add one"))
        return f"never used: no tool can start a walk ({first.what}) and no other service " \
               f"feeds one — {first.fix}"
    if not any(t.joins_in or t.joins_out for t in tools):
        first = next((p for t in tools for p in t.join_problems),
                     Problem("no tool joins another service", REASONS["too_few_services"][1]))
        return f"never used: no tool joins another service ({first.what}) — {first.fix}"
    if composition.rejections:
        top = composition.rejections[0]
        return f"never used: {top.explanation} at {top.tool} — {top.fix}"
    reason = next(iter(composition.reasons), "rejected")
    explanation, fix = REASONS.get(reason, REASONS["rejected"])
    return f"never used: {explanation} ({reason}) — {fix}"


def default_usage(service: str, registry: Registry | None = None, sample: int = 200,
                  seed: int = 0, config: ComposerConfig | None = None) -> DefaultUsage:
    """How often default tasks use ``service``: ``sample`` tasks composed with ``config``
    (default: ``compoenv generate``'s, every scenario and the jobs of the services none acts
    on), counted by whether their solution calls it, with why not when none does.

    Raises:
        RegistryError: no service of that name.
        ValueError: ``sample`` is below 1.
    """
    if sample < 1:
        raise ValueError(f"sample must be >= 1, got {sample}")
    registry = registry or Registry.default()
    registry.get(service)
    if config is None:
        from compoenv.scenarios import resolve

        config = ComposerConfig(scenarios=resolve("all", registry.names()), derive=True,
                                distractors=10)
    composer = Composer(registry, config)
    tasks: list[Any] = []
    try:
        tasks.extend(select(composer.outcomes(seed), sample, Counter()))
    except RuntimeError:  # the seeds ran out: count what was composed
        pass
    calls = sum(any(split_qualified(c.name)[0] == service for c in t.solution) for t in tasks)
    distractor = sum(service in t.distractors for t in tasks)
    jobs = tuple(s.name for s in composer.scenarios if service in s.services)
    share = calls / len(tasks) if tasks else 0.0
    figure = f"{calls} of {len(tasks)} default tasks ({100 * share:.1f}%)"
    if calls:
        note = f"used in {figure}, by the jobs {', '.join(jobs)}" if jobs else f"used in {figure}"
    elif not composer.scenarios:
        note = (f"never used in {figure}: default tasks here are free walks, and none reached "
                f"it (see the composition above)")
    elif not jobs:
        note = (f"never used in {figure}: no scenario uses it (default tasks are jobs of "
                f"{len(composer.scenarios)} scenarios, declared or derived, and none lists "
                f"{service}, nor could one be derived from its tools) — declare a job next to the service (docs/services.md) "
                f"or in a scenario file (docs/scenarios.md), or compose free walks that reach "
                f"it: compoenv generate --scenarios none --require {service}")
    else:
        note = (f"never used in {figure}: {len(jobs)} of {len(composer.scenarios)} jobs list it "
                f"({', '.join(jobs[:4])}), but none of their tasks called it — compose them "
                f"alone to see why: compoenv generate --require {service}")
    return DefaultUsage(sample, len(tasks), calls, round(share, 4), distractor, jobs,
                        len(composer.scenarios), note)


def diagnose(service: str, registry: Registry | None = None, tasks: int = 20,
             seed: int = 0, sample: int = 0,
             config: ComposerConfig | None = None) -> Diagnosis:
    """Why the composer uses ``service``, or why it never does, and how to fix it.

    Composition uses the default ComposerConfig (2-4 hops, 2+ services, every motif) with
    ``require=(service,)``, so every walk heads for the service. With ``sample``, also how
    often ``sample`` default tasks use it (``default_usage``, with ``config``).

    Args:
        service: The service's name.
        registry: Where it lives, beside the services it should join (default:
            ``Registry.default()``).
        tasks: Tasks to compose that must touch the service (at most ``10 * tasks + 40`` seeds).
        seed: Generation seed.
        sample: Default tasks to compose and count (0: none).
        config: The default generator's config (see ``default_usage``).

    Raises:
        RegistryError: no service of that name (the message suggests close names).
        ValueError: ``tasks`` is below 1, or ``sample`` below 0.
    """
    if tasks < 1 or sample < 0:
        raise ValueError(f"tasks must be >= 1 and sample >= 0, got {tasks}, {sample}")
    registry = registry or Registry.default()
    cls = registry.get(service)
    composer, composition = _compose(service, registry, tasks, seed)
    graph = composer.graph
    into = {name: edges for name, sig in graph.signatures.items()  # by tool
            if sig.service == service and (edges := graph.in_edges(name))}
    others = _Others.of(graph, service)
    reports = []
    for spec in cls.tool_specs().values():
        start = _start_problems(spec, graph, cls)
        joins = _joins(spec, into, graph)
        lists = returns_list(spec)
        motifs, motif_problems = _motifs(spec, graph, not start, into) if lists else ([], [])
        reports.append(ToolDiagnosis(
            spec.qualified_name, spec.read_only, lists, not start, tuple(start), *joins,
            tuple(_role_problems(spec) + (_join_problems(spec, others)
                                          if not (joins[0] or joins[1]) else [])),
            tuple(motifs), tuple(motif_problems)))
    tools = tuple(reports)
    usage = default_usage(service, registry, sample, seed, config) if sample else None
    return Diagnosis(service, tools, composition, composition.composed > 0,
                     _verdict(tools, composition), usage)
