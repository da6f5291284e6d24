"""Environment benchmark: step throughput, reset latency, memory per live env, step overhead.

Run ``python -m bench.env [--quick] [--out FILE]``: one JSON object on stdout, progress on
stderr. Every figure is single-threaded, timed with ``time.perf_counter``; seeds are fixed.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import multiprocessing as mp
import os
import platform
import resource
import statistics
import sys
import time
import tracemalloc
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from compoenv.actions import ToolCall, render_calls
from compoenv.compose import Composer, ComposerConfig, Rejected, derive_seed
from compoenv.env import CompoWorldEnv
from compoenv.registry import Registry
from compoenv.task import Call, Task
from compoenv.world import World

NEVER = 10**9  # max_steps: no episode truncates during a measurement
TARGETS: dict[str, tuple[str, float]] = {
    "env_steps_per_s": (">=", 20_000),
    "reset_ms_median": ("<=", 2),
    "memory_kb_per_live_env_distinct_tasks": ("<=", 200),
    "memory_kb_per_live_env_one_step": ("<=", 200),
    "step_over_bare_call_ratio": ("<=", 3),
}


@dataclass(frozen=True)
class Config:
    """Sizes of one run; ``quick()`` is the smoke-test variant."""

    seed: int = 0
    step_tasks: int = 20            # tasks whose read-only solution calls are stepped
    steps_per_reset: int = 50       # steps of one episode before the next (untimed) reset
    episodes_per_task: int = 5      # per repeat
    repeats: int = 5
    sample_episodes: int = 2        # per task, for per-step p50/p99
    reset_tasks: int = 5            # 3-service tasks for reset latency
    resets: int = 300
    compose_resets: int = 20        # resets that compose a fresh verified task
    envs: int = 10_000
    distinct_tasks: int = 1_250     # envs cycle over these (8 rollouts per task at full size)
    compose_budget_s: float = 120.0

    @classmethod
    def quick(cls) -> Config:
        return cls(step_tasks=5, steps_per_reset=20, episodes_per_task=2, repeats=3,
                   sample_episodes=1, reset_tasks=2, resets=40, compose_resets=2, envs=1_000,
                   distinct_tasks=40)


@dataclass(frozen=True)
class ReadCall:
    """A read-only solution call that succeeds on the task's fresh state, ready to step."""

    task: Task
    call: Call
    action: str


_T0 = time.perf_counter()


def log(message: str) -> None:
    print(f"[bench.env {time.perf_counter() - _T0:6.1f}s] {message}", file=sys.stderr, flush=True)


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def rss_kb() -> float:
    """Current resident set size (VmRSS); peak RSS where /proc is missing."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return float(line.split()[1])
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1024 if sys.platform == "darwin" else float(peak)


def action_for(call: Call) -> str:
    return render_calls([ToolCall(call.name, dict(call.arguments), "call_0")], "hermes")


def _compose_one(job: tuple[int, int]) -> Task | None:
    """The task of seed index ``job[1]`` from ``job[0]``, or None if rejected (worker side)."""
    global _COMPOSER
    if _COMPOSER is None:
        _COMPOSER = Composer()
    try:
        return _COMPOSER.compose(derive_seed(*job))
    except Rejected:
        return None


_COMPOSER: Composer | None = None


def compose_pool(cfg: Config) -> tuple[list[Task], float]:
    """What ``Composer().generate(cfg.distinct_tasks, cfg.seed)`` yields, on every core (fewer
    tasks if over the time budget)."""
    start = time.perf_counter()
    pool: list[Task] = []
    seen: set[str] = set()
    method = "fork" if "fork" in mp.get_all_start_methods() else "spawn"
    jobs = ((cfg.seed, i) for i in range(100 * (cfg.distinct_tasks + 10)))
    parallel = cfg.distinct_tasks >= 200 and (os.cpu_count() or 1) > 1  # else startup dominates
    with mp.get_context(method).Pool(os.cpu_count() if parallel else 1) as workers:
        results = workers.imap(_compose_one, jobs, 4) if parallel else map(_compose_one, jobs)
        for task in results:
            if task is None or task.id in seen:
                continue
            seen.add(task.id)
            pool.append(task)
            if len(pool) % 250 == 0:
                log(f"composed {len(pool)} tasks")
            if len(pool) == cfg.distinct_tasks:
                break
            if time.perf_counter() - start > cfg.compose_budget_s:
                log(f"compose budget of {cfg.compose_budget_s:.0f} s spent: {len(pool)} tasks")
                break
        workers.terminate()
    return pool, time.perf_counter() - start


def read_calls(pool: list[Task], n_tasks: int) -> list[ReadCall]:
    """Read-only solution calls that succeed at reset, from the first ``n_tasks`` tasks that
    have any (a read may depend on an earlier write of the solution: those are skipped)."""
    registry, env = Registry.default(), CompoWorldEnv(max_steps=NEVER)
    out: list[ReadCall] = []
    used = 0
    for task in pool:
        found = []
        for call in task.solution:
            if not registry.spec(call.name).read_only:
                continue
            env.reset(options={"task": task})
            action = action_for(call)
            env.step(action)
            if json.loads(env.messages[-1]["content"])["success"]:
                found.append(ReadCall(task, call, action))
        out += found
        used += bool(found)
        if used == n_tasks:
            break
    return out


def run_episodes(env: CompoWorldEnv, calls: list[ReadCall], cfg: Config, episodes: int,
                 per_step: list[float] | None = None) -> tuple[int, float]:
    """Step every task's read calls in episodes of ``steps_per_reset``; (steps, seconds)."""
    by_task: dict[str, list[str]] = {}
    for rc in calls:
        by_task.setdefault(rc.task.id, []).append(rc.action)
    tasks = {rc.task.id: rc.task for rc in calls}
    steps, total, clock, step = 0, 0.0, time.perf_counter, env.step
    for task_id, actions in by_task.items():
        sequence = [actions[i % len(actions)] for i in range(cfg.steps_per_reset)]
        for _ in range(episodes):
            env.reset(options={"task": tasks[task_id]})
            if per_step is None:
                t0 = clock()
                for action in sequence:
                    step(action)
                total += clock() - t0
            else:
                for action in sequence:
                    t0 = clock()
                    step(action)
                    per_step.append(clock() - t0)
            steps += len(sequence)
    return steps, total + sum(per_step or ())


