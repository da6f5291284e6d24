"""Rollout groups met in one event loop: the episodes of a prompt wait for each other once ended
and share compoenv's completion-focused reward (used by the OpenRLHF and verl integrations).

Group detection: without a configured size, the episodes that join under one key in the same
event-loop tick form a group. A trainer that starts a prompt's n episodes with
``asyncio.gather`` or n ``create_task`` calls schedules every episode's first step before any
callback scheduled by the first one runs, so all n join before the ``call_soon`` callback that
closes the group (episodes must join before their first ``await``).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Hashable, Protocol

from compoenv.reward import completion_focused

__all__ = ["EpisodeOutcome", "Group", "GroupBoard", "GroupSettings", "GroupRewardSettings"]


@dataclass(frozen=True)
class EpisodeOutcome:
    """What an ended episode contributes to its group: per-criterion passes and its scores."""

    passes: tuple[bool, ...] = ()
    weights: tuple[float, ...] = ()
    required: tuple[bool, ...] = ()
    kinds: tuple[str, ...] = ()
    rubric_score: float = 0.0
    passed: bool = False  # every required criterion passed
    net_score: float = 0.0
    label_error: bool = False


class GroupSettings(Protocol):
    """The group reward's parameters (``completion_focused``'s alpha, eps and lam), the size
    of a group (None: detected) and how long an ended episode waits for the rest."""

    group_size: int | None
    group_timeout: float
    alpha: float
    eps: float
    lam: float


@dataclass(frozen=True)
class GroupRewardSettings:
    """GroupSettings as a record (defaults: those of ``compoenv.reward.completion_focused``)."""

    group_size: int | None = None
    group_timeout: float = 300.0
    alpha: float = 1.0
    eps: float = 0.05
    lam: float = 0.5

    def __post_init__(self) -> None:
        if self.group_size is not None and self.group_size < 1:
            raise ValueError(f"group size must be >= 1, got {self.group_size}")
        for name in ("group_timeout", "alpha", "eps", "lam"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")


@dataclass
class Group:
    """The episodes of one prompt; ``size`` is None until detection closes the group.

    Args:
        size: Episodes in the group, or None to detect it.
        settings: The reward's parameters and the time an ended episode waits.
        log: Where a group that never fills is reported.
        hint: What the report suggests checking (the settings of the trainer at hand).
    """

    size: int | None
    settings: GroupSettings = GroupRewardSettings()
    log: logging.Logger = logging.getLogger(__name__)
    hint: str = "is the group size right?"
    joined: int = 0
    outcomes: dict[int, EpisodeOutcome | None] = field(default_factory=dict)
    rewards: dict[int, float] | None = None
    broken: bool = False
    event: asyncio.Event = field(default_factory=asyncio.Event)

    def fail(self, slot: int | None = None) -> None:
        """The group can never complete (a failed episode, a timeout): nobody waits for it."""
        if slot is not None:
            self.outcomes[slot] = None
        self.broken = True
        self.event.set()

    def settle(self) -> None:
        """Assign the rewards once every episode has ended (label errors get 0)."""
        if self.broken or self.rewards is not None or len(self.outcomes) < (self.size or 1e9):
            return
        valid = {s: o for s, o in self.outcomes.items() if o is not None and not o.label_error}
        self.rewards = dict.fromkeys(self.outcomes, 0.0)
        if valid:
            first, settings = next(iter(valid.values())), self.settings
            self.rewards.update(zip(valid, completion_focused(
                [o.passes for o in valid.values()], first.weights, first.required,
                settings.alpha, settings.eps, settings.lam, kinds=first.kinds or None)))
        self.event.set()

    async def reward(self, slot: int, outcome: EpisodeOutcome) -> tuple[float, float]:
        """This episode's group reward and 0, or its own rubric score and 1 if the group fails
        (an episode failed, or the rest did not end within the settings' ``group_timeout``)."""
        self.outcomes[slot] = outcome
        self.settle()
        timeout = self.settings.group_timeout
        if self.rewards is None and not self.broken:
            try:
                await asyncio.wait_for(self.event.wait(), timeout)
            except asyncio.TimeoutError:  # not the builtin TimeoutError before Python 3.11
                if self.rewards is None:
                    self.log.warning("compoenv: %d of %s episodes of a group ended within %.0f s, "
                                     "so they get rubric scores; %s", len(self.outcomes),
                                     self.size, timeout, self.hint)
                    self.fail()
        if self.rewards is not None:
            return self.rewards[slot], 0.0
        return (0.0 if outcome.label_error else outcome.rubric_score), 1.0


class GroupBoard:
    """The open groups of one event loop, by key (e.g. the prompt, or a trainer's uid).

    Args:
        settings: The groups' size (None: detected, see the module docstring) and reward.
        log: Where groups that never fill are reported.
        hint: What that report suggests checking.
    """

    def __init__(self, settings: GroupSettings, log: logging.Logger | None = None,
                 hint: str = "is the group size right?") -> None:
        self.settings, self.hint = settings, hint
        self.log = log or logging.getLogger(__name__)
        self._open: dict[Hashable, Group] = {}

    def join(self, key: Hashable) -> tuple[Group, int]:
        """The group of ``key`` and this episode's slot in it; call before the first await."""
        group = self._open.get(key)
        if group is None:
            group = self._open[key] = Group(self.settings.group_size, self.settings, self.log,
                                            self.hint)
            if group.size is None:
                asyncio.get_running_loop().call_soon(self._close, key, group)
        group.joined += 1
        if group.joined == group.size:
            del self._open[key]
        return group, group.joined - 1

    def _close(self, key: Hashable, group: Group) -> None:
        if self._open.get(key) is group:
            del self._open[key]
        group.size = group.joined
        group.settle()
