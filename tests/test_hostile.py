"""Reliability under hostile agents: bounded step work and output, bounded memory, no shared-state
poisoning, and Python actions that are not JSON data (each case of bench/hostile.py, fast)."""

from __future__ import annotations

import copy
import gc
import json
import subprocess
import sys
import weakref
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from compoenv.actions import (
    MAX_ARGUMENT_CHARS, MAX_CALLS_PER_ACTION, MAX_RESULT_CHARS, ToolCall, render_calls,
)
from compoenv.compose import Composer
from compoenv.env import CompoWorldEnv
from compoenv.registry import Registry
from compoenv.session import Session
from compoenv.spaces import MAX_OBSERVATION_CHARS
from compoenv.task import Task
from compoenv.world import World
from compoenv.worldmodel import OfflineWorldModel, Simulator, ToolRequest, simulator
from compoenv.worldmodel.offline import _FITS
from compoenv.worldmodel.simulator import _world_key, default_simulator, request_key

ROOT = Path(__file__).resolve().parents[1]
POST = "social_media__create_post"


@pytest.fixture(scope="module")
def social() -> Task:
    """A composed task that mounts the spec-only social_media service."""
    composer = Composer()
    return next(t for t in map(composer.sample, range(200)) if "social_media" in t.services)


def hermes(name: str, arguments: dict[str, Any], count: int = 1) -> str:
    return render_calls([ToolCall(name, arguments, f"call_{i}") for i in range(count)])


def tool_messages(env: CompoWorldEnv) -> list[dict[str, Any]]:
    """The tool messages of the last step, checked to answer its assistant message's calls."""
    last = max(i for i, m in enumerate(env.messages) if m["role"] == "assistant")
    calls, answers = env.messages[last]["tool_calls"], env.messages[last + 1:]
    assert [a["tool_call_id"] for a in answers] == [c["id"] for c in calls]
    json.dumps(env.messages, allow_nan=False)  # the transcript is strict JSON
    return answers


