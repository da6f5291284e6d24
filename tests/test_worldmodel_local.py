"""TransformersWorldModel on a tiny random Qwen3 built on the fly (compoenv.tiny_lm): no downloads.

The random model never writes valid JSON, so the backend must fail cleanly and the Simulator
fall back to offline; a stubbed ``generate`` returning the tokens of a valid answer checks the
whole path (chat template, decoding, JSON extraction, validation, patch) end to end.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

import torch
from notes_spec import Notes
from compoenv.tiny_lm import tiny_lm_path

from compoenv.world import World
from compoenv.worldmodel import (
    OfflineWorldModel,
    Simulator,
    ToolRequest,
    WorldModelError,
)
from compoenv.worldmodel import config as wm_config
from compoenv.worldmodel.local import TransformersWorldModel, extract_json


def request_for(tool: str, args: dict[str, Any]) -> ToolRequest:
    return ToolRequest(Notes.tool_specs()[tool], args, World(0), {}, seed=1)

_MODELS: dict[str, TransformersWorldModel] = {}


@pytest.fixture(scope="module")
def lm_path() -> Path:
    return tiny_lm_path()


@pytest.fixture()
def model(lm_path: Path) -> TransformersWorldModel:
    if "m" not in _MODELS:
        _MODELS["m"] = TransformersWorldModel(str(lm_path), max_new_tokens=12)
    return _MODELS["m"]


def test_name_and_loading(model: TransformersWorldModel, lm_path: Path) -> None:
    assert model.name == f"transformers:{lm_path.name}"
    assert model.tokenizer.chat_template and model.device == "cpu"
    with pytest.raises(ValueError, match="cannot load"):
        TransformersWorldModel(str(lm_path / "missing"))


def test_random_model_fails_cleanly(model: TransformersWorldModel) -> None:
    with pytest.raises(WorldModelError) as caught:
        model.answer(request_for("list_notes", {}))
    assert caught.value.reason in ("invalid_output", "bad_output")


def test_simulator_falls_back_to_offline(model: TransformersWorldModel) -> None:
    service = Notes(World(0))
    service.simulator = simulator = Simulator(model, fallback=OfflineWorldModel())
    result = service.call("create_note", {"title": "Plan", "body": "draft"})
    assert result["success"] and result["simulated"]
    assert [e["event"] for e in simulator.events] == ["model_failed", "fallback"]
    assert simulator.events[0]["reason"] == "invalid_output"
    assert not simulator.recording


def test_stubbed_generation_answers_end_to_end(
        model: TransformersWorldModel, monkeypatch: pytest.MonkeyPatch) -> None:
    note = {"id": "NOT-0042", "title": "Plan", "body": "draft \u00e9t\u00e9 {braces}"}
    reply = json.dumps({"data": note, "patch": {"note": {note["id"]: note}}})
    tok = model.tokenizer
    answer_ids = tok(f"Sure: {reply} done", add_special_tokens=False)["input_ids"]
    answer_ids = answer_ids + [tok.eos_token_id]
    prompts: list[str] = []

    def generate(input_ids: Any, **kwargs: Any) -> Any:
        assert kwargs["do_sample"] is False
        prompts.append(tok.decode(input_ids[0]))
        return torch.cat([input_ids, torch.tensor([answer_ids])], dim=1)

    monkeypatch.setattr(model.model, "generate", generate)
    service = Notes(World(0))
    service.simulator = simulator = Simulator(model, fallback=OfflineWorldModel())
    result = service.call("create_note", {"title": "Plan", "body": "draft"})
    assert result["success"] and result["data"] == note, (result, simulator.events)
    assert service.state.records["note"]["NOT-0042"] == note
    assert [v["source"] for v in simulator.recording.values()] == [model.name]
    prompt = prompts[0]
    assert prompt.startswith("<|im_start|>system\n") and "<|im_start|>user\n" in prompt
    assert prompt.endswith("<|im_end|>\n<|im_start|>assistant\n")
    assert '"title":"Plan"' in prompt and "Today: 2026-03-16" in prompt


def test_generation_errors_are_world_model_errors(
        model: TransformersWorldModel, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(**kwargs: Any) -> Any:
        raise RuntimeError("out of memory")

    monkeypatch.setattr(model.model, "generate", broken)
    with pytest.raises(WorldModelError) as caught:
        model.answer(request_for("list_notes", {}))
    assert caught.value.reason == "generation_failed" and "out of memory" in caught.value.detail


def test_model_object_with_tokenizer(model: TransformersWorldModel) -> None:
    again = TransformersWorldModel(model.model, tokenizer=model.tokenizer, max_new_tokens=4)
    assert again.name.startswith("transformers:")
    with pytest.raises(WorldModelError):
        again.answer(request_for("list_notes", {}))


def test_config_builds_a_transformers_backend(lm_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COMPOENV_WORLD_MODEL", f"transformers:{lm_path}")
    monkeypatch.delenv("COMPOENV_WORLD_MODEL_ON_ERROR", raising=False)
    try:
        sim = wm_config.simulator_from()
        assert isinstance(sim.model, TransformersWorldModel)
        assert isinstance(sim.fallback, OfflineWorldModel)
        assert wm_config.world_model_from(f"transformers:{lm_path}") is sim.model
    finally:
        wm_config.clear_cache()


@pytest.mark.parametrize(("text", "value"), [
    ('x {"a": "}{", "b": {"c": [1]}} y {"d": 2}', {"a": "}{", "b": {"c": [1]}}),
    ('<think>{"no": 1}</think>{"yes": "\\"q\\""}', {"yes": '"q"'}),
    ("{broken {\"ok\": true}", {"ok": True}),
    ("no json here", None),
    ('{"open": ', None),
])
def test_extract_json(text: str, value: Any) -> None:
    assert extract_json(text) == value
