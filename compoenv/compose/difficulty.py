"""How hard a task is, from the task alone, and sets ordered or mixed by it.

The estimate (0 to 1) weighs what makes a job hard for an agent: how many calls it takes, how
many services it spans, how many house rules and decoys it carries, how many values it must
report, how long the lists it works through are, and how much of the plan the request
leaves to the agent (``guidance``). Levels cut it at 0.25 and 0.5.
"""

from __future__ import annotations

from collections import Counter
from typing import Iterable

from compoenv.task import Task

__all__ = ["estimate", "level", "DifficultyMix", "curriculum", "LEVEL_CUTS"]

LEVEL_CUTS = (("easy", 0.25), ("medium", 0.5), ("hard", 1.01))
# what the guidance adds: planning the lookups (goal) is the hard part a recipe (steps) removes
GUIDANCE_WEIGHT = {"goal": 0.1, "hints": 0.05, "steps": 0.0}


def estimate(task: Task) -> float:
    """The task's difficulty: a weighted sum of capped, normalised features."""
    calls = len(task.solution)
    services = len(task.services)
    rules = len(task.rules) + (1 if "house-rules" in task.capabilities and not task.rules
                               else 0)
    decoys = sum(1 for r in task.rules if r.kind == "never")
    items = max(Counter(c.name for c in task.solution).values(), default=1)
    score = (0.40 * min(calls / 30, 1.0) + 0.15 * min((services - 1) / 6, 1.0)
             + 0.20 * min(rules / 4, 1.0) + 0.10 * min(decoys, 1)
             + 0.10 * min(len(task.answer) / 4, 1.0) + 0.05 * min((items - 1) / 7, 1.0))
    # a request that leaves the plan to the agent is harder than one that dictates it
    score += GUIDANCE_WEIGHT.get(task.guidance, 0.0)
    return round(max(0.0, min(1.0, score)), 3)


def level(difficulty: float) -> str:
    """``easy``, ``medium`` or ``hard``."""
    return next(name for name, cut in LEVEL_CUTS if difficulty < cut)


class DifficultyMix:
    """Shares of easy, medium and hard tasks a generated set should hold.

    Args:
        shares: Level -> share (normalised), e.g. ``{"easy": 0.2, "medium": 0.4, "hard": 0.4}``.
    """

    def __init__(self, shares: dict[str, float]) -> None:
        unknown = set(shares) - {name for name, _ in LEVEL_CUTS}
        if unknown:
            raise ValueError(f"unknown difficulty levels {sorted(unknown)}; use easy, medium, "
                             f"hard")
        if any(v < 0 for v in shares.values()) or sum(shares.values()) <= 0:
            raise ValueError(f"difficulty shares must be >= 0 and not all 0, got {shares}")
        total = sum(shares.values())
        self.shares = {k: v / total for k, v in shares.items() if v > 0}

    @classmethod
    def parse(cls, text: str) -> DifficultyMix:
        """``"easy=0.2,medium=0.4,hard=0.4"``."""
        shares = {}
        for part in filter(None, (p.strip() for p in text.split(","))):
            name, sep, value = part.partition("=")
            try:
                shares[name.strip()] = float(value) if sep else 1.0
            except ValueError:
                raise ValueError(f"bad difficulty share {part!r}; write level=share, e.g. "
                                 f"easy=0.2,medium=0.4,hard=0.4") from None
        return cls(shares)

    def quotas(self, n: int) -> dict[str, int]:
        """How many tasks of each level a set of ``n`` holds (largest remainders)."""
        raw = {k: v * n for k, v in self.shares.items()}
        out = {k: int(v) for k, v in raw.items()}
        for k in sorted(raw, key=lambda k: (out[k] - raw[k], k))[: n - sum(out.values())]:
            out[k] += 1
        return out

    def levels(self) -> tuple[tuple[str, float], ...]:
        return tuple(self.shares.items())


def curriculum(tasks: Iterable[Task]) -> list[Task]:
    """The tasks from easy to hard (ties keep their order)."""
    return sorted(tasks, key=lambda t: t.difficulty if t.difficulty is not None else estimate(t))
