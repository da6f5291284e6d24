"""The command line the config-driven benchmarks share: ``--quick``, ``--out FILE``, JSON out."""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any, Callable


def run_main(prog: str, doc: str | None, run: Callable[[Any], dict[str, Any]], quick: Any,
             full: Callable[[], Any], argv: list[str] | None = None) -> None:
    """Parse the arguments, run the benchmark on the quick or the full config, print the JSON
    (and write it to ``--out``)."""
    parser = argparse.ArgumentParser(prog=prog, description=doc)
    parser.add_argument("--quick", action="store_true", help="small counts: a smoke run")
    parser.add_argument("--out", type=Path, help="also write the JSON to this file")
    args = parser.parse_args(argv)
    text = json.dumps(run(quick if args.quick else full()), indent=2)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)


Targets = dict[str, tuple[str, float]]


def verdict(result: dict[str, Any], targets: Targets) -> dict[str, Any]:
    """The ``targets`` (figure -> (">=" or "<=", bound)) as text, and whether ``result``
    meets each: the ``targets`` and ``meets`` keys of a benchmark's JSON."""
    return {"targets": {k: f"{op} {bound:g}" for k, (op, bound) in targets.items()},
            "meets": {k: result[k] >= bound if op == ">=" else result[k] <= bound
                      for k, (op, bound) in targets.items()}}


def progress_log(prog: str) -> Callable[[str], None]:
    """A function that writes a benchmark's progress to stderr, prefixed ``[prog]``."""
    def log(message: str) -> None:
        print(f"[{prog}] {message}", file=sys.stderr, flush=True)
    return log


def emit(result: dict[str, Any], out: Path | None, quick: bool, began: float) -> None:
    """Add where and how long the benchmark ran to ``result``, print it as one line of JSON
    on stdout, and write it to ``out`` too (if given)."""
    result.update(python=platform.python_version(), platform=platform.platform(),
                  cpus=os.cpu_count(), quick=quick, wall_s=round(time.perf_counter() - began, 1))
    text = json.dumps(result)
    print(text)
    if out is not None:
        out.write_text(text + "\n", encoding="utf-8")
