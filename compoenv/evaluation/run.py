"""One evaluation run: every task played k times by an async agent, each episode streamed to
``trajectories.jsonl`` as it ends, then ``results.json``; a run on a folder that already
holds episodes resumes (those are kept, not played again)."""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from pathlib import Path
from typing import Any, Iterator, Sequence

from compoenv.evaluation.metrics import summarize
from compoenv.evaluation.workers import choose_workers, play_in_workers
from compoenv.registry import Registry
from compoenv.rollout import AsyncAgent, play_concurrently
from compoenv.rollout_results import RolloutStream
from compoenv.task import Task
from compoenv.task_check import load_checked

__all__ = ["evaluate", "TRAJECTORIES", "ERRORS", "RESULTS"]

TRAJECTORIES, ERRORS, RESULTS = "trajectories.jsonl", "errors.jsonl", "results.json"
_SOURCE = "compoenv-eval"  # the trajectories' source


def evaluate(tasks: str | Path | Sequence[Task | dict[str, Any]], agent: AsyncAgent,
             out: str | Path, *, k: int = 1, concurrency: int = 32, mode: str = "gateway",
             max_steps: int | None = None, world_model: Any = None, progress: bool = False,
             registry: Registry | None = None, limit: int | None = None,
             system_prompt: str | None = None, workers: int | None = None) -> dict[str, Any]:
    """Play every task ``k`` times and write the run to the folder ``out``.

    ``out/trajectories.jsonl`` gets each finished episode (the trajectory format) as soon as
    it ends; episodes the endpoint could not serve go to ``out/errors.jsonl`` and are played
    again by the next run on ``out``; ``out/results.json`` holds ``metrics.summarize`` of
    every episode (those of earlier runs on ``out`` included) and the run's settings.

    ``max_steps`` bounds the model's turns in every episode; None (the default) gives each
    task the env's own limit: its solution's calls (in gateway mode with the discovery
    before them: list_services, list_tools, describe_tool) plus a few, and at least 20
    (``env.steps_for``), so no task is cut off before a plan as long as the oracle's ends.
    ``limit`` plays only the first ``limit`` tasks. ``system_prompt`` replaces the env's
    system prompt in what the agent is sent and in the recorded episodes; ``{env_prompt}``
    in it stands for the env's own prompt.

    ``workers`` is how many processes play: 0 or 1 this one (one asyncio loop); N forked
    worker processes, each with its own loop and a share of ``concurrency`` (the agent must
    be ``forkable``, as ``EndpointAgent`` is); None (the default) forks up to
    ``workers.AUTO_WORKERS`` of them (no more than the cores) when there are at least
    ``workers.AUTO_EPISODES`` episodes to play and the agent is forkable, else plays here.
    Either way the files and results are the same: the parent writes every record.

    Returns:
        The results (what ``results.json`` holds).

    Raises:
        TaskFileError: a task line is broken or cannot be played on this library.
        ValueError: bad counts, tasks with repeated ids, or workers for an agent that
            cannot be forked.
        RolloutError: worker processes kept dying, or an episode raised in one.
    """
    if k < 1 or concurrency < 1 or (max_steps is not None and max_steps < 1) or (
            limit is not None and limit < 1):
        raise ValueError(f"need k, concurrency, max_steps and limit >= 1, got k={k}, "
                         f"concurrency={concurrency}, max_steps={max_steps}, limit={limit}")
    registry = registry or Registry.default()
    loaded = load_checked(tasks, registry)[:limit]
    if system_prompt is not None:
        agent = _Prompted(agent, system_prompt)
    by_id = {t.id: t for t in loaded}
    if len(by_id) != len(loaded):
        raise ValueError("tasks need distinct ids (a run resumes by task id and repeat)")
    folder = Path(out)
    stream = RolloutStream(folder / TRAJECTORIES)
    saved = set(stream.load())  # the records themselves are read again, one at a time, at the end
    todo = [(t, r) for t in loaded for r in range(k) if (t.id, r) not in saved]
    processes = choose_workers(workers, agent, len(todo), concurrency)
    failures: list[dict[str, Any]] = []
    bar = _Progress(len(loaded) * k, len(saved), enabled=progress)
    start = time.perf_counter()

    def done(record: dict[str, Any]) -> None:
        if system_prompt is not None and "messages" in record:
            record["messages"] = _Prompted.shown(record.get("messages") or [], system_prompt)
        if "error" in record:
            failures.append(record)
        else:
            stream.append(record)
        bar.advance(record)

    env_kwargs = {"mode": mode, "max_steps": max_steps, "world_model": world_model,
                  "registry": registry}
    try:
        with bar:
            if processes > 1:
                play_in_workers(agent, todo, concurrency, processes, env_kwargs, _SOURCE, done)
            else:
                asyncio.run(_play(agent, todo, concurrency, env_kwargs, done))
    finally:
        stream.close()
    seconds = time.perf_counter() - start
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ERRORS, "w", encoding="utf-8") as fh:  # this run's failures only
        for record in failures:
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
    wanted = {(t.id, r) for t in loaded for r in range(k)}
    played = (record for record in _records(folder / TRAJECTORIES)
              if (record["meta"]["task_id"], record["meta"]["rollout_idx"]) in wanted)
    results = summarize(itertools.chain(played, failures),
                        {tid: t.model_dump(mode="json") for tid, t in by_id.items()}, k)
    results["run"] = {"model": getattr(agent, "name", type(agent).__name__), "mode": mode,
                      "max_steps": max_steps, "k": k, "concurrency": concurrency,
                      "workers": processes, "resumed_episodes": len(saved),
                      "played_episodes": len(todo),
                      "seconds": round(seconds, 2),
                      "episodes_per_s": round(len(todo) / seconds, 2) if seconds else 0.0}
    (folder / RESULTS).write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return results


