"""The seeding check: two fresh processes seed the same state from the same World seed."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import time
from typing import Any

from compoenv.checks.report import Findings
from compoenv.checks.target import Target
from compoenv.service import Service, State
from compoenv.world import World

__all__ = ["seeding", "digests", "digests_of", "prefetch"]

SEEDS = (0, 1)
TIMEOUT_S = 120


def load_ref(ref: list[str]) -> type[Service]:
    """The service class a Target's ``ref`` names, loaded in this (fresh) process."""
    kind, *rest = ref
    if kind == "registry":
        from compoenv.registry import Registry

        return Registry.default().get(rest[0])
    if kind == "file":
        from compoenv.checks.target import load_file
        from pathlib import Path

        return load_file(Path(rest[0]))
    if kind == "spec":
        from compoenv.worldmodel.base import SimulatedService
        from compoenv.worldmodel.spec import load_spec, service_from_spec

        return service_from_spec(load_spec(rest[0], strict=False), SimulatedService)
    module, qualname = rest
    value: Any = importlib.import_module(module)
    for part in qualname.split("."):
        value = getattr(value, part)
    return value  # type: ignore[no-any-return]


def digests(cls: type[Service], seeds: tuple[int, ...] = SEEDS) -> dict[str, Any]:
    """The state digest for each World seed, and whether the seeded state holds anything."""
    return digests_of([cls(World(seed)).state for seed in seeds])


def digests_of(states: list[State]) -> dict[str, Any]:
    """What ``digests`` says of these seeded states."""
    return {"digests": [s.digest() for s in states],
            "stateful": any(any(s.model_dump().values()) for s in states)}


def _child(refs: list[list[str]]) -> list[dict[str, Any] | str]:
    """In the fresh process: each ref's digests, or what stopped its seeding."""
    out: list[dict[str, Any] | str] = []
    for ref in refs:
        try:
            out.append(digests(load_ref(ref)))
        except Exception as exc:  # the service under test failed: that is the finding
            out.append(f"seeding in a fresh process failed: {type(exc).__name__}: {exc}")
    return out


# ref -> the two fresh processes' outcomes, for refs that prefetch() seeded together, and
# how long those processes ran and for how many services
_PREFETCHED: dict[tuple[str, ...], list[dict[str, Any] | str]] = {}
_SPENT: dict[tuple[str, ...], tuple[float, int]] = {}


def prefetch(refs: list[tuple[str, ...]]) -> None:
    """Seed many services in one pair of fresh processes (what verifying a whole library
    needs: two interpreter starts, not two per service); ``seeding`` then uses the results."""
    todo = sorted({r for r in refs if r and r not in _PREFETCHED})
    if not todo:
        return
    started = time.perf_counter()
    runs = [_outcome(p, len(todo)) for p in [_spawn(todo, h) for h in (1, 2)]]
    for i, ref in enumerate(todo):
        _PREFETCHED[ref] = [run[i] if isinstance(run, list) else run for run in runs]
        _SPENT[ref] = (time.perf_counter() - started, len(todo))


def _spawn(refs: list[tuple[str, ...]], hash_seed: int) -> subprocess.Popen[str]:
    # the child sees this process's import path (a test module's service is importable) and a
    # hash seed of its own, so set and dict orders that leak into the state show up
    env = {**os.environ, "PYTHONHASHSEED": str(hash_seed),
           "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    return subprocess.Popen([sys.executable, "-m", "compoenv.checks.seeding", json.dumps(refs)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def _outcome(process: subprocess.Popen[str], count: int) -> list[dict[str, Any] | str] | str:
    try:
        out, err = process.communicate(timeout=TIMEOUT_S * count)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        return f"seeding took over {TIMEOUT_S} s in a fresh process"
    if process.returncode != 0:
        last = (err.strip().splitlines() or ["(no output)"])[-1]
        return f"seeding in a fresh process failed: {last}"
    return json.loads(out)  # type: ignore[no-any-return]


def seeding(target: Target) -> Findings:
    """Two fresh processes (with different hash seeds) seed equal states from World seed 0;
    World seeds 0 and 1 seed different states, unless the service holds no state."""
    found = Findings()
    here = digests(target.cls)
    elsewhere = getattr(target.cls, "fresh_seedings", None)  # a sandboxed module's own
    if elsewhere is not None:
        outcomes = elsewhere()
        found.note("two fresh sandboxed processes seeded it")
    elif target.ref:
        prefetch([target.ref])
        outcomes = _PREFETCHED.pop(target.ref)
        seconds, together = _SPENT.pop(target.ref)
        found.note(f"two fresh processes seeded it in {seconds:.1f} s"
                   + (f", with {together - 1} other service{'s' if together > 2 else ''}"
                      if together > 1 else ""))
    else:
        outcomes = [here, digests(target.cls)]
        found.note(f"{target.label} cannot be imported by a fresh process (defined in a "
                   f"function or __main__): seeded twice in this one")
    for outcome in outcomes:
        if isinstance(outcome, str):
            found.fail(outcome)
    runs = [o for o in outcomes if isinstance(o, dict)]
    if len(runs) == 2:
        first, second = (run["digests"][0] for run in runs)
        if first != second:
            found.fail(f"world seed {SEEDS[0]}: two fresh processes seeded different states "
                       f"(digests {first[:12]} and {second[:12]}); derive every choice from "
                       f"world.rng({target.name!r}), never from time, the global random or "
                       f"set order")
        elif first != here["digests"][0]:
            found.fail(f"world seed {SEEDS[0]}: this process seeded another state than two "
                       f"fresh ones (digest {here['digests'][0][:12]}, not {first[:12]}): the "
                       f"seed depends on what ran before it")
    if here["stateful"] and len(set(here["digests"])) == 1:
        found.fail(f"world seeds {SEEDS[0]} and {SEEDS[1]} seed identical states; draw the "
                   f"records from world.rng({target.name!r})")
    if not here["stateful"]:
        found.note("the seeded state is empty")
    return found


if __name__ == "__main__":
    print(json.dumps(_child(json.loads(sys.argv[1]))))
