"""Library benchmark: a synthetic corpus of 2,000 services / 50,000 tools (spec files shaped like
an imported one, ``bench.synthetic``): library load, tool-graph build time and peak memory, and
composing with that library (free walks) in verified tasks per second per core, and as a ratio
to composing with the built-in library in the same run.

Run ``python -m bench.library [--quick] [--services N] [--seeds N] [--out FILE]``: one JSON
object on stdout, progress on stderr. The corpus and the seeds are fixed, so every run composes
the same tasks.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

from bench._cli import emit, progress_log, verdict
from bench.compose import machine_calibration
from bench.synthetic import write_corpus
from compoenv.compose import ComposerConfig
from compoenv.compose.generator import derive_seed
from compoenv.compose.parallel import settle, worker_composer
from compoenv.graph import ToolGraph
from compoenv.registry import Registry
from compoenv.world import World

TARGETS = {
    "load_seconds": ("<=", 5),
    "graph_build_seconds": ("<=", 30),
    "graph_peak_mb": ("<=", 1024),
    "tasks_per_s_per_core": (">=", 50),
    "library_over_builtin_per_cpu": (">=", 0.8),
    "scenario_with_library_over_builtin_per_cpu": (">=", 0.8),
}


log = progress_log("bench.library")


def _rss_mb() -> float:
    """This process's peak resident memory so far, in MB (Linux reports kB, macOS bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return round(peak / (2**20 if sys.platform == "darwin" else 2**10), 1)


def load(folder: Path) -> tuple[Registry, dict[str, Any]]:
    """The library of ``folder``: its index written once (as an import does), then loaded."""
    from compoenv.library import write_index

    start = time.perf_counter()
    write_index(folder)
    index = time.perf_counter() - start
    start, cpu = time.perf_counter(), time.process_time()
    registry = Registry.from_paths(folder)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    return registry, {"index_seconds": round(index, 2), "load_seconds": round(seconds, 3),
                      "load_cpu_seconds": round(cpu, 3), "services": len(registry.names())}


def graph_build(registry: Registry) -> tuple[ToolGraph, dict[str, Any]]:
    """The tool graph of the whole library, as the composer builds it: time, then (a second
    build, traced) the peak memory it allocates; and how many edges it never materialises."""
    start, cpu = time.perf_counter(), time.process_time()
    signatures = registry.signatures()
    graph = ToolGraph(signatures, registry.related, registry.spec, registry.scope)
    starts = len(graph.start_tools())
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    tracemalloc.start()
    traced = ToolGraph(registry.signatures(), registry.related, registry.spec, registry.scope)
    traced.start_tools()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    del traced
    start = time.perf_counter()
    stats = graph.stats()
    return graph, {"tools": len(signatures), "graph_build_seconds": round(seconds, 2),
                   "graph_build_cpu_seconds": round(cpu, 2),
                   "graph_peak_mb": round(peak / 2**20, 1), "start_tools": starts,
                   "edges_counted_not_built": stats["edges"],
                   "cross_service_edges": stats["cross_service_edges"],
                   "stats_seconds": round(time.perf_counter() - start, 2),
                   "rss_after_graph_mb": _rss_mb()}


def composing(registry: Registry, seeds: int,
              config: ComposerConfig | None = None) -> dict[str, Any]:
    """Free walks (the ``--scenarios none`` configuration; or ``config``'s) over a fixed range
    of seeds in one process, warm as a generation worker is: verified tasks per second of wall
    and of CPU."""
    config = config or ComposerConfig()
    start = time.perf_counter()
    composer = worker_composer(config, lambda: registry)  # every service built, as a worker's
    built = time.perf_counter() - start
    for seed in range(config.worlds or 0):  # pooled worlds; by default each seed has its own
        World.dated(seed).businesses  # built on first use, once per world
    for index in range(min(20, seeds)):  # graph views, caches, the services walks reach first
        composer.attempt(derive_seed(10_000, index))
    settle()
    warm = time.perf_counter() - start
    start, cpu = time.perf_counter(), time.process_time()
    outcomes = [composer.attempt(derive_seed(1, index)) for index in range(seeds)]
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    tasks = [o.task for o in outcomes if o.task is not None]
    reasons: dict[str, int] = {}
    for o in outcomes:
        if o.reason is not None:
            reasons[o.reason] = reasons.get(o.reason, 0) + 1
    return {"seeds": seeds, "verified_tasks": len(tasks),
            "tasks_per_s_per_core": round(len(tasks) / seconds, 1),
            "tasks_per_cpu_s": round(len(tasks) / cpu, 1),  # the same, unaffected by other load
            "services_built_seconds": round(built, 2),
            "compose_warmup_seconds": round(warm, 2),
            "services_per_task": round(sum(len(t.services) for t in tasks)
                                       / max(1, len(tasks)), 2),
            "distinct_services_used": len({s for t in tasks for s in t.services}),
            "rejections": dict(sorted(reasons.items(), key=lambda r: -r[1])),
            "rss_after_composing_mb": _rss_mb()}


