"""Spec and library files from anywhere: too deep, too large or too wordy, each is one line
naming the file, never a traceback, and a quoted value is cut short."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import compoenv.registry as registry_module
from compoenv.cli import main
from compoenv.untrusted import (MAX_FILE_DEPTH, MAX_MESSAGE_CHARS, UntrustedFileError, clip,
                                load_json_file, too_deep)


@pytest.fixture(autouse=True)
def fresh_default() -> None:
    registry_module._DEFAULT.clear()


@pytest.fixture
def deep(tmp_path: Path) -> Path:
    folder = tmp_path / "deep"
    folder.mkdir()
    (folder / "deep.json").write_text("[" * 200_000 + "]" * 200_000)
    return folder


@pytest.mark.parametrize("args", [
    ["verify", "{file}"], ["library", "index", "{folder}"], ["services", "--library", "{folder}"],
])
def test_json_nested_200000_deep_is_one_line(deep: Path, args: list[str]) -> None:
    argv = [a.format(file=deep / "deep.json", folder=deep) for a in args]
    result = CliRunner().invoke(main, argv)
    assert result.exit_code in (1, 2), result.output
    assert f"nested more than {MAX_FILE_DEPTH} levels deep" in result.output
    assert "Traceback" not in result.output and "RecursionError" not in result.output
    assert not isinstance(result.exception, RecursionError)


def test_a_huge_description_is_not_printed_whole(tmp_path: Path) -> None:
    path = tmp_path / "wordy.json"
    path.write_text(json.dumps({"name": "wordy", "domain": "dev", "description": "x" * 5_000_000,
                                "tools": []}))
    result = CliRunner().invoke(main, ["verify", str(path)])
    assert result.exit_code == 2 and "more characters" in result.output, result.output[:300]
    assert len(result.output) < 2 * MAX_MESSAGE_CHARS + 500
    assert result.output.count(str(path)) == 1  # the file is named once


def test_load_json_file_limits(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    path.write_text('{"a": "[[[[[[[["}')  # brackets in strings do not count
    assert load_json_file(path, max_depth=2) == {"a": "[[[[[[[["}
    path.write_text('{"a": [[[1]]]}')
    with pytest.raises(UntrustedFileError, match="nested more than 3 levels"):
        load_json_file(path, max_depth=3)
    with pytest.raises(UntrustedFileError, match="over the limit of 10"):
        load_json_file(path, max_bytes=10)
    path.write_text('{"a": ')
    with pytest.raises(UntrustedFileError, match="invalid JSON at line 1"):
        load_json_file(path)
    assert not too_deep("[" * 5, 5) and too_deep("[" * 6, 5)


def test_clip_says_how_much_it_left_out() -> None:
    assert clip("short") == "short"
    cut = clip("y" * 10_000, 100)
    assert len(cut) <= 100 and cut.endswith("(9,940 more characters)")
