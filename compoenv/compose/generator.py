"""Composer: seeded random walks turned into verified tasks, one per seed."""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from typing import Any, Callable, Iterable, Iterator, NamedTuple

from compoenv.compose.context import context_line
from compoenv.compose.render import render_instruction
from compoenv.compose.rewrite import RewriteStats, keeps, rewrite_instruction
from compoenv.compose.difficulty import DifficultyMix, estimate, level
from compoenv.compose.rubric import answer_text, build_rubric
from compoenv.compose.derive import derived, job_weights, service_jobs
from compoenv.compose.jobs import job_task
from compoenv.compose.records import capabilities
from compoenv.compose.verify import verify_task, verify_walk
from compoenv.compose.config import ComposerConfig
from compoenv.compose.plan import choose_plan, realize
from compoenv.compose.walk import Rejected, Walk, Walker
from compoenv.graph import ToolGraph
from compoenv.registry import Registry
from compoenv.service import without_hints
from compoenv.session import Mount, Session
from compoenv.scenarios import Scenario, ScenarioError, ScenarioRegistry, select_jobs
from compoenv.task import Call, Task
from compoenv.world import World

__all__ = ["ComposerConfig", "Composer", "Outcome", "composer_jobs", "derive_seed", "select"]


def derive_seed(seed: int, index: int) -> int:
    """The i-th task seed of a set generated from ``seed`` (stable across runs and machines)."""
    digest = hashlib.blake2b(f"{seed}:{index}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % (2**31 - 1)


class Composer:
    """Composes verified multi-service tasks from a registry.

    Args:
        registry: Services to compose from (default: ``Registry.default()``).
        config: Walk controls.

    Attributes:
        rejections: Rejected seeds per reason.
        rejections_by_tool: Rejected seeds per (reason, tool at fault), for reasons that name
            tools; a ``start_failed`` seed counts once for each start tool it tried.
        misses: None, or a Counter that checked builds add their dropped candidate calls to,
            by (why, tool) (see ``Walker``): the doctor's view of why a tool is never kept.
    """

    def __init__(self, registry: Registry | None = None,
                 config: ComposerConfig | None = None,
                 scenarios: ScenarioRegistry | None = None) -> None:
        self.registry = registry or Registry.default()
        self.config = config or ComposerConfig()
        names = self.config.services or tuple(self.registry.names())
        for name in self.config.require:
            self.registry.get(name)  # an unknown name fails here, with "did you mean"
        self.scenarios = composer_jobs(self.registry, self.config, scenarios)
        self.weights = job_weights(self.scenarios, self.registry)
        if self.scenarios and not self.config.services:
            # a job's walks stay inside its scenario's services: the others (an imported
            # library's, say) can only be distractors, and neither slow nor change the jobs
            used = {s for scenario in self.scenarios for s in scenario.services}
            names = tuple(n for n in names if n in used)
        self._walked = names
        # signatures come from library indexes: a service is built when a walk reaches it
        self.graph = ToolGraph(self.registry.signatures(names), self.registry.related,
                               self.registry.spec, self.registry.scope)
        self.rejections: Counter[str] = Counter()
        self.rejections_by_tool: Counter[tuple[str, str]] = Counter()
        self.misses: Counter[tuple[str, str]] | None = None
        self.rewrite_stats = RewriteStats()
        self._client: Any = None
        self._mounted: Mount | None = None

    def load_services(self) -> None:
        """Build every service the composer walks over now, not when a walk first reaches it
        (a library's services are built on first use): a process that forks workers does it
        once, before, so that they share the services instead of each building them."""
        self.registry.tools(self._walked)
        self._mount()

    def compose(self, seed: int) -> Task:
        """The task for ``seed``.

        Raises:
            Rejected: this seed yields no publishable task (the reason says why).
        """
        task, walk = self._build(seed)
        if self.config.check_regeneration:
            # the id is a hash of the rest: equal content means an equal id
            again = self._build(seed, verify=False)[0]
            if again.model_copy(update={"id": task.id}) != task:
                raise Rejected("not_reproducible")
        if self.config.rewrite is not None:  # after the check: a model need not repeat itself
            task = self._rewrite(task, walk)
        return task

    def _rewrite(self, task: Task, walk: Walk) -> Task:
        """The task with its instruction rewritten by the LLM, if the rewrite keeps every stated
        value, hides every found one, and the task still verifies; else the template task."""
        if self._client is None:
            from compoenv.llm import ChatClient

            assert self.config.rewrite is not None
            self._client = ChatClient(self.config.rewrite)
        stated = {str(b.value) for s in walk.steps for b in s.bindings
                  if b.source is None and not isinstance(b.value, (list, dict))}
        keep = sorted(stated | {f"{x:g}" for x in walk.literals})
        # what the template states (a goal-level request leaves out the values of the
        # lookups it leaves to the agent): each must survive the rewrite
        # the house rules stay as they are stated (a list, by design): the request is rewritten
        rules, marker, request = task.instruction.rpartition("Request: ")
        keep = [v for v in keep if keeps(request, v)]
        found = {str(b.value) for s in walk.steps for b in s.bindings if b.source is not None}
        # what a message must mention (a found name, say) is found too, never told
        mentioned = {str(m) for c in task.rubric for m in getattr(c, "mentions", None) or ()}
        forbid = sorted((found - stated) | (mentioned - stated) | set(task.answer)
                        | {answer_text(v) for v in walk.hidden})
        text = rewrite_instruction(request, keep, forbid, self._client,
                                   stats=self.rewrite_stats)
        if text is None:
            return task
        text = rules + marker + text
        rewritten = task.model_copy(update={
            "instruction": text,
            "recorded": {**task.recorded, "rewrite": {"template": task.instruction,
                                                      "model": self.config.rewrite.model}},
        }).with_id()
        try:
            verify_task(rewritten, self.registry)
        except Rejected as exc:
            self.rewrite_stats.rejected[f"verify_{exc.reason}"] += 1
            return task
        return rewritten

    def _build(self, seed: int, verify: bool = True) -> tuple[Task, Walk]:
        """The task for ``seed`` and its walk; without ``verify``, unchecked and without an id
        (a regeneration, compared with a checked build)."""
        with without_hints():  # the walk's failed calls are counted, never read
            return self._build_quietly(seed, verify)

    def _build_quietly(self, seed: int, verify: bool) -> tuple[Task, Walk]:
        cfg = self.config
        rng = random.Random(f"compose:{seed}")
        world = World.dated(seed if cfg.worlds is None else seed % cfg.worlds)
        simulator = self._simulator()
        session = Session(self._mount(), world, simulator)
        if self.scenarios:
            task, walk = job_task(self, seed, verify, rng, world, session, simulator)
            if not set(cfg.require) <= set(walk.services):  # its stage that uses one was skipped
                raise Rejected("missing_required", f"the job never reached {cfg.require}")
            return task, walk
        plan = choose_plan(rng, cfg.motifs, cfg.min_hops, cfg.max_hops)
        walker = Walker(self.graph, session, rng, cross_bias=cfg.cross_bias,
                        min_services=cfg.min_services, require=frozenset(cfg.require),
                        misses=self.misses if verify else None)
        walk = realize(plan, walker, cfg.max_hops, cfg.min_hops)
        services = walk.services
        if not set(cfg.require).issubset(services):
            raise Rejected("missing_required", f"the walk never reached {cfg.require}")
        if len(services) < cfg.min_services:
            raise Rejected("too_few_services", f"{len(services)} < {cfg.min_services}")
        if len(walk.steps) > cfg.max_hops:
            raise Rejected("too_many_hops", f"{len(walk.steps)} > {cfg.max_hops}")
        # the branch not taken is the agent's to weigh: its service is mounted too
        services = services + [s for s in dict.fromkeys(walk.guarded) if s not in services]
        distractors = self._distractors(services, rng)
        answers = [answer_text(walk.report.value)] if walk.report else []
        domains = Counter(self.registry.get(s).domain for s in services)
        tags = capabilities(walk)
        task = Task(
            instruction=render_instruction(walk, context_line(
                self.registry.get(walk.steps[0].spec.service).domain, world.user, seed)),
            services=services, distractors=distractors,
            seed=world.seed,
            walk_seed=seed,
            date=world.today.isoformat(),
            solution=[Call(name=s.spec.qualified_name, arguments=s.arguments) for s in walk.steps],
            answer=answers, rubric=build_rubric(walk, session, answers, distractors=distractors),
            capabilities=tags, domain=domains.most_common(1)[0][0], hops=len(walk.steps),
            fingerprint=self.registry.fingerprint(services),
            recorded=self._recorded(simulator),
        )
        if verify:
            task = task.with_id()
            verify_walk(walk, task)
            verify_task(task, self.registry)
        return task, walk

    def _recorded(self, simulator: Any) -> dict[str, Any]:
        """What a player needs to see what verification saw: who answered simulated calls,
        and the answers of any model but the deterministic offline one."""
        recorded: dict[str, Any] = {"world_model": simulator.model.name if simulator
                                    else "offline"}
        if simulator is not None and simulator.recording:
            recorded["answers"] = simulator.recording
        return recorded

    def _mount(self) -> Mount:
        """The composer's services, mounted once for the sessions of all its attempts."""
        if self._mounted is None:
            self._mounted = Mount.of(self.registry.get(n) for n in self._walked)
        return self._mounted

    def _simulator(self) -> Any:
        """A fresh simulator per walk when a world model other than the default is set."""
        if self.config.world_model in (None, "offline"):
            return None
        from compoenv.worldmodel.config import simulator_from

        return simulator_from(self.config.world_model)

    def _distractors(self, services: list[str], rng: random.Random) -> list[str]:
        """``config.distractors`` services the task does not use, for the gateway to list
        beside its own: plausible neighbours first (a service of the same domain, or one the
        task's services name as related: a bank beside invoices), then the rest; ties broken
        by the walk's rng."""
        if self.config.distractors <= 0:
            return []
        pool = [n for n in (self.config.services or self.registry.names()) if n not in services]
        rng.shuffle(pool)
        info = self.registry.info  # what is known of a service without building it
        domains = {info(s).domain for s in services}

        def near(name: str) -> int:
            named = set(info(name).related)
            return (2 * (info(name).domain in domains)
                    + sum(name in info(s).related or s in named for s in services))

        pool.sort(key=near, reverse=True)
        return sorted(pool[: self.config.distractors])

    def sample(self, seed: int, max_tries: int = 200) -> Task:
        """The first publishable task among the seeds derived from ``seed``."""
        for i in range(max_tries):
            try:
                return self.compose(derive_seed(seed, i))
            except Rejected as exc:
                self.rejections[exc.reason] += 1
                for tool in exc.tools:
                    self.rejections_by_tool[(exc.reason, tool)] += 1
        raise RuntimeError(f"no verified task in {max_tries} tries from seed {seed}; "
                           f"rejections: {dict(self.rejections)}")

    def generate(self, n: int, seed: int = 0, mix: DifficultyMix | None = None
                 ) -> Iterator[Task]:
        """``n`` verified, distinct tasks from the seeds derived from ``seed``, in seed order
        (with ``mix``, in those shares of difficulty levels)."""
        yield from select(self.outcomes(seed), n, self.rejections,
                          rejections_by_tool=self.rejections_by_tool, mix=mix)

    def attempt(self, seed: int) -> Outcome:
        """Compose ``seed``: its task, or why (and where) it was rejected."""
        try:
            return Outcome(self.compose(seed))
        except Rejected as exc:
            return Outcome(None, exc.reason, None, exc.tools)

    def outcomes(self, seed: int, start: int = 0, stop: int | None = None) -> Iterator[Outcome]:
        """Outcomes of the set's indices ``start, start + 1, ...`` (endless without ``stop``)."""
        index = start
        while stop is None or index < stop:
            yield self.attempt(derive_seed(seed, index))
            index += 1


def composer_jobs(registry: Registry, config: ComposerConfig,
                  pool: ScenarioRegistry | None = None) -> list[Scenario]:
    """The jobs a composer with ``config`` draws from: its scenarios (of ``pool``, default
    ``ScenarioRegistry.default()``), with ``derive`` also the jobs the services declare and
    those derived for the services no scenario acts on, then those that use every required
    service and belong to ``config.domains`` (``scenarios.select_jobs``).

    Raises:
        ScenarioError: a job that does not fit the registry or the config's services, a domain
            no job has, or a requirement no job meets.
    """
    names = config.services or tuple(registry.names())
    pool = pool if pool is not None else ScenarioRegistry.default()
    jobs = [pool.get(name) for name in config.scenarios]
    for scenario in jobs:
        scenario.check(registry)
        missing = set(scenario.services) - set(names)
        if missing:
            raise ScenarioError(f"scenario {scenario.name!r} needs services {sorted(missing)} "
                                f"that the composer's services leave out")
    if config.derive:
        # jobs the library's services declare, then jobs derived for the services that no
        # scenario acts on
        own = [j for j in service_jobs(registry, names) if set(j.services) <= set(names)
               and j.name not in {s.name for s in jobs}]
        for job in own:
            job.check(registry)
        jobs += own + derived(registry, list(pool) + own, names)
    if jobs and (config.require or config.domains):
        jobs = select_jobs(jobs, config.require, config.domains)
    return jobs


class Outcome(NamedTuple):
    """One composed index: the task, or why it was rejected (and the tools at fault), or an
    error to re-raise when the merge reaches it."""

    task: Task | None
    reason: str | None = None
    error: BaseException | None = None
    tools: tuple[str, ...] = ()


def select(outcomes: Iterable[Outcome], n: int, rejections: Counter[str],
           progress: Callable[[int, int], None] | None = None,
           rejections_by_tool: Counter[tuple[str, str]] | None = None,
           mix: DifficultyMix | None = None) -> Iterator[Task]:
    """The first ``n`` distinct tasks (neither the same id nor the same job, ``Task.job_key``)
    of an ordered stream of outcomes: the one rule, shared by
    sequential and parallel generation, so both publish the same set and the same counts
    (per reason in ``rejections``; per (reason, tool) in ``rejections_by_tool``, if given).
    With ``mix``, a task whose difficulty level already has its share is passed over
    (``over_quota``).

    Raises:
        RuntimeError: no ``n`` distinct tasks within ``100 * (n + 10)`` outcomes.
    """
    if n <= 0:
        return
    seen: set[str] = set()
    jobs: set[str] = set()
    limit = 100 * (n + 10)
    quotas = mix.quotas(n) if mix is not None else None
    levels: Counter[str] = Counter()
    for attempted, (task, reason, error, tools) in enumerate(outcomes, start=1):
        if error is not None:
            raise error
        if task is None:
            rejections[reason or "rejected"] += 1
            if rejections_by_tool is not None:
                for tool in tools:
                    rejections_by_tool[(reason or "rejected", tool)] += 1
        elif task.id in seen or (job := task.job_key()) in jobs:  # same job, other distractors
            rejections["duplicate"] += 1
        elif quotas is not None and levels[lvl := level(task.difficulty or estimate(task))] \
                >= quotas.get(lvl, 0):
            rejections["over_quota"] += 1
        else:
            levels[level(task.difficulty or estimate(task))] += 1
            seen.add(task.id)
            jobs.add(job)
            yield task
        if progress is not None:
            progress(len(seen), attempted)
        if len(seen) == n:
            return
        if attempted >= limit:
            raise RuntimeError(f"only {len(seen)} of {n} tasks after {attempted} seeds; "
                               f"rejections: {dict(rejections)}")