def builtin_rate(seeds: int) -> dict[str, Any]:
    """The same composing, in the same run, with the built-in library: the rate an imported
    library's is held to (``library_over_builtin_per_cpu``)."""
    measured = composing(Registry.default(), seeds)
    return {"builtin_tasks_per_s_per_core": measured["tasks_per_s_per_core"],
            "builtin_tasks_per_cpu_s": measured["tasks_per_cpu_s"]}


def run(services: int, seeds: int, seed: int = 0) -> dict[str, Any]:
    """Write the corpus, then measure load, graph build and composing (and composing with the
    built-in library, for the ratio)."""
    result: dict[str, Any] = machine_calibration()
    with tempfile.TemporaryDirectory(prefix="compoenv-bench-library-") as tmp:
        folder = Path(tmp) / "synthetic"
        start = time.perf_counter()
        result["corpus"] = write_corpus(folder, services, seed)
        result["corpus_seconds"] = round(time.perf_counter() - start, 2)
        log(f"corpus {result['corpus']} written in {result['corpus_seconds']} s; loading")
        registry, loaded = load(folder)
        result.update(loaded)
        log(f"loaded in {result['load_seconds']} s; building the tool graph")
        graph, built = graph_build(registry)
        result.update(built)
        del graph
        log(f"graph built in {result['graph_build_seconds']} s; composing {seeds} seeds")
        result.update(composing(registry, seeds))
        log(f"composing {seeds} seeds with the built-in library")
        result.update(builtin_rate(seeds))
        result["library_over_builtin_per_cpu"] = round(
            result["tasks_per_cpu_s"] / max(result["builtin_tasks_per_cpu_s"], 1e-9), 3)
        log(f"scenario jobs, {seeds} seeds, with and without the library beside the built-in")
        result.update(scenario_jobs(folder, seeds))
    return result


def scenario_jobs(folder: Path, seeds: int) -> dict[str, Any]:
    """Scenario jobs (every built-in scenario) composed on the built-in library alone and with
    ``folder``'s services beside it, which no scenario uses (distractor-only): the rate ratio,
    and whether the same seeds gave the same jobs."""
    from compoenv.scenarios import resolve

    measured = {}
    for name, registry in (("builtin", Registry.default()),
                           ("with_library", Registry.default([folder]))):
        config = ComposerConfig(scenarios=resolve("all", Registry.default().names()))
        measured[name] = composing(registry, seeds, config)
    alone, beside = measured["builtin"], measured["with_library"]
    return {"scenario_builtin_tasks_per_cpu_s": alone["tasks_per_cpu_s"],
            "scenario_with_library_tasks_per_cpu_s": beside["tasks_per_cpu_s"],
            "scenario_with_library_over_builtin_per_cpu": round(
                beside["tasks_per_cpu_s"] / max(alone["tasks_per_cpu_s"], 1e-9), 3),
            "scenario_same_jobs": (alone["verified_tasks"], alone["rejections"])
            == (beside["verified_tasks"], beside["rejections"])}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="200 services / 5,000 tools and 60 seeds, for a smoke run")
    parser.add_argument("--services", type=int, help="services in the corpus (25 tools each)")
    parser.add_argument("--seeds", type=int, help="seeds composed in the timed run")
    parser.add_argument("--out", type=Path, help="also write the JSON to this file")
    args = parser.parse_args(argv)
    services = args.services or (200 if args.quick else 2_000)
    seeds = args.seeds or (60 if args.quick else 400)
    began = time.perf_counter()
    result = run(services, seeds)
    result.update(verdict(result, TARGETS))
    emit(result, args.out, args.quick, began)


if __name__ == "__main__":
    main()
