"""Scenarios: the jobs long tasks are about (a domain, a persona, a goal, its services and the
stages of the work), as data files plus a registry, like services.

A scenario file (JSON, in ``envs_library/scenarios/`` or any folder passed to
``ScenarioRegistry.from_paths``) holds one scenario object or ``{"scenarios": [...]}``::

    {"name": "vendor_invoice_run", "domain": "month-end close",
     "persona": ["I run accounts payable at {employer}."],
     "goal": "We're closing the month and this vendor's invoices have to be settled.",
     "services": ["invoices", "bank", "email", "docs_editor"],
     "stages": [
        {"tools": ["invoices__list_invoices"], "take": "all"},
        {"tools": ["bank__transfer"], "each": true},
        {"tools": ["email__send_email"], "optional": true}],
     "rules": ["naming", "source_of_truth", "threshold", "ordering", "never"],
     "naming": "close"}

Stages run in order; each is one step of the job (find, decide, act, confirm) done with one of
its tools, fed by what earlier stages found. See docs/scenarios.md.
"""

from __future__ import annotations

import threading
from importlib.metadata import entry_points
from pathlib import Path
from typing import Annotated, Iterable, Iterator, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from compoenv.service import did_you_mean

__all__ = ["Pick", "Stage", "Scenario", "ScenarioRegistry", "ScenarioError", "RULE_KINDS",
           "register_scenario", "resolve", "select_jobs", "ENTRY_POINT_GROUP"]

ENTRY_POINT_GROUP = "compoenv.scenarios"
RULE_KINDS = ("naming", "source_of_truth", "threshold", "ordering", "never")
RuleKind = Literal["naming", "source_of_truth", "threshold", "ordering", "never"]