def measure_steps(calls: list[ReadCall], cfg: Config) -> dict[str, float]:
    env = CompoWorldEnv(max_steps=NEVER)
    run_episodes(env, calls, cfg, 1)  # warm-up: worlds, seeded states, listings
    rates = []
    for _ in range(cfg.repeats):
        steps, seconds = run_episodes(env, calls, cfg, cfg.episodes_per_task)
        rates.append(steps / seconds)
    per_step: list[float] = []
    run_episodes(env, calls, cfg, cfg.sample_episodes, per_step)
    return {"env_steps_per_s": statistics.median(rates),
            "env_step_us_p50": statistics.median(per_step) * 1e6,
            "env_step_us_p99": quantile(per_step, 0.99) * 1e6,
            "env_step_samples": len(per_step)}


def measure_bare_ratio(calls: list[ReadCall], cfg: Config) -> dict[str, float]:
    """One env.step vs json.loads -> tool method -> json.dumps(spec.dump(...)), same calls."""
    registry, env = Registry.default(), CompoWorldEnv(max_steps=NEVER)
    bare: list[Callable[[], str]] = []
    for rc in calls:
        spec = registry.spec(rc.call.name)
        svc = registry.get(spec.service).create(World.get(rc.task.seed))
        method, args_json = getattr(svc, spec.method or spec.name), json.dumps(rc.call.arguments)
        bare.append(lambda m=method, a=args_json, d=spec.dump:
                    json.dumps(d(m(**json.loads(a)))))
    n, clock = cfg.steps_per_reset, time.perf_counter
    step_us, bare_us = [], []
    for _ in range(cfg.repeats):
        t_step = t_bare = 0.0
        for rc, fn in zip(calls, bare):
            env.reset(options={"task": rc.task})
            t0 = clock()
            for _ in range(n):
                env.step(rc.action)
            t1 = clock()
            for _ in range(n):
                fn()
            t_step, t_bare = t_step + t1 - t0, t_bare + clock() - t1
        step_us.append(t_step / (n * len(calls)) * 1e6)
        bare_us.append(t_bare / (n * len(calls)) * 1e6)
    step, bare_call = statistics.median(step_us), statistics.median(bare_us)
    return {"step_us": step, "bare_call_us": bare_call,
            "step_over_bare_call_ratio": step / bare_call}


