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
    figures = [
        ("Score by capability", _bars(runs, "capability")),
        ("Score by hops", _bars(runs, "hops")),
        ("Score by domain", _bars(runs, "domain")),
        ("pass^k and pass@k", _curves(runs)),
        ("Tool calls per episode", _histogram(calls)),
    ]
    parts = [_HEAD, "<h1>compoenv evaluation report</h1>", _table(runs)]
    parts.append('<section class="plots">')
    for title, svg in figures:
        parts.append(f"<figure><figcaption>{html.escape(title)}</figcaption>{svg}</figure>")
    parts.append("</section><h2>Episodes</h2>"
                 '<p><input id="filter" placeholder="filter: task id, domain, pass or fail" '
                 'oninput="filterEpisodes(this.value)"></p>')
    for run in runs:
        parts.append(_viewer(run, tasks))
    parts.append(_TAIL)
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(parts), encoding="utf-8")
    return path


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _table(runs: Sequence[Run]) -> str:
    head = ("run", "model", "tasks x k", "pass rate", "mean rubric score", "pass@k", "pass^k",
            "noise floor", "errored", "tool error rate", "calls/episode", "tokens/episode")
    rows = []
    for run in runs:
        r = run.results
        model = (r.get("run") or {}).get("model", "")
        cells = (run.name, model, f"{r.get('tasks')} x {r.get('k')}", f"{r['pass_rate']:.1%}",
                 f"{r['mean_rubric_score']:.3f}",
                 " ".join(f"@{k} {v:.0%}" for k, v in r.get("pass_at_k", {}).items()),
                 " ".join(f"^{k} {v:.0%}" for k, v in r.get("pass_hat_k", {}).items()),
                 f"{(r.get('noise_floor') or {}).get('std', 0):.3f}",
                 r.get("errored_episodes", 0), f"{r.get('tool_error_rate', 0):.1%}",
                 r.get("calls_per_episode", 0), (r.get("tokens") or {}).get("per_episode", 0))
        rows.append("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in cells) + "</tr>")
    return ('<table class="compare"><thead><tr>' + "".join(f"<th>{_e(h)}</th>" for h in head)
            + "</tr></thead><tbody>" + "".join(rows) + "</tbody></table>")


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
    import matplotlib.pyplot as plt

    return plt


def _bars(runs: Sequence[Run], breakdown: str) -> str:
    plt = _pyplot()
    labels = sorted({label for run in runs
                     for label in (run.results.get("breakdowns") or {}).get(breakdown, {})},
                    key=lambda x: (len(x), x) if breakdown == "hops" else x)
    figure, axes = plt.subplots(figsize=(max(4.0, 0.5 * len(labels) * len(runs) + 2), 3))
    width = 0.8 / len(runs)
    for i, run in enumerate(runs):
        groups = (run.results.get("breakdowns") or {}).get(breakdown, {})
        axes.bar([x + i * width for x in range(len(labels))],
                 [groups.get(label, {}).get("mean_rubric_score", 0) for label in labels],
                 width, label=run.name)
    axes.set_xticks([x + width * (len(runs) - 1) / 2 for x in range(len(labels))], labels,
                    rotation=30 if breakdown != "hops" else 0, ha="right"
                    if breakdown != "hops" else "center")
    axes.set_ylim(0, 1)
    axes.set_ylabel("mean rubric score")
    axes.legend(fontsize="small")
    return _svg(figure)


def _curves(runs: Sequence[Run]) -> str:
    plt = _pyplot()
    figure, axes = plt.subplots(figsize=(5, 3))
    for run in runs:
        for key, style in (("pass_hat_k", "-o"), ("pass_at_k", "--s")):
            curve = run.results.get(key) or {}
            ks = sorted(curve, key=int)
            axes.plot([int(k) for k in ks], [curve[k] for k in ks], style,
                      label=f"{run.name} {'pass^k' if key == 'pass_hat_k' else 'pass@k'}")
    axes.set_xlabel("k")
    axes.set_ylim(0, 1)
    axes.legend(fontsize="small")
    return _svg(figure)


def _histogram(calls: dict[str, list[int]]) -> str:
    plt = _pyplot()
    figure, axes = plt.subplots(figsize=(5, 3))
    top = max((max(v) for v in calls.values() if v), default=1)
    for name, values in calls.items():
        if values:
            axes.hist(values, bins=range(0, top + 2), alpha=0.6, label=name)
    axes.set_xlabel("tool calls")
    axes.set_ylabel("episodes")
    axes.legend(fontsize="small")
    return _svg(figure)


def _viewer(run: Run, tasks: dict[str, dict[str, Any]]) -> str:
    out = [f'<section class="run"><h3>{_e(run.name)}</h3>']
    shown = 0
    for record in run.trajectories():
        if shown == _MAX_SHOWN:
            out.append(f"<p>(the first {_MAX_SHOWN} episodes are shown; the rest are in "
                       f"{_e(run.folder / TRAJECTORIES)})</p>")
            break
        shown += 1
        meta = record["meta"]
        task = tasks.get(meta["task_id"], {})
        passed = meta["score"] == 1
        key = " ".join(str(x) for x in (meta["task_id"], meta.get("domain", ""),
                                        "pass" if passed else "fail"))
        out.append(f'<details class="episode" data-key="{_e(key.lower())}"><summary>'
                   f'<span class="{"pass" if passed else "fail"}">{"pass" if passed else "fail"}'
                   f"</span> {_e(meta['task_id'])} #{_e(meta['rollout_idx'])} "
                   f"rubric score {meta['rubric_score']:.2f}, {_e(meta['n_tool_calls'])} calls, "
                   f"{_e(meta.get('domain', ''))}</summary>")
        out.append(_rubric(meta.get("rubric") or [], task))
        answered = (task.get("recorded") or {}).get("world_model", "offline")
        for message in record["messages"]:
            out.append(_message(message, answered))
        out.append("</details>")
    out.append("</section>")
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
        extra += (f'<div class="call">→ {_e(function.get("name"))}('
                  f'{_e(str(function.get("arguments"))[:_MAX_CHARS])})</div>')
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