def _records(path: Path) -> Iterator[dict[str, Any]]:
    """The trajectory records of a run file, one at a time (the first of a repeated key)."""
    if not path.exists():
        return
    seen: set[tuple[str, int]] = set()
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                record = json.loads(line)
                key = (record["meta"]["task_id"], record["meta"]["rollout_idx"])
                if key not in seen:
                    seen.add(key)
                    yield record


class _Prompted:
    """An agent sent ``prompt`` as the system prompt instead of the env's (``{env_prompt}``
    in it: the env's own)."""

    def __init__(self, agent: AsyncAgent, prompt: str) -> None:
        self.agent, self.prompt, self.name = agent, prompt, agent.name
        self.forkable = bool(getattr(agent, "forkable", False))

    @staticmethod
    def shown(messages: Sequence[dict[str, Any]], prompt: str) -> list[dict[str, Any]]:
        return [{**m, "content": prompt.replace("{env_prompt}", str(m.get("content") or ""))}
                if m.get("role") == "system" else m for m in messages]

    async def respond(self, messages: Sequence[dict[str, Any]],
                      tools: Sequence[dict[str, Any]]) -> Any:
        return await self.agent.respond(self.shown(messages, self.prompt), tools)

    async def aclose(self) -> None:
        close = getattr(self.agent, "aclose", None)
        if close is not None:
            await close()


async def _play(agent: AsyncAgent, todo: list[tuple[Task, int]], concurrency: int,
                env_kwargs: dict[str, Any], done: Any) -> None:
    try:
        await play_concurrently(agent, todo, concurrency=concurrency, env_kwargs=env_kwargs,
                                source=_SOURCE, on_record=done, keep=False)
    finally:
        close = getattr(agent, "aclose", None)
        if close is not None:
            await close()


class _Progress:
    """A progress bar on stderr: episodes done, running pass rate and score, episodes/s."""

    def __init__(self, total: int, resumed: int, enabled: bool) -> None:
        self.total, self.done, self.passed, self.score = total, resumed, 0, 0.0
        self.played, self.enabled, self._bar, self._task = 0, enabled, None, None

    def __enter__(self) -> _Progress:
        if self.enabled:
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                                       TimeElapsedColumn)

            self._bar = Progress(TextColumn("eval"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("{task.fields[status]}"), TimeElapsedColumn(),
                                 transient=False)
            self._bar.start()
            self._task = self._bar.add_task("eval", total=self.total, completed=self.done,
                                            status="")
        self._start = time.perf_counter()
        return self

    def advance(self, record: dict[str, Any]) -> None:
        self.done, self.played = self.done + 1, self.played + 1
        self.passed += int(record["meta"]["score"])
        self.score += record["meta"]["rubric_score"]
        if self._bar is not None:
            rate = self.played / max(time.perf_counter() - self._start, 1e-9)
            status = (f"pass {self.passed / self.played:.1%}  score "
                      f"{self.score / self.played:.3f}  {rate:.1f} ep/s")
            self._bar.update(self._task, completed=self.done, status=status)

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()
