"""GRPO on compoenv tasks with AReaL: the trainer's agent workflow is compoenv's CompoenvAgent.

Run (GPUs, AReaL installed), from AReaL's checkout, with rl/areal/config.yaml merged into an
AReaL experiment config:
    python /path/to/compoenv/rl/areal/train_compoenv.py --config config.yaml

See docs/frameworks/areal.md.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from compoenv.integrations.episodes import task_rows
from compoenv.task import load_tasks

WORKFLOW = "compoenv.integrations.areal.CompoenvAgent"


def main(argv: list[str]) -> None:
    from areal import PPOTrainer
    from areal.api.cli_args import GRPOConfig, load_expr_config
    from datasets import Dataset

    @dataclass
    class CompoenvConfig(GRPOConfig):
        tasks: str = "tasks.jsonl"
        max_turns: int = 20

    config, _ = load_expr_config(argv, CompoenvConfig)
    tasks = load_tasks(config.tasks)
    cut = max(1, len(tasks) // 20)  # 5% held out for evaluation
    train = Dataset.from_list(task_rows(tasks[cut:]))
    valid = Dataset.from_list(task_rows(tasks[:cut]))
    kwargs = {"temperature": config.gconfig.temperature,
              "max_completion_tokens": config.gconfig.max_new_tokens,
              "max_turns": config.max_turns}
    with PPOTrainer(config, train_dataset=train, valid_dataset=valid) as trainer:
        trainer.train(workflow=WORKFLOW, eval_workflow=WORKFLOW, workflow_kwargs=kwargs,
                      eval_workflow_kwargs={**kwargs, "temperature": 0.6})


if __name__ == "__main__":
    main(sys.argv[1:])
