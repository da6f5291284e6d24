"""Jobs for any library: scenario jobs derived for services no declared scenario acts on.

A service a user writes, a spec folder or an imported API has no hand-written scenario, so the
composer derives its jobs from what the library says of it: its tools (which list records,
which act on one), the tool graph (what a list's items feed), its display name and its own
descriptions. Two patterns, the ones declared scenarios follow:

- **find, decide, act**: a list of the service's records, one taken by a business criterion
  (``choices.plain``: the cheapest, the one due soonest), then a write of the service on it
  and what follows from that write (a second write on the record it made or changed);
- **lifecycle**: a record made from what the user states, then a write on that record.

Each job may then tell someone (an email, when the walk found or the user states whom) and
note what was done (a document), when the library has those services. Persona and goal are
phrased from the service's own words. Derived jobs are ``Scenario`` objects like declared ones
(``compoenv scenarios`` lists them), verified like any task.
"""

from __future__ import annotations

import re
from typing import Any, Iterable

from pydantic import ValidationError

from compoenv.compose.choices import orderable, plain
from compoenv.compose.labels import named_for, plural, service_label
from compoenv.compose.motifs import returns_list
from compoenv.compose.render import noun
from compoenv.graph import ToolGraph
from compoenv.registry import Registry, RegistryError
from compoenv.scenarios import Scenario, ScenarioError
from compoenv.importers.naming import snake
from compoenv.importers.tools import imperative
from compoenv.schema import SCOPE_KEYS, names_record
from compoenv.service import ToolSpec

__all__ = ["derive_jobs", "derived", "job_weights", "acting_services", "service_jobs", "NOTIFY",
           "RECORD"]

NOTIFY = "email__send_email"
RECORD = "docs_editor__create_document"
_NAME = re.compile(r"[^a-z0-9_]+")
# what a derived job is about must be a thing's name in words ("vet visit", "attestor"), not
# a number or an operation's verbs ("projects 4", "create or update": an unnamed result)
_KIND = re.compile(r"(?!.*\b(create|update|get|list|delete|patch|put|post|begin|allocate|"
                   r"set|or|by)\b)[a-z][a-z' -]*[a-z]")
# a job that takes back what it found or made is no job a person asks for by default
_UNDO = named_for("cancel", "delete", "remove", "close", "withdraw", "void", "revoke",
                  "unpublish", "decline", "reject", "deactivate", "unfollow", "unsubscribe",
                  "archive", "disable", "suspend", "stop", "purge", "destroy", "terminate",
                  "detach", "disassociate", "untag")


def acting_services(scenarios: Iterable[Scenario], registry: Registry) -> set[str]:
    """The services some scenario writes to."""
    out = set()
    for scenario in scenarios:
        for stage in scenario.stages:
            for tool in stage.tools:
                try:
                    if not registry.spec(tool).read_only:
                        out.add(tool.split("__", 1)[0])
                except RegistryError:
                    continue
    return out


def service_jobs(registry: Registry, services: Iterable[str] | None = None) -> list[Scenario]:
    """The jobs services declare next to themselves (a class's ``jobs``, a spec's ``"jobs"``),
    as scenarios.

    Raises:
        ScenarioError: a job that is no valid scenario, naming the service and the field.
    """
    out: list[Scenario] = []
    for name in services if services is not None else registry.names():
        for i, job in enumerate(registry.info(name).jobs):
            try:
                out.append(Scenario.model_validate(job))
            except ValidationError as exc:
                first = exc.errors(include_url=False)[0]
                where = ".".join(str(p) for p in first["loc"]) or "(root)"
                raise ScenarioError(f"service {name!r}, job {i}: field {where!r}: "
                                    f"{first['msg']}") from None
    return out


_DERIVED: dict[tuple[int, tuple[str, ...], tuple[str, ...]], list[Scenario]] = {}


