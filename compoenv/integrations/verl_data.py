"""verl datasets: one row per task for RLHFDataset, played by compoenv's verl agent loop.

A row has verl's columns: ``data_source``, ``prompt`` (the env's system prompt and request,
the tool listing in the system message so that verl's prompt-length filter counts it),
``ability``, ``reward_model`` (``style``, ``ground_truth``: the task id), ``agent_name``
(``compoenv``, the loop of ``compoenv.integrations.verl``) and ``extra_info`` (``task``: the
task JSON the loop plays, ``task_id``, ``mode``, ``index``, ``split``). The loop renders the
prompt itself from the task with the policy's chat template (tools as the template lists them),
so ``prompt`` is what verl filters and logs, not what the policy reads.

No verl import here: writing a dataset needs only pyarrow (for ``.parquet``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

from compoenv.env import MODES, CompoWorldEnv
from compoenv.integrations.openrlhf_data import prompt_record
from compoenv.task import Task

__all__ = ["AGENT_NAME", "DATA_SOURCE", "verl_record", "write_verl_dataset"]

AGENT_NAME = "compoenv"  # as registered by compoenv.integrations.verl
DATA_SOURCE = "compoenv"
_SUFFIXES = (".parquet", ".jsonl", ".json")


def verl_record(task: Task, index: int, *, mode: str = "direct", split: str = "train",
                data_source: str = DATA_SOURCE, env: CompoWorldEnv | None = None
                ) -> dict[str, Any]:
    """One verl dataset row for ``task`` (see the module docstring).

    Args:
        task: The task.
        index: The row's index (verl's ``extra_info["index"]``, which groups rollouts).
        mode: ``direct`` or ``gateway``: the tools the loop lists for this row.
        split: ``train`` or ``test`` (recorded in ``extra_info``).
        data_source: verl's ``data_source`` column (validation metrics are grouped by it).
        env: An env in ``mode`` to reuse.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    record = prompt_record(task, mode, env=env)
    return {
        "data_source": data_source,
        "prompt": record["prompt"],
        "ability": "tool_use",
        "reward_model": {"style": "rule", "ground_truth": task.id},
        "agent_name": AGENT_NAME,
        "extra_info": {"task": record["label"], "task_id": task.id, "mode": mode,
                       "index": index, "split": split},
    }


def write_verl_dataset(tasks: Iterable[Task], path: str | Path, *, mode: str = "direct",
                       split: str = "train", data_source: str = DATA_SOURCE) -> int:
    """Write one verl row per task to ``path``: Parquet (``.parquet``, what verl's examples
    use) or JSON lines (``.jsonl`` / ``.json``); RLHFDataset reads either.

    Args:
        tasks: The tasks, in row order (``index`` counts from 0).
        path: The file to write.
        mode: ``direct`` or ``gateway``.
        split: ``train`` or ``test``.
        data_source: verl's ``data_source`` column.

    Returns:
        The number of rows written.

    Raises:
        ValueError: ``path`` has another suffix, or there are no tasks.
        ImportError: A ``.parquet`` path without pyarrow installed.
    """
    path = Path(path)
    if path.suffix not in _SUFFIXES:
        raise ValueError(f"write a verl dataset to a {' / '.join(_SUFFIXES)} file, got {path}")
    env = CompoWorldEnv(mode=mode)
    rows = [verl_record(task, i, mode=mode, split=split, data_source=data_source, env=env)
            for i, task in enumerate(tasks)]
    if not rows:
        raise ValueError(f"no tasks to write to {path}")
    if path.suffix == ".parquet":
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:
            raise ImportError("writing Parquet needs pyarrow (pip install pyarrow, or "
                              "'compoenv[verl]'); or write .jsonl, which verl reads too") from None
        pq.write_table(pa.Table.from_pylist(rows), path)
    else:
        path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return len(rows)
