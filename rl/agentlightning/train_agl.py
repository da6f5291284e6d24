"""Agent Lightning on compoenv tasks: CompoenvAgent rollouts, the rubric score as reward.

Train (GPU, verl installed): python rl/agentlightning/train_agl.py --tasks tasks.jsonl \\
    --verl-config verl_config.yaml
A few rollouts through Agent Lightning's runner against any OpenAI-compatible endpoint (vLLM,
SGLang; CPU is fine), printing each rollout's reward, no training:
    python rl/agentlightning/train_agl.py --tasks tasks.jsonl --dev \\
        --base-url http://localhost:8000/v1 --model Qwen/Qwen3-4B

See docs/frameworks/agentlightning.md.
"""

from __future__ import annotations

import argparse
import asyncio

import agentlightning as agl

from compoenv.integrations.agentlightning import CompoenvAgent, task_rows
from compoenv.task import load_tasks


async def dev(agent: CompoenvAgent, items: list[dict], llm: agl.LLM) -> None:
    """Play ``items`` one by one with Agent Lightning's runner and print their rewards."""
    store = agl.InMemoryLightningStore()
    runner = agl.LitAgentRunner(tracer=agl.OtelTracer())
    runner.init(agent)
    runner.init_worker(0, store)
    try:
        for item in items:
            rollout = await runner.step(item, resources={"main_llm": llm})
            spans = await store.query_spans(rollout.rollout_id)
            print(f"{item['task']['id']}: {rollout.status}, reward "
                  f"{agl.find_final_reward(list(spans))}")
    finally:
        runner.teardown_worker(0)
        runner.teardown()


def main(args: argparse.Namespace) -> None:
    tasks = load_tasks(args.tasks)
    cut = max(1, len(tasks) // 20)  # 5% held out for validation
    train, valid = task_rows(tasks[cut:]), task_rows(tasks[:cut])
    agent = CompoenvAgent(mode=args.mode, max_steps=args.max_steps)
    if args.dev:
        llm = agl.LLM(endpoint=args.base_url, model=args.model,
                      sampling_parameters={"temperature": 0.7})
        asyncio.run(dev(agent, train[:args.runners], llm))
        return
    import yaml

    with open(args.verl_config) as fh:
        config = yaml.safe_load(fh)
    trainer = agl.Trainer(algorithm=agl.VERL(config), n_runners=args.runners)
    trainer.fit(agent, train_dataset=train, val_dataset=valid)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", required=True, help="compoenv task file (JSONL)")
    parser.add_argument("--mode", choices=["direct", "gateway"], default="direct")
    parser.add_argument("--max-steps", type=int, default=20)
    parser.add_argument("--runners", type=int, default=8, help="runners (--dev: rollouts)")
    parser.add_argument("--dev", action="store_true", help="a few rollouts, no training")
    parser.add_argument("--base-url", default="http://localhost:8000/v1")
    parser.add_argument("--model", default="Qwen/Qwen3-4B")
    parser.add_argument("--verl-config", help="Agent Lightning's VERL algorithm config (YAML)")
    main(parser.parse_args())
