"""A built wheel is a working package: every data file shipped, the CLI, gym.make and plugins."""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("compoenv", "envs_library")


def _tracked() -> list[str]:
    """Files a clean clone has (tracked, plus new files git does not ignore)."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs a git checkout to know which files a clone holds")
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                         cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [line for line in out.splitlines() if (ROOT / line).is_file()]


def _run(*args: str | Path, cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env=env)
    assert done.returncode == 0, f"{args}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel built from a copy of the clone's files (no build output lands in the repo)."""
    src = tmp_path_factory.mktemp("src")
    for name in _tracked():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, src / name)
    dist = tmp_path_factory.mktemp("dist")
    _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
         "--no-index", "-q", "-w", dist, src, cwd=src)
    return next(dist.glob("compoenv-*.whl"))


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    """A fresh venv outside the repo with the wheel installed (dependencies from this
    interpreter's site-packages, which the venv may see but whose compoenv it shadows; this
    interpreter may itself be a virtualenv's)."""
    home = tmp_path_factory.mktemp("venv")
    _run(sys.executable, "-m", "venv", "--system-site-packages", home / "env", cwd=home)
    python = home / "env" / "bin" / "python"
    # --system-site-packages gives the base interpreter's packages; when the tests themselves
    # run inside a virtualenv, the dependencies are in that one's site-packages instead, which
    # the new venv reads after its own (as it reads the base's: .pth files included)
    if sys.prefix != sys.base_prefix:
        purelib = _run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])",
                       cwd=home).strip()
        outer = [p for p in site.getsitepackages() if Path(p).is_dir()]
        Path(purelib, "_outer_venv.pth").write_text(  # a .pth runs each "import" line alone
            "".join(f"import site; site.addsitedir({p!r})\n" for p in outer), encoding="utf-8")
    _run(python, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--ignore-installed",
         wheel, cwd=home)
    return home / "env"


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("COMPOENV_", "PYTHON"))}


def test_the_wheel_ships_every_data_file_the_packages_hold(wheel):
    data = {name for name in _tracked()
            if name.split("/", 1)[0] in PACKAGES and not name.endswith(".py")}
    assert "compoenv/worldmodel/spec.schema.json" in data and len(data) > 10
    shipped = set(zipfile.ZipFile(wheel).namelist())
    assert sorted(data - shipped) == []


def test_the_installed_package_runs_the_demo_and_gym_make(venv, tmp_path):
    python = venv / "bin" / "python"
    code = ("import compoenv, gymnasium as gym; "
            "assert compoenv.__file__.startswith(%r), compoenv.__file__; "
            "env = gym.make('CompoWorld-v0'); obs, info = env.reset(seed=0); "
            "print(len(obs), len(info['tools']))") % str(venv)
    sizes = _run(python, "-c", code, cwd=tmp_path, env=_clean_env()).split()
    assert int(sizes[0]) > 1000 and int(sizes[1]) > 0
    summary = json.loads(_run(venv / "bin" / "compoenv", "demo", "--num", "2", "--json",
                              cwd=tmp_path, env=_clean_env()))
    assert summary["tasks"] == 2 and summary["oracle_mean"] == 1.0


def test_an_installed_service_package_joins_the_library(venv, tmp_path):
    """examples/plugin_package, installed, registers its service through the entry point."""
    package = tmp_path / "plugin"
    shutil.copytree(ROOT / "examples" / "plugin_package", package)
    _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
         "-q", "-w", tmp_path, package, cwd=package)
    _run(venv / "bin" / "python", "-m", "pip", "install", "-q", "--no-deps", "--no-index",
         next(tmp_path.glob("compoenv_giftcards-*.whl")), cwd=tmp_path)
    listing = json.loads(_run(venv / "bin" / "compoenv", "services", "giftcards", "--json",
                              cwd=tmp_path, env=_clean_env()))
    assert [s["name"] for s in listing] == ["giftcards"]
    assert {t["name"] for t in listing[0]["tools"]} == {"shop_in", "gifts_for", "send_gift"}
    report = json.loads(_run(venv / "bin" / "compoenv", "doctor", "giftcards", "--tasks", "3",
                             "--json", cwd=tmp_path, env=_clean_env()))
    assert report["used"] and report["composition"]["composed"] >= 1