class ScenarioError(ValueError):
    """A scenario file that cannot be read, or a scenario that does not fit the library."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _bounds(name: str, value: tuple[int, int], low: int, high: int) -> tuple[int, int]:
    """A (min, max) pair inside [low, high]."""
    if not low <= value[0] <= value[1] <= high:
        raise ValueError(f"{name} must be (min, max) with {low} <= min <= max <= {high}, "
                         f"got {value}")
    return value


def resolve(names: str | Iterable[str], services: Iterable[str] | None = None,
            pool: ScenarioRegistry | None = None) -> tuple[str, ...]:
    """Scenario names from ``"all"`` (every scenario ``services`` allow), ``"none"`` (no
    scenario: the free walk), a comma-separated string or a list of names.

    Raises:
        ScenarioError: an unknown name (with "did you mean"), or a named scenario that needs
            services outside ``services``.
    """
    pool = pool or ScenarioRegistry.default()
    if isinstance(names, str):
        text = names.strip()
        if text in ("", "none"):
            return ()
        if text == "all":
            return tuple((pool.usable(services) if services else pool).names())
        names = text.split(",")
    chosen = [pool.get(n.strip()) for n in names if n.strip()]
    allowed = set(services) if services else None
    for scenario in chosen:
        if allowed is not None and not set(scenario.services) <= allowed:
            raise ScenarioError(f"scenario {scenario.name!r} needs services "
                                f"{sorted(set(scenario.services) - allowed)} that the chosen "
                                f"services leave out")
    return tuple(s.name for s in chosen)


def select_jobs(jobs: Iterable[Scenario], require: Iterable[str] = (),
                domains: Iterable[str] = ()) -> list[Scenario]:
    """The jobs that use every service of ``require`` and belong to one of ``domains``
    (case-insensitive; none given: any domain), in their order.

    Raises:
        ScenarioError: a domain no job has (with "did you mean" and the known domains), or
            no job left: it names the service no job uses, or the domains that have none.
    """
    jobs, require = list(jobs), tuple(require)
    known = {s.domain.casefold(): s.domain for s in jobs}
    given = {d.strip().casefold(): d.strip() for d in domains if d.strip()}
    wanted = set(given)
    for domain in sorted(wanted - set(known)):
        close = did_you_mean(domain, known, "domain").partition(".")[2]  # " Did you mean ...?"
        raise ScenarioError(f"Unknown domain {given[domain]!r}.{close} Known domains: "
                            f"{', '.join(sorted(known.values(), key=str.casefold))}")
    kept = [s for s in jobs if not wanted or s.domain.casefold() in wanted]
    for service in require:
        if not any(service in s.services for s in kept):
            where = f" of the domains {', '.join(sorted(wanted))}" if wanted else ""
            raise ScenarioError(
                f"no scenario{where} uses {service}: compose free walks that reach it "
                f"(scenarios 'none'), or declare a job that uses it next to the service or in "
                f"a scenario file (docs/scenarios.md)")
    kept = [s for s in kept if set(require) <= set(s.services)]
    if not kept:
        raise ScenarioError(f"no scenario uses all of {', '.join(require)}: require fewer, or "
                            f"declare a job that uses them together (docs/scenarios.md)")
    return kept


class Pick(_Model):
    """Why a ``take="pick"`` stage takes the item it takes, as a business criterion.

    Attributes:
        field: The item's field the criterion orders by (a top-level field of each listed
            item, such as ``nightly_rate``).
        order: ``min`` or ``max``: which end of that order the job takes.
        says: How the request says it, a noun phrase that names the item's kind ("the
            cheapest hotel", "the most overdue invoice", "the candidate who asked for the
            least"); words a list's own qualifiers follow ("the cheapest hotel in Athens").
        among: Only the items whose fields hold these values count ({"status": "open"} for
            "the open form closing soonest"), where the list's tool cannot ask for them alone.
    """

    field: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    order: Literal["min", "max"]
    says: str = Field(min_length=5, max_length=80, pattern=r"^the [^_{}]+$")
    # only the items whose top-level fields hold these values count ("the open form closing
    # soonest": {"status": "open"}), where the list's tool cannot ask for them alone; what
    # ``says`` must then say
    among: dict[Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")],
                str | int | float | bool] = Field(default_factory=dict, max_length=3)


class Stage(_Model):
    """One step of the job.

    Attributes:
        tools: Qualified tool names that may do it; the walk takes the first that fits what
            earlier stages found (in a random order).
        take: For a tool that returns a list: ``one`` (a single-result tool), ``pick`` (take
            the item with the highest or lowest value of a field), ``all`` (the following
            ``each`` stages act on every item).
        each: Run once per item of the last ``all`` stage (email each attendee).
        optional: Skip the stage when none of its tools fits (instead of dropping the seed).
        fresh: When nothing found so far feeds the stage, it may start anew from values the
            user states (check the balance of an account they name).
        items: For a list stage: the fewest and most items it must find.
        args: Values the request states for some parameters of the stage's call (the title
            and text of the note that records the job); the rest are found or stated as usual.
            A goal-level request asks for a message or document by what it is about, so its
            free wording (a subject, a body) is the agent's: only ``steps`` requests dictate it.
        by: For a ``pick`` stage: the business criteria it may take the item by (a seed uses
            the first that names exactly one item of the list it found); without them a pick
            orders by a field whose meaning is plain (a price, a due date, see
            ``compoenv.compose.choices``).
        about: For a stage that sends a message or writes a document: what it is about, in
            the user's words ("their room and the team dinner"); the goal-level request asks
            for it so ("email each of them about their room and the team dinner").
    """

    tools: list[str] = Field(min_length=1)
    take: Literal["one", "pick", "all"] = "one"
    each: bool = False
    optional: bool = False
    fresh: bool = False
    items: tuple[int, int] = (2, 6)
    args: dict[str, str | int | float | bool] = {}
    by: list[Pick] = Field(default_factory=list, max_length=6)
    about: str | None = Field(None, min_length=3, max_length=120, pattern=r"^[^_{}]+$")

    @field_validator("items")
    @classmethod
    def _sizes(cls, value: tuple[int, int]) -> tuple[int, int]:
        return _bounds("items", value, 1, 50)


class Scenario(_Model):
    """A job long tasks are about.

    Attributes:
        name: Unique snake_case name (a task records it in ``scenario``).
        domain: The line of work ("legal ops", "month-end close"); tasks record it in ``domain``.
        persona: Lines saying who the user is ("{employer}" is the user's employer); one opens
            each request.
        goal: What the user is trying to get done: one sentence, or a list of phrasings of
            it (each true of every task the stages can make); a task says one of them,
            beside its persona line.
        services: The services the job uses (3 to 7); walks stay inside them.
        stages: The steps of the job, in order.
        rules: House-rule kinds tasks of this scenario may carry.
        naming: The prefix of the naming scheme ("close" -> "close-<invoice id>").
        decoys: Whether tasks may name a near-duplicate record to leave alone.
        report: Bounds on the values the final message reports: the most any task asks for,
            and 0 to let a task ask for none (the difficulty level sets the rest).
        roles: Roles the scenario's values play (documentation, checked against roles.py).
    """

    name: str = Field(pattern=r"^[a-z][a-z0-9_]{2,63}$")
    domain: str = Field(min_length=2, max_length=40)
    persona: list[str] = Field(min_length=1)
    goal: list[Annotated[str, Field(min_length=8, max_length=300)]] = Field(min_length=1)
    services: list[str] = Field(min_length=2, max_length=7)
    stages: list[Stage] = Field(min_length=2, max_length=12)
    rules: list[RuleKind] = list(RULE_KINDS)
    naming: str = Field("job", pattern=r"^[a-z][a-z0-9-]{1,20}$")
    decoys: bool = True
    report: tuple[int, int] = (2, 3)
    roles: list[str] = []

    @field_validator("goal", mode="before")
    @classmethod
    def _phrasings(cls, value: object) -> object:
        return [value] if isinstance(value, str) else value

    @field_validator("report")
    @classmethod
    def _report(cls, value: tuple[int, int]) -> tuple[int, int]:
        return _bounds("report", value, 0, 4)

    @field_validator("stages")
    @classmethod
    def _each_follows_a_list(cls, stages: list[Stage]) -> list[Stage]:
        listed = False
        for i, stage in enumerate(stages):
            if stage.each and not listed:
                raise ValueError(f"stage {i} runs for each item, but no earlier stage has "
                                 f"take='all' to list the items")
            if stage.each and stage.take != "one":
                raise ValueError(f"stage {i}: an 'each' stage acts on one item (take='one')")
            listed = stage.take == "all" or (listed and stage.each)
            if stage.by and stage.take != "pick":
                raise ValueError(f"stage {i}: 'by' gives the criteria of a take='pick' stage")
        if stages[0].each:
            raise ValueError("the first stage cannot be an 'each' stage")
        return stages

    def check(self, registry: object) -> None:
        """Raise ScenarioError unless every service and tool exists in ``registry`` and every
        stage's tools belong to the scenario's services."""
        names = set(registry.names())  # type: ignore[attr-defined]
        for service in self.services:
            if service not in names:
                raise ScenarioError(f"scenario {self.name!r}: "
                                    + did_you_mean(service, names, "service"))
        tools = {t.qualified_name for t in registry.tools(self.services)}  # type: ignore
        for i, stage in enumerate(self.stages):
            for tool in stage.tools:
                if tool not in tools:
                    raise ScenarioError(f"scenario {self.name!r}, stage {i}: "
                                        + did_you_mean(tool, tools, "tool")
                                        + f" (tools must belong to {self.services})")
            for pick in stage.by:
                fields = {f for tool in stage.tools
                          for f in _ordered_fields(registry.spec(tool))}  # type: ignore
                if pick.field not in fields:
                    raise ScenarioError(
                        f"scenario {self.name!r}, stage {i}: cannot pick by {pick.field!r}; "
                        + did_you_mean(pick.field, fields, "orderable item field"))
        from compoenv.roles import KIND_OF

        unknown = [r for r in self.roles if r not in KIND_OF]
        if unknown:
            raise ScenarioError(f"scenario {self.name!r}: unknown roles {unknown}; "
                                f"see compoenv.roles.ROLES")


def _ordered_fields(spec: object) -> list[str]:
    """The top-level fields of a list tool's items that a pick may order by."""
    from compoenv.compose.choices import orderable

    return [slot.path[1] for slot in orderable(spec)]  # type: ignore[arg-type]


def _read(path: Path) -> list[Scenario]:
    from compoenv.untrusted import UntrustedFileError, load_json_file

    try:
        data = load_json_file(path)
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read: {exc}") from None
    except UntrustedFileError as exc:
        raise ScenarioError(str(exc)) from None
    items = data.get("scenarios") if isinstance(data, dict) and "scenarios" in data else [data]
    if not isinstance(items, list):
        raise ScenarioError(f"{path}: 'scenarios' must be a list of scenario objects")
    out = []
    for i, item in enumerate(items):
        try:
            out.append(Scenario.model_validate(item))
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            where = ".".join(str(p) for p in first["loc"]) or "(root)"
            name = item.get("name", f"#{i}") if isinstance(item, dict) else f"#{i}"
            raise ScenarioError(f"{path}: scenario {name!r}: field {where!r}: {first['msg']}") \
                from None
    return out


_USER: dict[str, Scenario] = {}
_DEFAULT: dict[str, ScenarioRegistry] = {}
_LOCK = threading.RLock()


def register_scenario(scenario: Scenario) -> Scenario:
    """Add a scenario to every default scenario registry created afterwards."""
    old = _USER.get(scenario.name)
    if old is not None and old != scenario:
        raise ScenarioError(f"duplicate scenario name {scenario.name!r}")
    _USER[scenario.name] = scenario
    _DEFAULT.clear()
    return scenario


class ScenarioRegistry:
    """Scenarios by unique name."""

    def __init__(self, scenarios: Iterable[Scenario] = ()) -> None:
        self._scenarios: dict[str, Scenario] = {}
        for scenario in scenarios:
            self.add(scenario)

    def add(self, scenario: Scenario) -> Scenario:
        if scenario.name in self._scenarios and self._scenarios[scenario.name] != scenario:
            raise ScenarioError(f"duplicate scenario name {scenario.name!r}")
        self._scenarios[scenario.name] = scenario
        return scenario

    def get(self, name: str) -> Scenario:
        try:
            return self._scenarios[name]
        except KeyError:
            raise ScenarioError(did_you_mean(name, self._scenarios, "scenario")) from None

    def names(self) -> list[str]:
        return sorted(self._scenarios)

    def __iter__(self) -> Iterator[Scenario]:
        return iter(self._scenarios[n] for n in self.names())

    def __len__(self) -> int:
        return len(self._scenarios)

    def __contains__(self, name: object) -> bool:
        return name in self._scenarios

    def domains(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for s in self:
            out.setdefault(s.domain, []).append(s.name)
        return out

    def usable(self, services: Iterable[str]) -> ScenarioRegistry:
        """The scenarios whose services all lie in ``services``."""
        pool = set(services)
        return ScenarioRegistry(s for s in self if set(s.services) <= pool)

    @classmethod
    def from_paths(cls, paths: Iterable[str | Path]) -> ScenarioRegistry:
        """Scenarios of JSON files, and of the ``*.json`` files in folders, in name order."""
        registry = cls()
        for path in map(Path, paths):
            files = sorted(path.glob("*.json")) if path.is_dir() else [path]
            if not path.exists():
                raise ScenarioError(f"{path}: no such file or folder")
            for file in files:
                for scenario in _read(file):
                    registry.add(scenario)
        return registry

    @classmethod
    def default(cls) -> ScenarioRegistry:
        """envs_library/scenarios, folders named by ``compoenv.scenarios`` entry points, and
        registered scenarios."""
        with _LOCK:
            if "registry" not in _DEFAULT:
                import envs_library

                folder = Path(envs_library.__file__).with_name("scenarios")
                paths: list[str | Path] = [folder] if folder.is_dir() else []
                for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
                    paths.append(ep.load())
                registry = cls.from_paths(paths)
                for scenario in _USER.values():
                    registry.add(scenario)
                _DEFAULT["registry"] = registry
            return _DEFAULT["registry"]
