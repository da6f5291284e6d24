"""``compoenv synthesize``: a coding model implements a spec; only verified code is kept.

    compoenv synthesize specs/crm.json --base-url http://localhost:8000/v1 --model coder \\
        --rounds 3 -o my_library/

Exit status: 0 when a module passed verification (written with its provenance), 1 when every
round was rejected (the reasons are printed) or the endpoint failed, 2 for a usage error.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click

__all__ = ["synthesize_command"]


class _UsageError(click.ClickException):
    """A spec or a check name that cannot be used: one ``Error:`` line, exit status 2."""

    exit_code = 2


@click.command("synthesize")
@click.argument("spec", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--base-url", required=True,
              help="The coding model's API root, e.g. http://localhost:8000/v1.")
@click.option("--model", required=True, help="The model name the endpoint serves.")
@click.option("--rounds", type=click.IntRange(min=1), default=3, show_default=True,
              help="Most replies to verify; each failed one is fed back to the model.")
@click.option("-o", "--out", "out", type=click.Path(file_okay=False, path_type=Path),
              default=Path("synthesized"), show_default=True,
              help="Where an accepted service and its provenance are written.")
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=0, min_open=True),
              default=180.0, show_default=True,
              help="Seconds one sandboxed verification of a reply may take.")
@click.option("--memory-mb", type=click.IntRange(min=256), default=2048, show_default=True,
              help="Memory (address space) of the sandboxed process, in MB.")
@click.option("--request-timeout", type=click.FloatRange(min=0, min_open=True),
              default=600.0, show_default=True, help="Seconds one request to the model may "
                                                     "take.")
@click.option("--max-tokens", type=click.IntRange(min=256), default=8192, show_default=True,
              help="Most tokens of one reply.")
@click.option("--temperature", type=click.FloatRange(min=0), default=0.2, show_default=True)
@click.option("--check", "checks", multiple=True, metavar="NAME",
              help="Run only this verify check (repeat); default: all.")
@click.option("--api-key-env", default="OPENAI_API_KEY", show_default=True,
              help="The environment variable holding the endpoint's key (none: no key).")
@click.option("--unsafe", is_flag=True,
              help="Where no operating-system sandbox can be made (bubblewrap missing or "
                   "failing), run the model's code anyway, in a worker process behind the audit hook "
                   "and the rlimits only. "
                   "Without it, synthesize refuses.")
@click.option("--json", "as_json", is_flag=True, help="Print the outcome as JSON on stdout.")
def synthesize_command(spec: Path, base_url: str, model: str, rounds: int, out: Path,
                       timeout_s: float, memory_mb: int, request_timeout: float,
                       max_tokens: int, temperature: float, checks: tuple[str, ...],
                       api_key_env: str, unsafe: bool, as_json: bool) -> None:
    """Have a coding model implement the spec SPEC as a compoenv service, verify every reply
    in a sandbox (no network, no files outside a temp dir, time and memory limits), feed the
    failures back, and write the first module that passes to OUT with its provenance."""
    from compoenv.checks import TargetError, check_names
    from compoenv.llm import ChatClient, EndpointConfig
    from compoenv.synthesis import (Limits, SandboxUnavailable, SynthesisError, synthesize,
                                    write_accepted)
    from compoenv.synthesis.provenance import provenance
    from compoenv.worldmodel.spec import SpecError, load_spec

    try:
        load_spec(spec)
        chosen = list(check_names(checks)) if checks else None
    except (SpecError, TargetError) as exc:
        raise _UsageError(str(exc)) from None
    config = EndpointConfig(base_url=base_url, model=model,
                            api_key=os.environ.get(api_key_env) or "EMPTY",
                            timeout_s=request_timeout, total_timeout_s=request_timeout * 2,
                            max_retries=1, temperature=temperature, max_tokens=max_tokens)
    client = ChatClient(config)
    try:
        result = synthesize(spec, client, rounds=rounds, checks=chosen,
                            limits=Limits(timeout_s=timeout_s, memory_mb=memory_mb,
                                          unsafe=unsafe))
    except (SynthesisError, SandboxUnavailable) as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        client.close()
    written = write_accepted(result, out) if result.accepted else None
    if as_json:
        data: dict[str, Any] = provenance(result)
        data["written"] = [str(p) for p in written] if written else []
        data["reasons"] = result.reasons()
        click.echo(json.dumps(data, indent=2))
    else:
        _print(result, written)
    click.get_current_context().exit(0 if result.accepted else 1)


def _print(result: Any, written: tuple[Path, Path] | None) -> None:
    for round_ in result.rounds:
        verdict = "accepted" if round_.accepted else "rejected"
        click.echo(f"round {round_.number}: {verdict} ({round_.seconds:.1f} s)")
        for reason in round_.reasons[:8]:
            click.echo(f"  - {reason}")
    if written:
        click.echo(f"{result.service}: accepted after {len(result.rounds)} round(s); wrote "
                   f"{written[0]} and {written[1]}")
        click.echo(f"Review {written[0].name} before you use it: a library loads its modules "
                   f"only with --trust-code (compoenv services --library "
                   f"{written[0].parent} --trust-code)")
    else:
        click.echo(f"{result.service}: rejected after {len(result.rounds)} round(s); nothing "
                   f"written", err=True)
