"""GRPO on compoenv tasks with ART: groups of rollouts scored by the completion-focused reward.

Train (GPU): python rl/art/train_art.py --tasks tasks.jsonl --base-model Qwen/Qwen3-4B
Score only, against any OpenAI-compatible endpoint (vLLM, SGLang; CPU is fine):
    python rl/art/train_art.py --tasks tasks.jsonl --base-url http://localhost:8000/v1 \\
        --model Qwen/Qwen3-4B --steps 1

See docs/frameworks/art.md.
"""

from __future__ import annotations

import argparse
import asyncio

import art

from compoenv.integrations.art import completion_focused_group, rollout
from compoenv.task import load_tasks


async def main(args: argparse.Namespace) -> None:
    tasks = load_tasks(args.tasks)
    backend = None
    if args.base_url:  # score against a served model, no training
        model: art.Model = art.Model(name=args.model, project="compoenv",
                                     inference_base_url=args.base_url,
                                     inference_api_key=args.api_key,
                                     inference_model_name=args.model)
    else:
        from art.local import LocalBackend

        backend = LocalBackend()
        model = art.TrainableModel(name="compoenv-agent", project="compoenv",
                                   base_model=args.base_model)
        await model.register(backend)
    for step in range(args.steps):
        batch = [tasks[(step * args.tasks_per_step + i) % len(tasks)]
                 for i in range(args.tasks_per_step)]
        groups = await art.gather_trajectory_groups(
            (art.TrajectoryGroup(rollout(model, task, max_steps=args.max_steps,
                                         sampling={"temperature": 1.0})
                                 for _ in range(args.group)) for task in batch),
            after_each=completion_focused_group, max_exceptions=args.group)
        rubric = [t.metrics["independent_reward"] for g in groups for t in g.trajectories]
        print(f"step {step}: mean rubric score {sum(rubric) / max(1, len(rubric)):.3f} "
              f"over {len(rubric)} rollouts")
        if backend is not None:
            await backend.train(model, groups, learning_rate=args.lr)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", required=True, help="compoenv task file (JSONL)")
    parser.add_argument("--base-model", default="Qwen/Qwen3-4B")
    parser.add_argument("--base-url", help="score against this endpoint instead of training")
    parser.add_argument("--model", default="Qwen/Qwen3-4B", help="the endpoint's model name")
    parser.add_argument("--api-key", default="EMPTY")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--tasks-per-step", type=int, default=8)
    parser.add_argument("--group", type=int, default=8)
    parser.add_argument("--max-steps", type=int, default=20)
    parser.add_argument("--lr", type=float, default=1e-5)
    asyncio.run(main(parser.parse_args()))
