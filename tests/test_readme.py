"""The README's quickstart runs as written."""

from __future__ import annotations

import re
from pathlib import Path

from compoenv import World

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_quickstart_runs(capsys):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    quickstart = next(b for b in blocks if "gym.make" in b)
    exec(compile(quickstart, "README quickstart", "exec"), {})
    out = capsys.readouterr().out
    assert '"success": true' in out


def test_readme_gives_the_ci_test_command():
    ci = (README.parent / ".ci" / "run").read_text()
    steps = ['pip install -e ".[test]" -c constraints.txt', "pip install --no-deps -r frameworks.txt",
             "python -m pytest"]
    assert " && ".join(steps) in README.read_text()
    ci_steps = [line.replace(" -q", "").replace(" -p no:cacheprovider", "")
                for line in ci.splitlines() if line.startswith("python -m ")]
    assert ci_steps == ["python -m " + step.removeprefix("python -m ") for step in steps]


def test_readme_service_example_passes_check_service_as_written(monkeypatch):
    from compoenv import registry

    monkeypatch.setattr(registry, "_USER", {})     # @register in the example: keep it local
    monkeypatch.setattr(registry, "_DEFAULT", {})
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    example = next(b for b in blocks if "class Directory(Service)" in b)
    assert "def seed(self, world: World)" in example and "return self.State(" in example
    namespace: dict = {"__name__": "readme_example"}
    # dont_inherit: the README's code runs without this file's `from __future__` imports
    exec(compile(example, "README service example", "exec", dont_inherit=True), namespace)
    assert "directory" in registry.Registry.default()
    service = namespace["Directory"](World(3))
    found = service.call("lookup", {"name": next(iter(service.state.people.values())).name})
    assert found["success"] and found["data"]["id"] == "C-0001"
