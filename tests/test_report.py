"""compoenv report: one static HTML page over eval runs (table, plots, trajectory viewer)."""

from __future__ import annotations

import html
import json
import re
from html.parser import HTMLParser

import pytest
from chat_server import ChatServer, OraclePolicy
from click.testing import CliRunner

from compoenv.agents.endpoint import EndpointAgent
from compoenv.cli import main
from compoenv.evaluation import evaluate
from compoenv.task import save_tasks

pytest.importorskip("matplotlib")


@pytest.fixture(scope="module")
def runs(tmp_path_factory, tasks50):
    """Two runs of four tasks x 2: one scripted model that reports, one that often does not."""
    root = tmp_path_factory.mktemp("runs")
    tasks = tasks50[:4]
    for name, fail in (("good", 0), ("weak", 2)):
        with ChatServer(responder=OraclePolicy(tasks, fail_every=fail),
                        max_requests=2000) as server:
            evaluate(tasks, EndpointAgent(base_url=server.url, model=f"model-{name}"),
                     root / name, k=2, concurrency=4)
    save_tasks(tasks, root / "tasks.jsonl")
    return root


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.scripts = 0

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.scripts += tag == "script"


def test_the_report_compares_runs_plots_them_and_shows_every_episode(runs, tmp_path):
    out = tmp_path / "report.html"
    result = CliRunner().invoke(main, ["report", str(runs / "good"), str(runs / "weak"),
                                       "-o", str(out), "--tasks", str(runs / "tasks.jsonl")])
    assert result.exit_code == 0, result.output
    page = out.read_text()
    parser = _Page()
    parser.feed(page)
    assert parser.tags.count("svg") >= 5 and parser.scripts == 1  # plots inline, one script
    table = page[page.index('<table class="compare">'):page.index("</table>")]
    assert "good" in table and "weak" in table and "model-good" in table
    assert page.count('<details class="episode"') == 16  # 2 runs x 4 tasks x 2
    good = json.loads((runs / "good" / "results.json").read_text())
    assert f"{good['pass_rate']:.1%}" in table
    assert "✓" in page and "answered by the service" in page  # implemented services' results
    assert "answered by the offline world model" in page       # and simulated ones


def test_what_a_trajectory_says_is_shown_never_run(runs, tmp_path):
    """A model's reply that holds markup reads as text on the page."""
    from compoenv.evaluation.report import load_run, write_report

    hostile = tmp_path / "hostile"
    hostile.mkdir()
    (hostile / "results.json").write_text((runs / "good" / "results.json").read_text())
    line = json.loads((runs / "good" / "trajectories.jsonl").read_text().splitlines()[0])
    line["messages"][-1]["content"] = '<script>alert("x")</script><img src=x onerror=y>'
    (hostile / "trajectories.jsonl").write_text(json.dumps(line) + "\n")
    page = write_report([load_run(hostile)], tmp_path / "r.html").read_text()
    assert "<script>alert" not in page and "&lt;script&gt;alert" in page
    assert "<img src=x" not in page


def test_a_folder_that_is_not_a_run_is_a_one_line_error(tmp_path):
    result = CliRunner().invoke(main, ["report", str(tmp_path), "-o", str(tmp_path / "r.html")])
    assert result.exit_code == 1 and "results.json" in result.output
    assert "Traceback" not in result.output


