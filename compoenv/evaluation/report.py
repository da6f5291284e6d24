"""``compoenv report``: one static HTML page comparing evaluation runs, with plots (made by
matplotlib, inlined as SVG) and a trajectory viewer; it opens from disk, no server needed, and
``report.html#open=<task id>`` opens that task's first episode (a link to share).

Every string from a run (messages, tool results, model names) is escaped: a trajectory is
data the page shows, never markup it runs.
"""

from __future__ import annotations

import html
import io
import json
from pathlib import Path
from typing import Any, Iterator, Sequence

from compoenv.evaluation.run import RESULTS, TRAJECTORIES

__all__ = ["Run", "load_run", "write_report"]

_MAX_SHOWN = 200        # episodes per run in the viewer
_MAX_CHARS = 4000       # characters of one message shown


class Run:
    """One run folder: its results and (lazily) its trajectories."""

    def __init__(self, folder: Path, results: dict[str, Any]) -> None:
        self.folder, self.results = folder, results
        self.name = folder.name or str(folder)

    def trajectories(self) -> Iterator[dict[str, Any]]:
        path = self.folder / TRAJECTORIES
        if not path.exists():
            return
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    yield json.loads(line)


def load_run(folder: str | Path) -> Run:
    """The run in ``folder`` (what ``compoenv eval -o folder`` wrote).

    Raises:
        ValueError: the folder has no readable results.json.
    """
    path = Path(folder) / RESULTS
    try:
        results = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"{folder}: no {RESULTS} (is it a compoenv eval -o folder?)") from None
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: not readable as JSON ({exc})") from None
    if not isinstance(results, dict) or "pass_rate" not in results:
        raise ValueError(f"{path}: not the results of compoenv eval")
    return Run(Path(folder), results)


def write_report(runs: Sequence[Run], out: str | Path,
                 tasks: dict[str, dict[str, Any]] | None = None) -> Path:
    """Write the page comparing ``runs`` to ``out``; ``tasks`` (by id) adds each criterion's
    description and the request to the viewer."""
    if not runs:
        raise ValueError("no runs to report")
    tasks = tasks or {}
    calls = {run.name: [r["meta"]["n_tool_calls"] for r in run.trajectories()] for run in runs}
    figures = [(f"Pass rate by {name} (95% interval)", _bars(runs, name))
               for name in ("domain", "capability", "difficulty", "hops")
               if any(set((run.results.get("breakdowns") or {}).get(name) or {}) - {"none"}
                      for run in runs)]  # a breakdown no task has a label of is left out
    figures += [("pass^k and pass@k (95% interval)", _curves(runs)),
                ("Tool calls per episode", _histogram(calls))]
    parts = [_HEAD, "<h1>compoenv evaluation report</h1>", _table(runs),
             "<p class=\"note\">Intervals: 2.5th to 97.5th percentile over 1,000 draws of the "
             "tasks with replacement. Noise floor: the standard deviation of the pass rate "
             "across repeats; a difference between runs smaller than about twice it may be "
             "chance.</p>"]
    parts.append('<section class="plots">')
    for title, svg in figures:
        parts.append(f"<figure><figcaption>{html.escape(title)}</figcaption>{svg}</figure>")
    parts.append("</section>")
    parts.append(_failures(runs))
    parts.append("<h2>Episodes, by task</h2>"
                 '<p><input id="filter" size="40" placeholder="filter: task id, domain, pass or '
                 'fail" oninput="filterEpisodes(this.value)"></p>')
    if not tasks:  # criteria by id alone: say how to see what each checks
        parts.append('<p class="note">Criteria are listed by id; <code>compoenv report ... '
                     '--tasks FILE</code> (the task file the runs played) adds what each '
                     'checks.</p>')
    for run in runs:
        parts.append(_viewer(run, tasks))
    parts.append(_TAIL)
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(parts), encoding="utf-8")
    return path


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _interval(ci: Any) -> str:
    return f" [{ci[0]:.0%}, {ci[1]:.0%}]" if isinstance(ci, list) and len(ci) == 2 else ""


