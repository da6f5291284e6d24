"""Random agent: tool calls with random (often wrong) arguments, malformed text, early stops."""

from __future__ import annotations

import json
import random as _random
from typing import Any

from compoenv.actions import ToolCall, render_calls

__all__ = ["RandomAgent"]

_JUNK: tuple[Any, ...] = (None, "", "x", -1, 0, 3.5, True, [], {}, "2026-03-20", "Paris",
                          "INV-0001", "ORD-0002", "ACC-0001", "ana@example.com", "\x00\u202e",
                          "A" * 5000)
_BROKEN = ('<tool_call>{"name": ', '<tool_call>{"name": "x", "arguments": [1,2]}</tool_call>',
           '<function=bank__transfer><parameter=amount>lots</parameter></function>',
           '{"name": 42}', "<tool_call>" + "[" * 200 + "</tool_call>")


class RandomAgent:
    """A baseline that never solves much but exercises every error path of the env.

    Args:
        seed: Seed of its private random stream.
        stop_prob: Chance per action of giving a final answer.
    """

    def __init__(self, seed: int = 0, stop_prob: float = 0.05) -> None:
        self.rng = _random.Random(seed)
        self.stop_prob = stop_prob

    def reset(self, observation: str, info: dict[str, Any]) -> None:
        pass

    def _value(self, schema: dict[str, Any]) -> Any:
        if self.rng.random() < 0.3:
            return self.rng.choice(_JUNK)
        if "enum" in schema:
            return self.rng.choice(schema["enum"])
        kind = schema.get("type")
        if kind == "integer":
            return self.rng.randint(0, 5)
        if kind == "number":
            return round(self.rng.uniform(0, 500), 2)
        if kind == "boolean":
            return self.rng.random() < 0.5
        if kind == "array":
            return [self._value(schema.get("items", {}))]
        if kind == "object":
            return {}
        return self.rng.choice(_JUNK[9:15])

    def act(self, observation: str, info: dict[str, Any]) -> str:
        roll = self.rng.random()
        if roll < self.stop_prob:
            return "I am done. " + self.rng.choice(("42", "Paris", "yes", ""))
        if roll < self.stop_prob + 0.1:
            return self.rng.choice(_BROKEN)
        tool = self.rng.choice(info["tools"])["function"]
        props = tool.get("parameters", {}).get("properties", {})
        args = {k: self._value(v) for k, v in props.items() if self.rng.random() < 0.8}
        if self.rng.random() < 0.1:
            args["unexpected"] = 1
        name = tool["name"] if self.rng.random() < 0.9 else tool["name"] + "x"
        text = render_calls([ToolCall(name, args, "call_0")], self.rng.choice(
            ("hermes", "qwen3_coder", "json")))
        return text if self.rng.random() < 0.95 else json.dumps(args)