def derived(registry: Registry, declared: list[Scenario],
            services: Iterable[str]) -> list[Scenario]:
    """``derive_jobs`` for the composer's services, once per registry and pool (workers and
    repeated composers share them). Only jobs that fit ``services``."""
    names = tuple(services)
    key = (id(registry), names, tuple(s.name for s in declared))
    if key not in _DERIVED:
        pool = set(names)
        jobs = derive_jobs(registry, declared, names)
        _DERIVED[key] = [j for j in jobs if set(j.services) <= pool]
    return list(_DERIVED[key])


def job_weights(scenarios: list[Scenario], registry: Registry) -> list[float]:
    """How often to draw each job: half as the jobs' share of the services they act on (the
    sum, over those services, of one over how many jobs act on each: a service with one job
    is then used about as often as one with ten; a service of the user's own libraries counts
    ``OWN_WEIGHT`` times), half uniformly over the jobs."""
    # a job over a service of the user's own libraries is that service's, whether or not it
    # writes there (a job that finds an imported API's record and tells someone about it)
    acting = [(acting_services([s], registry) or set(s.services))
              | {n for n in s.services[:1] if _worth(registry, n) > 1.0} for s in scenarios]
    counts: dict[str, int] = {}
    for services in acting:
        for name in services:
            counts[name] = counts.get(name, 0) + 1
    spread = [sum(_worth(registry, n) / counts[n] for n in services) for services in acting]
    total = sum(spread) or 1.0
    # half spread over services, half over jobs: a rare service is not drowned, and no job
    # of a service only it uses crowds out the rest
    return [0.5 * w / total + 0.5 / len(scenarios) for w in spread]


# how much more often a service of the user's own libraries is drawn than a built-in one: the
# services a user loads with --library are what they are building tasks for
OWN_WEIGHT = 5.0


def _worth(registry: Registry, name: str) -> float:
    """OWN_WEIGHT for a service of a library the user loaded or a class they registered, 1
    for one of the built-in library."""
    try:
        info = registry.info(name)
        own = info.file is not None or (
            info.kind == "class"
            and not registry.get(name).__module__.startswith("envs_library"))
    except RegistryError:
        return 1.0
    return OWN_WEIGHT if own else 1.0


def derive_jobs(registry: Registry, declared: Iterable[Scenario] = (),
                services: Iterable[str] | None = None,
                graph: ToolGraph | None = None) -> list[Scenario]:
    """Derived jobs for the services (default: all of ``registry``'s) that no ``declared``
    scenario acts on, at most two per service (a find-decide-act job and a lifecycle job),
    each on one write (the goal names it) and what follows from it."""
    names = list(services) if services is not None else registry.names()
    covered = acting_services(declared, registry) | {NOTIFY.split("__")[0],
                                                      RECORD.split("__")[0]}
    graph = graph or ToolGraph(registry.signatures(), registry.related, registry.spec,
                               registry.scope)
    hubs = [h for h in (NOTIFY, RECORD) if h.split("__")[0] in registry.names()]
    taken = {s.name for s in declared}
    out: list[Scenario] = []
    for name in names:
        if name in covered:
            continue
        for job in _jobs(name, registry, graph, hubs):
            if job.name not in taken:
                taken.add(job.name)
                out.append(job)
    return out


def _writes_on(graph: ToolGraph, tool: str, service: str, items: bool) -> list[str]:
    """Writes of ``service`` that what ``tool`` returns feeds (from one of its list's items
    when ``items``)."""
    out, kind = [], noun(graph.specs[tool]).casefold().split()
    for edge in graph.out_edges(tool):
        if edge.target_service != service or edge.target in out:
            continue
        spec = graph.specs[edge.target]
        schema = spec.parameters.get("properties", {}).get(edge.param, {})
        if spec.read_only or (items and not _own_key(edge.path, schema, kind)):
            continue  # from a list: a write on the item itself, by its own key
        if not names_record(edge.param, schema):
            continue  # it acts on the record found or made, named by its key
        out.append(edge.target)
    return out


