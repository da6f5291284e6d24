"""Write compoenv tasks as SkyRL training and validation data (env_class "compoenv").

Run: python rl/skyrl/prepare_data.py --tasks tasks.jsonl --output-dir ~/data/compoenv
     [--mode direct|gateway] [--val-size 64] [--format parquet|jsonl]

Without --tasks, --num tasks are composed from --seed (slow: about a second a task; use
`compoenv generate --workers N` for thousands). Prints where the files went.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from compoenv.env import MODES
from compoenv.task import Task, TaskFileError, load_tasks


def _tasks(args: argparse.Namespace) -> list[Task]:
    if args.tasks:
        return load_tasks(args.tasks)
    from compoenv.compose import Composer

    return list(Composer().generate(args.num, seed=args.seed))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", help="a JSONL task file (compoenv generate)")
    parser.add_argument("--num", type=int, default=16, help="tasks to compose without --tasks")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--mode", choices=MODES, default="direct")
    parser.add_argument("--val-size", type=int, default=0,
                        help="tasks held out (the last ones) for data.val_data")
    parser.add_argument("--format", choices=("parquet", "jsonl"), default="parquet")
    parser.add_argument("--output-dir", type=Path, required=True)
    args = parser.parse_args(argv)
    try:
        from compoenv.integrations.skyrl import dataset_rows, write_dataset
    except ImportError as exc:
        parser.error(str(exc))
    try:
        tasks = _tasks(args)
    except (OSError, TaskFileError) as exc:
        parser.error(f"--tasks: {exc}")
    if not 0 <= args.val_size < len(tasks):
        parser.error(f"--val-size must leave training tasks: {len(tasks)} tasks, "
                     f"--val-size {args.val_size}")
    rows = dataset_rows(tasks, mode=args.mode)
    cut = len(rows) - args.val_size
    splits = {"train": rows[:cut], "validation": rows[cut:]}
    for name, part in splits.items():
        if part:
            path = write_dataset(part, args.output_dir / f"{name}.{args.format}")
            print(f"{name}: {len(part)} rows -> {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
