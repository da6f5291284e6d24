"""GRPO with TRL on CPU: a model acts in compoenv's environment and learns from the rubric reward.

Run: python examples/trl_grpo_cpu.py [--steps 3] [--tasks 4] [--group 4] [--model PATH]

Without --model a tiny random Qwen3 is built on the fly (no download), and the tasks are ones it
can pass: single-call writes whose arguments the request states (add a lead, open a ticket).
It is warm-started by imitating each task's oracle call (a short SFT, as `compoenv sft` data
would give), so sampling at temperature 1 makes the call right in some rollouts of a group
and wrong in others: the rewards differ within a group, which is GRPO's learning signal. With
--model PATH (a local or hub chat model with a tool-calling template, e.g. Qwen3-0.6B) that
model is trained as it is, on composed multi-call tasks. Each rollout gets one
CompoWorldToolEnv; the reward is the completion-focused group reward over the rubric
(compoenv.integrations.trl). Each step prints the reward, its spread within groups (0 means
no signal) and the pass rate.
"""

from __future__ import annotations

import argparse
import os
import tempfile

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # environment_factory is experimental

from compoenv.compose import Composer, ComposerConfig  # noqa: E402
from compoenv.integrations.trl import (CompoWorldDirectToolEnv, CompoWorldToolEnv,  # noqa: E402
                                       completion_focused_reward, environment_tools,
                                       make_dataset, opening_messages, rubric_reward)

EMPTY_THINK = "<think>\n\n</think>\n\n"


def compose(count: int, seed: int, tiny: bool) -> list:
    """The tasks: for the tiny model, single-call writes (the request states every argument);
    for a real model, 2-call tasks across two services."""
    if not tiny:
        return list(Composer(config=ComposerConfig(min_hops=2, max_hops=2)).generate(
            count, seed=seed))
    composer = Composer(config=ComposerConfig(min_hops=1, max_hops=1, min_services=1))
    writes = []
    for task in composer.generate(count * 12, seed=seed):
        if "write" in task.capabilities and len(task.solution) == 1:
            writes.append(task)
        if len(writes) == count:
            return writes
    raise SystemExit(f"composed only {len(writes)} single-call write tasks of {count}")


def oracle_call(task) -> dict:
    """The assistant message that makes the task's one call through the env's call_tool."""
    call = task.solution[0]
    return {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {
        "name": "call_tool", "arguments": {"tool_name": call.name,
                                           "arguments": call.arguments}}}]}


def load_model(path: str | None, tasks, dataset, env_class, warmup: int):
    """The policy and its tokenizer: ``path``, or a tiny model warm-started on the tasks'
    oracle calls."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if path is not None:
        return AutoModelForCausalLM.from_pretrained(path), AutoTokenizer.from_pretrained(path)
    from compoenv.tiny_lm import imitate, tiny_lm_path

    folder = tiny_lm_path(chat_template="qwen3", extra_tokens=(EMPTY_THINK,))
    model = AutoModelForCausalLM.from_pretrained(folder)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    if warmup:
        env = env_class()
        conversations = [opening_messages(row, env) for row in dataset]
        losses = imitate(model, tokenizer, conversations, [oracle_call(t) for t in tasks],
                         environment_tools(env), steps=warmup)
        print(f"warm start: {warmup} steps imitating each task's oracle call, loss "
              f"{losses[0]:.2f} -> {losses[-1]:.2f}")
    return model, tokenizer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="A chat model to train (default: tiny).")
    parser.add_argument("--steps", type=int, default=3, help="GRPO steps.")
    parser.add_argument("--tasks", type=int, default=4, help="Composed tasks to train on.")
    parser.add_argument("--group", type=int, default=4, help="Rollouts per task (G).")
    parser.add_argument("--mode", choices=["gateway", "direct"], default="gateway")
    parser.add_argument("--reward", choices=["completion_focused", "rubric"],
                        default="completion_focused")
    parser.add_argument("--warmup", type=int, default=500,
                        help="Warm-start steps of the tiny model.")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    from trl import GRPOConfig, GRPOTrainer

    tiny = args.model is None
    if tiny and "OMP_NUM_THREADS" not in os.environ:
        import torch

        # a 28k-parameter model gains nothing from intra-op threads, and on a machine whose
        # cores are busy they wait on each other: one thread is ten times faster there
        torch.set_num_threads(1)
    tasks = compose(args.tasks, args.seed, tiny)
    dataset = make_dataset(tasks, mode=args.mode)
    env_class = CompoWorldToolEnv if args.mode == "gateway" else CompoWorldDirectToolEnv
    model, tokenizer = load_model(args.model, tasks, dataset, env_class, args.warmup)
    config = GRPOConfig(
        output_dir=tempfile.mkdtemp(prefix="compoenv-grpo-"), max_steps=args.steps,
        per_device_train_batch_size=args.group, num_generations=args.group,
        max_completion_length=192 if tiny else 1024,
        max_tool_calling_iterations=2 if tiny else 8,
        learning_rate=1e-3 if tiny else 1e-6, temperature=1.0, logging_steps=1,
        report_to="none", save_strategy="no", use_cpu=True, disable_tqdm=True, seed=args.seed)
    reward = completion_focused_reward if args.reward == "completion_focused" else rubric_reward
    trainer = GRPOTrainer(model=model, processing_class=tokenizer, args=config,
                          train_dataset=dataset, environment_factory=env_class,
                          reward_funcs=[reward])
    trainer.train()
    name = reward.__name__
    for log in trainer.state.log_history:
        if f"rewards/{name}/mean" in log:
            print(f"step {log['step']}: reward {log[f'rewards/{name}/mean']:.3f}, spread "
                  f"within groups {log['reward_std']:.3f} (groups with none: "
                  f"{log.get('frac_reward_zero_std', float('nan')):.0%}), rubric score "
                  f"{log['compoenv/rubric_score']:.3f}, pass rate "
                  f"{log['compoenv/pass_rate']:.2f}, tool calls per rollout "
                  f"{log['tools/call_frequency']:.2f}, tool errors per rollout "
                  f"{log['compoenv/tool_errors']:.2f}")
    env = trainer.environments[0]
    print(f"last rollout of task {env.trajectory['meta']['task_id']}:")
    for message in env.trajectory["messages"][2:]:
        calls = [c["function"]["name"] for c in message.get("tool_calls", [])]
        text = (message.get("content") or "")[:100].replace("\n", " ")
        print(f"  {message['role']:>9}: {text}{' -> ' + ', '.join(calls) if calls else ''}")
    print(f"trained {trainer.state.global_step} GRPO steps on {len(tasks)} tasks")


if __name__ == "__main__":
    main()
