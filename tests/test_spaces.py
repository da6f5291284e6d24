"""Text spaces: exact round trips through shared memory, and vector envs that agree."""

from __future__ import annotations

import json
import multiprocessing as mp

import gymnasium as gym
import pytest
from gymnasium.vector.utils import (
    create_shared_memory, read_from_shared_memory, write_to_shared_memory,
)

import compoenv  # noqa: F401  (registers CompoWorld-v0)
from compoenv.actions import MAX_ACTION_CHARS
from compoenv.env import CompoWorldEnv
from compoenv.spaces import MAX_OBSERVATION_CHARS, TextSpace, bounded


def test_shared_memory_round_trips_any_unicode_and_sees_every_write():
    space = TextSpace(64)
    buffer = create_shared_memory(space, n=3, ctx=mp)
    view = read_from_shared_memory(space, buffer, n=3)
    texts = ["plain", "émoji 🙂 and 日本語", "\n\t<tool_response>{}</tool_response>"]
    for i, text in enumerate(texts):
        write_to_shared_memory(space, i, text, buffer)
    assert list(view) == texts
    write_to_shared_memory(space, 1, "second write", buffer)
    assert view[1] == "second write"          # a live view, not a copy made at construction
    assert view[-1] == texts[2] and view[:2] == ("plain", "second write")
    import copy

    assert copy.deepcopy(view) == ("plain", "second write", texts[2])


def test_shared_memory_is_bounded_by_the_observation_limit():
    space = TextSpace(MAX_OBSERVATION_CHARS)
    assert space.slot_bytes <= 8 + 4 * MAX_OBSERVATION_CHARS <= 1.1 * 2**20
    buffer = create_shared_memory(space, n=1, ctx=mp)
    write_to_shared_memory(space, 0, "x" * (MAX_OBSERVATION_CHARS + 50), buffer)
    text = read_from_shared_memory(space, buffer)[0]
    assert len(text) == MAX_OBSERVATION_CHARS and text.endswith("characters, over the limit "
                                                                f"of {MAX_OBSERVATION_CHARS:,}]")


def test_tool_output_limits_keep_a_full_action_inside_the_observation():
    from compoenv.actions import MAX_CALLS_PER_ACTION, MAX_RESULT_CHARS
    from compoenv.spaces import SAFE_OUTPUT_CHARS, TOOL_RESPONSE, tool_output_limit

    responses = MAX_CALLS_PER_ACTION + 1  # the budget's calls and the error for the rest
    for short in (0, 5, responses):  # some short responses first, then every one at its share
        outputs = [TOOL_RESPONSE.format("s" * SAFE_OUTPUT_CHARS) for _ in range(short)]
        while len(outputs) < responses:
            limit = tool_output_limit(outputs, responses)
            assert limit >= SAFE_OUTPUT_CHARS
            outputs.append(TOOL_RESPONSE.format("x" * limit))
        assert len("\n".join(outputs)) <= MAX_OBSERVATION_CHARS
    assert tool_output_limit([], 1) == MAX_RESULT_CHARS


def test_bounded_keeps_short_text_and_cuts_long_text_with_a_note():
    assert bounded("abc", 10) == "abc"
    cut = bounded("y" * 500, 100)
    assert len(cut) == 100 and cut.startswith("y") and "truncated" in cut


def _first_calls(infos) -> tuple[str, ...]:
    """Each env's first oracle call (vector infos batch the task dict field by field)."""
    return tuple(f"<tool_call>{json.dumps(solution[0])}</tool_call>"
                 for solution in infos["task"]["solution"])


@pytest.mark.parametrize("kwargs", [{"mode": "direct"}, {"mode": "gateway"}])
def test_async_and_sync_vector_envs_give_the_same_observations(kwargs):
    runs = {}
    for mode in ("sync", "async"):
        envs = gym.make_vec("CompoWorld-v0", num_envs=3, vectorization_mode=mode, **kwargs)
        try:
            obs, infos = envs.reset(seed=5)
            seen = [tuple(obs)]
            for _ in range(2):
                obs, rewards, terminated, truncated, infos = envs.step(_first_calls(infos))
                seen.append(tuple(obs))
            runs[mode] = seen
        finally:
            envs.close()
    assert runs["sync"] == runs["async"]
    first = runs["async"][0]
    assert len(set(first)) == 3 and all("<tools>" in o or "list_services" in o for o in first)
    assert all("<tool_response>" in o for o in runs["async"][1])


def test_action_space_matches_the_action_limit_and_samples_are_accepted():
    env = gym.make("CompoWorld-v0", hops=(2, 2))
    assert env.action_space.max_length == MAX_ACTION_CHARS
    assert env.observation_space.max_length == MAX_OBSERVATION_CHARS
    env.reset(seed=0)
    sample = env.action_space.sample()
    assert len(sample) <= MAX_ACTION_CHARS and env.action_space.contains(sample)
    obs, *_ = env.step(sample)  # printable noise: a final answer, or a parse error, not a limit
    assert "over the limit" not in obs
    over = CompoWorldEnv(hops=(2, 2))
    over.reset(seed=0)
    obs, *_ = over.step("<tool_call>" + "x" * MAX_ACTION_CHARS + "</tool_call>")
    assert "over the limit" in obs and over.observation_space.contains(obs)


def test_spec_max_episode_steps_is_the_envs_max_steps():
    assert gym.make("CompoWorld-v0", max_steps=7).spec.max_episode_steps == 7
    # composing: scenario jobs by default (long), free walks with hops or scenarios="none"
    assert gym.make("CompoWorld-v0").spec.max_episode_steps == 48
    assert gym.make("CompoWorld-v0", hops=(2, 4)).spec.max_episode_steps == 20
    assert gym.make("CompoWorld-v0", scenarios="none").spec.max_episode_steps == 20
    remade = gym.make(gym.make("CompoWorld-v0", max_steps=3).spec)
    assert remade.unwrapped.max_steps == 3 and remade.spec.max_episode_steps == 3
