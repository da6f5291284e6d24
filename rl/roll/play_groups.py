"""Play compoenv/CompoWorld-v0 in a GEM vector env the way ROLL groups rollouts (CPU, no model).

Each group's envs are reset with one seed, so they play one task; rollout i of a group makes
the first i/(G-1) of the oracle's calls and then the oracle's final reply, standing in for a
policy of mixed skill. Prints each rollout's rubric score (the env reward) and the
completion-focused reward over its group.

Run: python rl/roll/play_groups.py [--groups 2] [--group-size 4] [--seed 0] [--async]
"""

from __future__ import annotations

import argparse

import gem

from compoenv.actions import ToolCall, render_calls
from compoenv.compose import Composer, ComposerConfig
from compoenv.compose.verify import oracle_message
from compoenv.integrations.gem import ENV_ID
from compoenv.reward import completion_focused
from compoenv.task import Task


def script(task: Task, share: float) -> list[str]:
    """The first ``share`` of the oracle's calls, one an action, then its final reply."""
    calls = task.solution[: round(share * len(task.solution))]
    return [*(render_calls([ToolCall(c.name, c.arguments, f"call_{i}")], "hermes")
              for i, c in enumerate(calls)), oracle_message(task)]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=2)
    parser.add_argument("--group-size", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--async", dest="async_mode", action="store_true",
                        help="step the envs in a thread pool (GEM's AsyncVectorEnv)")
    args = parser.parse_args(argv)
    if args.groups < 1 or args.group_size < 2:
        parser.error("need at least one group of at least two rollouts")
    tasks = list(Composer(config=ComposerConfig(min_hops=2, max_hops=3)).generate(
        args.groups, seed=args.seed))
    size = args.groups * args.group_size
    envs = gem.make_vec([ENV_ID] * size, tasks=tasks, async_mode=args.async_mode)
    seeds = [args.seed + g for g in range(args.groups) for _ in range(args.group_size)]
    _, infos = envs.reset(seed=seeds)  # ROLL: one seed per group
    task_of = {t.id: t for t in tasks}
    scripts = [script(task_of[info["task_id"]], (i % args.group_size) / (args.group_size - 1))
               for i, info in enumerate(infos)]
    ended: dict[int, dict] = {}
    for turn in range(max(map(len, scripts))):
        active = {i: s[turn] for i, s in enumerate(scripts) if turn < len(s) and i not in ended}
        _, rewards, terminated, truncated, step_infos = envs.step(active)
        for i, reward, done, info in zip(active, rewards, terminated | truncated, step_infos):
            if done:  # the vector env has already reset i: the final info is prev_episode
                ended[i] = {"reward": float(reward), **info.get("prev_episode", info)}
    for g in range(args.groups):
        members = range(g * args.group_size, (g + 1) * args.group_size)
        task = task_of[infos[members[0]]["task_id"]]
        passes = [ended[i]["passes"] for i in members]
        group = completion_focused(passes, [c.weight for c in task.rubric],
                                   [c.required for c in task.rubric],
                                   kinds=[c.kind for c in task.rubric])
        print(f"group {g}: seed {seeds[members[0]]}, task {task.id} ({task.hops} hops)")
        for i, value in zip(members, group):
            print(f"  rollout {i % args.group_size}: calls {len(scripts[i]) - 1}/{task.hops}  "
                  f"rubric {ended[i]['reward']:.2f}  ->  group reward {value:.3f}")


if __name__ == "__main__":
    main()