def test_the_page_renders_in_a_real_headless_browser_and_a_trajectory_opens(runs, tmp_path):
    """Chromium loads the file, runs its script (the #open= link opens an episode) and paints
    the table and plots (a screenshot that is not blank)."""
    import shutil
    import subprocess

    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("Chromium is not installed (Debian: apt-get install chromium)")
    from compoenv.evaluation.report import load_run, write_report

    page = write_report([load_run(runs / "good"), load_run(runs / "weak")], tmp_path / "r.html")
    task_id = json.loads((runs / "weak" / "trajectories.jsonl").read_text().splitlines()[0]
                         )["meta"]["task_id"]
    url = f"{page.resolve().as_uri()}#open={task_id}"
    flags = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run(flags + ["--dump-dom", url], capture_output=True, text=True,
                         timeout=120, check=False)
    assert dom.returncode == 0, dom.stderr[-2000:]
    opened = re.findall(r'<details class="episode" data-key="([^"]*)" open="">', dom.stdout)
    assert opened and task_id.lower() in opened[0]  # the script ran and opened it
    # the layout at a laptop's width: nothing wider than the window, and every text of every
    # plot (tick labels, legends) inside its plot and at a readable size
    # (a third run with thirty long domain names: the chart that grew sideways)
    wide = tmp_path / "wide"
    wide.mkdir()
    results = json.loads((runs / "weak" / "results.json").read_text())
    results["breakdowns"]["domain"] = {
        f"domain number {i} with a long name": {"episodes": 4, "tasks": 2, "pass_rate": i / 30,
                                                "mean_score": 0.5, "pass_rate_ci": [0.0, 1.0]}
        for i in range(30)}
    (wide / "results.json").write_text(json.dumps(results))
    crowded = write_report([load_run(runs / "good"), load_run(runs / "weak"), load_run(wide)],
                           tmp_path / "crowded.html")
    probe = tmp_path / "probe.html"
    probe.write_text(crowded.read_text().replace("</body>", _LAYOUT_PROBE + "</body>"))
    measured = subprocess.run(flags + ["--window-size=1000,1000", "--dump-dom",
                                       probe.resolve().as_uri()],
                              capture_output=True, text=True, timeout=120, check=False)
    layout = json.loads(html.unescape(re.search(r'data-layout="([^"]*)"',
                                                measured.stdout).group(1)))
    assert layout["page_width"] <= layout["window_width"], layout
    assert layout["svgs"] >= 5 and layout["texts"] > 50
    assert layout["outside"] == [] and layout["smallest_font"] >= 8, layout
    shot = tmp_path / "shot.png"
    painted = subprocess.run(flags + [f"--screenshot={shot}", "--window-size=1200,1600",
                                      page.resolve().as_uri()],
                             capture_output=True, text=True, timeout=120, check=False)
    assert painted.returncode == 0 and shot.exists(), painted.stderr[-2000:]
    import matplotlib.image

    pixels = matplotlib.image.imread(shot)
    assert pixels.shape[0] >= 1000 and pixels.std() > 0.05  # text and plots, not a blank page


def _figure(page: str, caption: str) -> str:
    start = page.index(f"<figcaption>{caption}")
    return page[start:page.index("</figure>", start)]


def test_the_report_shows_pass_rates_with_intervals_failures_flips_and_groups_by_task(runs,
                                                                                     tmp_path):
    from compoenv.evaluation.report import load_run, write_report

    page = write_report([load_run(runs / "good"), load_run(runs / "weak")],
                        tmp_path / "r.html").read_text()
    weak = json.loads((runs / "weak" / "results.json").read_text())
    low, high = weak["pass_rate_ci"]
    assert f"{weak['pass_rate']:.1%} [{low:.0%}, {high:.0%}]" in page
    for name in ("domain", "capability", "hops"):
        assert f"Pass rate by {name} (95% interval)" in page
    # plots show pass rates; the mean rubric score is one column of the comparison table
    assert "Score by" not in page and page.count("mean rubric score") == 1
    # k is a count: the pass^k axis has integer ticks only
    curves = _figure(page, "pass^k and pass@k")
    ticks = re.findall(r'<g id="xtick_\d+">.*?<text[^>]*>([^<]*)</text>', curves, re.S)
    assert ticks and all(t.strip().isdigit() for t in ticks), ticks
    assert "criterion kind" in page and "house rule" in page
    assert "Tasks that flip between repeats" in page
    # criteria by id alone without the task file, and the page says how to describe them
    assert "--tasks FILE</code> (the task file the runs played)" in page
    # episodes grouped by task: a task's repeats sit together, in order
    viewer = page[page.index('<section class="run"><h3>weak</h3>'):]
    order = re.findall(r'<details class="episode" data-key="(t-[0-9a-f]+) ', viewer)
    assert len(order) == 8 and order == sorted(order)
    assert viewer.count('<div class="task">') == 4


_LAYOUT_PROBE = """<script>
const svgs=[...document.querySelectorAll('svg')];const outside=[];let texts=0,smallest=99;
for(const svg of svgs){const box=svg.getBoundingClientRect();
for(const t of svg.querySelectorAll('text')){const r=t.getBoundingClientRect();
if(!t.textContent.trim())continue;texts++;
smallest=Math.min(smallest,parseFloat(getComputedStyle(t).fontSize)*box.width/svg.viewBox.baseVal.width);
if(r.left<box.left-1||r.right>box.right+1||r.top<box.top-1||r.bottom>box.bottom+1)
outside.push(t.textContent);}}
document.body.dataset.layout=JSON.stringify({page_width:document.documentElement.scrollWidth,
window_width:window.innerWidth,svgs:svgs.length,texts:texts,outside:outside,
smallest_font:smallest});
</script>"""
