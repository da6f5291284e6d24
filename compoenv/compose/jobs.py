"""A scenario's job at a difficulty level: its stages, house rules and report, and the task
built from it (``Composer`` calls ``job_task`` for every seed when scenarios are set)."""

from __future__ import annotations

import random
from typing import Any

from compoenv.compose import house_rules as hr
from compoenv.compose.difficulty import estimate
from compoenv.compose.labels import with_employer
from compoenv.compose.records import Rejected, Walk, capabilities
from compoenv.compose.goal import plain, render_goal
from compoenv.compose.render import render_instruction
from compoenv.compose.reports import choose_reports
from compoenv.compose.rubric import answer_text, build_rubric, rule_ids
from compoenv.compose.scenario import ScenarioWalker, run_stages
from compoenv.compose.verify import verify_alternative, verify_order, verify_task, verify_walk
from compoenv.session import Session
from compoenv.task import Call, HouseRule, Replace, RuleChange, Task
from compoenv.world import World

__all__ = ["LEVELS", "walk_scenario", "job_task", "draw_guidance"]

LEVELS = ("easy", "medium", "hard")
_RULES = {"easy": (0, 1), "medium": (2, 3), "hard": (3, 5)}
_REPORTS = {"easy": (1, 1), "medium": (2, 2), "hard": (2, 4)}


def walk_scenario(walker: ScenarioWalker, level: str) -> list[tuple[int, int]]:
    """Run the scenario's job at a difficulty ``level``: its stages (only the required ones
    when easy), then as many of its house rules as the level asks for and the walk allows,
    and the values to report. Returns the walk's picks (list step, item) for the record.

    Raises:
        Rejected: the job does not fit this world and seed.
    """
    scenario, rng, walk = walker.scenario, walker.rng, walker.walk
    kinds = [k for k in scenario.rules if k != "never" or scenario.decoys]
    rng.shuffle(kinds)
    low, high = _RULES[level]
    want = rng.randint(low, high)
    stages = scenario.stages
    if level == "easy":  # the job without its optional extras: the goal still holds
        stages = [s for s in stages if not s.optional] or stages[:2]
    named = "naming" in kinds[:want]  # set before the walk: the records hold the label

    def anchor(w: ScenarioWalker) -> None:
        if named:
            w.naming = hr.naming_for(w.walk, scenario.naming, w.picks, w.session.world.today)

    run_stages(walker, stages, anchor)
    long_job = len(walk.steps) >= 8
    if long_job:  # a long job carries several standing rules, whatever its level
        want = max(want, 2)
    naming, walker.naming = walker.naming, None
    if naming is not None and (draft := hr.naming_rule(naming, walk, walker.session)):
        walk.house.append(draft)
    session = walker.session
    makers = {"source_of_truth": lambda: hr.source_of_truth(walk, session, rng),
              "threshold": lambda: hr.threshold(walker, rng),
              "ordering": lambda: hr.ordering(walker, rng),
              "never": lambda: hr.never(walker, walker.picks, rng)}
    for kind in kinds:  # a rule the walk offers nothing to is passed for the next kind
        if len(walk.house) >= want:
            break
        if kind in makers and (draft := makers[kind]()) is not None:
            walk.house.append(draft)
    walk.rules = [d.text for d in walk.house]
    if walk.house:
        walk.motifs.append("house-rules")
    low, high = _REPORTS[level]
    floor, ceiling = scenario.report  # the scenario caps the level's ask (0: may ask none)
    if long_job:  # a long job ends with several values to report
        low, high = max(low, 2), max(high, 2)
    high = min(high, ceiling)
    low = 0 if floor == 0 else min(low, high)
    # a short job may ask for one value
    choose_reports(walker, low if long_job else min(low, 1), high)
    walk.order = hr.solution_order(walk)
    return walker.picks


def draw_guidance(shares: tuple[tuple[str, float], ...], seed: int) -> str:
    """The guidance level of the task of ``seed``, drawn apart from the walk's own draws: the
    same seed gives the same job whatever the mix, told at the level drawn."""
    if len(shares) == 1:
        return shares[0][0]
    names, weights = zip(*shares)
    return random.Random(seed * 2_654_435_761 + 97).choices(names, weights)[0]