def _jobs(service: str, registry: Registry, graph: ToolGraph,
          hubs: list[str]) -> list[Scenario]:
    try:
        specs = [graph.specs[t.qualified_name] for t in registry.tools([service])
                 if t.qualified_name in graph.signatures]
    except RegistryError:
        return []
    info = registry.info(service)
    jobs: list[Scenario] = []
    if info.file is not None and info.kind == "spec":  # an imported API: jobs over its own resources
        return _review_jobs(service, graph, hubs, specs, info)
    # find, decide, act: a list whose items a write of the service acts on
    for spec in specs:
        if not (spec.read_only and returns_list(spec)):
            continue
        kind = noun(spec)
        if not _KIND.fullmatch(kind):
            continue  # "projects 4", a numbered operation's name: no thing a person names
        if not any(plain(s, o, kind, spec.returns) for s in orderable(spec)
                   for o in ("min", "max")):
            continue
        acts = [a for a in _writes_on(graph, spec.qualified_name, service, items=True)
                if not _UNDO.search(graph.specs[a].name)]
        if not acts:
            continue
        act = acts[0]
        lead = _lead(graph, service, spec.qualified_name)
        if lead is False:
            continue
        stages: list[dict[str, Any]] = [
            *([{"tools": [lead]}] if lead else []),
            {"tools": [spec.qualified_name], "take": "pick", "items": [2, 8]},
            {"tools": [act]}]
        follow = [t for t in _writes_on(graph, act, service, items=False)
                  if t != act and not _UNDO.search(graph.specs[t].name)]
        if follow:
            stages.append({"tools": follow[:1], "optional": True})
        job = _scenario(f"{service}_{_slug(kind)}_choice", service, info, kind, stages, hubs,
                        _goal(info, kind, graph.specs[act], chosen=True))
        if job is not None:
            jobs.append(job)
            break
    # lifecycle: a record made from stated values, then a write on it
    for spec in specs:
        if spec.read_only or _UNDO.search(spec.name):
            continue
        lead = _lead(graph, service, spec.qualified_name)
        if lead is False:
            continue
        then = [t for t in _writes_on(graph, spec.qualified_name, service, items=False)
                if not _UNDO.search(graph.specs[t].name)]
        if not then:
            continue
        kind = noun(spec)
        if not _KIND.fullmatch(kind):
            continue
        stages = [*([{"tools": [lead]}] if lead else []),
                  {"tools": [spec.qualified_name]}, {"tools": then[:1]}]
        job = _scenario(f"{service}_{_slug(kind)}_lifecycle", service, info, kind, stages,
                        hubs, _goal(info, kind, graph.specs[then[0]], chosen=False))
        if job is not None:
            jobs.append(job)
            break
    if info.file is not None and not any(j.name.endswith("_choice") for j in jobs):
        # a service of the user's own libraries whose writes take nothing a list gives (a
        # plain-text id): its records found, one decided on, someone told, a note kept
        jobs += _review_jobs(service, graph, hubs, specs, info)
    return jobs


def _own_key(path: tuple[str, ...], schema: dict[str, Any], kind: list[str]) -> bool:
    """Whether a list item's field at ``path`` is the item's own key, the one a write on the
    item takes: its ``id``, or, for an imported API's resource key (``x-key``), its ``name``
    or ``arn``, or a ``<resource>_id`` of the resource the list holds (a ``jobId`` in a list
    of classification jobs; not the ``DirectoryId`` of a list of snapshots)."""
    if path[:1] != ("*",) or len(path) != 2:
        return False
    field = snake(path[1], 80)
    key = schema.get("x-key")
    if field == "id":
        return True
    if not isinstance(key, str) or key in SCOPE_KEYS:
        return False
    return field in ("name", "arn") or (
        field in (f"{key}_id", f"{key}_name", f"{key}_arn") and key.split("_")[-1] in kind)


