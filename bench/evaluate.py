"""Evaluation runner benchmark: episodes per second through ``compoenv.evaluation.evaluate``
with a loopback endpoint that answers at once (the scripted oracle of tests/chat_server.py, in
a process of its own), so what is measured is the env, the agent and the runner, not a model;
and the memory of a long run (trajectories stream to disk).

Each of ``runs`` rounds plays the task set twice, in turn: with the runner's choice of worker
processes (``workers``: None lets it choose) and in this process alone (``workers=1``, the
runner before it had workers); the medians of the rounds are reported.

Run ``python -m bench.evaluate [--quick] [--out FILE]``: one JSON object on stdout.
"""

from __future__ import annotations

import platform
import resource
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench._cli import run_main, verdict
from compoenv.agents.endpoint import EndpointAgent
from compoenv.compose import Composer, ComposerConfig
from compoenv.evaluation import evaluate

TARGETS = {"episodes_per_s": (">=", 200)}


@dataclass(frozen=True)
class Config:
    tasks: int = 100
    k: int = 4  # 400 episodes a run
    concurrency: int = 64
    runs: int = 3  # the median of these is reported
    workers: int | None = None  # None: the runner's choice
    soak_k: int = 100  # then every task this many times more (10,000 episodes): memory stays flat


def run(config: Config) -> dict[str, Any]:
    sys.path.append(str(Path(__file__).resolve().parent.parent / "tests"))
    from chat_server import OraclePolicy, ServerProcess

    tasks = list(Composer(config=ComposerConfig(min_hops=3, max_hops=5)).generate(
        config.tasks, seed=11))
    episodes = config.tasks * config.k
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    rates: dict[str, list[float]] = {"workers": [], "in_process": []}
    played = 0
    # the endpoint in a process of its own, as a model server would be: it must not share
    # this process's interpreter lock with the runner it serves
    with ServerProcess(OraclePolicy(tasks), max_requests=10**9, lifetime_s=3600,
                       keep_alive=True) as server, tempfile.TemporaryDirectory() as out:
        def play(folder: str, k: int, workers: int | None) -> dict[str, Any]:
            agent = EndpointAgent(base_url=server.url, model=server.model)
            return evaluate(tasks, agent, Path(out) / folder, k=k,
                            concurrency=config.concurrency, workers=workers)

        for round_ in range(config.runs):
            for name, workers in (("workers", config.workers), ("in_process", 1)):
                results = play(f"{name}{round_}", config.k, workers)
                rates[name].append(results["run"]["episodes_per_s"])
                played += episodes
                if name == "workers":
                    chosen, checked = results["run"]["workers"], results
        before_soak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        soak = time.perf_counter()
        if config.soak_k:
            play("soak", config.soak_k, config.workers)
            played += config.tasks * config.soak_k
        soak = time.perf_counter() - soak
        soak_growth = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before_soak
    measured = {
        "episodes": episodes, "runs": config.runs, "workers": chosen,
        "episodes_per_s": round(statistics.median(rates["workers"]), 1),
        "in_process_episodes_per_s": round(statistics.median(rates["in_process"]), 1),
        "episodes_per_s_runs": rates["workers"],
        "in_process_episodes_per_s_runs": rates["in_process"],
        "requests_per_episode": round(server.requests / played, 2),
        "most_connections_open": server.most_connections_open,
        "pass_rate": checked["pass_rate"], "errored_episodes": checked["errored_episodes"],
        "peak_rss_growth_mb": round((before_soak - rss) / 1024, 1),
        "soak_episodes": config.tasks * config.soak_k,
        "soak_episodes_per_s": round(config.tasks * config.soak_k / soak, 1) if soak else 0.0,
        "soak_peak_rss_growth_mb": round(soak_growth / 1024, 1),
        "concurrency": config.concurrency, "python": platform.python_version(),
    }
    measured["speedup"] = round(measured["episodes_per_s"]
                                / max(measured["in_process_episodes_per_s"], 1e-9), 2)
    return {**measured, **verdict(measured, TARGETS)}


def main(argv: list[str] | None = None) -> None:
    run_main("python -m bench.evaluate", __doc__, run,
             Config(tasks=20, k=2, runs=1, workers=2, soak_k=5), Config, argv)


if __name__ == "__main__":
    main()
