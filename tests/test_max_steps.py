"""max_steps not given: every episode gets enough actions for its own task's solution."""

from __future__ import annotations

import gymnasium as gym

import compoenv  # noqa: F401  registers CompoWorld-v0
from compoenv.agents import OracleAgent
from compoenv.env import DEFAULT_MAX_STEPS, CompoWorldEnv, steps_for
from compoenv.integrations.openenv import ServedTasks
from compoenv.task import Task


def _long(task: Task, extra: int = 26) -> Task:
    """``task`` with one of its reads repeated ``extra`` times: a longer solution that still
    passes (reads are free)."""
    reads = {c.name for c in task.rubric if c.kind == "call"}
    at = next(i for i, c in enumerate(task.solution) if c.name in reads)
    solution = list(task.solution)
    solution[at + 1:at + 1] = [solution[at]] * extra
    return task.model_copy(update={"solution": solution, "id": task.id + "-long"})


def _with_reads(tasks: list[Task]) -> list[Task]:
    return [t for t in tasks if any(c.kind == "call" for c in t.rubric)]


def _oracle(env, **reset) -> tuple[float, bool, dict]:
    obs, info = env.reset(**reset)
    agent = OracleAgent()
    agent.reset(obs, info)
    while True:
        obs, reward, term, trunc, info = env.step(agent.act(obs, info))
        if term or trunc:
            return reward, trunc, info


def test_a_task_given_at_reset_gets_enough_steps_for_its_solution(tasks50):
    short, other = _with_reads(tasks50)[:2]
    long = _long(short)
    assert len(long.solution) > DEFAULT_MAX_STEPS
    env = gym.make("CompoWorld-v0")
    reward, truncated, info = _oracle(env, options={"task": long})
    assert reward == 1.0 and not truncated and info["passed"] == 1.0
    assert env.unwrapped.max_steps == len(long.solution) + 4 == env.spec.max_episode_steps
    env.reset(options={"task": other})  # the limit follows the episode's task
    assert env.unwrapped.max_steps == steps_for([other]) == DEFAULT_MAX_STEPS


def test_a_task_set_follows_each_episode_and_covers_the_longest_before_reset(tasks50):
    short = _with_reads(tasks50)[0]
    long = _long(short, extra=40)
    env = CompoWorldEnv([short, long])
    assert env.max_steps == len(long.solution) + 4  # before any reset: the longest
    reward, truncated, _ = _oracle(env, options={"index": 1})
    assert reward == 1.0 and not truncated
    env.reset(options={"index": 0})
    assert env.max_steps == DEFAULT_MAX_STEPS


def test_a_given_max_steps_holds_for_every_task(tasks50):
    long = _long(_with_reads(tasks50)[0])
    env = CompoWorldEnv([long], max_steps=5)
    reward, truncated, _ = _oracle(env)
    assert truncated and env.max_steps == 5


def test_served_tasks_leave_each_episode_its_own_limit(tasks50):
    short = _with_reads(tasks50)[0]
    long = _long(short)
    served = ServedTasks([short, long])
    assert served.max_steps == len(long.solution) + 4  # what a server announces: the most
    env = served.new_env()
    env.reset(options={"task": long})
    assert env.max_steps == len(long.solution) + 4
    env.reset(options={"task": short})
    assert env.max_steps == DEFAULT_MAX_STEPS
    assert ServedTasks([long], max_steps=7).new_env().max_steps == 7
