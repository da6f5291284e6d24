"""`compoenv generate` (workers, split, statistics) and `compoenv graph` (JSON, PNG)."""

from __future__ import annotations

import json
from dataclasses import fields

import pytest
from click.testing import CliRunner

from compoenv.cli import main
from compoenv.compose import ComposerConfig
from compoenv.task import load_tasks

TIMING = {"seconds", "workers", "output"}


def generate(*args: str):
    result = CliRunner().invoke(main, ["generate", *args])
    assert result.exit_code == 0, result.output
    return result


def test_two_workers_write_the_same_file_and_summary_as_one(tmp_path):
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    common = ["--num", "12", "--seed", "3", "--json"]
    first = json.loads(generate(*common, "--workers", "1", "-o", str(one)).stdout)
    second = json.loads(generate(*common, "--workers", "2", "-o", str(two)).stdout)
    assert one.read_bytes() == two.read_bytes()
    assert len(load_tasks(one)) == 12
    assert {k: v for k, v in first.items() if k not in TIMING} == \
        {k: v for k, v in second.items() if k not in TIMING}
    assert second["workers"] == 2


def test_json_summary_holds_the_statistics(tmp_path):
    result = generate("--num", "6", "--seed", "1", "-o", str(tmp_path / "t.jsonl"), "--json")
    summary = json.loads(result.stdout)           # stdout holds only the JSON
    for key in ("hops", "services", "capabilities", "domains", "rejections", "combinations"):
        assert key in summary
    assert summary["tasks"] == 6 and sum(summary["hops"].values()) == 6
    assert summary["attempted"] == 6 + sum(summary["rejections"].values())


def test_split_writes_train_and_test_with_disjoint_combinations(tmp_path):
    out = tmp_path / "tasks.jsonl"
    summary = json.loads(generate("--num", "30", "--seed", "2", "--split", "0.25", "-o",
                                  str(out), "--json").stdout)
    train, test = load_tasks(tmp_path / "tasks.train.jsonl"), load_tasks(tmp_path /
                                                                          "tasks.test.jsonl")
    assert train and test and len(train) + len(test) == 30 == len(load_tasks(out))
    assert {frozenset(t.services) for t in train}.isdisjoint(frozenset(t.services) for t in test)
    assert summary["split"]["train"]["tasks"] == len(train)
    assert summary["split"]["test"]["tasks"] == len(test)


def test_table_output_shows_the_statistics(tmp_path):
    result = generate("--num", "4", "--split", "0.5", "-o", str(tmp_path / "t.jsonl"))
    for word in ("calls", "services", "rules", "decoys", "reports", "difficulty", "capabilities",
                 "domains", "rejections", "train", "test"):
        assert word in result.stdout


def test_table_shows_the_top_tools_after_each_reason():
    from rich.console import Console

    from compoenv.cli.generate import _summary_table

    stats = {k: {} for k in ("hops", "services", "capabilities", "domains", "service_usage")}
    summary = {**stats, "tasks": 1, "output": "t.jsonl", "seconds": 0.1, "attempted": 6,
               "combinations": 1, "rejections": {"dead_end": 4, "leak": 1},
               "rejections_by_tool": {"dead_end": {"crm__get_lead": 3, "bank__pay": 1}}}
    console = Console(width=200, record=True)
    console.print(_summary_table(summary))
    text = console.export_text()
    assert "dead_end: 4 (crm__get_lead 3, bank__pay 1) · leak: 1" in text


@pytest.mark.parametrize("args, message", [
    (["--scenarios", "none", "--min-hops", "5", "--max-hops", "2"], "--min-hops"),
    # a bound of the other kind of task is refused, not ignored
    (["--max-hops", "6"], "--max-hops bounds free walks, which --scenarios none composes"),
    (["--scenarios", "none", "--max-calls", "9"], "--max-calls bounds scenario jobs"),
    (["--split", "1.0"], "--split"),
    (["--workers", "0"], "--workers"),
])
def test_invalid_settings_are_reported(tmp_path, args, message):
    result = CliRunner().invoke(main, ["generate", "--num", "1", *args, "-o",
                                       str(tmp_path / "x.jsonl")])
    assert result.exit_code == 2 and message in result.output


def test_motifs_flag(tmp_path):
    result = CliRunner().invoke(main, ["generate", "--num", "2", "--motifs", "no-such-motif",
                                       "-o", str(tmp_path / "x.jsonl")])
    assert result.exit_code == 2
    if "motifs" not in {f.name for f in fields(ComposerConfig)}:
        assert "motifs are not supported by this composer" in result.output


def test_graph_png_draws_the_tool_graph_and_the_service_view(tmp_path):
    pytest.importorskip("matplotlib")
    for args in ([], ["--services-only"]):
        png = tmp_path / f"graph{len(args)}.png"
        result = CliRunner().invoke(main, ["graph", "--png", str(png), *args])
        assert result.exit_code == 0, result.output
        assert result.stdout.strip() == str(png)
        data = png.read_bytes()
        assert data.startswith(b"\x89PNG") and len(data) > 50_000


def test_graph_json_dumps_nodes_and_edges():
    result = CliRunner().invoke(main, ["graph", "--json"])
    assert result.exit_code == 0
    graph = json.loads(result.stdout)
    assert graph["nodes"] and graph["edges"] and "stats" not in graph
    assert {"source", "target", "interface"} <= set(graph["edges"][0])


def test_graph_services_only_needs_png():
    result = CliRunner().invoke(main, ["graph", "--services-only"])
    assert result.exit_code == 2 and "--png" in result.output


def test_graph_png_without_matplotlib_names_the_install(tmp_path, monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "matplotlib", None)
    result = CliRunner().invoke(main, ["graph", "--png", str(tmp_path / "g.png")])
    assert result.exit_code == 1 and "pip install matplotlib" in result.output
