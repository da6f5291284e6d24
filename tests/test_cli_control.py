"""Control from the CLI: `--services`, `--require`, `--domains` on the commands that compose,
their usage errors, and the doctor's figure for how often default tasks use a service."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from pydantic import BaseModel

from compoenv import Service, State, World, tool
from compoenv.cli import main
from compoenv.compose import ComposerConfig
from compoenv.compose.doctor import default_usage
from compoenv.compose.generator import composer_jobs
from compoenv.registry import Registry
from compoenv.scenarios import ScenarioError, ScenarioRegistry, select_jobs
from compoenv.service import split_qualified
from compoenv.task import load_tasks


class Buoy(BaseModel):
    """A buoy with no interface-tagged field: nothing takes it, no job can be made of it."""

    code: str
    lit: bool


class Buoys(Service):
    """Buoys: the marker buoys of a bay."""

    name = "buoys"
    domain = "travel"

    class State(State):
        buoys: dict[str, Buoy] = {}

    def seed(self, world: World) -> Buoys.State:
        rng = world.rng(self.name)
        codes = [f"Y-{rng.randrange(1000)}" for _ in range(3)]
        return self.State(buoys={c: Buoy(code=c, lit=True) for c in codes})

    @tool(read_only=True, phrase="list the buoys of {bay}")
    def list_buoys(self, bay: str) -> list[Buoy]:
        """List the buoys of a bay."""
        return list(self.state.buoys.values())


@pytest.fixture(scope="module")
def registry() -> Registry:
    return Registry([*Registry.default(), Buoys])


@pytest.fixture
def with_buoys(registry, monkeypatch) -> Registry:
    monkeypatch.setattr(Registry, "default", classmethod(lambda cls, *paths: registry))
    return registry


def generate(tmp_path, *args: str, code: int = 0):
    out = tmp_path / "t.jsonl"
    result = CliRunner().invoke(main, ["generate", "--num", "2", *args, "-o", str(out)])
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    return (load_tasks(out) if code == 0 else None), result.output


def calls(task, service: str) -> bool:
    return any(split_qualified(c.name)[0] == service for c in task.solution)


def test_require_gives_jobs_that_call_the_service(tmp_path):
    tasks, _ = generate(tmp_path, "--require", "bank", "--seed", "3")
    assert len(tasks) == 2 and all(t.scenario and calls(t, "bank") for t in tasks)


def test_require_with_free_walks_reaches_the_service(tmp_path):
    tasks, _ = generate(tmp_path, "--scenarios", "none", "--require", "weather")
    assert all(not t.scenario and calls(t, "weather") for t in tasks)


def test_services_keeps_jobs_walks_and_distractors_inside_them(tmp_path):
    chosen = {"invoices", "bank", "email", "docs_editor", "expense_reports", "contacts"}
    tasks, _ = generate(tmp_path, "--services", "invoices,bank,email", "--services",
                        "docs_editor,expense_reports,contacts")
    for task in tasks:
        assert task.scenario and set(task.services) | set(task.distractors) <= chosen
        assert set(ScenarioRegistry.default().get(task.scenario).services) <= chosen


def test_domains_choose_jobs_by_domain_in_any_case(tmp_path):
    recruiting = {s.name for s in ScenarioRegistry.default() if s.domain == "recruiting"}
    tasks, _ = generate(tmp_path, "--domains", "Recruiting", "--seed", "1")
    assert all(t.scenario in recruiting for t in tasks)


@pytest.mark.parametrize("args, message", [
    (["--require", "bnak"], "Invalid value for '--require': Unknown service 'bnak'. "
                            "Did you mean 'bank'?"),
    (["--services", "email,emial"], "Unknown service 'emial'. Did you mean 'email'?"),
    (["--domains", "recruitng"], "Unknown domain 'recruitng'. Did you mean 'recruiting'? "
                                 "Known domains:"),
    (["--require", "crm,payroll"], "no scenario uses all of crm, payroll"),
    (["--services", "crm,email"], "no scenario job fits --services; add --scenarios none"),
    (["--services", "crm,email", "--scenarios", "none", "--require", "bank"],
     "required services ['bank'] are not in --services"),
    (["--scenarios", "none", "--domains", "recruiting"],
     "--domains choose scenario jobs; free walks (--scenarios none) have none"),
    (["--services", "crm,email", "--scenarios", "candidate_offer"],
     "scenario 'candidate_offer' needs services"),
])
def test_bad_control_flags_are_one_usage_error(tmp_path, args, message):
    _, output = generate(tmp_path, *args, code=2)
    assert message in " ".join(output.split())


def test_a_requirement_no_scenario_meets_is_a_usage_error_not_a_loop(tmp_path, with_buoys):
    _, output = generate(tmp_path, "--require", "buoys", code=2)
    text = " ".join(output.split())
    assert "no scenario uses buoys: compose free walks that reach it (--scenarios none), or " \
           "declare a job that uses it" in text


def test_select_jobs_filters_and_explains():
    jobs = list(ScenarioRegistry.default())
    kept = select_jobs(jobs, require=("bank",), domains=("Month-End Close",))
    assert kept and all("bank" in s.services and s.domain == "month-end close" for s in kept)
    with pytest.raises(ScenarioError, match="no scenario of the domains recruiting uses bank"):
        select_jobs(jobs, require=("bank",), domains=("recruiting",))


def test_the_composer_draws_only_the_jobs_that_fit():
    config = ComposerConfig(scenarios=tuple(ScenarioRegistry.default().names()), derive=True,
                            require=("payroll",), domains=("hr onboarding", "recruiting"))
    jobs = composer_jobs(Registry.default(), config)
    assert jobs and all("payroll" in j.services and j.domain in ("HR onboarding", "recruiting")
                        for j in jobs)


def test_sft_and_demo_take_the_same_flags(tmp_path):
    for command in ("sft", "demo"):
        result = CliRunner().invoke(main, [command, "--require", "bnak", "--num", "1",
                                           *(["-o", str(tmp_path / "s.jsonl")] * (command == "sft"))])
        assert result.exit_code == 2 and "Did you mean 'bank'?" in result.output, result.output


def test_doctor_counts_default_tasks_that_call_a_service_scenarios_use():
    usage = default_usage("email", sample=6)  # most jobs send one
    assert usage.composed == 6 and usage.jobs and usage.of_jobs > len(usage.jobs)
    assert 0 < usage.tasks <= 6 and usage.share == round(usage.tasks / 6, 4)
    assert usage.note.startswith(f"used in {usage.tasks} of 6 default tasks")


def test_doctor_says_plainly_why_default_tasks_never_use_a_service(registry):
    usage = default_usage("buoys", registry, sample=3)
    assert (usage.tasks, usage.share, usage.jobs) == (0, 0.0, ())
    assert usage.note.startswith("never used in 0 of 3 default tasks (0.0%): no scenario uses it")
    assert "--scenarios none --require buoys" in usage.note


def test_doctor_cli_reports_the_default_figure_beside_the_forced_one(with_buoys):
    result = CliRunner().invoke(main, ["doctor", "buoys", "--tasks", "1", "--sample", "3"],
                                env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "default tasks: never used in 0 of 3 default tasks (0.0%): no scenario uses it" in \
        result.output
    result = CliRunner().invoke(main, ["doctor", "buoys", "--tasks", "1", "--sample", "3",
                                       "--json"])
    report = json.loads(result.stdout)
    assert report["default"]["sample"] == 3 and report["default"]["tasks"] == 0
