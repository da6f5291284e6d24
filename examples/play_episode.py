"""Play one composed task with the oracle and with a random agent; print the transcript.

Run: python examples/play_episode.py [--mode gateway] [--seed 3]
"""

from __future__ import annotations

import argparse

import gymnasium as gym

import compoenv  # noqa: F401  (registers CompoWorld-v0)
from compoenv.agents import OracleAgent, RandomAgent
from compoenv.rollout import run_episode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=["direct", "gateway"], default="direct")
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args()
    # a scenario job, as `compoenv generate` composes; its step limit follows the task
    env = gym.make("CompoWorld-v0", mode=args.mode).unwrapped
    for agent in (OracleAgent(), RandomAgent(seed=args.seed)):
        trajectory = run_episode(env, agent, seed=args.seed)
        print(f"=== {type(agent).__name__}: rubric score {trajectory['meta']['rubric_score']:.2f}")
        for message in trajectory["messages"][1:]:
            text = message.get("content") or ""
            calls = [c["function"]["name"] for c in message.get("tool_calls", [])]
            print(f"{message['role']:>9}: {text[:160]}{' -> ' + ', '.join(calls) if calls else ''}")


if __name__ == "__main__":
    main()
