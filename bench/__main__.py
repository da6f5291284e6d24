"""List the available benchmarks and how to run them."""

from __future__ import annotations

BENCHMARKS = {
    "coldstart": ("a fresh interpreter to the first reset of a given task, beside the floor of "
                  "importing gymnasium alone; heavy modules imported on the way",
                  "python -m bench.coldstart [--quick] [--out FILE]"),
    "env": ("step throughput, reset latency, memory per live env, step vs bare tool call (by "
            "the tool's cost), RSS per env sharing a 500-task file",
            "python -m bench.env [--quick] [--out FILE]"),
    "compose": ("verified tasks/s per core, a 10,000-task set's duplicates and motif coverage",
                "python -m bench.compose [--quick] [--workers K] [--out FILE]"),
    "reward": ("scoring time of hostile replies (1 MB, numbers only, look-alike digits) and "
               "what exploit agents score", "python -m bench.reward [--quick] [--out FILE]"),
    "evaluate": ("episodes/s through compoenv eval's runner against a loopback endpoint that "
                 "answers at once (env, agent and runner cost, not a model's)",
                 "python -m bench.evaluate [--quick] [--out FILE]"),
    "hostile": ("step cost and memory under hostile actions (52 large writes a step, 1 MB "
                "arguments, tiny-call floods, not-JSON objects) and an RSS soak",
                "python -m bench.hostile [--quick] [--out FILE]"),
    "library": ("a synthetic 2,000-service / 50,000-tool library: load, graph build time and "
                "memory, verified tasks/s per core composing with it",
                "python -m bench.library [--quick] [--services N] [--seeds N] [--out FILE]"),
    "joins": ("how well the importer tags real APIs' slots (interface, role, resource key, "
              "transport noise): precision and recall against 360 hand-labelled slots",
              "python -m bench.joins [--split dev|held_out|all] [--rows N] [--out FILE]"),
    "serve": ("compoenv serve against OpenEnv's echo env served the same way: steps/s, server "
              "CPU a step, p99 at 64 WebSocket sessions, as ratios; --attack: honest p99 and "
              "server RSS under hostile clients",
              "python -m bench.serve [--seconds S] [--sessions N] [--attack] [--out FILE]"),
    "crud": ("how many spec tools run with real state (CRUD resources: list, get, create, "
             "update, cancel, delete) in the shipped specs and in libraries given",
             "python -m bench.crud [--library DIR ...] [--out FILE]"),
}


def main() -> None:
    print("compoenv benchmarks (each prints one JSON object on stdout):")
    for name, (what, how) in BENCHMARKS.items():
        print(f"  {name:<8} {what}\n           run: {how}")


if __name__ == "__main__":
    main()
