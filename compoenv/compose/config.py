"""The composer's controls (``ComposerConfig``) and the motif names, without the composer: an
env that plays given tasks checks its composing options without importing the composer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from compoenv.llm import EndpointConfig

__all__ = ["ComposerConfig", "MOTIFS", "GUIDANCE", "parse_guidance"]

GUIDANCE = ("goal", "hints", "steps")
MOTIFS = ("sequential-dependency", "aggregation", "fan-out", "cross-service-constraint",
          "house-rules")


def parse_guidance(text: str) -> tuple[tuple[str, float], ...]:
    """Guidance shares from ``goal``, ``hints``, ``steps`` or ``mix=goal=0.8,hints=0.1,
    steps=0.1`` (shares need not add up to 1).

    Raises:
        ValueError: an unknown level, a share that is no number or below 0, or all zero.
    """
    text = text.strip()
    if text in GUIDANCE:
        return ((text, 1.0),)
    if not text.startswith("mix="):
        raise ValueError(f"guidance must be one of {', '.join(GUIDANCE)} or mix=LEVEL=SHARE,...; "
                         f"got {text!r}")
    shares: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in text[4:].split(","))):
        name, _, value = part.partition("=")
        if name.strip() not in GUIDANCE:
            raise ValueError(f"unknown guidance level {name.strip()!r}; use {', '.join(GUIDANCE)}")
        try:
            shares[name.strip()] = float(value)
        except ValueError:
            raise ValueError(f"guidance share of {name.strip()!r} must be a number, got "
                             f"{value!r}") from None
    if not shares or any(v < 0 for v in shares.values()) or not any(shares.values()):
        raise ValueError(f"guidance shares must be >= 0 and not all 0, got {text!r}")
    return tuple((k, v) for k, v in shares.items() if v > 0)


@dataclass(frozen=True)
class ComposerConfig:
    """Controls of the random-walk composer.

    Attributes:
        min_hops: Fewest tool calls in the solution.
        max_hops: Most tool calls in the solution.
        min_services: Fewest distinct services the solution must touch.
        services: Restrict walks to these services (default: the whole registry).
        require: Services every task must touch: walks start in or next to them and head
            there; a walk that still misses one is rejected (``missing_required``). Scenario
            tasks are jobs of the scenarios that use every one of them.
        domains: Scenario tasks only: jobs of these domains (a scenario's ``domain``,
            case-insensitive; empty: every domain).
        cross_bias: Weight of a cross-service edge relative to a same-service one.
        check_regeneration: Re-compose each task from its seed and require an identical task.
        motifs: Motifs tasks may use (compoenv.compose.motifs.MOTIFS); a plain chain of
            dependent calls is always possible.
        distractors: Unrelated services mounted beside the task's (for gateway mode).
        scenarios: Scenarios (``compoenv.scenarios``) tasks are long jobs of: each seed draws
            one and runs its stages, house rules and report (empty: the free random walk).
        difficulty: Shares of easy, medium and hard jobs (scenario tasks): a seed draws its
            level, which sets how many stages, rules and values to report it gets.
        max_calls: Most tool calls in a scenario task's solution.
        guidance: Shares of guidance levels of scenario tasks (``goal``: what to achieve, the
            facts and house rules, no calls; ``hints``: and a lookup or two; ``steps``: every
            call in order, for curricula). Free walks are told as steps.
        derive: With scenarios, also compose jobs derived for the services no scenario acts on
            (a user's own service, an imported API: ``compoenv.compose.derive``). Jobs are
            drawn half uniformly and half spread over the services they act on
            (``derive.job_weights``), so a service only one job uses is not drowned.
        world_model: Who answers spec-only tools while composing: None or "offline" (the
            default), "endpoint", "transformers:<path>", or a WorldModel. Answers from models
            other than the offline one are recorded in the task (``recorded["answers"]``).
        rewrite: An OpenAI-compatible endpoint that rewrites instructions into natural
            requests (re-verified; the template is kept when a rewrite fails a check).
        worlds: Which Worlds tasks are set in. None (the default): each seed its own, the
            walk with seed ``s`` runs in ``World.dated(s)``, a population drawn from ``s`` on a
            day of ``TODAY_RANGE`` drawn from ``s``, so tasks differ in people, records and
            date (months, seasons, weekdays). An int ``n`` pools them: seed ``s`` runs in
            ``World.dated(s % n)``, ``n`` populations on ``n`` days (few worlds, each seeded
            once, for a set whose tasks share their people and records). Either way a task
            records its world's seed and date, and recent worlds and their seeded services are
            cached (a bounded LRU) and shared.
    """

    min_hops: int = 2
    max_hops: int = 4
    min_services: int = 2
    services: tuple[str, ...] | None = None
    require: tuple[str, ...] = ()
    domains: tuple[str, ...] = ()
    cross_bias: float = 3.0
    check_regeneration: bool = True
    worlds: int | None = None
    motifs: tuple[str, ...] = MOTIFS
    distractors: int = 0
    rewrite: EndpointConfig | None = None
    world_model: Any = None
    scenarios: tuple[str, ...] = ()
    difficulty: tuple[tuple[str, float], ...] = (("easy", 0.2), ("medium", 0.4), ("hard", 0.4))
    max_calls: int = 40
    guidance: tuple[tuple[str, float], ...] = (("goal", 1.0),)
    derive: bool = False

    def __post_init__(self) -> None:
        if not 1 <= self.min_hops <= self.max_hops:
            raise ValueError(f"need 1 <= min_hops <= max_hops, got {self.min_hops}, "
                             f"{self.max_hops}")
        unknown = set(self.motifs) - set(MOTIFS)
        if unknown:
            raise ValueError(f"unknown motifs {sorted(unknown)}; choose from {list(MOTIFS)}")
        if self.worlds is not None and (isinstance(self.worlds, bool)
                                        or not isinstance(self.worlds, int) or self.worlds < 1):
            raise ValueError(f"worlds must be None (a world per seed) or an int >= 1, got "
                             f"{self.worlds!r}")
        if self.min_services > self.max_hops:
            raise ValueError(f"min_services={self.min_services} cannot exceed "
                             f"max_hops={self.max_hops}: each service needs a call")
        jobs = bool(self.scenarios or self.derive)
        most, bound = (self.max_calls, "max_calls") if jobs else (self.max_hops, "max_hops")
        if len(self.require) > most:
            raise ValueError(f"require names {len(self.require)} services but {bound}={most}: "
                             f"each service needs a call")
        if self.domains and not jobs:
            raise ValueError("domains choose scenario jobs; free walks (no scenarios) have none")
        levels = {name for name, _ in self.difficulty}
        if not levels <= {"easy", "medium", "hard"} or not any(v > 0 for _, v in self.difficulty):
            raise ValueError(f"difficulty must give shares of easy, medium, hard; got "
                             f"{self.difficulty}")
        if not {name for name, _ in self.guidance} <= set(GUIDANCE) or not any(
                v > 0 for _, v in self.guidance) or any(v < 0 for _, v in self.guidance):
            raise ValueError(f"guidance must give shares of {', '.join(GUIDANCE)}; got "
                             f"{self.guidance}")
        if self.max_calls < 2:
            raise ValueError(f"max_calls must be >= 2, got {self.max_calls}")
        outside = set(self.require) - set(self.services or self.require)
        if outside:
            raise ValueError(f"required services {sorted(outside)} are not in services")
