"""The compoenv command line."""

from __future__ import annotations

import json

import pytest

from click.testing import CliRunner

from compoenv.cli import main
from compoenv.task import load_tasks


def test_demo_runs_oracle_and_random_on_composed_tasks():
    result = CliRunner().invoke(main, ["demo", "--num", "3", "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["tasks"] == 3 and summary["oracle_mean"] == 1.0
    assert summary["random_mean"] < 1.0
    assert all(len(r["services"]) >= 2 for r in summary["rows"])


def test_demo_table_output_in_gateway_mode():
    result = CliRunner().invoke(main, ["demo", "--num", "2", "--mode", "gateway"])
    assert result.exit_code == 0, result.output
    assert "oracle" in result.output and "1.00" in result.output


def test_generate_writes_a_valid_jsonl_task_file(tmp_path):
    out = tmp_path / "tasks.jsonl"
    result = CliRunner().invoke(main, ["generate", "--num", "5", "--seed", "4", "-o", str(out),
                                       "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["tasks"] == 5 and len(load_tasks(out)) == 5


def test_generate_rejects_impossible_hop_settings(tmp_path):
    result = CliRunner().invoke(main, ["generate", "--num", "1", "--min-hops", "5",
                                       "--max-hops", "2", "-o", str(tmp_path / "x.jsonl")])
    assert result.exit_code == 2 and "--min-hops" in result.output


def test_services_and_graph_commands():
    runner = CliRunner()
    services = runner.invoke(main, ["services"])
    assert services.exit_code == 0 and "contacts" in services.output
    graph = runner.invoke(main, ["graph"])
    assert graph.exit_code == 0 and json.loads(graph.output)["edges"] > 0


def test_a_world_model_that_cannot_be_built_is_a_usage_error(monkeypatch):
    monkeypatch.delenv("COMPOENV_LLM_BASE_URL", raising=False)
    for command in (["demo", "--num", "1"], ["generate", "--num", "1", "-o", "/dev/null"]):
        result = CliRunner().invoke(main, [*command, "--world-model", "endpoint"])
        assert result.exit_code == 2 and "COMPOENV_LLM_BASE_URL" in result.output


def _no_traceback(result) -> None:
    assert "Traceback" not in result.output, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception


@pytest.mark.parametrize("args, message", [
    (["demo", "--num", "0"], "--num"),
    (["demo", "--min-hops", "4", "--max-hops", "2"], "--min-hops"),
    (["generate", "--num", "0", "-o", "x.jsonl"], "--num"),
    (["sft", "--num", "0", "-o", "x.jsonl"], "--num"),
    (["generate", "-o", "missing_dir/tasks.jsonl"], "does not exist"),
    (["generate", "-o", "."], "is a directory"),
    (["sft", "--tasks", ".", "-o", "sft.jsonl"], "is a directory"),
    (["sft", "--num", "3", "-o", "missing_dir/sft.jsonl"], "does not exist"),
    (["export", "openrlhf", "--tasks", "nope.jsonl", "-o", "p.jsonl"], "does not exist"),
    (["demo", "--tasks", "3"], "does not exist"),
    (["services", "contactz"], "Did you mean 'contacts'?"),
])
def test_usage_errors_are_one_line_with_the_fix(tmp_path, monkeypatch, args, message):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, args)
    assert result.exit_code in (1, 2), result.output
    assert message in result.output and "Error:" in result.output
    _no_traceback(result)
    assert not list(tmp_path.iterdir())  # nothing written before the check


def test_output_paths_are_checked_before_any_work_starts(tmp_path, monkeypatch):
    import compoenv.compose.parallel as parallel

    def never(*args, **kwargs):
        raise AssertionError("composed before checking the output path")

    monkeypatch.setattr(parallel, "generate_parallel", never)
    result = CliRunner().invoke(main, ["generate", "--num", "5", "-o",
                                       str(tmp_path / "no" / "tasks.jsonl")])
    assert result.exit_code == 2 and "mkdir -p" in result.output


def test_a_missing_extra_names_what_to_install(tmp_path, monkeypatch, tasks50):
    import sys

    from compoenv.task import save_tasks

    save_tasks(tasks50[:1], tmp_path / "t.jsonl")
    monkeypatch.setitem(sys.modules, "transformers", None)  # as if not installed
    result = CliRunner().invoke(main, ["export", "openrlhf", "--tasks", str(tmp_path / "t.jsonl"),
                                       "-o", str(tmp_path / "p.jsonl"), "--tokenizer", "x"])
    assert result.exit_code == 1
    assert "--tokenizer needs transformers: pip install 'compoenv[llm]'" in result.output


def test_a_task_file_for_another_library_is_an_error_naming_the_line(tmp_path, tasks50):
    from compoenv.task import save_tasks

    bad = tasks50[1].model_copy(update={"services": [*tasks50[1].services, "gone"]})
    save_tasks([tasks50[0], bad], tmp_path / "t.jsonl")
    for command in (["demo", "--tasks"], ["sft", "-o", str(tmp_path / "s.jsonl"), "--tasks"],
                    ["export", "openrlhf", "-o", str(tmp_path / "p.jsonl"), "--tasks"]):
        result = CliRunner().invoke(main, [*command, str(tmp_path / "t.jsonl")])
        assert result.exit_code == 1, result.output
        assert "t.jsonl:2: task" in result.output and "Unknown service 'gone'" in result.output
        _no_traceback(result)


def test_demo_plays_a_task_file(tmp_path, tasks50):
    from compoenv.task import save_tasks

    save_tasks(tasks50[:3], tmp_path / "t.jsonl")
    result = CliRunner().invoke(main, ["demo", "--tasks", str(tmp_path / "t.jsonl"), "--json"])
    summary = json.loads(result.output)
    assert [r["task"] for r in summary["rows"]] == [t.id for t in tasks50[:3]]
    assert summary["oracle_mean"] == 1.0


def test_services_lists_every_service_with_its_tools():
    table = CliRunner().invoke(main, ["services"])
    assert table.exit_code == 0 and "find_contact" in table.output and "send_email" in table.output
    listing = json.loads(CliRunner().invoke(main, ["services", "--json"]).output)
    from compoenv.registry import Registry

    registry = Registry.default()
    assert [s["name"] for s in listing] == [cls.name for cls in registry]
    assert sum(len(s["tools"]) for s in listing) == len(registry.tools())
    contacts = next(s for s in listing if s["name"] == "contacts")
    assert contacts["kind"] == "implemented" and contacts["tools"][0]["description"]
    assert next(s for s in listing if s["name"] == "crm")["kind"] == "spec"


def test_an_output_that_cannot_be_opened_is_refused_before_any_work(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tasks.jsonl").symlink_to(tmp_path / "gone" / "tasks.jsonl")
    for args in (["generate", "--num", "50"], ["sft", "--num", "50"]):
        result = CliRunner().invoke(main, [*args, "-o", "tasks.jsonl"])
        assert result.exit_code == 2, result.output
        assert "cannot be written (a link to" in result.output and "No such file" in result.output
        _no_traceback(result)
    kept = tmp_path / "kept.jsonl"
    kept.write_text("data\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["generate", "--num", "0", "-o", str(kept)])
    assert result.exit_code == 2 and kept.read_text() == "data\n"  # checked, not truncated
    assert not (tmp_path / "x.jsonl").exists()
    CliRunner().invoke(main, ["generate", "--num", "0", "-o", "x.jsonl"])
    assert not (tmp_path / "x.jsonl").exists()  # the check leaves no empty file behind


def test_python_dash_m_compoenv_is_the_command():
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "compoenv", "scenarios", "--help"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Usage: compoenv scenarios")