def measure_reset(cfg: Config) -> dict[str, float]:
    composer = Composer(config=ComposerConfig(min_services=3))
    tasks: list[Task] = []
    for task in composer.generate(100 * cfg.reset_tasks, seed=cfg.seed):
        tasks += [task] if len(task.services) == 3 else []
        if len(tasks) == cfg.reset_tasks:
            break
    env = CompoWorldEnv(max_steps=NEVER)
    for task in tasks:
        env.reset(options={"task": task})  # warm-up: worlds and tool listings are cached
    times = []
    for i in range(cfg.resets):
        t0 = time.perf_counter()
        env.reset(options={"task": tasks[i % len(tasks)]})
        times.append(time.perf_counter() - t0)
    composing = CompoWorldEnv(max_steps=NEVER)
    composing.reset(seed=10**6)  # builds the env's Composer and tool graph once
    compose_times = []
    for i in range(cfg.compose_resets):
        t0 = time.perf_counter()
        composing.reset(seed=cfg.seed + i)
        compose_times.append(time.perf_counter() - t0)
    return {"reset_ms_median": statistics.median(times) * 1e3,
            "reset_ms_p90": quantile(times, 0.9) * 1e3,
            "reset_tasks_services": len(tasks[0].services),
            "reset_compose_ms_median": statistics.median(compose_times) * 1e3,
            "reset_compose_ms_p90": quantile(compose_times, 0.9) * 1e3}


def measure_memory(pool: list[Task], cfg: Config) -> dict[str, float]:
    """Memory per live env over ``cfg.envs`` envs cycling over ``pool`` (GRPO-style groups).

    One pass under tracemalloc (automatic gc paused while building, then a full collection
    before each reading). The RSS cross-check subtracts tracemalloc's own bookkeeping. The one
    step is the first call of each task's solution (the oracle's first move; a write makes the
    env copy that service's state)."""
    tasks = [pool[i % len(pool)] for i in range(cfg.envs)]
    first_calls = {t.id: action_for(t.solution[0]) for t in pool}
    registry = Registry.default()
    writes = sum(not registry.spec(t.solution[0].name).read_only for t in tasks) / len(tasks)
    gc.collect()
    tracemalloc.start()

    def probe() -> tuple[float, float]:
        gc.collect()
        traced = tracemalloc.get_traced_memory()[0] / 1024
        return traced, rss_kb() - tracemalloc.get_tracemalloc_memory() / 1024

    base = probe()
    envs = []
    gc.disable()
    try:
        for i, task in enumerate(tasks):
            env = CompoWorldEnv(max_steps=NEVER)
            env.reset(seed=i, options={"task": task})
            envs.append(env)
            if (i + 1) % 2500 == 0:
                log(f"memory: {i + 1} envs reset")
        after_reset = probe()
        for env, task in zip(envs, tasks):
            env.step(first_calls[task.id])
        after_step = probe()
    finally:
        gc.enable()
        tracemalloc.stop()
    n = len(envs)
    return {"memory_kb_per_live_env_distinct_tasks": (after_reset[0] - base[0]) / n,
            "memory_kb_per_live_env_one_step": (after_step[0] - base[0]) / n,
            "rss_kb_per_live_env_distinct_tasks": (after_reset[1] - base[1]) / n,
            "rss_kb_per_live_env_one_step": (after_step[1] - base[1]) / n,
            "memory_live_envs": n, "memory_distinct_tasks": len(pool),
            "memory_one_step_write_fraction": writes}


def meets(results: dict[str, Any]) -> dict[str, bool]:
    return {key: (results[key] >= bound if op == ">=" else results[key] <= bound)
            for key, (op, bound) in TARGETS.items()}


def run(cfg: Config) -> dict[str, Any]:
    started = time.perf_counter()
    log(f"composing {cfg.distinct_tasks} tasks (seed {cfg.seed})")
    pool, compose_s = compose_pool(cfg)
    calls = read_calls(pool, cfg.step_tasks)
    log(f"steps: {len(calls)} read calls over {len({c.task.id for c in calls})} tasks")
    results: dict[str, Any] = measure_steps(calls, cfg)
    log(f"env.step: {results['env_steps_per_s']:,.0f} steps/s; step vs bare call")
    results |= measure_bare_ratio(calls, cfg)
    log("reset")
    results |= measure_reset(cfg)
    results |= measure_memory(pool, cfg)
    results = {k: round(v, 3) if isinstance(v, float) else v for k, v in results.items()}
    results["targets"] = {k: f"{op} {bound:g}" for k, (op, bound) in TARGETS.items()}
    results["meets"] = meets(results)
    results["python"] = platform.python_version()
    results["platform"] = platform.platform()
    results["config"] = dataclasses.asdict(cfg) | {
        "quick": cfg == Config.quick(), "read_calls": len(calls),
        "step_tasks_used": len({c.task.id for c in calls}), "compose_pool_s": round(compose_s, 1),
        "one_step_action": "first call of each task's solution",
        "timing": "time.perf_counter; median over repeats; resets excluded from step timing"}
    results["wall_s"] = round(time.perf_counter() - started, 1)
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.env", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small counts, a smoke run")
    parser.add_argument("--out", type=Path, help="also write the JSON to this file")
    args = parser.parse_args(argv)
    results = run(Config.quick() if args.quick else Config())
    text = json.dumps(results, indent=2)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
