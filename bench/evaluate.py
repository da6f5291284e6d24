"""Evaluation runner benchmark: episodes per second through ``compoenv.evaluation.evaluate``
with a loopback endpoint that answers at once (the scripted oracle of tests/chat_server.py),
so what is measured is the env, the agent and the runner, not a model; and the memory of a
long run (trajectories stream to disk).

Run ``python -m bench.evaluate [--quick] [--out FILE]``: one JSON object on stdout.
"""

from __future__ import annotations

import multiprocessing as mp
import platform
import resource
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench._cli import run_main
from compoenv.agents.endpoint import EndpointAgent
from compoenv.compose import Composer, ComposerConfig
from compoenv.evaluation import evaluate

TARGETS = {"episodes_per_s": (">=", 200)}


@dataclass(frozen=True)
class Config:
    tasks: int = 100
    k: int = 4
    concurrency: int = 64
    soak_k: int = 100  # then every task this many times more (10,000 episodes): memory stays flat


def run(config: Config) -> dict[str, Any]:
    tasks = list(Composer(config=ComposerConfig(min_hops=3, max_hops=5)).generate(
        config.tasks, seed=11))
    episodes = config.tasks * config.k
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # the endpoint in a process of its own, as a model server would be: it must not share
    # this process's interpreter lock with the runner it serves
    ready: Any = mp.get_context("spawn").Queue()
    done = mp.get_context("spawn").Event()
    server = mp.get_context("spawn").Process(target=_serve, args=(tasks, 50 * episodes, ready,
                                                                  done), daemon=True)
    server.start()
    url, model = ready.get(timeout=60)
    try:
        with tempfile.TemporaryDirectory() as out:
            agent = EndpointAgent(base_url=url, model=model)
            start = time.perf_counter()
            results = evaluate(tasks, agent, out, k=config.k, concurrency=config.concurrency)
            seconds = time.perf_counter() - start
            before_soak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            soak = time.perf_counter()
            if config.soak_k:
                evaluate(tasks, EndpointAgent(base_url=url, model=model), Path(out) / "soak",
                         k=config.soak_k, concurrency=config.concurrency)
            soak = time.perf_counter() - soak
            soak_growth = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before_soak
    finally:
        done.set()
        requests, most = ready.get(timeout=30)
        server.join(timeout=10)
    measured = {
        "episodes": episodes, "seconds": round(seconds, 2),
        "episodes_per_s": round(episodes / seconds, 1),
        "requests_per_episode": round(requests / (episodes * (1 + config.soak_k / config.k)),
                                      2),
        "most_requests_in_flight": most,
        "pass_rate": results["pass_rate"], "errored_episodes": results["errored_episodes"],
        "peak_rss_growth_mb": round((before_soak - rss) / 1024, 1),
        "soak_episodes": config.tasks * config.soak_k,
        "soak_episodes_per_s": round(config.tasks * config.soak_k / soak, 1) if soak else 0.0,
        "soak_peak_rss_growth_mb": round(soak_growth / 1024, 1),
        "concurrency": config.concurrency, "python": platform.python_version(),
    }
    measured["meets"] = {k: measured[k] >= v for k, (_, v) in TARGETS.items()}
    return measured


def _serve(tasks: list[Any], limit: int, ready: Any, done: Any) -> None:
    """The loopback endpoint playing the oracle, until ``done``; reports its URL, then what
    it served."""
    sys.path.append(str(Path(__file__).resolve().parent.parent / "tests"))
    from chat_server import ChatServer, OraclePolicy

    with ChatServer(responder=OraclePolicy(tasks), max_requests=limit, lifetime_s=3600,
                    keep_alive=True) as server:
        ready.put((server.url, server.model))
        done.wait()
        ready.put((len(server.received), server.most_in_flight))


def main(argv: list[str] | None = None) -> None:
    run_main("python -m bench.evaluate", __doc__, run, Config(tasks=20, k=2, soak_k=5), Config,
             argv)


if __name__ == "__main__":
    main()
