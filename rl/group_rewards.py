"""Roll out a group of samples per task and compare the plain rubric with the completion-focused
group reward that RL trainers receive (CPU, no model: a noisy oracle plays the policy).

Run: python rl/group_rewards.py [--tasks 4] [--group 8] [--seed 0]
"""

from __future__ import annotations

import argparse
import random
from typing import Any

from compoenv.agents import OracleAgent, RandomAgent
from compoenv.compose import Composer
from compoenv.env import CompoWorldEnv
from compoenv.reward import completion_focused
from compoenv.rollout import run_episode


class NoisyOracle:
    """Follows the solution but, with probability ``noise``, makes a random call in place of the
    planned one: a stand-in for a partly trained policy."""

    def __init__(self, noise: float, seed: int) -> None:
        self.oracle, self.random = OracleAgent(), RandomAgent(seed=seed, stop_prob=0.0)
        self.noise, self.rng = noise, random.Random(seed)

    def reset(self, observation: str, info: dict[str, Any]) -> None:
        self.oracle.reset(observation, info)

    def act(self, observation: str, info: dict[str, Any]) -> str:
        planned = self.oracle.act(observation, info)
        if self.rng.random() < self.noise and "<tool_call>" in planned:
            return self.random.act(observation, info)  # the planned call is lost
        return planned


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=4)
    parser.add_argument("--group", type=int, default=8, help="rollouts per task (G)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    tasks = list(Composer().generate(args.tasks, seed=args.seed))
    env = CompoWorldEnv(tasks, max_steps=10)
    for index, task in enumerate(tasks):
        group = [run_episode(env, NoisyOracle(noise=0.5 * i / args.group, seed=args.seed * 100 + i),
                             options={"index": index}, rollout_idx=i) for i in range(args.group)]
        passes = [[c["passed"] for c in t["meta"]["rubric"]] for t in group]
        weights = [c.weight for c in task.rubric]
        required = [c.required for c in task.rubric]
        rewards = completion_focused(passes, weights, required,
                                     kinds=[c.kind for c in task.rubric])
        print(f"task {task.id} ({', '.join(task.services)}, {task.hops} hops)")
        for t, r in zip(group, rewards):
            meta = t["meta"]
            print(f"  rollout {meta['rollout_idx']}: rubric {meta['rubric_score']:.2f} "
                  f"complete {meta['score']:.0f}  ->  group reward {r:.3f}")


if __name__ == "__main__":
    main()
