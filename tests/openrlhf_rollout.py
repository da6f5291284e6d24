"""A stand-in for OpenRLHF's vLLM rollout actor, over a tiny local model (CPU, no vLLM).

Not a test module: tests import it as ``from openrlhf_rollout import TinyRollout`` (tests/ is on
``sys.path``, like chat_server.py). OpenRLHF's rollout actor and sample generator live in modules
that import vLLM, so the functions the tests need from them (``RolloutRayActor.
generate_responses``, ``SamplesGenerator._process_response_into_experience`` and
``_load_agent_executor``) are compiled from OpenRLHF's installed source on their own: the code
that runs is OpenRLHF's.
"""

from __future__ import annotations

import ast
import asyncio
import threading
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import openrlhf
import torch
from openrlhf.trainer.ppo_utils.experience import Experience
from openrlhf.utils.agent import AgentExecutorBase

__all__ = ["EOS", "SamplingParams", "TinyRollout", "generate_responses", "load_agent_executor",
           "openrlhf_function", "process_response"]

SOURCE = Path(openrlhf.__file__).parent
EOS = "<|im_end|>"


def openrlhf_function(relpath: str, owner: str | None, name: str, **namespace: Any) -> Any:
    """One function of OpenRLHF's installed source, compiled without its module's imports."""
    path = SOURCE / relpath
    scope = ast.parse(path.read_text(encoding="utf-8")).body
    if owner:
        scope = next(n for n in scope if isinstance(n, ast.ClassDef) and n.name == owner).body
    node = next(n for n in scope
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name)
    node.decorator_list = []
    exec(compile(ast.Module([node], []), str(path), "exec"), namespace)
    return namespace[name]


generate_responses = openrlhf_function("trainer/ray/vllm_engine.py", "RolloutRayActor",
                                       "generate_responses", asyncio=asyncio)
process_response = openrlhf_function("trainer/ppo_utils/samples_generator.py", "SamplesGenerator",
                                     "_process_response_into_experience", torch=torch,
                                     Experience=Experience)
load_agent_executor = openrlhf_function("trainer/ray/vllm_engine.py", None, "_load_agent_executor",
                                        AgentExecutorBase=AgentExecutorBase)


@dataclass
class SamplingParams:
    """The fields of vllm.SamplingParams that MultiTurnAgentExecutor reads and writes."""

    max_tokens: int | None = None
    logprobs: int | None = 1
    temperature: float = 1.0


@dataclass
class Track:
    """One sample as the engine sees it: its script of forced actions and its tokens so far."""

    script: list[str]
    tokens: list[int]
    turns: int = 0
    busy: bool = False


class TinyRollout:
    """Stands in for RolloutRayActor: OpenRLHF's generate_responses over the tiny model.

    A random model never writes a tool call, so each sample follows a script: its first
    actions are teacher-forced (the text's token ids scored by the model for real log-probs),
    later ones are sampled freely (a few tokens, then the end-of-turn token).
    """

    generate_responses = generate_responses

    def __init__(self, executor: Any, model: Any, tokenizer: Any) -> None:
        self.executor, self.model, self.tokenizer = executor, model, tokenizer
        self.scripts: dict[tuple[int, ...], list[list[str]]] = {}
        self.tracks: list[Track] = []
        self.eos = tokenizer.convert_tokens_to_ids(EOS)
        self.lock = threading.Lock()

    def expect(self, prompt: str, scripts: list[list[str]]) -> None:
        ids = tuple(self.tokenizer(prompt, add_special_tokens=False)["input_ids"])
        self.scripts.setdefault(ids, []).extend(scripts)

    async def generate(self, prompt_token_ids: list[int], sampling_params: SamplingParams,
                       multi_modal_data: Any = None) -> SimpleNamespace:
        """Like vLLM's RequestOutput: ``outputs[0]`` has token_ids, text, finish_reason and
        logprobs (one {token id: object with .logprob} per token)."""
        prompt = list(prompt_token_ids)
        track = next((t for t in self.tracks if not t.busy and len(t.tokens) < len(prompt)
                      and prompt[:len(t.tokens)] == t.tokens), None)
        if track is None:
            track = Track(self.scripts[tuple(prompt)].pop(0), prompt)
            self.tracks.append(track)
        track.busy = True
        forced = track.script[track.turns] if track.turns < len(track.script) else None
        output = await asyncio.to_thread(self._run, prompt, forced, sampling_params,
                                         len(self.tracks))
        track.turns, track.tokens, track.busy = track.turns + 1, prompt + output.token_ids, False
        return SimpleNamespace(outputs=[output])

    def _run(self, prompt: list[int], forced: str | None, params: SamplingParams,
             seed: int) -> SimpleNamespace:
        with self.lock, torch.no_grad():
            if forced is None:
                ids = self._sample(prompt, params.temperature, seed) + [self.eos]
            else:
                ids = self.tokenizer(forced + EOS, add_special_tokens=False)["input_ids"]
            finish = "stop"
            if params.max_tokens is not None and len(ids) > params.max_tokens:
                ids, finish = ids[:params.max_tokens], "length"
            logits = self.model(torch.tensor([prompt + ids])).logits[0, len(prompt) - 1:-1]
            scores = torch.log_softmax(logits.float(), -1)[range(len(ids)), ids].tolist()
        return SimpleNamespace(token_ids=ids, finish_reason=finish,
                               text=self.tokenizer.decode(ids, skip_special_tokens=False),
                               logprobs=[{t: SimpleNamespace(logprob=s)}
                                         for t, s in zip(ids, scores)])

    def _sample(self, prompt: list[int], temperature: float, seed: int) -> list[int]:
        generator, ids = torch.Generator().manual_seed(seed), []
        for _ in range(6):
            logits = self.model(torch.tensor([prompt + ids])).logits[0, -1].float()
            logits[self.tokenizer.all_special_ids] = float("-inf")  # free text, never a turn end
            probs = torch.softmax(logits / max(temperature, 1e-3), -1)
            ids.append(int(torch.multinomial(probs, 1, generator=generator)))
        return ids