def job_task(composer: Any, seed: int, verify: bool, rng: random.Random, world: World,
             session: Session, simulator: Any) -> tuple[Task, Walk]:
    """The task of ``seed`` for ``composer`` (a Composer with scenarios): one scenario's job
    at a drawn difficulty level, verified unless ``verify`` is False (a regeneration)."""
    cfg = composer.config
    scenario = rng.choices(composer.scenarios, composer.weights)[0]
    names, shares = zip(*cfg.difficulty)
    level = rng.choices(names, shares)[0]
    walker = ScenarioWalker(composer.graph, session, rng, scenario,
                            misses=composer.misses if verify else None)
    walk = walker.walk
    walk_scenario(walker, level)
    if len(walk.steps) > cfg.max_calls:
        raise Rejected("too_many_hops", f"{len(walk.steps)} > {cfg.max_calls}")
    if len(walk.services) < min(3, len(scenario.services)):  # a job spans services
        raise Rejected("too_few_services", f"{walk.services} of {scenario.services}")
    services = walk.services + [s for s in dict.fromkeys(walk.guarded)
                                if s not in walk.services]
    answers = [answer_text(b.value) for b in walk.answers]
    owned = [d.criteria for d in walk.house]
    distractors = composer._distractors(services, rng)
    guidance = draw_guidance(cfg.guidance, seed)
    rubric = build_rubric(walk, session, answers, owned, distractors,
                          outcome=guidance != "steps")
    order = walk.order or list(range(len(walk.steps)))
    at = {step: i for i, step in enumerate(order)}
    rules = [HouseRule(id=f"r{i}", kind=d.kind, text=d.text if guidance == "steps" else plain(d.text), criteria=ids,
                       without=None if d.kind == "never" else RuleChange(
                           drop=sorted(at[a] for a in d.added),
                           replace=_replacements(walk, d.changes, at)))
             for i, (d, ids) in enumerate(zip(walk.house, rule_ids(rubric, owned)))]
    context = _context(with_employer(rng.choice(scenario.persona), world.user.employer),
                       scenario.goal, random.Random(f"goal:{seed}"))
    tags = capabilities(walk) + ["long-horizon"] * (len(walk.steps) >= 8) + [
        "decoy"] * any(d.kind == "never" for d in walk.house)
    if guidance == "steps":
        instruction = render_instruction(walk, context)
    else:
        instruction = render_goal(walk, context, hints=2 if guidance == "hints" else 0,
                                  rng=random.Random(f"say:{seed}"))
    task = Task(
        instruction=instruction, guidance=guidance,
        services=services, distractors=distractors,
        seed=world.seed, walk_seed=seed, date=world.today.isoformat(),
        solution=[Call(name=walk.steps[i].spec.qualified_name,
                       arguments=walk.steps[i].arguments) for i in order],
        answer=answers, rubric=rubric, capabilities=tags, domain=scenario.domain,
        hops=len(walk.steps), fingerprint=composer.registry.fingerprint(services),
        recorded=composer._recorded(simulator), scenario=scenario.name, rules=rules,
    )
    task = task.model_copy(update={"difficulty": estimate(task)})
    if verify:
        task = task.with_id()
        verify_walk(walk, task)
        verify_order(walk, task, composer.registry)
        verify_task(task, composer.registry)
        verify_alternative(walk, task, composer.registry)
    return task, walk


def _replacements(walk: Walk, changes: list[tuple[int, str, Any]],
                  at: dict[int, int]) -> list[Replace]:
    """The calls a rule changed, with the arguments they would have had without it."""
    out: dict[int, dict[str, Any]] = {}
    for index, param, value in changes:
        args = out.setdefault(index, dict(walk.steps[index].arguments))
        if value is None:
            args.pop(param, None)
        else:
            args[param] = value
    return [Replace(call=at[i], arguments=args) for i, args in sorted(out.items())]


def _context(persona: str, goals: list[str], rng: random.Random) -> str:
    """Who the user is and what they want, as people put it: one phrasing of the goal,
    before or after the persona line."""
    goal = rng.choice(goals)
    return f"{goal} {persona}" if rng.random() < 0.35 else f"{persona} {goal}"
