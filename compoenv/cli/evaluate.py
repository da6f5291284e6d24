"""``compoenv eval``: measure a model on a task set.

    compoenv eval --tasks tasks.jsonl --base-url http://localhost:8000/v1 --model NAME \\
        -k 4 --concurrency 32 -o runs/NAME/

Every task is played k times by the model behind the OpenAI-compatible endpoint (or a local
transformers model, ``--model-path DIR``); each
episode is appended to ``runs/NAME/trajectories.jsonl`` as it ends, and ``results.json``
(pass rate, mean rubric score, pass@k, pass^k with 95% intervals, breakdowns, the tasks that flip
between repeats, failed criteria by kind and house rule, tool errors, tokens, time, the noise
floor of the pass rate)
is written at the end. Run the same command again to resume an interrupted run.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from compoenv.cli.common import library_option, require

__all__ = ["evaluate_command"]


@click.command("eval")
@click.option("--tasks", "tasks_path", type=click.Path(exists=True, dir_okay=False),
              required=True, help="The tasks to play (JSONL, from compoenv generate).")
@click.option("--base-url", default=None,
              help="The endpoint's API root, e.g. http://localhost:8000/v1.")
@click.option("--model", default=None, help="The model name the endpoint serves.")
@click.option("--model-path", type=click.Path(exists=True, file_okay=False), default=None,
              help="Play a local transformers model (a folder) instead of an endpoint.")
@click.option("--device", default="cpu", show_default=True,
              help="Where a local model runs (cpu, cuda, ...).")
@click.option("-o", "--out", "out", type=click.Path(file_okay=False), required=True,
              help="The run's folder (resumed when it holds episodes).")
@click.option("-k", "k", type=click.IntRange(min=1), default=1, show_default=True,
              help="Episodes per task.")
@click.option("--concurrency", type=click.IntRange(min=1), default=32, show_default=True,
              help="Episodes in flight at once.")
@click.option("--mode", type=click.Choice(["gateway", "direct"]), default="gateway",
              show_default=True, help="Meta-tools over services and distractors, or the "
                                      "task's own tools.")
@click.option("--tool-format", type=click.Choice(["native", "hermes", "qwen3_coder"]),
              default="native", show_default=True,
              help="The endpoint's tool calling, or tools listed in the prompt and calls "
                   "written as text.")
@click.option("--max-steps", type=click.IntRange(min=1), default=None,
              help="Model turns per episode (default: each task's own limit, its solution's "
                   "calls with the discovery before them in gateway mode, plus 4; at least "
                   "20).")
@click.option("--temperature", type=click.FloatRange(min=0), default=0.0, show_default=True)
@click.option("--max-tokens", type=click.IntRange(min=1), default=2048, show_default=True,
              help="Most tokens per model turn.")
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=0, min_open=True),
              default=120.0, show_default=True, help="Seconds per request.")
@click.option("--retries", type=click.IntRange(min=0), default=3, show_default=True,
              help="Retries of a request that timed out or got a 429 or 5xx.")
@click.option("--api-key-env", default="OPENAI_API_KEY", show_default=True,
              help="The environment variable holding the endpoint's key (none: no key).")
@click.option("--stream", is_flag=True,
              help="Ask for streamed replies (server-sent events) and assemble them.")
@click.option("--limit", type=click.IntRange(min=1), default=None,
              help="Play only the first N tasks of the file.")
@click.option("--system-prompt", "system_prompt_path",
              type=click.Path(exists=True, dir_okay=False), default=None,
              help="A text file whose content replaces the env's system prompt; "
                   "{env_prompt} in it stands for the env's own (who the user is, today's "
                   "date, how an episode ends).")
@click.option("--max-errored", type=click.FloatRange(min=0, max=1), default=0.5,
              show_default=True,
              help="Exit with status 1 when more than this share of the episodes errored "
                   "(the endpoint gave no usable reply).")
@click.option("--workers", type=click.IntRange(min=0), default=None,
              help="Processes that play (0 or 1: this one; N: N forked workers, each with "
                   "a share of --concurrency). Default: forked workers when there are at "
                   "least 200 episodes to play. Not with --model-path.")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON on stdout.")
@library_option
def evaluate_command(tasks_path: str, base_url: str | None, model: str | None,
                     model_path: str | None, device: str, out: str, k: int,
                     concurrency: int, mode: str, tool_format: str, max_steps: int | None,
                     temperature: float, max_tokens: int, timeout_s: float, retries: int,
                     api_key_env: str, stream: bool, limit: int | None,
                     system_prompt_path: str | None, max_errored: float,
                     workers: int | None, as_json: bool) -> None:
    """Play a model on a task set k times and write its trajectories and results.

    An endpoint is sent one short request first: when it does not answer, the command stops
    (exit status 1) before playing anything."""
    from compoenv.evaluation import evaluate

    if (base_url is None) == (model_path is None):
        raise click.UsageError("give either --base-url (with --model) or --model-path")
    if workers is not None and model_path is not None:
        raise click.UsageError("--workers plays an endpoint in forked processes; a local "
                               "model (--model-path) plays in this process only")
    _check_out(out)
    system_prompt = None
    if system_prompt_path is not None:
        try:
            system_prompt = open(system_prompt_path, encoding="utf-8").read()
        except (OSError, UnicodeDecodeError) as exc:
            raise click.BadParameter(f"{system_prompt_path!r} cannot be read as UTF-8 text "
                                     f"({type(exc).__name__})",
                                     param_hint="'--system-prompt'") from None
        if not system_prompt.strip():
            raise click.BadParameter(f"{system_prompt_path!r} is empty",
                                     param_hint="'--system-prompt'")
    if model_path is not None:
        require("transformers", "llm", "compoenv eval --model-path")
        from compoenv.agents.local import TransformersAgent

        agent: Any = TransformersAgent(model_path, max_new_tokens=max_tokens,
                                       temperature=temperature, device=device)
    else:
        if model is None:
            raise click.UsageError("--base-url needs --model (the name the endpoint serves)")
        from compoenv.agents.endpoint import EndpointAgent, EndpointError

        try:
            agent = EndpointAgent(base_url=base_url, model=model,
                                  api_key=os.environ.get(api_key_env) or "EMPTY",
                                  tool_format=tool_format, temperature=temperature,
                                  max_tokens=max_tokens, timeout_s=timeout_s,
                                  max_retries=retries, stream=stream)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="'--base-url'") from None
        try:
            asyncio.run(agent.check())
        except EndpointError as exc:
            raise click.ClickException(
                f"the endpoint {base_url} (model {model!r}) did not answer a first request: "
                f"{exc}; nothing was played") from None
    results = evaluate(tasks_path, agent, out, k=k, concurrency=concurrency, mode=mode,
                       max_steps=max_steps, progress=not as_json, limit=limit,
                       system_prompt=system_prompt, workers=workers)
    errored = results["errored_episodes"] / results["episodes"] if results["episodes"] else 0.0
    if as_json:
        click.echo(json.dumps(results))
    else:
        _table(agent.name, results, k, out)
    if errored > max_errored:
        raise click.ClickException(
            f"{results['errored_episodes']} of {results['episodes']} episodes errored (more "
            f"than --max-errored {max_errored:g}): the endpoint failed, so these results do "
            f"not measure the model; see {os.path.join(out, 'errors.jsonl')}")


def _check_out(out: str) -> None:
    """The run folder can be made and written, checked before anything is played."""
    path = os.path.abspath(out)
    existing = path
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        raise click.BadParameter(f"{existing!r} is a file, not a folder", param_hint="'-o'")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise click.BadParameter(f"{existing!r} is not writable", param_hint="'-o'")


def _table(name: str, results: dict[str, Any], k: int, out: str) -> None:
    table = Table(title=f"{name} on {results['tasks']} tasks x {k} -> {out}")
    table.add_column("measure")
    table.add_column("value")
    low, high = results["pass_rate_ci"]
    rows = [("pass rate (95% interval over tasks)",
             f"{results['pass_rate']:.1%}  [{low:.1%}, {high:.1%}]"),
            ("mean rubric score", f"{results['mean_rubric_score']:.3f}"),
            ("pass@k", "  ".join(f"@{j} {v:.1%}" for j, v in results["pass_at_k"].items())),
            ("pass^k", "  ".join(f"^{j} {v:.1%}" for j, v in results["pass_hat_k"].items())),
            ("noise floor (std of repeat pass rates)", f"{results['noise_floor']['std']:.1%}"),
            ("tasks that flip between repeats", str(len(results["flips"]))),
            ("errored episodes", str(results["errored_episodes"])),
            ("tool error rate", f"{results['tool_error_rate']:.1%}"),
            ("tokens per episode", str(results["tokens"]["per_episode"])),
            ("episodes/s", str(results["run"]["episodes_per_s"]))]
    for row in rows:
        table.add_row(*row)
    Console().print(table)