def _lead(graph: ToolGraph, service: str, tool: str) -> str | None | bool:
    """What a job must look up first to reach ``tool``: None when the user can state all it
    needs, else a single-record read of the service that the user can start from and that
    feeds it ("find the pet named Rex" before "list the pet's appointments"); False if none."""
    if tool in graph.start_tools():
        return None
    for start in graph.start_tools():
        spec = graph.specs[start]
        if spec.service != service or not spec.read_only or returns_list(spec):
            continue
        if any(e.target == tool for e in graph.out_edges(start)):
            return start
    return False


def _slug(text: str, limit: int = 24) -> str:
    return _NAME.sub("_", text.casefold()).strip("_")[:limit].strip("_") or "record"


def _goal(info: Any, kind: str, act: ToolSpec, chosen: bool) -> str:
    """The goal in the service's own words: what the job does there (its write's
    description), for the right record or a new one."""
    # its first sentence, as a request: what it does, not its errors ("Updates an attestor.
    # Returns NOT_FOUND if ..." -> "update an attestor")
    what = imperative(act.description) or re.split(
        r"(?<=[a-z0-9)])\.\s", act.description.strip(), maxsplit=1)[0].rstrip(".").strip()
    what = what[:1].lower() + what[1:]
    which = f"the right {kind}" if chosen else f"a new {kind}"
    text = f"In {service_label(info)}, I need {which} taken care of: {what}."
    return text[:300]


def _scenario(name: str, service: str, info: Any, kind: str,
              stages: list[dict[str, Any]], hubs: list[str], goal: str | list[str],
              about: tuple[str, str] | None = None) -> Scenario | None:
    """The job, with the email and note that close it when the library has those services
    (required when ``about`` says what they are about: a job whose point is telling
    someone), or None when the service's words make no valid job."""
    label = service_label(info)
    services = [service]
    if NOTIFY in hubs:
        services.append(NOTIFY.split("__")[0])
        stages = stages + [{
            "tools": [NOTIFY], "optional": about is None, "fresh": True,
            "about": about[0] if about else f"the {kind}",
            "args": {"subject": f"Your {kind}",
                     "body": f"A quick note about the {kind}: it is taken care of."}}]
    if RECORD in hubs:
        services.append(RECORD.split("__")[0])
        stages = stages + [{
            "tools": [RECORD], "optional": about is None, "fresh": True,
            "about": about[1] if about else f"what was done about the {kind}",
            "args": {"title": f"{kind.capitalize()} notes"[:80],
                     "content": f"Handled the {kind} in {label} and told the people involved."}}]
    try:
        return Scenario.model_validate({
            "name": (_slug(name, 60) if re.match(r"^[a-z]", name) else "job_" + _slug(name, 56)),
            "domain": (info.domain or label)[:40] if len(info.domain or label) >= 2 else label,
            "persona": [f"I look after the {plural(kind)} in {label} at {{employer}}.",
                        f"I handle {label} for {{employer}}.",
                        f"At {{employer}}, {label} is part of my job."],
            "goal": goal if not isinstance(goal, str) or len(goal) >= 8
            else f"A {kind} in {label} needs handling.",
            "services": services,
            "stages": stages,
            "naming": (_slug(service).replace("_", "-")[:20] or "job").strip("-") or "job",
            "rules": ["naming", "source_of_truth", "threshold", "ordering", "never"],
            # a record to review is told apart by the criterion; a near-duplicate to leave
            # alone would be named by what the API calls it, often no name a person uses
            "decoys": about is None,
            "report": [0, 3],
        })
    except Exception:  # noqa: BLE001 - a service whose words do not make a valid job has none
        return None