def _table(runs: Sequence[Run]) -> str:
    head = ("run", "model", "tasks x k", "pass rate [95%]", "mean rubric score", "pass@k", "pass^k",
            "noise floor", "flipping tasks", "errored", "tool error rate", "calls/episode",
            "tokens/episode")
    rows = []
    for run in runs:
        r = run.results
        model = (r.get("run") or {}).get("model", "")
        noise = r.get("noise_floor") or {}
        cells = (run.name, model, f"{r.get('tasks')} x {r.get('k')}",
                 f"{r['pass_rate']:.1%}{_interval(r.get('pass_rate_ci'))}",
                 f"{r['mean_rubric_score']:.3f}",
                 # a k stays beside its value when the cell wraps
                 " ".join(f"@{k}\u00a0{v:.0%}" for k, v in r.get("pass_at_k", {}).items()),
                 " ".join(f"^{k}\u00a0{v:.0%}" for k, v in r.get("pass_hat_k", {}).items()),
                 f"{noise.get('std', 0):.1%}" if "repeat_pass_rates" in noise
                 else f"{noise.get('std', 0):.3f} (score)",
                 len(r.get("flips") or []), r.get("errored_episodes", 0),
                 f"{r.get('tool_error_rate', 0):.1%}", r.get("calls_per_episode", 0),
                 (r.get("tokens") or {}).get("per_episode", 0))
        rows.append("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in cells) + "</tr>")
    return ('<div class="wide"><table class="compare"><thead><tr>'
            + "".join(f"<th>{_e(h)}</th>" for h in head)
            + "</tr></thead><tbody>" + "".join(rows) + "</tbody></table></div>")


def _failures(runs: Sequence[Run]) -> str:
    """Per run: the criteria that failed most, by kind and by house rule, and the tasks that
    flip between repeats."""
    out = ['<h2>Where runs fail</h2><section class="failures">']
    for run in runs:
        failed = run.results.get("failed_criteria") or {}
        kinds = "".join(f"<tr><td>{_e(kind)}</td><td>{v['failed']}</td><td>{v['checked']}</td>"
                        f"<td>{v['fail_rate']:.0%}</td></tr>"
                        for kind, v in (failed.get("by_kind") or {}).items())
        rules = "".join(f"<tr><td>{_e(rule)}</td><td>{n}</td></tr>"
                        for rule, n in (failed.get("by_rule") or {}).items())
        flips = run.results.get("flips") or []
        flipped = "".join(f'<li><a href="#open={_e(f["task_id"])}">{_e(f["task_id"])}</a> '
                          f"passed {f['passes']} of {f['episodes']}</li>" for f in flips[:30])
        more = f"<li>... {len(flips) - 30} more</li>" if len(flips) > 30 else ""
        out.append(
            f'<div class="card"><h3>{_e(run.name)}</h3>'
            "<table><thead><tr><th>criterion kind</th><th>failed</th><th>checked</th>"
            f"<th>fail rate</th></tr></thead><tbody>{kinds}</tbody></table>"
            "<table><thead><tr><th>house rule</th><th>failed criteria</th></tr></thead>"
            f"<tbody>{rules or '<tr><td colspan=2>none failed</td></tr>'}</tbody></table>"
            f"<p><b>Tasks that flip between repeats</b> ({len(flips)})</p>"
            f"<ul>{flipped or '<li>none</li>'}{more}</ul></div>")
    out.append("</section>")
    return "".join(out)


def _svg(figure: Any) -> str:
    import matplotlib.pyplot as plt

    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", bbox_inches="tight")
    plt.close(figure)
    text = buffer.getvalue()
    return text[text.index("<svg"):]  # inline: drop the XML prolog


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams["svg.fonttype"] = "none"  # text stays text: smaller, selectable
    import matplotlib.pyplot as plt

    return plt


_ORDER = {"hops": lambda x: (len(x), x),
          "difficulty": lambda x: ({"easy": 0, "medium": 1, "hard": 2}.get(x, 3), x)}


def _legend_above(axes: Any, entries: int) -> None:
    """The legend on top of the plot, in as many columns as fit: never over the data or the
    axis labels, never cut (the figure's tight box takes it in)."""
    axes.legend(fontsize="small", loc="lower left", bbox_to_anchor=(0, 1.01),
                ncol=min(entries, 3), frameon=False, borderaxespad=0)


def _bars(runs: Sequence[Run], breakdown: str) -> str:
    """Horizontal bars of the pass rate per label, one per run, with 95% intervals: the
    figure grows in height with the labels, never in width."""
    plt = _pyplot()
    labels = sorted({label for run in runs
                     for label in (run.results.get("breakdowns") or {}).get(breakdown, {})},
                    key=_ORDER.get(breakdown, lambda x: x), reverse=True)
    height = 0.8 / len(runs)
    figure, axes = plt.subplots(figsize=(5.5, 1.2 + 0.28 * len(labels) * len(runs)))
    for i, run in enumerate(runs):
        groups = (run.results.get("breakdowns") or {}).get(breakdown, {})
        rates = [groups.get(label, {}).get("pass_rate", 0.0) for label in labels]
        cis = [groups.get(label, {}).get("pass_rate_ci") or [r, r]
               for label, r in zip(labels, rates)]
        errors = [[max(r - c[0], 0) for r, c in zip(rates, cis)],
                  [max(c[1] - r, 0) for r, c in zip(rates, cis)]]
        axes.barh([y + (len(runs) - 1 - i) * height for y in range(len(labels))], rates,
                  height, xerr=errors, capsize=2, label=run.name,
                  error_kw={"elinewidth": 0.8})
    axes.set_yticks([y + height * (len(runs) - 1) / 2 for y in range(len(labels))],
                    [_short(label) for label in labels], fontsize="small")
    axes.set_xlim(0, 1)
    axes.xaxis.set_major_formatter(_percent())
    axes.set_xlabel("pass rate")
    _legend_above(axes, len(runs))
    return _svg(figure)


def _short(label: str, most: int = 28) -> str:
    return label if len(label) <= most else label[:most - 1] + "…"


def _percent() -> Any:
    from matplotlib.ticker import PercentFormatter

    return PercentFormatter(1.0, decimals=0)


def _curves(runs: Sequence[Run]) -> str:
    from matplotlib.ticker import MaxNLocator

    plt = _pyplot()
    figure, axes = plt.subplots(figsize=(5.5, 3.2))
    entries = 0
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, run in enumerate(runs):  # a run's colour, as in the other plots; pass@k dashed
        for key, style in (("pass_hat_k", "-o"), ("pass_at_k", "--s")):
            curve = run.results.get(key) or {}
            ks = sorted(curve, key=int)
            xs = [int(k) for k in ks]
            line, = axes.plot(xs, [curve[k] for k in ks], style, label=f"{run.name} "
                              f"{'pass^k' if key == 'pass_hat_k' else 'pass@k'}",
                              color=colors[i % len(colors)], clip_on=False,
                              markerfacecolor="white" if key == "pass_at_k" else None)
            intervals = run.results.get(f"{key}_ci") or {}
            if all(k in intervals for k in ks) and ks:
                axes.fill_between(xs, [intervals[k][0] for k in ks],
                                  [intervals[k][1] for k in ks], color=line.get_color(),
                                  alpha=0.15, linewidth=0)
            entries += 1
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))  # k is a count: 1, 2, 3
    axes.set_xlabel("k")
    axes.set_ylim(0, 1.04)  # a curve at 100% is drawn inside the frame, not on its edge
    axes.set_yticks([0, 0.2, 0.4, 0.6, 0.8, 1.0])
    axes.yaxis.set_major_formatter(_percent())
    _legend_above(axes, entries)
    return _svg(figure)


