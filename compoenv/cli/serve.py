"""``compoenv serve``: an OpenEnv environment server (HTTP and WebSocket) of a task set.

    compoenv serve --tasks tasks.jsonl --host 0.0.0.0 --port 8000 --max-sessions 256
    compoenv serve --num 200 --seed 0 --min-hops 2 --max-hops 4      # compose the set first
    COMPOENV_SERVE_TOKEN=team-a,team-b compoenv serve --tasks tasks.jsonl --host 0.0.0.0

Trainers on GPU nodes play episodes on the CPU node that serves them, with OpenEnv's
clients (``compoenv.integrations.openenv.CompoenvClient``, ``GenericEnvClient``) or plain
HTTP: see docs/frameworks/openenv.md; sessions and tokens: docs/serving.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from compoenv.cli.common import (check_world_model, composer_config, composer_options,
                                 library_option, registry_factory, require)
from compoenv.env import MODES

__all__ = ["serve"]


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on (0.0.0.0: every interface).")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True)
@click.option("--tasks", "tasks_path", default=None,
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="The tasks to serve (JSONL, from compoenv generate); default: compose "
                   "--num tasks with the composer flags below.")
@click.option("--num", type=click.IntRange(min=1), default=64, show_default=True,
              help="Tasks to compose when no --tasks file is given.")
@composer_options
@click.option("--mode", type=click.Choice(MODES), default="direct", show_default=True,
              help="The task's tools listed, or four meta-tools over services and "
                   "distractors.")
@click.option("--max-steps", type=click.IntRange(min=1), default=None,
              help="Actions per episode  [default: enough for the longest solution]")
@click.option("--max-sessions", type=click.IntRange(min=1), default=256, show_default=True,
              help="Most WebSocket sessions, and most live episodes, at once; one more gets "
                   "a clear 'at capacity' error.")
@click.option("--idle-timeout", type=click.FloatRange(min=0), default=300.0,
              show_default=True, help="Seconds an episode may go unused before it is "
                                      "dropped (0: never).")
@click.option("--token", "tokens", multiple=True, metavar="TOKEN",
              help="A bearer token clients must send (repeat: one per client; default: "
                   "$COMPOENV_SERVE_TOKEN, comma-separated). Each token is a client for the "
                   "caps.")
@click.option("--max-per-client", type=click.IntRange(min=1), default=None,
              help="Most sessions and HTTP episodes one client (token, else address) may "
                   "hold  [default: its fair share when the server is full]")
@click.option("--reset-rate", type=click.FloatRange(min=0), default=100.0, show_default=True,
              help="New sessions and HTTP episodes a second per client (bursts of twice "
                   "it; 0: no limit); more are refused with 429.")
@click.option("--reclaim-after", type=click.FloatRange(min=0), default=10.0,
              show_default=True,
              help="When the server is full, seconds idle after which a place of a client "
                   "over its fair share is reclaimed for another client.")
@click.option("--expose-rubric", is_flag=True,
              help="Send each criterion's description and detail (the expected answers) "
                   "at the end of an episode; by default the pass vector and scores only.")
@click.option("--ws-compression/--no-ws-compression", default=False, show_default=True,
              help="permessage-deflate on WebSockets (worth it only on slow links).")
@click.option("--request-timeout", type=click.FloatRange(min=0.1), default=10.0,
              show_default=True,
              help="Seconds a connection has to send a whole HTTP request (slow senders and "
                   "half-open connections are closed after it).")
@click.option("--log-level", type=click.Choice(["critical", "error", "warning", "info",
                                                "debug"]), default="info", show_default=True)
@library_option
def serve(host: str, port: int, tasks_path: Path | None, num: int, mode: str,
          max_steps: int | None, max_sessions: int, idle_timeout: float,
          tokens: tuple[str, ...], max_per_client: int | None, reset_rate: float,
          reclaim_after: float, expose_rubric: bool, ws_compression: bool,
          request_timeout: float, log_level: str,
          **flags: Any) -> None:
    """Serve a task set as an OpenEnv environment: /ws, /reset, /step, /state, /schema."""
    require("openenv", "openenv", "compoenv serve")
    require("uvicorn", "openenv", "compoenv serve")
    from compoenv.integrations.openenv_app import bind, make_app, tokens_from_env
    from compoenv.integrations.openenv_app import serve as run_server
    from compoenv.registry import Registry
    from compoenv.task_check import load_checked

    try:
        sock = bind(host, port)  # a busy port is an error now, not after composing
    except OSError as exc:
        raise click.ClickException(f"cannot listen on {host}:{port}: "
                                   f"{exc.strerror or exc}") from None
    world_model = flags.get("world_model")
    if tasks_path is not None:
        check_world_model(world_model)
        tasks = load_checked(tasks_path, Registry.default())
        if not tasks:
            raise click.ClickException(f"{tasks_path} holds no tasks; nothing to serve")
        source = str(tasks_path)
    else:
        seed = flags.pop("seed")
        tasks = _compose(num, seed, flags)
        source = f"composed tasks (seed {seed})"
    tokens = tuple(t for t in tokens if t.strip()) or tuple(tokens_from_env())
    app = make_app(tasks, mode=mode, max_sessions=max_sessions,
                   idle_timeout_s=idle_timeout or None, max_steps=max_steps,
                   world_model=world_model, tokens=tokens, max_per_client=max_per_client,
                   reset_rate=reset_rate or None, reclaim_idle_s=reclaim_after,
                   expose_rubric=expose_rubric, compression=ws_compression,
                   request_timeout_s=request_timeout)
    idle = f"idle episodes dropped after {idle_timeout:g} s" if idle_timeout else "no idle limit"
    port = sock.getsockname()[1]  # the one port 0 picked
    auth = f"{len(tokens)} bearer token(s)" if tokens else "no token"
    click.echo(f"serving {len(tasks)} tasks from {source} ({mode} mode) on http://{host}:{port} "
               f"(OpenEnv: /ws /reset /step /state /schema /health; at most {max_sessions} "
               f"sessions, {idle}; {auth})", err=True)
    if not tokens and host not in ("127.0.0.1", "localhost", "::1"):
        click.echo(f"warning: anyone who can reach {host}:{port} may play episodes; give "
                   f"--token (or $COMPOENV_SERVE_TOKEN) on a shared network", err=True)
    run_server(app, host=host, port=port, log_level=log_level, sock=sock)


def _compose(num: int, seed: int, flags: dict[str, Any]) -> list[Any]:
    """Compose ``num`` verified tasks as ``compoenv generate`` would, in this process."""
    from compoenv.compose.parallel import generate_parallel

    config = composer_config(**flags)
    click.echo(f"composing {num} tasks (seed {seed})...", err=True)
    try:
        tasks, _ = generate_parallel(num, seed, config, registry_factory=registry_factory(),
                                     workers=1)
    except RuntimeError as exc:  # too many rejected seeds for these settings
        raise click.ClickException(str(exc)) from None
    return list(tasks)
