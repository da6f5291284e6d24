"""Play one episode on a compoenv OpenEnv server with the oracle's actions, over WebSocket.

Run: python examples/openenv_client.py                     # starts a server here first
     python examples/openenv_client.py --url http://HOST:8000 --tasks tasks.jsonl

With ``--url`` the server is one started by ``compoenv serve --tasks tasks.jsonl``; the same
task file here gives the oracle its solution (the server never sends it).
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator

from compoenv.agents import OracleAgent
from compoenv.integrations.openenv import CompoenvClient
from compoenv.task import Task, load_tasks


@contextlib.contextmanager
def server(url: str | None, tasks: list[Task], mode: str) -> Iterator[str]:
    """The server at ``url``, or one started here in a background thread."""
    if url is not None:
        yield url
        return
    from compoenv.integrations.openenv_app import background_server, make_app

    with background_server(make_app(tasks, mode=mode)) as local:
        print(f"started a server of {len(tasks)} tasks at {local}")
        yield local


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=None, help="A running server (default: start one).")
    parser.add_argument("--tasks", default=None, help="The server's task JSONL.")
    parser.add_argument("--task-index", type=int, default=0)
    parser.add_argument("--mode", choices=["direct", "gateway"], default="direct",
                        help="The mode of the server this example starts.")
    args = parser.parse_args()
    if args.url is not None and args.tasks is None:
        parser.error("--url needs --tasks (the server's task file) for the oracle's solution")
    if args.tasks is not None:
        tasks = load_tasks(args.tasks)
    else:
        from compoenv.compose import Composer, ComposerConfig

        tasks = list(Composer(config=ComposerConfig(min_hops=2, max_hops=3)).generate(2, seed=3))
    with server(args.url, tasks, args.mode) as url, CompoenvClient(base_url=url).sync() as env:
        result = env.reset(task_index=args.task_index)
        meta = result.observation.metadata
        task = next(t for t in tasks if t.id == meta["task_id"])
        print(f"episode {meta['episode_id']}: task {task.id}\n  request: {meta['instruction']}")
        agent = OracleAgent()
        info = {"task": task.to_json(), "tools": result.observation.tools}
        agent.reset(result.observation.text, info)
        while not result.done:
            action = agent.act(result.observation.text, info)
            result = env.step(action)
            print(f"  step {result.metadata['step']}: {action[:90]!r} -> "
                  f"{result.observation.text[:70]!r}")
        passed = sum(result.metadata["passes"])
        print(f"reward {result.reward:.2f} ({passed}/{len(result.metadata['passes'])} criteria "
              f"passed)")


if __name__ == "__main__":
    main()