def _histogram(calls: dict[str, list[int]]) -> str:
    """Tool calls per episode, the runs' bars side by side (not overlaid)."""
    from matplotlib.ticker import MaxNLocator

    plt = _pyplot()
    figure, axes = plt.subplots(figsize=(5.5, 3.2))
    shown = {name: values for name, values in calls.items() if values}
    top = max((max(v) for v in shown.values()), default=1)
    if shown:
        axes.hist(list(shown.values()), bins=[b - 0.5 for b in range(0, top + 2)],
                  label=list(shown), rwidth=0.9)
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes.yaxis.set_major_locator(MaxNLocator(integer=True))
    axes.set_xlabel("tool calls")
    axes.set_ylabel("episodes")
    _legend_above(axes, len(shown))
    return _svg(figure)


def _viewer(run: Run, tasks: dict[str, dict[str, Any]]) -> str:
    """The run's episodes grouped by task (tasks in id order, repeats in order), the first
    ``_MAX_SHOWN`` of that order; a task's line says how many of its episodes passed."""
    keys = sorted((r["meta"]["task_id"], r["meta"]["rollout_idx"]) for r in run.trajectories())
    chosen = set(keys[:_MAX_SHOWN])
    records = {(r["meta"]["task_id"], r["meta"]["rollout_idx"]): r for r in run.trajectories()
               if (r["meta"]["task_id"], r["meta"]["rollout_idx"]) in chosen}
    out = [f'<section class="run"><h3>{_e(run.name)}</h3>']
    by_task: dict[str, list[dict[str, Any]]] = {}
    for key in sorted(records):
        by_task.setdefault(key[0], []).append(records[key])
    for task_id, episodes in by_task.items():
        passed = sum(e["meta"]["score"] == 1 for e in episodes)
        out.append(f'<div class="task"><h4>{_e(task_id)} · passed {passed} of '
                   f"{len(episodes)}</h4>")
        for record in episodes:
            out.append(_episode(record, tasks.get(task_id, {})))
        out.append("</div>")
    if len(keys) > _MAX_SHOWN:
        out.append(f"<p>(the first {_MAX_SHOWN} of {len(keys)} episodes, by task, are shown; "
                   f"the rest are in {_e(run.folder / TRAJECTORIES)})</p>")
    out.append("</section>")
    return "\n".join(out)


