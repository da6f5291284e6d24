"""Environment benchmark: step throughput, reset latency, memory per live env, step overhead.

Run ``python -m bench.env [--quick] [--out FILE]``: one JSON object on stdout, progress on
stderr. Timings are single-threaded (``time.perf_counter``, median over repeats); seeds fixed.
"""

from __future__ import annotations

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
from collections.abc import Callable
from dataclasses import asdict, dataclass
from itertools import islice
from pathlib import Path
from typing import Any

from bench._cli import run_main
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
    "step_over_bare_slow_tools_ratio_max": ("<=", 1.5),
    "task_file_rss_kb_per_env": ("<=", 1024),
}
SLOW_TOOL_US = 40  # a tool whose bare call takes at least this long does real work


@dataclass(frozen=True)
class Config:
    """Sizes of one run (the defaults are the full benchmark)."""

    seed: int = 0
    step_tasks: int = 20            # tasks whose read-only solution calls are stepped
    steps_per_reset: int = 50       # steps of one episode before the next (untimed) reset
    episodes_per_task: int = 5      # per repeat
    repeats: int = 5
    reset_tasks: int = 5            # 3-service tasks for reset latency
    resets: int = 300
    compose_resets: int = 20        # resets that compose a fresh verified task
    envs: int = 10_000
    distinct_tasks: int = 1_250     # the envs cycle over these: 8 rollouts per task, as in GRPO
    compose_budget_s: float = 120.0
    file_tasks: int = 500           # tasks in the file the task-file envs share
    file_envs: int = 64             # envs built on it (as a vector env of 64 would)


QUICK = Config(step_tasks=5, steps_per_reset=20, episodes_per_task=2, repeats=3, reset_tasks=2,
               resets=40, compose_resets=2, envs=1_000, distinct_tasks=40, file_envs=16)  # a smoke run


Work = list[tuple[Task, Call, str]]  # (task, read-only solution call, its hermes action)
_T0 = time.perf_counter()
_COMPOSER: Composer | None = None
_MP = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")


def log(message: str) -> None:
    print(f"[bench.env {time.perf_counter() - _T0:6.1f}s] {message}", file=sys.stderr,
          flush=True)


def rss_kb() -> float:
    """Current resident set size (VmRSS); peak RSS (ru_maxrss) where /proc is missing."""
    status = Path("/proc/self/status")
    if status.exists():
        return next(float(line.split()[1]) for line in status.read_text().splitlines()
                    if line.startswith("VmRSS:"))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1024 if sys.platform == "darwin" else float(peak)


def action_for(call: Call) -> str:
    return render_calls([ToolCall(call.name, dict(call.arguments), "call_0")], "hermes")


def _compose_one(job: tuple[int, int]) -> Task | None:
    global _COMPOSER
    _COMPOSER = _COMPOSER or Composer()
    try:
        return _COMPOSER.compose(derive_seed(*job))
    except Rejected:
        return None


def compose_pool(cfg: Config) -> tuple[list[Task], float]:
    """What ``Composer().generate(cfg.distinct_tasks, cfg.seed)`` yields, composed on every
    core (fewer tasks if over the time budget)."""
    start, pool, seen = time.perf_counter(), [], set()
    deadline = start + cfg.compose_budget_s
    jobs = ((cfg.seed, i) for i in range(100 * (cfg.distinct_tasks + 10)))
    global _COMPOSER
    _COMPOSER = Composer()  # built once here: forked workers inherit it
    with _MP.Pool(os.cpu_count()) as workers:
        for task in workers.imap(_compose_one, jobs, chunksize=4):
            if task is not None and task.id not in seen:
                seen.add(task.id)
                pool.append(task)
                if len(pool) % 250 == 0:
                    log(f"composed {len(pool)} tasks")
            if len(pool) == cfg.distinct_tasks or time.perf_counter() > deadline:
                break
        workers.terminate()
    if len(pool) < cfg.distinct_tasks:
        log(f"compose budget of {cfg.compose_budget_s:.0f} s spent: only {len(pool)} tasks")
    return pool, time.perf_counter() - start


