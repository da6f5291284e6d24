"""Hostile-input benchmark: step time and memory under actions built to stall or bloat the env.

Run ``python -m bench.hostile [--quick] [--out FILE]``: one JSON object on stdout, progress on
stderr. It measures how the cost of an action of 52 large writes changes over an episode, the
slowest step of each hostile case (large and emoji writes, megabyte arguments, deep JSON,
thousands of tiny calls, huge numbers, unknown tools, Python objects that are not JSON,
repeated long actions in gateway mode), RSS after episodes of megabyte arguments, and an RSS
curve over a soak of random and hostile agents. Timings are ``time.perf_counter``; seeds fixed.

Step times are the env's own work: the cyclic garbage collector is paused while a step is
timed and runs between episodes, as a full collection pauses whichever step it lands in for
as long as the whole process heap takes (``gc_full_collection_ms``), whatever the action.
"""

from __future__ import annotations

import gc
import json
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from typing import Any

from bench.env import rss_kb
from bench._cli import run_main
from compoenv.actions import MAX_ARGUMENT_CHARS, MAX_CALLS_PER_ACTION, ToolCall, render_calls
from compoenv.agents import RandomAgent
from compoenv.compose import Composer
from compoenv.env import CompoWorldEnv
from compoenv.spaces import MAX_OBSERVATION_CHARS
from compoenv.task import Task
from compoenv.worldmodel import simulator

TARGETS: dict[str, tuple[str, float]] = {
    "large_writes_step19_over_step0": ("<=", 2.0),
    "max_step_ms": ("<=", 100.0),
    "rss_mb_after_1mb_episodes": ("<=", 20.0),
    "soak_rss_growth_mb": ("<=", 150.0),
}
_T0 = time.perf_counter()
Action = Any  # text, or a Python object for the not-JSON cases


@dataclass(frozen=True)
class Config:
    """Sizes of one run (the defaults are the full benchmark)."""

    seed: int = 0
    growth_steps: int = 20       # steps of the 52-large-writes episode
    growth_repeats: int = 5      # episodes; the per-step median is compared
    case_steps: int = 20         # steps of each hostile case
    mb_episodes: int = 1_000     # episodes of 1 MB-argument calls
    soak_episodes: int = 30_000  # random and hostile agents
    soak_points: int = 30        # RSS readings over the soak
    soak_tasks: int = 60         # the soak's pool of composed tasks


QUICK = Config(growth_repeats=3, case_steps=10, mb_episodes=200, soak_episodes=2_000,
               soak_points=10, soak_tasks=20)


def log(message: str) -> None:
    print(f"[bench.hostile {time.perf_counter() - _T0:6.1f}s] {message}", file=sys.stderr,
          flush=True)


def task_with(service: str, seed: int = 0) -> Task:
    """The first composed task (from ``seed`` on) that mounts ``service``."""
    composer = Composer()
    for offset in range(5_000):
        task = composer.sample(seed + offset)
        if service in task.services:
            return task
    raise LookupError(f"no composed task mounts {service!r}")


def hermes(name: str, arguments: dict[str, Any], count: int = 1) -> str:
    return render_calls([ToolCall(name, arguments, f"call_{i}") for i in range(count)])


def large_writes(char: str = "x") -> str:
    """52 create_post calls with 20,000-character texts (the Text interface's maximum)."""
    return hermes("social_media__create_post", {"text": char * 20_000}, 52)