@pytest.fixture()
def digests(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Counts the records serialised for state versions."""
    count, original = [0], simulator._record_digest

    def counting(*args: Any) -> tuple[int, int]:
        count[0] += 1
        return original(*args)

    monkeypatch.setattr(simulator, "_record_digest", counting)
    yield count


# --- bounded step work ---------------------------------------------------------------------

def test_records_hashed_per_step_stay_constant_as_large_writes_pile_up(social, digests):
    env = CompoWorldEnv([social], max_steps=10)
    env.reset()
    seeded = len(env.session.state("social_media").records.get("post", {}))
    action, per_step = hermes(POST, {"text": "x" * 20_000}, 52), []
    for _ in range(5):
        before = digests[0]
        env.step(action)
        per_step.append(digests[0] - before)
    stored = env.session.state("social_media").records["post"]
    writes = per_step[-1]
    assert len(stored) == seeded + 5 * writes  # the writes that fit the budget were stored...
    # ...each hashed once a step (the first step also digests the collection the service's
    # records began with, once), however many posts pile up
    assert per_step[1:] == [writes] * 4 and 0 < writes <= 4 and per_step[0] <= 2 * writes


def test_a_write_costs_the_same_whatever_the_state_holds(digests):
    """One record hashed per new record, however many the collection holds already."""
    from notes_spec import Notes

    notes = Notes(World(0))
    notes.simulator = Simulator(OfflineWorldModel())
    costs = []
    for i in range(60):
        before = digests[0]
        notes.call("create_note", {"title": f"t{i}", "body": "b" * 100})
        costs.append(digests[0] - before)
    assert set(costs) == {1} and len(notes.state.records["note"]) == 60


def test_versions_kept_write_by_write_equal_versions_made_from_scratch():
    from notes_spec import Notes

    notes, sim = Notes(World(0)), Simulator(OfflineWorldModel())
    notes.simulator = sim
    for i in range(5):
        notes.call("create_note", {"title": f"t{i}", "body": "b"})
    kept = sim.version(notes)
    assert Simulator(OfflineWorldModel()).version(notes) == kept  # a fresh digest agrees
    other = Notes(World(0))
    other.simulator = Simulator(OfflineWorldModel())
    for i in range(5):
        other.call("create_note", {"title": f"t{i}", "body": "b"})
    assert other.simulator.version(other) == kept


def test_state_versions_are_the_same_in_another_process():
    script = ("import sys; sys.path.insert(0, 'tests')\n"
              "from notes_spec import Notes\n"
              "from compoenv.world import World\n"
              "from compoenv.worldmodel import OfflineWorldModel, Simulator\n"
              "n = Notes(World(3)); n.simulator = s = Simulator(OfflineWorldModel())\n"
              "for i in range(4): n.call('create_note', {'title': f'é{i}', 'body': 'b'})\n"
              "print(s.version(n))\n")
    runs = [subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                           text=True, check=True, env={"PYTHONHASHSEED": seed, "PATH": ""}).stdout
            for seed in ("1", "2")]
    assert runs[0] == runs[1] and len(runs[0].strip()) == 16


def test_rollback_gives_back_the_earlier_version():
    sim = Simulator(OfflineWorldModel())
    session = Session.for_names(["social_media"], World(0), simulator=sim)
    session.call(POST, {"text": "first"})
    service = session.service("social_media")
    before, point = sim.version(service), session.checkpoint()
    session.call(POST, {"text": "second"})
    assert sim.version(service) != before
    session.rollback(point)
    assert sim.version(service) == before


def test_answers_recorded_under_the_previous_key_scheme_still_replay():
    from notes_spec import Notes

    from compoenv.worldmodel.simulator import _legacy_version

    notes = Notes(World(0))
    notes.simulator = Simulator(OfflineWorldModel())
    notes.call("create_note", {"title": "a", "body": "b"})  # the state is no longer empty
    spec = Notes.tool_specs()["list_notes"]
    old_key = request_key(spec, {}, f"0/{_legacy_version(notes.state.records)}")
    notes.simulator.recorded = {old_key: {"data": [], "source": "endpoint:m"}}
    result = notes.call("list_notes", {})
    assert result["simulated"] == "recorded" and result["data"] == []


# --- per-action budget and bounded output --------------------------------------------------

def test_calls_past_the_call_budget_share_one_422_and_are_not_run(social):
    env = CompoWorldEnv([social], max_steps=5)
    env.reset()
    env.step(hermes(POST, {"text": "t"}, MAX_CALLS_PER_ACTION + 8))
    answers = tool_messages(env)
    assert len(answers) == MAX_CALLS_PER_ACTION + 1
    last = json.loads(answers[-1]["content"])
    assert last["error"]["code"] == 422 and "MAX_CALLS_PER_ACTION" in last["error"]["message"]
    assert "8 after them were not run" in last["error"]["message"]
    assert len(env.session.state("social_media").records["post"]) == MAX_CALLS_PER_ACTION


def test_calls_past_the_argument_budget_are_answered_422_and_later_small_ones_run(social):
    env = CompoWorldEnv([social], max_steps=5)
    env.reset()
    big = ToolCall(POST, {"text": "b" * 20_000}, "big")
    small = ToolCall(POST, {"text": "small"}, "small")
    env.step(render_calls([big, big, big, big, small]))
    results = [json.loads(a["content"]) for a in tool_messages(env)]
    assert [r["success"] for r in results] == [True, True, True, False, True]
    assert results[3]["error"]["code"] == 422
    assert "MAX_ARGUMENT_CHARS" in results[3]["error"]["message"]
    assert f"{MAX_ARGUMENT_CHARS:,}" in results[3]["error"]["message"]


@pytest.mark.parametrize("action, code, needle", [
    (hermes(POST, {"text": "m" * 1_000_000}), 422, "MAX_ARGUMENT_CHARS"),
    ('<tool_call>{"name": "a__b", "arguments": {}}</tool_call>' * 18_000, 422,
     "MAX_CALLS_PER_ACTION"),
    ("<tool_call>" + "[" * 5_000 + "</tool_call>", 400, "deep"),
    ('<tool_call>{"name": "' + POST + '", "arguments": {"text": "x", "likes": 1e999}}'
     "</tool_call>", 400, "out of range"),
    (hermes("x" * 300, {}), 400, "MAX_NAME_CHARS"),
    (hermes(POST, {"text": "x", "link": json.loads('{"a":' * 60 + "1" + "}" * 60)}), 400,
     "link"),
], ids=["one_mb_argument", "tiny_calls_1mb", "deep_json", "huge_float", "long_name",
        "nested_60"])
def test_hostile_text_actions_are_error_envelopes(social, action, code, needle):
    env = CompoWorldEnv([social], max_steps=5)
    env.reset()
    obs, *_ = env.step(action)
    assert len(obs) <= MAX_OBSERVATION_CHARS
    errors = [json.loads(a["content"])["error"] for a in tool_messages(env)
              if not json.loads(a["content"])["success"]]
    assert any(e["code"] == code and needle in e["message"] for e in errors), errors


def test_each_output_is_cut_so_the_observation_fits_and_stays_json(social):
    env = CompoWorldEnv([social], max_steps=10)
    env.reset()
    for _ in range(3):  # 9 posts of 20,000 characters, then pages of 5 of them
        env.step(hermes(POST, {"text": "p" * 20_000}, 3))
    author = next(iter(env.session.state("social_media").records["post"].values()))["author"]
    obs, *_ = env.step(hermes("social_media__list_posts", {"author": author},
                              MAX_CALLS_PER_ACTION))
    assert len(obs) <= MAX_OBSERVATION_CHARS
    for answer in tool_messages(env):
        result = json.loads(answer["content"])
        assert len(answer["content"]) <= MAX_RESULT_CHARS
        assert result["success"] and "truncated" in result and result["data"]


# --- bounded memory ------------------------------------------------------------------------

def test_the_answer_cache_is_bounded_in_bytes():
    from notes_spec import Notes

    notes = Notes(World(0))
    notes.simulator = sim = Simulator(OfflineWorldModel(), cache_bytes=50_000)
    for i in range(300):
        notes.call("create_note", {"title": f"t{i}", "body": "b" * 500})
    assert 0 < sim.cached_bytes <= 50_000
    assert sim.cached_bytes == sum(size for _, size in sim._cache.values())


def test_agent_arguments_are_cached_per_episode_and_freed_with_the_env(social):
    env = CompoWorldEnv([social], max_steps=5)
    env.reset()
    marker = "agent-" + "k" * 1_500
    env.step(hermes(POST, {"text": marker}))
    own = env.session.service("social_media").simulator
    assert own is not default_simulator() and own.cached_bytes > len(marker)
    shared = default_simulator()._cache or {}
    assert not any(marker in key for key in shared)  # the process-wide one never sees it
    assert not any(marker in key for key in map(str, _FITS))  # nor does the fit memo
    gone = weakref.ref(own)
    del env, own
    gc.collect()
    assert gone() is None


def test_every_spec_string_parameter_has_a_length_bound():
    def strings(node: Any) -> Iterator[dict[str, Any]]:
        if isinstance(node, dict):
            kind = node.get("type")
            if kind == "string" or (isinstance(kind, list) and "string" in kind):
                yield node
            for key, child in node.items():
                if key not in ("enum", "const", "default", "examples"):
                    yield from strings(child)
        elif isinstance(node, list):
            for child in node:
                yield from strings(child)

    specs = [s for s in Registry.default().tools() if s.args_model is None]
    found = [n for s in specs for n in strings(s.parameters)]
    assert len(found) > 144
    assert all("maxLength" in n or "enum" in n or "const" in n for n in found)


# --- shared state ---------------------------------------------------------------------------

def poisoned(task: Task, tool: str, arguments: dict[str, Any]) -> Task:
    """``task`` with a recorded answer for ``tool`` at the seeded state: a schema-valid record
    with id EVIL-1, also in the answer's patch."""
    registry, world = Registry.default(), World.get(task.seed, task.today())
    spec = registry.spec(tool)
    service = registry.get(spec.service).create(world)
    arguments = spec.validate(arguments)
    key = request_key(spec, arguments,
                      f"{_world_key(world)}/{Simulator(OfflineWorldModel()).version(service)}")
    made = OfflineWorldModel().answer(ToolRequest(registry.spec(POST), {"text": "injected"},
                                                  world, {}, seed=1)).data
    record = {**made, "id": "EVIL-1"}
    data = [record] if spec.returns.get("type") == "array" else record
    answer = {"data": data, "patch": {"post": {"EVIL-1": record}}, "source": "endpoint:x"}
    return task.model_copy(update={"recorded": {"answers": {key: answer}}})


def test_a_recorded_read_with_a_patch_never_changes_shared_state(social):
    author = World.get(social.seed, social.today()).people[1].name
    task = poisoned(social, "social_media__list_posts", {"author": author})
    victim, attacker = CompoWorldEnv([social]), CompoWorldEnv([social])
    attacker.reset(options={"task": task})  # a task given at reset is not checked on load
    attacker.step(hermes("social_media__list_posts", {"author": author}))
    assert json.loads(tool_messages(attacker)[0]["content"])["simulated"] == "recorded"
    events = attacker.session.service("social_media").simulator.events
    assert [e["event"] for e in events] == ["recorded_patch_ignored"]
    assert "EVIL-1" not in json.dumps(attacker.session.state("social_media").records)
    for env in (attacker, victim):  # later episodes, other envs on the same world
        env.reset()
        env.step(hermes("social_media__list_posts", {"author": author}))
        assert "EVIL-1" not in json.dumps(env.session.state("social_media").records)
        assert "EVIL-1" not in tool_messages(env)[0]["content"]
    seeded = Registry.default().get("social_media").create(World.get(social.seed, social.today()))
    assert "EVIL-1" not in json.dumps(seeded.state.records)


def test_a_recorded_write_patches_only_its_own_episode(social):
    task = poisoned(social, POST, {"text": "hello"})
    writer, other = CompoWorldEnv([task]), CompoWorldEnv([social])
    writer.reset()
    writer.step(hermes(POST, {"text": "hello"}))
    assert "EVIL-1" in writer.session.state("social_media").records["post"]
    for env in (writer, other):
        env.reset(options={"task": social})
        env.step(hermes("social_media__list_posts", {"author": "x"}))
        assert "EVIL-1" not in json.dumps(env.session.state("social_media").records)


def test_info_tools_and_task_are_read_only_and_copies_are_writable(social):
    one, two = CompoWorldEnv([social]), CompoWorldEnv([social])
    _, info = one.reset()
    _, theirs = two.reset()
    with pytest.raises(TypeError, match="read-only"):
        info["tools"][0]["function"]["name"] = "hijacked"
    with pytest.raises(TypeError, match="read-only"):
        info["tools"][0]["function"]["parameters"]["properties"].clear()
    with pytest.raises(TypeError, match="read-only"):
        info["task"]["services"].append("bank")
    mine = copy.deepcopy(info["tools"])
    mine[0]["function"]["name"] = "hijacked"
    assert theirs["tools"][0]["function"]["name"] != "hijacked"
    assert json.loads(json.dumps(info["task"]))["id"] == social.id


# --- Python actions that are not JSON data --------------------------------------------------

class _Broken(Mapping[str, Any]):
    def __getitem__(self, key: str) -> Any:
        raise RuntimeError("boom")

    def __iter__(self) -> Iterator[str]:
        return iter(["tool_calls"])

    def __len__(self) -> int:
        return 1


def _circular() -> dict[str, Any]:
    loop: dict[str, Any] = {"text": "x"}
    loop["self"] = loop
    return loop


@pytest.mark.parametrize("arguments, needle", [
    ({"text": {1, 2}}, "set"), ({"text": b"bytes"}, "bytes"),
    ({"text": "x", "likes": 10 ** 5_000}, "digits"), (_circular(), "Circular"),
    ({"text": "x", "likes": float("nan")}, "Out of range"),
    ({"text": "x", "likes": float("inf")}, "Out of range"),
    ({("a", "b"): "tuple key"}, "keys must be"), ({"text": object()}, "object"),
], ids=["set", "bytes", "huge_int", "circular", "nan", "inf", "tuple_key", "object"])
def test_python_actions_that_are_not_json_are_error_envelopes(social, arguments, needle):
    env = CompoWorldEnv([social], max_steps=5)
    env.reset()
    good = {"id": "ok", "type": "function", "function": {"name": POST,
                                                         "arguments": {"text": "fine"}}}
    bad = {"id": "bad", "type": "function", "function": {"name": POST, "arguments": arguments}}
    env.step({"role": "assistant", "content": "trying", "tool_calls": [bad, good]})
    results = [json.loads(a["content"]) for a in tool_messages(env)]
    assert not results[0]["success"] and results[0]["error"]["code"] == 400
    assert needle in results[0]["error"]["message"] and "not JSON data" in \
        results[0]["error"]["message"]
    assert results[1]["success"]  # the call that is data still runs


@pytest.mark.parametrize("action", [_Broken(), {1, 2}, b"<tool_call>", 42, None,
                                    {"name": POST, "arguments": {"text": {1}}},
                                    [{"name": POST, "arguments": {"text": "p" * 2_000_000}}]],
                         ids=["broken_mapping", "set", "bytes", "int", "none",
                              "call_with_set", "over_action_limit"])
def test_any_python_object_as_an_action_is_an_error_envelope(social, action):
    env = CompoWorldEnv([social], max_steps=5)
    env.reset()
    obs, reward, terminated, truncated, _ = env.step(action)
    result = json.loads(tool_messages(env)[0]["content"])
    assert not result["success"] and result["error"]["code"] in (400, 422)
    assert not terminated and reward == 0.0 and len(obs) <= MAX_OBSERVATION_CHARS


def test_hostile_bench_prints_every_figure_and_target():
    config = ("Config(growth_steps=3, growth_repeats=1, case_steps=1, mb_episodes=2, "
              "soak_episodes=20, soak_points=2, soak_tasks=2)")
    script = ("import json\nfrom bench.hostile import Config, run\n"
              f"print(json.dumps(run({config})))")
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout)
    assert set(result["targets"]) == set(result["meets"]) and result["cases"]
    # one per write that fits; the first step also digests the posts the service began with
    hashed = result["large_writes_records_hashed_per_step"]
    assert hashed[0] == 3 and max(hashed) <= 2 * hashed[0]
    assert all(case["obs_chars"] <= MAX_OBSERVATION_CHARS for case in result["cases"].values())
    assert len(result["soak_rss_curve_mb"]) == 2 and result["soak_process_caches"]
