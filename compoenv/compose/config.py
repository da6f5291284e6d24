"""The composer's controls (``ComposerConfig``) and the motif names, without the composer: an
env that plays given tasks checks its composing options without importing the composer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from compoenv.llm import EndpointConfig

__all__ = ["ComposerConfig", "MOTIFS"]

MOTIFS = ("sequential-dependency", "aggregation", "fan-out", "cross-service-constraint",
          "house-rules")


@dataclass(frozen=True)
class ComposerConfig:
    """Controls of the random-walk composer.

    Attributes:
        min_hops: Fewest tool calls in the solution.
        max_hops: Most tool calls in the solution.
        min_services: Fewest distinct services the solution must touch.
        services: Restrict walks to these services (default: the whole registry).
        require: Services every task must touch: walks start in or next to them and head
            there; a walk that still misses one is rejected (``missing_required``).
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
        world_model: Who answers spec-only tools while composing: None or "offline" (the
            default), "endpoint", "transformers:<path>", or a WorldModel. Answers from models
            other than the offline one are recorded in the task (``recorded["answers"]``).
        rewrite: An OpenAI-compatible endpoint that rewrites instructions into natural
            requests (re-verified; the template is kept when a rewrite fails a check).
        worlds: How many distinct Worlds tasks are set in: the walk with seed ``s`` runs in
            ``World(s % worlds)``. Worlds (and their seeded services) are built once and shared.
    """

    min_hops: int = 2
    max_hops: int = 4
    min_services: int = 2
    services: tuple[str, ...] | None = None
    require: tuple[str, ...] = ()
    cross_bias: float = 3.0
    check_regeneration: bool = True
    worlds: int = 32
    motifs: tuple[str, ...] = MOTIFS
    distractors: int = 0
    rewrite: EndpointConfig | None = None
    world_model: Any = None
    scenarios: tuple[str, ...] = ()
    difficulty: tuple[tuple[str, float], ...] = (("easy", 0.2), ("medium", 0.4), ("hard", 0.4))
    max_calls: int = 40

    def __post_init__(self) -> None:
        if not 1 <= self.min_hops <= self.max_hops:
            raise ValueError(f"need 1 <= min_hops <= max_hops, got {self.min_hops}, "
                             f"{self.max_hops}")
        unknown = set(self.motifs) - set(MOTIFS)
        if unknown:
            raise ValueError(f"unknown motifs {sorted(unknown)}; choose from {list(MOTIFS)}")
        if self.worlds < 1:
            raise ValueError(f"worlds must be >= 1, got {self.worlds}")
        if self.min_services > self.max_hops:
            raise ValueError(f"min_services={self.min_services} cannot exceed "
                             f"max_hops={self.max_hops}: each service needs a call")
        if len(self.require) > self.max_hops:
            raise ValueError(f"require names {len(self.require)} services but max_hops="
                             f"{self.max_hops}: each service needs a call")
        levels = {name for name, _ in self.difficulty}
        if not levels <= {"easy", "medium", "hard"} or not any(v > 0 for _, v in self.difficulty):
            raise ValueError(f"difficulty must give shares of easy, medium, hard; got "
                             f"{self.difficulty}")
        if self.max_calls < 2:
            raise ValueError(f"max_calls must be >= 2, got {self.max_calls}")
        outside = set(self.require) - set(self.services or self.require)
        if outside:
            raise ValueError(f"required services {sorted(outside)} are not in services")