def cases() -> dict[str, tuple[str, Action]]:
    """Hostile case -> (mode, action)."""
    circular: dict[str, Any] = {}
    circular["self"] = circular
    tiny = '<tool_call>{"name": "a__b", "arguments": {}}</tool_call>'
    deep = '{"a":' * 60 + "1" + "}" * 60
    rng = random.Random(0)
    unknown = [ToolCall("".join(rng.choice("abcdefghij_") for _ in range(rng.randint(5, 200))),
                        {}, f"call_{i}") for i in range(MAX_CALLS_PER_ACTION)]
    near = [ToolCall(f"social_media__create_p{rng.choice('aeiou')}{rng.choice('st')}t", {},
                     f"call_{i}") for i in range(MAX_CALLS_PER_ACTION)]
    gateway = {"tool_calls": [{"id": f"c{i}", "type": "function", "function": {
        "name": "call_tool", "arguments": {"name": "social_media__create_post",
                                           "arguments": {"text": "y" * 20_000}}}}
        for i in range(40)]}

    def python_call(arguments: Any) -> dict[str, Any]:
        return {"tool_calls": [{"id": "c0", "type": "function", "function": {
            "name": "social_media__create_post", "arguments": arguments}}]}

    return {
        "large_writes": ("direct", large_writes()),
        "emoji_writes": ("direct", large_writes("\U0001F600")),
        "one_mb_argument": ("direct", hermes("social_media__create_post",
                                             {"text": "m" * 1_000_000})),
        "over_argument_budget": ("direct", hermes("social_media__create_post",
                                                  {"text": "b" * 3_000}, 32)),
        "deep_json_60": ("direct", '<tool_call>{"name": "social_media__create_post", '
                                   '"arguments": {"text": "x", "link": ' + deep + "}}</tool_call>"),
        "deep_json_5000": ("direct", "<tool_call>" + "[" * 5_000 + "</tool_call>"),
        "tiny_calls_1mb": ("direct", tiny * ((1 << 20) // len(tiny))),
        "huge_numbers": ("direct", '<tool_call>{"name": "social_media__create_post", "arguments": '
                                   '{"text": "x", "likes": 1e999}}</tool_call><tool_call>'
                                   '{"name": "social_media__create_post", "arguments": {"text": '
                                   '"x", "likes": ' + "9" * 4_000 + "}}</tool_call>"),
        "unknown_tools": ("direct", render_calls(unknown)),
        "unknown_near_misses": ("direct", render_calls(near)),
        "reads_after_writes": ("direct", render_calls(
            [ToolCall("social_media__create_post", {"text": "z" * 2_000}, f"w{i}")
             for i in range(20)] + [ToolCall("social_media__list_posts",
                                             {"author": "Ana"}, f"r{i}") for i in range(12)])),
        "python_set": ("direct", python_call({"text": {1, 2}})),
        "python_bytes": ("direct", python_call({"text": b"\x00" * 1_000})),
        "python_huge_int": ("direct", python_call({"text": "x", "likes": 10 ** 5_000})),
        "python_circular": ("direct", python_call(circular)),
        "python_nan": ("direct", python_call({"text": "x", "likes": float("nan")})),
        "python_1mb": ("direct", python_call({"text": "p" * 1_000_000})),
        "gateway_long_actions": ("gateway", gateway),
        "gateway_listings": ("gateway", hermes("list_services", {}, MAX_CALLS_PER_ACTION)),
    }


def episode_times(env: CompoWorldEnv, task: Task, action: Action, steps: int) -> list[float]:
    """Seconds of each step of one episode that repeats ``action`` (collector paused)."""
    env.reset(options={"task": task})
    times = []
    gc.collect()
    gc.disable()
    try:
        for _ in range(steps):
            start = time.perf_counter()
            obs, *_ = env.step(action)
            times.append(time.perf_counter() - start)
            if len(obs) > MAX_OBSERVATION_CHARS:
                raise AssertionError(f"observation of {len(obs):,} characters")
    finally:
        gc.enable()
    json.dumps(env.messages, allow_nan=False)  # the transcript stays JSON
    return times


def full_collection_ms() -> float:
    """How long one full collection of this process's heap takes (the median of five)."""
    times = []
    for _ in range(5):
        start = time.perf_counter()
        gc.collect()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def counted_digests() -> tuple[list[int], Callable[[], None]]:
    """Count records serialised for state versions (simulator._record_digest calls)."""
    count, original = [0], simulator._record_digest

    def counting(*args: Any) -> tuple[int, int]:
        count[0] += 1
        return original(*args)

    simulator._record_digest = counting  # type: ignore[assignment]
    return count, lambda: setattr(simulator, "_record_digest", original)


def measure_growth(task: Task, cfg: Config) -> dict[str, Any]:
    """Per-step cost of the 52-large-writes action over an episode (median of repeats)."""
    env, action = CompoWorldEnv([task], max_steps=cfg.growth_steps + 1), large_writes()
    episode_times(env, task, action, 2)  # warm-up
    runs = [episode_times(env, task, action, cfg.growth_steps) for _ in range(cfg.growth_repeats)]
    per_step = [statistics.median(run[i] for run in runs) for i in range(cfg.growth_steps)]
    count, restore = counted_digests()
    hashed = []
    try:
        env.reset(options={"task": task})
        for _ in range(cfg.growth_steps):
            before = count[0]
            env.step(action)
            hashed.append(count[0] - before)
    finally:
        restore()
    return {"large_writes_step0_ms": per_step[0] * 1e3,
            "large_writes_last_step_ms": per_step[-1] * 1e3,
            "large_writes_step19_over_step0": per_step[-1] / per_step[0],
            "large_writes_step_ms": [round(t * 1e3, 2) for t in per_step],
            "large_writes_records_hashed_per_step": sorted(set(hashed))}


def measure_cases(task: Task, cfg: Config) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, (mode, action) in cases().items():
        env = CompoWorldEnv([task], mode=mode, max_steps=cfg.case_steps + 1)
        episode_times(env, task, action, 1)  # warm-up
        times = episode_times(env, task, action, cfg.case_steps)
        env.reset(options={"task": task})
        obs, *_ = env.step(action)
        out[name] = {"max_ms": round(max(times) * 1e3, 2),
                     "median_ms": round(statistics.median(times) * 1e3, 2),
                     "obs_chars": len(obs)}
        log(f"case {name}: max {out[name]['max_ms']} ms")
    return out


def measure_mb_episodes(task: Task, cfg: Config) -> dict[str, float]:
    """RSS growth over episodes of 1 MB-argument calls (text and Python), after gc."""
    env = CompoWorldEnv([task], max_steps=4)
    text = hermes("social_media__create_post", {"text": "q" * 1_000_000})
    data = {"tool_calls": [{"id": "c0", "type": "function", "function": {
        "name": "social_media__create_post", "arguments": {"text": "d" * 1_000_000}}}]}
    fitting = hermes("social_media__create_post", {"text": "f" * (MAX_ARGUMENT_CHARS // 4)}, 3)

    def episode(env: CompoWorldEnv) -> None:
        env.reset(options={"task": task})
        for action in (text, data, fitting):
            env.step(action)

    for _ in range(20):
        episode(env)  # warm-up: worlds, listings, allocator pools
    gc.collect()
    start = rss_kb()
    for _ in range(cfg.mb_episodes):
        episode(env)
    gc.collect()
    after = rss_kb()
    del env
    gc.collect()
    return {"rss_mb_after_1mb_episodes": (after - start) / 1024,
            "rss_mb_after_1mb_episodes_env_deleted": (rss_kb() - start) / 1024,
            "rss_mb_before_1mb_episodes": start / 1024, "mb_episodes": cfg.mb_episodes}


def process_caches() -> dict[str, int]:
    """Entries of the process-wide caches (each bounded; none holds agent arguments)."""
    from compoenv import env as env_module
    from compoenv.schema import validator_for
    from compoenv.schema_check import check_for
    from compoenv.world import _WORLDS
    from compoenv.worldmodel import offline

    seeded = sum(len(w.seeded) for w in _WORLDS._recent.values())  # states of recent worlds
    return {"offline_fit_memo": len(offline._FITS), "compiled_checks": len(check_for._items),
            "validators": len(validator_for._items), "seeded_states": seeded,
            "task_views": len(env_module._TASK_VIEWS),
            "tool_listings": env_module._listing.cache_info().currsize}


class HostileAgent:
    """Cycles through hostile actions built from the task's own tools."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def reset(self, observation: str, info: dict[str, Any]) -> None:
        tools = [t["function"] for t in info["tools"]]
        self.tool = self.rng.choice(tools)
        strings = [k for k, v in self.tool["parameters"].get("properties", {}).items()
                   if v.get("type") == "string"]
        self.field = strings[0] if strings else "text"

    def act(self, observation: str, info: dict[str, Any]) -> Action:
        name, field, pick = self.tool["name"], self.field, self.rng.randrange(6)
        if pick == 0:
            return hermes(name, {field: "w" * 20_000}, 52)
        if pick == 1:
            return hermes(name, {field: self.rng.choice("\U0001F600é\x00") * 1_000_000})
        if pick == 2:
            return hermes(name, {field: str(self.rng.random())}, 400)
        if pick == 3:
            return {"tool_calls": [{"id": "c", "type": "function", "function": {
                "name": name, "arguments": {field: {self.rng.random()}}}}]}
        if pick == 4:
            return hermes(name + "x" * self.rng.randint(1, 5), {field: "?"}, MAX_CALLS_PER_ACTION)
        return hermes(name, {field: "s" * self.rng.randint(1, 3_000)}, 8)


def run_soak_episode(env: CompoWorldEnv, agent: Any, task: Task) -> None:
    obs, info = env.reset(options={"task": task})
    agent.reset(obs, info)
    done = False
    while not done:
        obs, _, terminated, truncated, info = env.step(agent.act(obs, info))
        done = terminated or truncated


def soak(cfg: Config) -> dict[str, Any]:
    """RSS every ``episodes / points`` episodes: 80% random agents, 20% hostile ones."""
    tasks = list(Composer().generate(cfg.soak_tasks, seed=cfg.seed))
    envs = {mode: CompoWorldEnv(tasks, mode=mode, max_steps=6) for mode in ("direct", "gateway")}
    rng = random.Random(cfg.seed)
    every = max(1, cfg.soak_episodes // cfg.soak_points)

    def episodes(n: int, offset: int) -> Iterator[None]:
        for i in range(offset, offset + n):
            agent = HostileAgent(i) if rng.random() < 0.2 else RandomAgent(seed=i)
            run_soak_episode(envs[rng.choice(("direct", "gateway"))], agent, rng.choice(tasks))
            yield None

    for _ in episodes(100, -100):
        pass  # warm-up
    gc.collect()
    start, curve = rss_kb(), []
    started = time.perf_counter()
    for done, _ in enumerate(episodes(cfg.soak_episodes, 0), 1):
        if done % every == 0:
            gc.collect()
            curve.append([done, round((rss_kb() - start) / 1024, 1)])
            log(f"soak: {done} episodes, RSS +{curve[-1][1]} MB")
    growth = [mb for _, mb in curve]
    return {"soak_rss_growth_mb": max(growth, default=0.0),
            "soak_rss_growth_second_half_mb": round(max(growth[len(growth) // 2:], default=0)
                                                    - max(growth[:len(growth) // 2] or [0]), 1),
            "soak_rss_start_mb": round(start / 1024, 1),
            "soak_rss_curve_mb": curve, "soak_episodes": cfg.soak_episodes,
            "soak_s": round(time.perf_counter() - started, 1),
            "soak_process_caches": process_caches()}


def run(cfg: Config) -> dict[str, Any]:
    task = task_with("social_media", cfg.seed)
    log(f"task {task.id} ({', '.join(task.services)}): 52 large writes per step")
    results: dict[str, Any] = measure_growth(task, cfg)
    log(f"step 0 {results['large_writes_step0_ms']:.1f} ms, last "
        f"{results['large_writes_last_step_ms']:.1f} ms; now the hostile cases")
    results["cases"] = measure_cases(task, cfg)
    results["max_step_ms"] = max(c["max_ms"] for c in results["cases"].values())
    results["max_obs_chars"] = max(c["obs_chars"] for c in results["cases"].values())
    results["gc_full_collection_ms"] = full_collection_ms()
    log(f"memory: {cfg.mb_episodes} episodes of 1 MB arguments")
    results |= measure_mb_episodes(task, cfg)
    log(f"soak: {cfg.soak_episodes} episodes")
    results |= soak(cfg)
    results = {k: round(v, 3) if isinstance(v, float) else v for k, v in results.items()}
    results["targets"] = {key: f"{op} {bound:g}" for key, (op, bound) in TARGETS.items()}
    results["meets"] = {key: results[key] >= bound if op == ">=" else results[key] <= bound
                        for key, (op, bound) in TARGETS.items()}
    results |= {"python": platform.python_version(), "platform": platform.platform()}
    results["config"] = asdict(cfg) | {"quick": cfg == QUICK}
    results["wall_s"] = round(time.perf_counter() - _T0, 1)
    return results


def main(argv: list[str] | None = None) -> None:
    run_main("python -m bench.hostile", __doc__, run, QUICK, Config, argv)


if __name__ == "__main__":
    main()