def read_calls(pool: list[Task], n_tasks: int) -> Work:
    """Read-only solution calls of implemented tools (not world-model ones) that succeed on the
    fresh state (a read of something an earlier write creates fails there: skipped), from the
    first ``n_tasks`` tasks that have one."""
    registry, env, work = Registry.default(), CompoWorldEnv(max_steps=NEVER), []
    for task in pool:
        for call in task.solution:
            spec = registry.spec(call.name)
            if spec.read_only and not spec.simulated:
                env.reset(options={"task": task})
                env.step(action_for(call))
                if json.loads(env.messages[-1]["content"])["success"]:
                    work.append((task, call, action_for(call)))
        if len({t.id for t, _, _ in work}) == n_tasks:
            break
    return work


def run_episodes(env: CompoWorldEnv, work: Work, cfg: Config) -> list[float]:
    """Seconds of each step: ``episodes_per_task`` episodes per task of ``steps_per_reset``
    steps cycling over its read calls (resets untimed)."""
    by_task: dict[str, tuple[Task, list[str]]] = {}
    for task, _, action in work:
        by_task.setdefault(task.id, (task, []))[1].append(action)
    times: list[float] = []
    clock, step, append = time.perf_counter, env.step, times.append
    for task, actions in by_task.values():
        sequence = [actions[i % len(actions)] for i in range(cfg.steps_per_reset)]
        for _ in range(cfg.episodes_per_task):
            env.reset(options={"task": task})
            for action in sequence:
                t0 = clock()
                step(action)
                append(clock() - t0)
    return times


def measure_steps(work: Work, cfg: Config) -> dict[str, float]:
    env = CompoWorldEnv(max_steps=NEVER)
    run_episodes(env, work, cfg)  # warm-up: worlds, seeded states, tool listings
    repeats = [run_episodes(env, work, cfg) for _ in range(cfg.repeats)]
    every = [t for times in repeats for t in times]
    return {"env_steps_per_s": statistics.median(len(times) / sum(times) for times in repeats),
            "env_step_us_p50": statistics.median(every) * 1e6,
            "env_step_us_p99": statistics.quantiles(every, n=100)[98] * 1e6,
            "env_step_samples": len(every)}


def measure_bare_ratio(work: Work, cfg: Config) -> dict[str, float]:
    """env.step vs ``json.dumps(spec.dump(method(**json.loads(args))))``, same calls and clock;
    also per call, split at a bare cost of ``SLOW_TOOL_US``: the overhead is a fixed cost, so
    it is a ratio near 1 for tools that do real work and a larger one for the cheapest."""
    registry, env = Registry.default(), CompoWorldEnv(max_steps=NEVER)
    clock, n, step_us, bare_us = time.perf_counter, cfg.steps_per_reset, [], []
    per_call: list[list[tuple[float, float]]] = [[] for _ in work]
    for _ in range(cfg.repeats):
        t_step = t_bare = 0.0
        for i, (task, call, action) in enumerate(work):
            spec = registry.spec(call.name)
            service = registry.get(spec.service).create(World.get(task.seed, task.today()))
            method = getattr(service, spec.method or spec.name)
            dump, args_json = spec.dump, json.dumps(call.arguments)
            env.reset(options={"task": task})
            t0 = clock()
            for _ in range(n):
                env.step(action)
            t1 = clock()
            for _ in range(n):
                json.dumps(dump(method(**json.loads(args_json))))
            t2 = clock()
            t_step, t_bare = t_step + t1 - t0, t_bare + t2 - t1
            per_call[i].append(((t1 - t0) / n * 1e6, (t2 - t1) / n * 1e6))
        step_us.append(t_step / (n * len(work)) * 1e6)
        bare_us.append(t_bare / (n * len(work)) * 1e6)
    step, bare = statistics.median(step_us), statistics.median(bare_us)
    calls = [(statistics.median(s for s, _ in runs), statistics.median(b for _, b in runs))
             for runs in per_call]
    slow = [s / b for s, b in calls if b >= SLOW_TOOL_US]
    fast = [s / b for s, b in calls if b < SLOW_TOOL_US]
    out = {"step_us": step, "bare_call_us": bare, "step_over_bare_call_ratio": step / bare,
           "step_overhead_us_median": statistics.median(s - b for s, b in calls),
           "slow_tool_calls": len(slow), "fast_tool_calls": len(fast)}
    if slow:  # (a quick run's few calls may have none)
        out |= {"step_over_bare_slow_tools_ratio_max": max(slow),
                "step_over_bare_slow_tools_ratio_median": statistics.median(slow)}
    if fast:
        out["step_over_bare_fast_tools_ratio_median"] = statistics.median(fast)
    return out


