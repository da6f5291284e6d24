"""What a rollout run returns and keeps: records, stats, failure records, the JSONL stream."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Iterable

from compoenv.task import Task
from compoenv.trajectory import TrajectoryFileError

__all__ = ["RolloutError", "RolloutStats", "Rollouts", "RolloutStream", "failure_record",
           "WORKER_LOST"]

Key = tuple[str, int]  # (task id, rollout index): how a stream file names an episode

WORKER_LOST = "WorkerLost"  # error type of an episode whose worker died on every attempt


class RolloutError(RuntimeError):
    """A run that cannot go on: with ``strict=True``, an episode that raised (an agent or env
    bug, not a bad action) or whose worker kept dying, named with its task and carrying the
    worker's traceback as text; in any mode, workers that cannot build their env."""


@dataclass(frozen=True)
class RolloutStats:
    """How a run went.

    Attributes:
        episodes: Episodes asked for (``resumed + finished + failed``).
        resumed: Loaded back from the output file, not played again.
        finished: Played to the end in this run.
        failed: Ended as failed-episode records (see failure_record).
        retried: Times an episode was played again because its worker died playing it.
        workers_lost: Workers (processes or Ray actors) that died and were replaced.
    """

    episodes: int = 0
    resumed: int = 0
    finished: int = 0
    failed: int = 0
    retried: int = 0
    workers_lost: int = 0


class Rollouts(list[dict[str, Any]]):
    """The records of a run, one per episode in episode order, with the run's ``stats``: a
    list, so code written for the plain list run_rollouts used to return keeps working."""

    def __init__(self, records: Iterable[dict[str, Any]] = (),
                 stats: RolloutStats | None = None) -> None:
        super().__init__(records)
        self.stats = stats if stats is not None else RolloutStats(episodes=len(self))

    @property
    def failures(self) -> list[dict[str, Any]]:
        """The failed-episode records (those with an ``error``)."""
        return [r for r in self if "error" in r]

    @property
    def trajectories(self) -> list[dict[str, Any]]:
        """The records of episodes that were played to the end."""
        return [r for r in self if "error" not in r]


def failure_record(task: Task, rollout_idx: int, source: str, error_type: str, message: str,
                   attempts: int, traceback: str = "") -> dict[str, Any]:
    """The record of an episode that could not be played: no tools or messages, a zero score
    (so code that reads ``meta`` counts it as failing) and ``finish_reason: "error"``.

    Returns:
        ``{"tools": [], "messages": [], "meta": {task_id, rollout_idx, score 0, ...,
        finish_reason: "error"}, "source", "error": {"type", "message", "attempts",
        "traceback"}}``; ``error.type`` is the exception's type name, or ``"WorkerLost"`` when
        the episode's worker died on every attempt; ``traceback`` is the worker's traceback
        ("" for a lost worker). Not a valid Trajectory: it never reaches training data.
    """
    return {
        "tools": [],
        "messages": [],
        "meta": {
            "task_id": task.id, "rollout_idx": rollout_idx, "rubric_score": 0.0, "score": 0.0,
            "net_score": 0.0, "n_tool_calls": 0, "n_real_tool_calls": 0, "n_steps": 0,
            "services": list(task.services),
            "domain": task.domain, "capabilities": list(task.capabilities),
            "finish_reason": "error", "rubric": [],
        },
        "source": source,
        "error": {"type": error_type, "message": message, "attempts": attempts,
                  "traceback": traceback},
    }


class RolloutStream:
    """A JSONL file of trajectory records, one line each, appended to as episodes finish.

    ``load`` reads what an earlier run left, keyed by (task id, rollout index); a last line cut
    off by a crash is dropped from the file, so appends keep it valid JSONL.

    Args:
        path: The file (created on the first append when it does not exist).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._fh: IO[str] | None = None

    def load(self) -> dict[Key, dict[str, Any]]:
        """The records already in the file, the first one kept for a repeated key; failure
        records (with an ``error``) are skipped, so those episodes are played again.

        Raises:
            TrajectoryFileError: a complete line is not a JSON record with ``meta.task_id``
                and ``meta.rollout_idx`` (the file names and the line say which).
        """
        if not self.path.exists():
            return {}
        data = self.path.read_bytes()
        end = data.rfind(b"\n") + 1
        if end < len(data):
            try:  # the last line lacks its newline: whole (written by hand) or cut off
                json.loads(data[end:])
                data += b"\n"
                with open(self.path, "ab") as fh:
                    fh.write(b"\n")
            except ValueError:
                with open(self.path, "r+b") as fh:
                    fh.truncate(end)
                data = data[:end]
        records: dict[Key, dict[str, Any]] = {}
        for number, line in enumerate(data.decode("utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                key = (record["meta"]["task_id"], record["meta"]["rollout_idx"])
            except (ValueError, KeyError, TypeError) as exc:
                raise TrajectoryFileError(
                    f"{self.path} line {number}: not a trajectory record "
                    f"({type(exc).__name__}: {exc}); run_rollouts resumes from this file, so "
                    f"pass another output= or remove the line") from None
            if "error" not in record:
                records.setdefault(key, record)
        return records

    def append(self, record: dict[str, Any]) -> None:
        """Write one record as a line and flush it, so a crash after this keeps it."""
        if self._fh is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = open(self.path, "a", encoding="utf-8")
        self._fh.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._fh.flush()

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None
