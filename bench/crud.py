"""CRUD benchmark: how many spec tools run with real state (``compoenv.worldmodel.store``).

Run ``python -m bench.crud [--library DIR ...] [--out FILE]``: one JSON object on stdout. For
the shipped spec services (``envs_library/specs``) and each library given (a folder of spec
files, such as an imported corpus), it counts the tools, the tools of recognised CRUD resources
(answered from records kept in the service's state), those by operation (list, get, create,
update, cancel, delete), the resources and the open ones (a list of theirs searches the World's
people or companies and stays with the world model), and the share of tools with real state.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench._cli import verdict
from compoenv.worldmodel.spec import SpecError, load_spec, spec_tools
from compoenv.worldmodel.store import ResourceStore

SHIPPED = Path(__file__).resolve().parents[1] / "envs_library" / "specs"
TARGETS = {"share": (">=", 0.40)}  # of the shipped spec tools


def measure(folder: Path) -> dict[str, Any]:
    """The real-state coverage of every spec file under ``folder``."""
    started = time.perf_counter()
    tools = stateful = services = skipped = 0
    kinds: Counter[str] = Counter()
    resources = opened = 0
    for path in sorted(folder.rglob("*.json")):
        try:
            spec = load_spec(path, strict=False)
        except SpecError:
            skipped += 1  # not a spec (an index) or not a valid one
            continue
        store = ResourceStore(spec["name"], spec_tools(spec)) \
            if spec.get("state") != "world_model" else None
        services += 1
        tools += len(spec["tools"])
        if store:
            stateful += len(store.by_tool)
            kinds.update(op.kind for _, op in store.by_tool.values())
            resources += len(store.resources)
            opened += sum(r.open for r in store.resources.values())
    return {"folder": str(folder), "services": services, "tools": tools,
            "stateful_tools": stateful, "share": round(stateful / tools, 4) if tools else 0.0,
            "by_operation": dict(sorted(kinds.items())), "resources": resources,
            "open_resources": opened, "files_skipped": skipped,
            "seconds": round(time.perf_counter() - started, 2)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.crud", description=__doc__)
    parser.add_argument("--library", type=Path, action="append", default=[],
                        help="also measure this folder of spec files (repeatable)")
    parser.add_argument("--out", type=Path, help="also write the JSON to this file")
    args = parser.parse_args(argv)
    shipped = measure(SHIPPED)
    result = {"shipped": shipped, "libraries": [measure(f) for f in args.library],
              **verdict(shipped, TARGETS)}  # the targets are the shipped specs'
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")

if __name__ == "__main__":
    main()
