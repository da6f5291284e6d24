"""compoenv eval end to end against the loopback chat server playing a scripted policy: the
endpoint agent (native and text tool calls), the concurrent runner, results, resume, faults."""

from __future__ import annotations

import json
from typing import Any

import pytest
from chat_server import ChatServer, OraclePolicy as Policy
from click.testing import CliRunner

from compoenv.agents.endpoint import EndpointAgent
from compoenv.cli import main
from compoenv.evaluation import evaluate, pass_at_k, pass_hat_k
from compoenv.task import Task, save_tasks
from compoenv.trajectory import Trajectory


@pytest.fixture(scope="module")
def tasks(tasks50: list[Task]) -> list[Task]:
    """Six tasks; the first and fourth ask for values (the scripted model's wrong reports)."""
    answered = [t for t in tasks50 if t.answer][:2]
    rest = [t for t in tasks50 if not t.answer][:4]
    assert len(answered) == 2 and len(rest) == 4
    return [answered[0], *rest[:2], answered[1], *rest[2:]]


def _agent(server: ChatServer, fmt: str = "native", **kw: Any) -> EndpointAgent:
    return EndpointAgent(base_url=server.url, model=server.model, tool_format=fmt,
                         backoff_s=0.01, **kw)


@pytest.mark.parametrize("fmt", ["native", "hermes"])
def test_a_scripted_model_plays_every_task_k_times_and_the_results_add_up(tmp_path, tasks, fmt):
    policy = Policy(tasks, fmt=fmt, fail_every=3)
    with ChatServer(responder=policy, max_requests=2000) as server:
        results = evaluate(tasks, _agent(server, fmt), tmp_path, k=2, concurrency=4)
    lines = (tmp_path / "trajectories.jsonl").read_text().splitlines()
    assert len(lines) == 12
    for line in lines:  # the published sample's format, reasoning kept
        record = Trajectory.model_validate_json(line)
        assert record.meta.discover_mode == "gateway" and record.meta.n_real_tool_calls
        assert any(m.role == "assistant" and m.reasoning_content for m in record.messages)
    # tasks 0 and 3 get a wrong report: those that ask for values fail every time
    failing = {t.id for t in (tasks[0], tasks[3]) if t.answer}
    assert failing
    expected = sum(t.id not in failing for t in tasks) / len(tasks)
    assert results["pass_rate"] == pytest.approx(expected, abs=1e-4)
    assert results["pass_at_k"] == {"1": pytest.approx(expected, abs=1e-4),
                                    "2": pytest.approx(expected, abs=1e-4)}
    assert results["noise_floor"]["std"] == 0.0  # a deterministic policy: no spread
    assert results["errored_episodes"] == 0 and results["tasks"] == 6
    assert results["tokens"]["prompt"] > 0 and results["run"]["played_episodes"] == 12
    assert set(results["breakdowns"]) == {"capability", "domain", "difficulty", "hops", "mode"}
    assert json.loads((tmp_path / "results.json").read_text())["pass_rate"] == \
        results["pass_rate"]


def test_episodes_overlap_on_one_endpoint(tmp_path, tasks):
    with ChatServer(responder=Policy(tasks), max_requests=2000, mode="slow",
                    slow_s=0.05) as server:
        evaluate(tasks, _agent(server), tmp_path, k=1, concurrency=6)
        assert server.most_in_flight >= 3  # requests really ran side by side


def test_a_run_resumes_where_it_stopped_without_losing_or_repeating(tmp_path, tasks):
    with ChatServer(responder=Policy(tasks), max_requests=2000) as server:
        evaluate(tasks[:3], _agent(server), tmp_path, k=2)
        first = (tmp_path / "trajectories.jsonl").read_text().splitlines()
        served = len(server.bodies)
        again = evaluate(tasks, _agent(server), tmp_path, k=2)
        lines = (tmp_path / "trajectories.jsonl").read_text().splitlines()
    assert lines[:len(first)] == first and len(lines) == 12
    keys = [(json.loads(x)["meta"]["task_id"], json.loads(x)["meta"]["rollout_idx"])
            for x in lines]
    assert len(set(keys)) == 12
    assert again["run"]["resumed_episodes"] == 6 and again["run"]["played_episodes"] == 6
    assert len(server.bodies) > served


