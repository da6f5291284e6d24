"""The README's quickstart runs as written."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_quickstart_runs(capsys):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    quickstart = next(b for b in blocks if "gym.make" in b)
    exec(compile(quickstart, "README quickstart", "exec"), {})
    out = capsys.readouterr().out
    assert '"success": true' in out


def test_readme_gives_the_ci_test_command():
    ci = (README.parent / ".ci" / "run").read_text()
    steps = ['pip install -e ".[test]" -c constraints.txt', "pip install --no-deps openrlhf==0.11.2",
             "python -m pytest"]
    assert " && ".join(steps) in README.read_text()
    ci_steps = [line.replace(" -q", "").replace(" -p no:cacheprovider", "")
                for line in ci.splitlines() if line.startswith("python -m ")]
    assert ci_steps == ["python -m " + step.removeprefix("python -m ") for step in steps]
