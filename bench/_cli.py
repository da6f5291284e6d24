"""The command line the config-driven benchmarks share: ``--quick``, ``--out FILE``, JSON out."""

from __future__ import annotations

import argparse
import json
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
