"""Task files are untrusted data: each one is validated against the library at load time,
cannot inject state, and is verified again before it becomes SFT or RL data; a task plays the
same whatever world model the player configures."""

from __future__ import annotations

import dataclasses
import json

import pytest
from click.testing import CliRunner

from compoenv.worldmodel.store import stateful_tools
from compoenv.agents import OracleAgent
from compoenv.cli import main
from compoenv.compose import Composer, ComposerConfig
from compoenv.env import CompoWorldEnv
from compoenv.registry import Registry
from compoenv.rollout import run_episode
from compoenv.task import AnswerCriterion, CallCriterion, Task, TaskFileError, save_tasks
from compoenv.task_check import load_checked
from compoenv.worldmodel import OfflineWorldModel


@pytest.fixture(scope="module")
def spec_tasks() -> list[Task]:
    """Tasks that report a value and whose solutions call simulated (spec-only) tools: what
    the world model answers decides what they must report."""
    tasks = Composer(config=ComposerConfig(min_hops=2, max_hops=4)).generate(200, seed=5)
    chosen = [t for t in tasks if t.answer and any(Registry.default().spec(c.name).simulated
                                                   for c in t.solution)]
    assert len(chosen) >= 10
    return chosen


def _file(tmp_path, lines):
    path = tmp_path / "tasks.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("change, message", [
    ({"seed": 10**30}, "field 'seed'"),
    ({"seed": -1}, "field 'seed'"),
    ({"date": "2026-02-30"}, "date must be an ISO date"),
    ({"date": "soon"}, "date must be an ISO date"),
    ({"services": []}, "field 'services'"),
])
def test_bad_fields_are_errors_naming_the_line_and_field(tmp_path, tasks50, change, message):
    bad = {**tasks50[1].model_dump(mode="json"), **change}
    path = _file(tmp_path, [tasks50[0].to_json(), json.dumps(bad)])
    with pytest.raises(TaskFileError, match=rf"tasks\.jsonl:2: .*{message}"):
        load_checked(path, Registry.default())


def _poisoned(task: Task, tool: str, data, patch) -> Task:
    key = f"{tool}|{{}}|0/x"
    recorded = {**task.recorded, "answers": {key: {"data": data, "patch": patch,
                                                   "source": "endpoint:x"}}}
    return task.model_copy(update={"recorded": recorded})


def test_recorded_answers_must_fit_the_tools_they_answer(spec_tasks):
    from compoenv.task_check import check_task

    task = spec_tasks[0]
    registry = Registry.default()
    read = next(s for s in registry.tools(task.services) if s.simulated and s.read_only)
    injected = {"crm_leads": {"L-999": {"id": "L-999", "name": "Injected"}}}
    cases = {
        "is read-only, but its recorded answer carries a state change":
            _poisoned(task, read.qualified_name, None, injected),
        "does not start with a tool of the task's services":
            _poisoned(task, "bank__nope", {}, {}),
        "'patch' maps collections": _poisoned(task, read.qualified_name, None, {"x": [1]}),
        "'data' does not match the return schema": _poisoned(task, read.qualified_name,
                                                             "not the schema", {}),
    }
    for message, bad in cases.items():
        assert any(message in e for e in check_task(bad, registry).errors), message
        with pytest.raises(TaskFileError, match=r"tasks\[0\]: task t-\w+: recorded"):
            load_checked([bad], registry)


def test_a_call_criterion_for_an_unknown_tool_is_an_error(tasks50):
    bad = tasks50[0].model_copy(update={"rubric": [*tasks50[0].rubric, CallCriterion(
        id="cx", description="", name="contacts__teleport")]})
    with pytest.raises(TaskFileError, match="expects a call of 'contacts__teleport'"):
        load_checked([bad], Registry.default())


def test_sft_and_export_refuse_unverified_tasks_and_empty_files(tmp_path, tasks50):
    # a rubric that any reply passes: playable, but not a verified task
    trivial = tasks50[0].model_copy(update={"rubric": [AnswerCriterion(
        id="c0", description="", value="done", required=True)]}).with_id()
    save_tasks([trivial], tmp_path / "t.jsonl")
    (tmp_path / "empty.jsonl").write_text("")
    runner = CliRunner()
    for source, message in (("t.jsonl", "no verified, passing trajectory"),
                            ("empty.jsonl", "holds no tasks")):
        result = runner.invoke(main, ["sft", "--tasks", str(tmp_path / source),
                                      "-o", str(tmp_path / "sft.jsonl")])
        assert result.exit_code == 1 and message in result.output, result.output
        assert not (tmp_path / "sft.jsonl").exists()
    for source, message in (("t.jsonl", "verifies"), ("empty.jsonl", "holds no tasks")):
        result = runner.invoke(main, ["export", "openrlhf", "--tasks", str(tmp_path / source),
                                      "-o", str(tmp_path / "p.jsonl")])
        assert result.exit_code == 1 and message in result.output, result.output
        assert not (tmp_path / "p.jsonl").exists()


class ShiftedModel:
    """A valid world model that answers differently from the offline one."""

    name = "shifted"

    def answer(self, request):
        answer = OfflineWorldModel().answer(dataclasses.replace(request, seed=request.seed + 1))
        return dataclasses.replace(answer, source=self.name)


def test_composed_tasks_record_who_answered_during_verification(spec_tasks):
    assert all(t.recorded["world_model"] == "offline" for t in spec_tasks)


def _tool_responses(tasks: list[Task], world_model, pinned: bool = True) -> list[list[dict]]:
    env = CompoWorldEnv(tasks, world_model=world_model)
    out = []
    for i in range(len(tasks)):
        record = run_episode(env, OracleAgent(), options={"index": i})
        assert record["meta"]["rubric_score"] == 1.0 or not pinned
        out.append([{k: v for k, v in json.loads(m["content"]).items() if k != "simulated"}
                    for m in record["messages"] if m["role"] == "tool"])
    return out


def test_the_solutions_calls_see_what_verification_saw_whatever_the_configured_model(
        spec_tasks):
    """An agent that makes the solution's calls reads the values the task was verified with
    (so the value it reports is the expected one), whatever world model the player set."""
    offline = _tool_responses(spec_tasks, None)
    assert _tool_responses(spec_tasks, ShiftedModel()) == offline
    # the pinning is what holds it: claim the tasks were verified with the shifted model
    unpinned = [t.model_copy(update={"recorded": {**t.recorded, "world_model": "shifted"}})
                for t in spec_tasks]
    assert _tool_responses(unpinned, ShiftedModel(), pinned=False) != offline


def test_calls_off_the_solutions_path_go_to_the_configured_model(spec_tasks):
    registry = Registry.default()
    def modelled(spec) -> bool:  # answered by the world model, not the service's records
        return spec.simulated and spec.name not in stateful_tools(registry.get(spec.service))

    def others(task: Task, call) -> list:  # modelled tools of the task off its path
        return [s for s in registry.tools(task.services) if modelled(s)
                and s.qualified_name != call.name and not s.parameters.get("required")]

    task, call = next((t, c) for t in spec_tasks for c in t.solution
                      if modelled(registry.spec(c.name)) and others(t, c))
    env = CompoWorldEnv([task], world_model=ShiftedModel())
    env.reset(options={"index": 0})
    pinned = env.session.call(call.name, call.arguments)
    assert pinned["success"] and pinned["simulated"].startswith("offline (pinned")
    spec = registry.spec(call.name)
    other = others(task, call)[0]
    result = env.session.call(other.qualified_name, {})
    assert result["success"] and result["simulated"] == "shifted", (spec, result)
