"""The compoenv command line."""

from __future__ import annotations

import json

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