def reset_times(env: CompoWorldEnv, resets: list[dict[str, Any]]) -> list[float]:
    times = []
    for kwargs in resets:
        t0 = time.perf_counter()
        env.reset(**kwargs)
        times.append(time.perf_counter() - t0)
    return times


def measure_reset(cfg: Config) -> dict[str, float]:
    composer = Composer(config=ComposerConfig(min_services=3))
    three = (t for t in composer.generate(100, seed=cfg.seed) if len(t.services) == 3)
    tasks = list(islice(three, cfg.reset_tasks))
    given = [{"options": {"task": tasks[i % len(tasks)]}} for i in range(cfg.resets)]
    times = reset_times(CompoWorldEnv(max_steps=NEVER), given[:len(tasks)] + given)
    times = times[len(tasks):]  # the first round warmed the worlds and tool listings
    seeds = [10**6, *range(cfg.seed, cfg.seed + cfg.compose_resets)]
    # the env's default composes scenario jobs (as the CLI does); free walks beside them
    composed = reset_times(CompoWorldEnv(max_steps=NEVER), [{"seed": s} for s in seeds])
    composed = composed[1:]  # the first one built the env's Composer and tool graph
    walks = reset_times(CompoWorldEnv(max_steps=NEVER, scenarios="none"),
                        [{"seed": s} for s in seeds])[1:]
    return {"reset_ms_median": statistics.median(times) * 1e3,
            "reset_ms_p90": statistics.quantiles(times, n=10)[8] * 1e3, "reset_task_services": 3,
            "reset_compose_ms_median": statistics.median(composed) * 1e3,
            "reset_compose_ms_p90": statistics.quantiles(composed, n=10)[8] * 1e3,
            "reset_compose_walk_ms_median": statistics.median(walks) * 1e3,
            "reset_compose_walk_ms_p90": statistics.quantiles(walks, n=10)[8] * 1e3}


def live_envs(pool: list[Task], n: int, probe: Callable[[], float]) -> tuple[float, float]:
    """KB per env that ``probe`` grows by with ``n`` live envs cycling over ``pool``: after a
    reset each, then after one step each: the first call of the task's solution (the oracle's
    first move; a write makes the env copy that service's state). Automatic gc is paused while
    building; each reading follows a full collection."""
    first_calls = [action_for(task.solution[0]) for task in pool]
    gc.collect()
    base, envs = probe(), []
    gc.disable()
    try:
        for i in range(n):
            env = CompoWorldEnv(max_steps=NEVER)
            env.reset(seed=i, options={"task": pool[i % len(pool)]})
            envs.append(env)
        gc.collect()
        after_reset = probe()
        for i, env in enumerate(envs):
            env.step(first_calls[i % len(pool)])
        gc.collect()
        after_step = probe()
    finally:
        gc.enable()
    return (after_reset - base) / n, (after_step - base) / n


def measure_memory(pool: list[Task], cfg: Config) -> dict[str, float]:
    """tracemalloc figures here; meanwhile the RSS cross-check runs without tracemalloc (whose
    own bookkeeping would inflate RSS) in a child process, on another core."""
    writes = sum(not Registry.default().spec(t.solution[0].name).read_only for t in pool)
    with _MP.Pool(1) as child:
        rss = child.apply_async(live_envs, (pool, cfg.envs, rss_kb))
        tracemalloc.start()
        traced = live_envs(pool, cfg.envs, lambda: tracemalloc.get_traced_memory()[0] / 1024)
        tracemalloc.stop()
        log("memory: tracemalloc pass done")
        rss_reset, rss_step = rss.get()
    return {"memory_kb_per_live_env_distinct_tasks": traced[0],
            "memory_kb_per_live_env_one_step": traced[1],
            "rss_kb_per_live_env_distinct_tasks": rss_reset,
            "rss_kb_per_live_env_one_step": rss_step,
            "memory_live_envs": cfg.envs, "memory_distinct_tasks": len(pool),
            "memory_one_step_write_fraction": writes / len(pool)}