def test_a_failing_endpoint_is_an_errored_episode_and_the_next_run_plays_it(tmp_path, tasks):
    with ChatServer(responder=Policy(tasks), max_requests=2000, mode="http_500") as server:
        results = evaluate(tasks[:2], _agent(server, max_retries=1), tmp_path, k=1)
        assert results["errored_episodes"] == 2 and results["pass_rate"] == 0.0
        errors = (tmp_path / "errors.jsonl").read_text().splitlines()
        assert len(errors) == 2 and "http_500" in json.loads(errors[0])["error"]["message"]
        assert not (tmp_path / "trajectories.jsonl").exists() or \
            not (tmp_path / "trajectories.jsonl").read_text()
        server.mode = "ok"
        results = evaluate(tasks[:2], _agent(server), tmp_path, k=1)
    assert results["errored_episodes"] == 0 and results["pass_rate"] == 1.0
    assert not (tmp_path / "errors.jsonl").read_text()


def test_a_rate_limited_request_is_retried(tmp_path, tasks):
    with ChatServer(responder=Policy(tasks), max_requests=2000, mode="http_429_then_ok",
                    fail_times=2) as server:
        results = evaluate(tasks[:1], _agent(server, max_retries=3), tmp_path, k=1)
    assert results["pass_rate"] == 1.0 and results["errored_episodes"] == 0


def test_two_runs_with_the_same_scripted_server_give_the_same_results(tmp_path, tasks):
    runs = []
    for name in ("a", "b"):
        with ChatServer(responder=Policy(tasks, fail_every=2), max_requests=2000) as server:
            result = evaluate(tasks, _agent(server), tmp_path / name, k=2, concurrency=8)
        result.pop("run")
        result.pop("episode_seconds")
        runs.append(result)
    assert runs[0] == runs[1]


@pytest.mark.parametrize("n, c, k, at, hat", [
    (4, 0, 1, 0.0, 0.0), (4, 4, 3, 1.0, 1.0), (4, 1, 1, 0.25, 0.25), (4, 1, 2, 0.5, 0.0),
    (4, 2, 2, 1 - 1 / 6, 1 / 6), (5, 3, 5, 1.0, 0.0)])
def test_pass_at_k_and_pass_hat_k(n, c, k, at, hat):
    assert pass_at_k(n, c, k) == pytest.approx(at) and pass_hat_k(n, c, k) == pytest.approx(hat)


