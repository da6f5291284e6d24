"""Task files checked against the library at load time: missing services and tools are errors
naming the line, changed service versions are warnings; tasks are picked by index or id."""

from __future__ import annotations

import warnings

import pytest

from compoenv.env import CompoWorldEnv
from compoenv.registry import Registry
from compoenv.task import TaskFileError, save_tasks
from compoenv.task_check import StaleTaskWarning, check_task, load_checked


@pytest.fixture()
def task_file(tmp_path, tasks50):
    path = tmp_path / "tasks.jsonl"
    save_tasks(tasks50[:4], path)
    return path


def _rewrite_line(path, index, task):
    lines = path.read_text().splitlines()
    lines[index] = task.to_json()
    path.write_text("\n".join(lines) + "\n")


def test_a_task_whose_service_is_missing_is_an_error_naming_the_line(task_file, tasks50):
    broken = tasks50[2].model_copy(update={"services": [*tasks50[2].services[:-1],
                                                        "contactz"]})
    _rewrite_line(task_file, 2, broken)
    with pytest.raises(TaskFileError, match=r"tasks\.jsonl:3: task t-\w+: Unknown service "
                                            r"'contactz'\. Did you mean 'contacts'\?"):
        CompoWorldEnv(str(task_file))


def test_a_solution_calling_an_unknown_tool_is_an_error(task_file, tasks50):
    task = tasks50[1]
    call = task.solution[0].model_copy(update={"name": task.solution[0].name + "_v2"})
    _rewrite_line(task_file, 1, task.model_copy(update={"solution": [call, *task.solution[1:]]}))
    with pytest.raises(TaskFileError, match=r":2: .*solution call 0: Unknown tool"):
        load_checked(task_file, Registry.default())


def test_a_changed_service_version_warns_once_per_service_with_the_count(task_file, tasks50):
    service = tasks50[0].services[0]
    stale = [t.model_copy(update={"fingerprint": {**t.fingerprint, service: "0.9"}})
             for t in tasks50[:4] if service in t.services]
    with pytest.warns(StaleTaskWarning, match=rf"{len(stale)} task\(s\) were composed with "
                                              rf"version '0.9' of service '{service}'"):
        tasks = load_checked(stale, Registry.default())
    assert tasks == stale  # a warning: the tasks still load
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_checked(tasks50[:4], Registry.default())  # current versions: silent


def test_a_rubric_grading_a_service_the_task_does_not_mount_is_an_error(tasks50):
    task = next(t for t in tasks50 if any(getattr(c, "service", None) for c in t.rubric))
    criterion = next(c for c in task.rubric if getattr(c, "service", None))
    bad = task.model_copy(update={"rubric": [criterion.model_copy(update={"service": "weather"
                                             if "weather" not in task.services else "bank"})]})
    assert "does not mount" in check_task(bad, Registry.default()).errors[0]


def test_files_that_are_not_task_files_get_one_line_errors(tmp_path):
    binary = tmp_path / "tasks.jsonl.gz"
    binary.write_bytes(b"\x1f\x8b\x08\x00\xff\xfe\x00garbage")
    with pytest.raises(TaskFileError, match="not UTF-8 text"):
        load_checked(binary, Registry.default())
    with pytest.raises(TaskFileError, match="is a directory"):
        load_checked(tmp_path, Registry.default())
    with pytest.raises(TaskFileError, match=r"tasks\[0\]: not a valid task"):
        load_checked([{"instruction": "hi"}], Registry.default())


def test_reset_plays_a_task_by_index_or_by_id(tasks50):
    env = CompoWorldEnv(tasks50[:5])
    _, info = env.reset(options={"index": 7})  # modulo the number of tasks
    assert info["task"]["id"] == tasks50[2].id
    _, info = env.reset(options={"task": tasks50[3].id})
    assert info["task"]["id"] == tasks50[3].id
    _, info = env.reset(options={"task": tasks50[4].to_json()})
    assert info["task"]["id"] == tasks50[4].id


def test_an_unknown_task_id_is_explained(tasks50):
    env = CompoWorldEnv(tasks50[:5])
    with pytest.raises(ValueError, match=rf"Unknown task id '{tasks50[1].id}x'\. Did you mean "
                                         rf"'{tasks50[1].id}'\? \(5 tasks loaded\)"):
        env.reset(options={"task": tasks50[1].id + "x"})
    with pytest.raises(ValueError, match="no task set to look it up in"):
        CompoWorldEnv().reset(options={"task": "t-0123"})


def test_iterating_a_task_file_plays_every_task_in_order(task_file, tasks50):
    env = CompoWorldEnv(str(task_file))
    ids = [env.reset(options={"index": i})[1]["task"]["id"] for i in range(len(env.tasks))]
    assert ids == [t.id for t in tasks50[:4]]


def test_a_task_file_is_checked_once_and_shared_by_every_env_on_it(task_file, tasks50):
    first, second = CompoWorldEnv(str(task_file)), CompoWorldEnv(task_file)
    assert isinstance(first.tasks, tuple) and first.tasks is second.tasks
    assert first.reset(options={"index": 1})[1]["task"]["id"] == tasks50[1].id
    _rewrite_line(task_file, 0, tasks50[4])  # a file rewritten since is read again
    third = CompoWorldEnv(str(task_file))
    assert third.tasks is not first.tasks and third.tasks[0].id == tasks50[4].id


def test_a_shared_task_file_warns_each_env_of_its_stale_services(task_file, tasks50):
    service = tasks50[0].services[0]
    _rewrite_line(task_file, 0, tasks50[0].model_copy(
        update={"fingerprint": {**tasks50[0].fingerprint, service: "0.9"}}))
    for _ in range(2):  # the second env reuses the check, and is told the same
        with pytest.warns(StaleTaskWarning, match=rf"tasks\.jsonl:1: 1 task\(s\) .* '{service}'"):
            CompoWorldEnv(str(task_file))