def file_envs(path: str, n: int) -> tuple[float, float]:
    """KB of RSS per env of ``n`` envs built and reset on the task file ``path`` (after a first
    one: the file's shared tasks are not any env's), and seconds to build one after the first."""
    first = CompoWorldEnv(path, max_steps=NEVER)
    first.reset(seed=0)
    gc.collect()
    base, envs = rss_kb(), []
    start = time.perf_counter()
    for i in range(n):
        env = CompoWorldEnv(path, max_steps=NEVER)
        env.reset(seed=i)
        envs.append(env)
    build_s = (time.perf_counter() - start) / n
    gc.collect()
    return (rss_kb() - base) / n, build_s


def measure_task_file(pool: list[Task], cfg: Config) -> dict[str, float]:
    """RSS per env of ``file_envs`` envs on one file of ``file_tasks`` tasks (the pool's,
    repeated as needed), in a fresh child process."""
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "tasks.jsonl"
        with path.open("w", encoding="utf-8") as fh:
            for i in range(cfg.file_tasks):
                fh.write(pool[i % len(pool)].to_json() + "\n")
        with _MP.Pool(1) as child:
            per_env, build_s = child.apply(file_envs, (str(path), cfg.file_envs))
        size_mb = path.stat().st_size / 2**20
    return {"task_file_rss_kb_per_env": per_env, "task_file_env_build_ms": build_s * 1e3,
            "task_file_mb": size_mb, "task_file_tasks": cfg.file_tasks,
            "task_file_envs": cfg.file_envs}


def run(cfg: Config) -> dict[str, Any]:
    log(f"composing {cfg.distinct_tasks} tasks (seed {cfg.seed})")
    pool, compose_s = compose_pool(cfg)
    work = read_calls(pool, cfg.step_tasks)
    n_tasks = len({task.id for task, _, _ in work})
    log(f"env.step: {len(work)} read calls of {n_tasks} tasks")
    results: dict[str, Any] = measure_steps(work, cfg)
    log(f"env.step: {results['env_steps_per_s']:,.0f} steps/s; now step vs bare call, reset")
    results |= measure_bare_ratio(work, cfg) | measure_reset(cfg)
    log(f"memory: {cfg.envs} live envs over {len(pool)} tasks")
    results |= measure_memory(pool, cfg)
    log(f"task file: {cfg.file_envs} envs on a {cfg.file_tasks}-task file")
    results |= measure_task_file(pool, cfg)
    results = {k: round(v, 3) if isinstance(v, float) else v for k, v in results.items()}
    measured = {key: target for key, target in TARGETS.items() if key in results}
    results["targets"] = {key: f"{op} {bound:g}" for key, (op, bound) in measured.items()}
    results["meets"] = {key: results[key] >= bound if op == ">=" else results[key] <= bound
                        for key, (op, bound) in measured.items()}
    results |= {"python": platform.python_version(), "platform": platform.platform()}
    results["config"] = asdict(cfg) | {
        "quick": cfg == QUICK, "read_calls": len(work), "step_tasks_used": n_tasks,
        "compose_pool_s": round(compose_s, 1), "cpus": os.cpu_count(),
        "step_action": "hermes call of a read-only solution call that succeeds at reset",
        "one_step_action": "first call of each task's solution (some are writes)",
        "memory": "tracemalloc current after gc minus baseline, per env; RSS in a child process"}
    results["wall_s"] = round(time.perf_counter() - _T0, 1)
    return results


def main(argv: list[str] | None = None) -> None:
    run_main("python -m bench.env", __doc__, run, QUICK, Config, argv)


if __name__ == "__main__":
    main()
