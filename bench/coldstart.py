"""Cold start benchmark: how long a fresh interpreter takes to reach the first reset of a
given task (``gym.make("CompoWorld-v0", tasks=FILE)`` then ``reset``), beside the floor of
the same interpreter importing gymnasium alone; and what it imports on the way.

Each figure is the median of ``repeats`` fresh processes, run interleaved (env, floor, env,
...) so that load on a shared machine hits both alike. A first untimed process of each kind
writes the bytecode caches, as an installed package has them.

Run ``python -m bench.coldstart [--quick] [--out FILE]``: one JSON object on stdout.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench._cli import Targets, run_main, verdict

TARGETS: Targets = {"first_reset_s": ("<=", 0.5)}
HEAVY = ("inflect", "typeguard", "networkx", "compoenv.compose.generator", "torch",
         "transformers")

_ENV = """
import time
start = time.perf_counter()
import gymnasium as gym
import compoenv
env = gym.make("CompoWorld-v0", tasks={path!r})
env.reset(seed=0)
took = time.perf_counter() - start
import json, sys
print(json.dumps({{"s": took, "heavy": [m for m in {heavy!r} if m in sys.modules],
                   "modules": len(sys.modules)}}))
"""
_FLOOR = """
import time
start = time.perf_counter()
import gymnasium
took = time.perf_counter() - start
import json, sys
print(json.dumps({"s": took, "modules": len(sys.modules)}))
"""


@dataclass(frozen=True)
class Config:
    repeats: int = 15
    tasks: int = 1  # tasks in the file the env plays (its check is part of the start)


def _fresh(code: str) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, check=True, timeout=300)
    return json.loads(done.stdout.strip().splitlines()[-1])


def _task_file(folder: Path, count: int) -> Path:
    from compoenv.compose import Composer

    path = folder / "tasks.jsonl"
    with path.open("w", encoding="utf-8") as fh:
        for task in Composer().generate(count, seed=3):
            fh.write(task.to_json() + "\n")
    return path


def run(config: Config) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        path = _task_file(Path(folder), config.tasks)
        env_code, floor_code = _ENV.format(path=str(path), heavy=HEAVY), _FLOOR
        _fresh(env_code), _fresh(floor_code)  # bytecode caches written
        env_runs, floor_runs = [], []
        for _ in range(config.repeats):
            env_runs.append(_fresh(env_code))
            floor_runs.append(_fresh(floor_code))
    first = statistics.median(r["s"] for r in env_runs)
    floor = statistics.median(r["s"] for r in floor_runs)
    result: dict[str, Any] = {
        "first_reset_s": round(first, 3),
        "first_reset_s_min": round(min(r["s"] for r in env_runs), 3),
        "gymnasium_import_s": round(floor, 3),
        "first_reset_over_gymnasium_import": round(first / floor, 2),
        "compoenv_share_s": round(first - floor, 3),
        "heavy_modules_imported": sorted({m for r in env_runs for m in r["heavy"]}),
        "modules_loaded": env_runs[-1]["modules"],
        "task_file_tasks": config.tasks, "repeats": config.repeats,
        "python": platform.python_version(), "cpus": os.cpu_count(),
    }
    return result | verdict(result, TARGETS)


def main(argv: list[str] | None = None) -> None:
    run_main("python -m bench.coldstart", __doc__, run, Config(repeats=3), Config, argv)


if __name__ == "__main__":
    main()