def _review_jobs(service: str, graph: ToolGraph, hubs: list[str], specs: list[ToolSpec],
                 info: Any) -> list[Scenario]:
    """A job over a service's own records (an imported API's resources): find them, decide
    on one by a business criterion, act on it where the service has a write for it, tell
    someone and keep a note of what was decided (the hubs join only through what the record
    gives or the user states)."""
    near = {service, *(h.split("__")[0] for h in hubs)}
    found: list[tuple[ToolSpec, str, list[dict[str, str]], str | None]] = []
    for spec in specs:
        if not (spec.read_only and returns_list(spec)):
            continue
        kind = noun(spec)
        if not _KIND.fullmatch(kind) or _ADJECTIVE.fullmatch(kind):
            continue
        criteria = _criteria(spec, kind)
        if not criteria:
            continue
        bare = not graph.signatures[spec.qualified_name].required
        if bare and not any(e.target_service in near for e in graph.out_edges(
                spec.qualified_name)):
            continue  # a walk opens only on a list whose items feed something of the job
        # a list that needs nothing ("list my apps") opens a job as it is
        lead = None if bare else _lead(graph, service, spec.qualified_name)
        if lead is not False:
            found.append((spec, kind, criteria, lead))
    for spec, kind, criteria, lead in found:
        # the lists of the same records the user can open alike ("the visits of Ana Diaz",
        # "the booked visits"): whichever finds a few of them
        lists = [spec.qualified_name] + ([] if lead else [
            s.qualified_name for s, k, c, other in found if s is not spec and k == kind
            and other is None and c == criteria])
        stages: list[dict[str, Any]] = [
            *([{"tools": [lead]}] if lead else []),
            {"tools": lists, "take": "pick", "items": [2, 30], "by": criteria}]
        acts = [a for a in _writes_on(graph, spec.qualified_name, service, items=True)
                if not _undoes(graph.specs[a])]
        if acts:
            # where the write fits the record the request asks for it; the goal holds either way
            stages.append({"tools": acts[:1], "optional": True})
        job = _scenario(f"{service}_{_slug(kind)}_review", service, info, kind, stages, hubs,
                        _review_goals(service_label(info), kind),
                        about=(f"the {kind} we picked and what happens next",
                               f"our review of the {kind}"))
        if job is not None:
            return [job]
    return []


# the criteria a record to review is chosen by, most telling first: what is due, what costs
# or weighs most, then what is newest (a record just made is the one to check)
_PREFER = ("due soonest", "most expensive", "largest", "highest", "most recent", "longest",
           "latest", "earliest", "cheapest", "shortest", "smallest", "lowest", "oldest")


def _criteria(spec: ToolSpec, kind: str) -> list[dict[str, str]]:
    """The business criteria a job over ``spec``'s list may take its record by (``Pick``s as
    dicts), the most telling first (at most six): a seed takes one that names exactly one
    record."""
    options = [(says, slot, order) for slot in orderable(spec) for order in ("min", "max")
               if (says := plain(slot, order, kind, spec.returns)) is not None]

    def rank(option: tuple[str, Any, str]) -> int:
        return next((i for i, w in enumerate(_PREFER) if w in option[0]), len(_PREFER))

    return [{"field": slot.path[1], "order": order, "says": says}
            for says, slot, order in sorted(options, key=rank)[:6]]


def _review_goals(label: str, kind: str) -> list[str]:
    """What the user wants, in a few phrasings: one of the service's records looked at (the
    request says which, by the criterion the seed took), the people concerned told, and a
    note kept."""
    return [f"One {kind} in {label} needs a closer look: the people concerned should hear "
            f"about it, and I keep a note of every review.",
            f"I want {_a(kind)} in {label} looked at, a word sent to whoever it concerns, "
            f"and a note of it kept for the record.",
            f"Time to go over one of the {plural(kind)} in {label}, let the right person know "
            f"and write up a short note on it."]


def _a(kind: str) -> str:
    """``kind`` with its indefinite article ("an order", "a team")."""
    return f"{'an' if kind[:1] in 'aeiou' else 'a'} {kind}"


_ADJECTIVE = re.compile(r"[a-z]+(ing|ed)|public|private|random|past|upcoming|all|mine|own")


def _undoes(spec: ToolSpec) -> bool:
    """Whether a write takes back what was found or made, by its name or its description's
    first verb ("Deletes the specified occurrence")."""
    head = (spec.description.strip().split() or [""])[0].casefold().rstrip("s")
    return bool(_UNDO.search(spec.name) or _UNDO.search(head))