def _episode(record: dict[str, Any], task: dict[str, Any]) -> str:
    meta = record["meta"]
    passed = meta["score"] == 1
    key = " ".join(str(x) for x in (meta["task_id"], meta.get("domain", ""),
                                    "pass" if passed else "fail"))
    out = [f'<details class="episode" data-key="{_e(key.lower())}"><summary>'
           f'<span class="{"pass" if passed else "fail"}">{"pass" if passed else "fail"}'
           f"</span> {_e(meta['task_id'])} #{_e(meta['rollout_idx'])} "
           f"score {meta['rubric_score']:.2f}, {_e(meta['n_tool_calls'])} calls, "
           f"{_e(meta.get('domain', ''))}</summary>"]
    out.append(_rubric(meta.get("rubric") or [], task))
    answered = (task.get("recorded") or {}).get("world_model", "offline")
    for message in record["messages"]:
        out.append(_message(message, answered))
    out.append("</details>")
    return "\n".join(out)


def _rubric(marks: list[dict[str, Any]], task: dict[str, Any]) -> str:
    described = {c.get("id"): c.get("description", "") for c in task.get("rubric") or []}
    items = "".join(f'<li class="{"pass" if m.get("passed") else "fail"}">'
                    f'{"✓" if m.get("passed") else "✗"} {_e(m.get("id"))} '
                    f"{_e(described.get(m.get('id'), ''))}</li>" for m in marks)
    return f'<ul class="rubric">{items}</ul>'


def _message(message: dict[str, Any], answered: str) -> str:
    role = str(message.get("role", ""))
    body = str(message.get("content") or "")
    clipped = body if len(body) <= _MAX_CHARS else body[:_MAX_CHARS] + " [...]"
    extra = ""
    if message.get("reasoning_content"):
        extra += f'<div class="reasoning">{_e(message["reasoning_content"][:_MAX_CHARS])}</div>'
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        arguments = function.get("arguments")  # JSON text, or an object (the published form)
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False, default=str)
        extra += (f'<div class="call">→ {_e(function.get("name"))}('
                  f'{_e(arguments[:_MAX_CHARS])})</div>')
    who = ""
    if role == "tool":
        who = f' <span class="who">answered by {_e(_answered_by(body, answered))}</span>'
    return (f'<div class="msg {_e(role)}"><b>{_e(role)}</b>{who}'
            f"<pre>{_e(clipped)}</pre>{extra}</div>")


def _answered_by(content: str, model: str) -> str:
    """Who answered a tool call: the service's own code, or the world model that simulated
    it (an envelope from a simulated tool says ``"simulated": <model>``)."""
    try:
        envelope = json.loads(content)
    except ValueError:
        return "the service"
    simulated = envelope.get("simulated") if isinstance(envelope, dict) else None
    if simulated:
        return f"the {simulated if isinstance(simulated, str) else model} world model"
    return "the service"


_HEAD = """<!doctype html><html lang="en"><head><meta charset="utf-8">
<title>compoenv evaluation report</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em;max-width:1400px}
svg{max-width:100%;height:auto}.wide{overflow-x:auto;max-width:100%}.note{color:#555;
font-size:13px;max-width:60em}section.failures{display:flex;flex-wrap:wrap;gap:1em}
.card{border:1px solid #ddd;padding:0 1em;max-width:100%}.card table{border-collapse:collapse;
margin:4px 0}.card td,.card th{border:1px solid #ccc;padding:2px 6px;font-size:13px}
.task h4{margin:10px 0 2px}figure{max-width:100%}
table.compare{border-collapse:collapse}table.compare td,table.compare th{border:1px solid #ccc;
padding:4px 8px;font-size:14px}section.plots{display:flex;flex-wrap:wrap;gap:1em}
figure{margin:0}figcaption{font-weight:bold}details.episode{border:1px solid #ddd;margin:4px 0;
padding:4px}pre{white-space:pre-wrap;margin:2px 0}.pass{color:#1a7f37}.fail{color:#cf222e}
.msg{border-left:3px solid #ccc;padding-left:6px;margin:4px 0}.msg.assistant{border-color:#0969da}
.msg.tool{border-color:#8250df}.reasoning{color:#666;font-style:italic}.call{font-family:monospace}
.who{color:#666;font-size:12px}
</style></head><body>"""

_TAIL = """<script>
function filterEpisodes(text){text=text.toLowerCase();
for(const d of document.querySelectorAll('details.episode')){
d.style.display=d.dataset.key.includes(text)?'':'none';}}
function openFromHash(){const m=location.hash.match(/^#open=(.+)$/);if(!m)return;
const key=decodeURIComponent(m[1]).toLowerCase();
const d=[...document.querySelectorAll('details.episode')].find(e=>e.dataset.key.includes(key));
if(d){d.open=true;d.scrollIntoView();}}
window.addEventListener('hashchange',openFromHash);openFromHash();
</script></body></html>"""