def test_the_cli_runs_an_eval_and_reports_usage_errors_in_one_line(tmp_path, tasks):
    path = tmp_path / "tasks.jsonl"
    save_tasks(tasks[:2], path)
    with ChatServer(responder=Policy(tasks), max_requests=2000) as server:
        result = CliRunner().invoke(main, ["eval", "--tasks", str(path), "--base-url",
                                           server.url, "--model", server.model, "-k", "2",
                                           "-o", str(tmp_path / "run"), "--json", "--stream"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output.splitlines()[-1])["pass_rate"] == 1.0
    bad = CliRunner().invoke(main, ["eval", "--tasks", str(path), "--base-url", "x",
                                    "--model", "m", "-k", "0", "-o", str(tmp_path / "r")])
    assert bad.exit_code == 2 and "Traceback" not in bad.output
    neither = CliRunner().invoke(main, ["eval", "--tasks", str(path), "-o", str(tmp_path / "r")])
    assert neither.exit_code == 2 and "--base-url" in neither.output
    assert "Traceback" not in neither.output


def test_a_local_transformers_model_plays_through_the_same_runner(tmp_path, tasks):
    """A random tiny model writes noise: the episodes end (as failures), are recorded and
    counted, with the tokens its chat template gave it."""
    pytest.importorskip("transformers")
    from compoenv.agents.local import TransformersAgent
    from compoenv.tiny_lm import tiny_lm_path

    agent = TransformersAgent(tiny_lm_path(chat_template="qwen3"), max_new_tokens=8)
    results = evaluate(tasks[:2], agent, tmp_path, k=1, concurrency=2, max_steps=3)
    assert results["episodes"] == 2 and results["errored_episodes"] == 0
    assert results["tokens"]["prompt"] > 0 and results["tokens"]["completion"] > 0
    for line in (tmp_path / "trajectories.jsonl").read_text().splitlines():
        record = Trajectory.model_validate_json(line)
        assert record.meta.model.startswith("transformers:")


class _Counting:
    """An async agent that plays the oracle's final answer at once and counts how many
    episodes it is in at the same time (and raises on a chosen task)."""

    name = "counting"

    def __init__(self, raise_on: str | None = None) -> None:
        self.now = self.most = 0
        self.raise_on = raise_on

    async def respond(self, messages, tools):
        import asyncio

        from compoenv.agents.endpoint import Turn

        self.now += 1
        self.most = max(self.most, self.now)
        await asyncio.sleep(0.001)
        self.now -= 1
        user = next(m["content"] for m in messages if m["role"] == "user")
        if self.raise_on is not None and user == self.raise_on:
            raise RuntimeError("agent bug")
        return Turn({"role": "assistant", "content": "Done."})


def test_the_runner_bounds_episodes_in_flight_and_can_keep_nothing(tasks):
    import asyncio

    from compoenv.rollout import play_concurrently

    agent = _Counting()
    seen: list[dict] = []
    kept = asyncio.run(play_concurrently(agent, [(t, r) for t in tasks for r in range(5)],
                                         concurrency=3, on_record=seen.append, keep=False))
    assert kept == [] and len(seen) == 30 and agent.most == 3
    ordered = asyncio.run(play_concurrently(_Counting(), [(t, 0) for t in tasks], concurrency=2))
    assert [r["meta"]["task_id"] for r in ordered] == [t.id for t in tasks]


def test_an_agent_bug_propagates_out_of_the_runner(tasks):
    import asyncio

    from compoenv.rollout import play_concurrently

    agent = _Counting(raise_on=tasks[2].instruction)
    with pytest.raises(RuntimeError, match="agent bug"):
        asyncio.run(play_concurrently(agent, [(t, 0) for t in tasks], concurrency=2))


@pytest.mark.parametrize("fmt", ["native", "hermes"])
def test_a_streamed_reply_is_assembled_into_the_same_episodes(tmp_path, tasks, fmt):
    """Server-sent chunks (content in pieces, tool-call arguments in pieces, usage last) give
    the same trajectories as whole replies."""
    results = {}
    for stream in (False, True):
        with ChatServer(responder=Policy(tasks, fmt=fmt), max_requests=2000) as server:
            evaluate(tasks[:3], _agent(server, fmt, stream=stream), tmp_path / str(stream), k=1)
            if stream:
                assert all(b.get("stream") for b in server.bodies)
        lines = (tmp_path / str(stream) / "trajectories.jsonl").read_text().splitlines()
        results[stream] = sorted((json.dumps(json.loads(x)["messages"], sort_keys=True),
                                  json.loads(x)["meta"]["score"]) for x in lines)
    assert results[True] == results[False] and all(s == 1.0 for _, s in results[True])


def test_a_server_that_goes_away_mid_run_leaves_errored_episodes_not_a_crash(tmp_path, tasks):
    with ChatServer(responder=Policy(tasks), max_requests=12) as server:  # then: refused
        results = evaluate(tasks, _agent(server, max_retries=1), tmp_path, k=2, concurrency=2)
    done = (tmp_path / "trajectories.jsonl").read_text().splitlines()
    errored = (tmp_path / "errors.jsonl").read_text().splitlines()
    assert done and errored and len(done) + len(errored) == 12
    assert results["errored_episodes"] == len(errored) and results["episodes"] == 12
    assert all("unreachable" in json.loads(x)["error"]["message"] for x in errored)


def test_the_cli_shows_progress_and_a_results_table(tmp_path, tasks):
    path = tmp_path / "tasks.jsonl"
    save_tasks(tasks[:2], path)
    with ChatServer(responder=Policy(tasks), max_requests=2000) as server:
        result = CliRunner().invoke(main, ["eval", "--tasks", str(path), "--base-url",
                                           server.url, "--model", server.model, "-o",
                                           str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    assert "eval" in result.output and "2/2" in result.output  # the bar: done of total
    assert "pass rate" in result.output and "100.0%" in result.output


@pytest.mark.parametrize("mode, reason", [("non_json", "bad_response"),
                                          ("schema_violation", "bad_response"),
                                          ("huge", None)])
def test_an_endpoint_that_answers_garbage_gives_errored_or_failed_episodes(tmp_path, tasks,
                                                                           mode, reason):
    with ChatServer(responder=Policy(tasks), max_requests=2000, mode=mode) as server:
        results = evaluate(tasks[:2], _agent(server, max_retries=0), tmp_path, k=1,
                           max_steps=3)
    assert results["episodes"] == 2 and results["pass_rate"] == 0.0
    if reason is not None:  # nothing usable came back: recorded as errored, with the reason
        errors = [json.loads(x) for x in (tmp_path / "errors.jsonl").read_text().splitlines()]
        assert len(errors) == 2 and all(reason in e["error"]["message"] for e in errors)
    else:  # a 300 KB reply of noise is a reply: the env answers it, the rubric fails it
        assert results["errored_episodes"] == 0


def test_eval_stops_before_playing_when_the_endpoint_is_down_or_the_url_is_malformed(tmp_path,
                                                                                    tasks):
    path = tmp_path / "tasks.jsonl"
    save_tasks(tasks[:2], path)
    with ChatServer(responder=Policy(tasks), mode="down") as server:
        down = CliRunner().invoke(main, ["eval", "--tasks", str(path), "--base-url", server.url,
                                         "--model", server.model, "--retries", "0",
                                         "-o", str(tmp_path / "down")])
    assert down.exit_code == 1 and "did not answer a first request" in down.output
    assert "unreachable" in down.output and "Traceback" not in down.output
    assert not (tmp_path / "down").exists()  # nothing played, nothing written
    for url in ("localhost:8000/v1", "127.0.0.1:8000", "ftp://127.0.0.1/v1"):
        bad = CliRunner().invoke(main, ["eval", "--tasks", str(path), "--base-url", url,
                                        "--model", "m", "-o", str(tmp_path / "bad")])
        assert bad.exit_code == 2 and "http(s) URL" in bad.output, bad.output
        assert "Traceback" not in bad.output


def test_eval_exits_non_zero_when_most_episodes_errored(tmp_path, tasks):
    path = tmp_path / "tasks.jsonl"
    save_tasks(tasks[:3], path)
    args = ["eval", "--tasks", str(path), "--retries", "0", "--json"]
    runs = []
    for name, more in (("strict", []), ("lenient", ["--max-errored", "1"])):
        # the server answers the check, then stops: every episode errors
        with ChatServer(responder=Policy(tasks), max_requests=1) as server:
            runs.append(CliRunner().invoke(main, args + more + [
                "--base-url", server.url, "--model", server.model, "-o", str(tmp_path / name)]))
    failed, lenient = runs
    assert failed.exit_code == 1 and "3 of 3 episodes errored" in failed.output, failed.output
    assert json.loads(failed.output.splitlines()[0])["errored_episodes"] == 3
    assert lenient.exit_code == 0, lenient.output


def test_eval_plays_the_first_n_tasks_with_the_system_prompt_given(tmp_path, tasks):
    path, prompt = tmp_path / "tasks.jsonl", tmp_path / "prompt.txt"
    save_tasks(tasks[:4], path)
    prompt.write_text("Be brief.\n{env_prompt}", encoding="utf-8")
    with ChatServer(responder=Policy(tasks), max_requests=2000) as server:
        result = CliRunner().invoke(main, ["eval", "--tasks", str(path), "--base-url",
                                           server.url, "--model", server.model, "--limit", "2",
                                           "--system-prompt", str(prompt), "--json",
                                           "-o", str(tmp_path / "run")])
        sent = [b["messages"][0]["content"] for b in server.bodies
                if b and b["messages"][0]["role"] == "system"]
    assert result.exit_code == 0, result.output
    assert json.loads(result.output.splitlines()[-1])["tasks"] == 2
    assert sent and all(s.startswith("Be brief.\nYou are a capable assistant") for s in sent)
    records = [json.loads(x) for x in (tmp_path / "run" / "trajectories.jsonl").read_text()
               .splitlines()]
    assert len(records) == 2 and all(r["messages"][0]["content"].startswith("Be brief.")
                                     for r in records)


def test_intervals_noise_floor_flips_and_failed_criteria_come_from_the_episodes():
    from compoenv.evaluation.metrics import bootstrap_ci, summarize

    tasks = {f"t{i}": {"domain": "d", "difficulty": (0.1, 0.3, 0.9)[i % 3], "rubric": [
        {"id": "c0", "kind": "state"}, {"id": "c1", "kind": "order"}],
        "rules": [{"id": "r", "kind": "ordering", "text": "...", "criteria": ["c1"]}]}
        for i in range(20)}
    # task i passes repeat r when (i + r) % 3 != 0, but every 4th task only in repeat 0, and
    # every 5th never
    def passed(i: int, r: int) -> bool:
        return i % 5 != 0 and ((i + r) % 3 != 0 if i % 4 else r == 0)

    records = [{"meta": {"task_id": f"t{i}", "rollout_idx": r, "score": int(passed(i, r)),
                         "rubric_score": float(passed(i, r)), "n_tool_calls": 1,
                         "rubric": [{"id": "c0", "passed": True},
                                    {"id": "c1", "passed": passed(i, r)}]},
                "messages": []} for i in range(20) for r in range(3)]
    results = summarize(records, tasks, 3)
    low, high = results["pass_rate_ci"]
    assert low < results["pass_rate"] < high and 0 < high - low < 0.5
    assert results["pass_hat_k_ci"]["3"] == [0.0, 0.0]  # no task passes all three
    rates = [sum(passed(i, r) for i in range(20)) / 20 for r in range(3)]
    assert results["noise_floor"]["repeat_pass_rates"] == pytest.approx(rates)
    assert results["noise_floor"]["std"] > 0
    flipping = [i for i in range(20) if 0 < sum(passed(i, r) for r in range(3)) < 3]
    assert sorted(f["task_id"] for f in results["flips"]) == sorted(f"t{i}" for i in flipping)
    failed = sum(not passed(i, r) for i in range(20) for r in range(3))
    assert results["failed_criteria"]["by_kind"]["order"]["failed"] == failed
    assert results["failed_criteria"]["by_kind"]["state"]["failed"] == 0
    assert results["failed_criteria"]["by_rule"] == {"ordering": failed}
    # the composer's levels (what generate --difficulty draws): 0.3 is medium
    levels = results["breakdowns"]["difficulty"]
    assert set(levels) == {"easy", "medium", "hard"}
    assert levels["medium"]["tasks"] == sum(i % 3 == 1 for i in range(20))
    assert all(len(v["pass_rate_ci"]) == 2 for v in results["breakdowns"]["domain"].values())
    assert bootstrap_ci([(4, 4)] * 5) == [1.0, 1.0] and bootstrap_ci([]) == [0.0, 0.0]


def test_each_task_gets_turns_for_its_own_plan_unless_max_steps_is_given(tmp_path, tasks50):
    """By default an episode's limit follows its task (``steps_for``): a plan of 33 calls is
    not cut off at a fixed 30 turns; a given ``max_steps`` still holds."""
    task = next(t for t in tasks50 if any(c.kind == "call" for c in t.rubric) and t.answer)
    reads = {c.name for c in task.rubric if c.kind == "call"}
    at = next(i for i, c in enumerate(task.solution) if c.name in reads)
    solution = list(task.solution)
    solution[at + 1:at + 1] = [solution[at]] * (33 - len(solution))  # reads are free
    long = task.model_copy(update={"solution": solution, "id": task.id + "-long"})
    with ChatServer(responder=Policy([long]), max_requests=2000) as server:
        own = evaluate([long], _agent(server), tmp_path / "own", k=1)
        fixed = evaluate([long], _agent(server), tmp_path / "fixed", k=1, max_steps=30)
    assert own["pass_rate"] == 1.0 and own["run"]["max_steps"] is None
    assert fixed["pass_rate"] == 0.0
