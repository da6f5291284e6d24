"""Text spaces of CompoWorld observations and actions, correct in Gymnasium's vector envs.

Gymnasium's shared memory for a ``Text`` space stores one int32 per character of the space's
charset and decodes the buffer once, when the vector env is built: an ``AsyncVectorEnv`` then
returns the same stale strings at every step, drops characters outside the charset, and
allocates ``4 * max_length`` bytes per env. ``TextSpace`` registers its own shared memory: each
env's slot holds a length and the UTF-8 bytes of its last observation, and the vector env's
observations are a view decoded when read (``copy=True``, the default, decodes once per call).
"""

from __future__ import annotations

import multiprocessing as mp
import string
from collections.abc import Sequence
from types import ModuleType
from typing import Any, Iterator, overload

import numpy as np
from gymnasium import spaces
from gymnasium.vector.utils import (
    create_shared_memory, read_from_shared_memory, write_to_shared_memory,
)

from compoenv.actions import MAX_CALLS_PER_ACTION, MAX_RESULT_CHARS

__all__ = ["TextSpace", "SharedTexts", "MAX_OBSERVATION_CHARS", "TOOL_RESPONSE",
           "SAFE_OUTPUT_CHARS", "bounded", "tool_output_limit"]

# The most characters one observation holds (a reset's tool listing is 3-40 K characters; a
# step's tool results are each cut to fit, see tool_output_limit).
MAX_OBSERVATION_CHARS = 1 << 18
TOOL_RESPONSE = "<tool_response>\n{}\n</tool_response>"  # one call's output in an observation
_WRAP = len(TOOL_RESPONSE) - 2 + 1  # the tags, and the newline that joins responses
SAFE_OUTPUT_CHARS = MAX_OBSERVATION_CHARS // (MAX_CALLS_PER_ACTION + 1) - _WRAP  # 7,909
_HEADER = 8  # bytes of the length prefix of a slot


class TextSpace(spaces.Text):
    """Any string of at most ``max_length`` characters (samples are printable ASCII)."""

    def __init__(self, max_length: int) -> None:
        super().__init__(max_length=max_length, min_length=0, charset=string.printable)

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"TextSpace(max_length={self.max_length})"

    @property
    def slot_bytes(self) -> int:
        """Bytes of one env's shared-memory slot: the UTF-8 of ``max_length`` characters."""
        return _HEADER + 4 * self.max_length


def bounded(text: str, limit: int = MAX_OBSERVATION_CHARS) -> str:
    """``text`` cut to ``limit`` characters, the cut said at the end (so it fits the space)."""
    if len(text) <= limit:
        return text
    note = f"\n[observation truncated: {len(text):,} characters, over the limit of {limit:,}]"
    return text[: limit - len(note)] + note


def tool_output_limit(outputs: Sequence[str], responses: int) -> int:
    """The most characters the next tool response may show: ``MAX_RESULT_CHARS``, and no more
    than an equal share of what ``outputs`` (the step's responses so far, each wrapped in
    ``TOOL_RESPONSE``) left of the observation, so that the step's ``responses`` together never
    exceed ``MAX_OBSERVATION_CHARS``. A response of at most ``SAFE_OUTPUT_CHARS`` always fits
    (an action holds at most ``MAX_CALLS_PER_ACTION + 1`` responses): only longer ones need
    their share worked out."""
    used = sum(len(text) for text in outputs) + len(outputs)
    left = max(responses - len(outputs), 1)
    return max(0, min(MAX_RESULT_CHARS, (MAX_OBSERVATION_CHARS - used) // left - _WRAP))


class SharedTexts(Sequence[str]):
    """The observations of ``n`` envs in shared memory, decoded from UTF-8 when read."""

    def __init__(self, shared: Any, n: int, slot: int) -> None:
        self._bytes = np.frombuffer(shared.get_obj(), dtype=np.uint8)
        self._n, self._slot = n, slot

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[str, ...]: ...
    def __getitem__(self, index: int | slice) -> str | tuple[str, ...]:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(self._n)))
        if not -self._n <= index < self._n:
            raise IndexError(f"env index {index} out of range for {self._n} envs")
        start = (index % self._n) * self._slot
        size = int.from_bytes(self._bytes[start: start + _HEADER].tobytes(), "little")
        body = self._bytes[start + _HEADER: start + _HEADER + size].tobytes()
        return body.decode("utf-8", "surrogatepass")

    def __iter__(self) -> Iterator[str]:
        return (self[i] for i in range(self._n))

    def __eq__(self, other: object) -> bool:
        return tuple(self) == (tuple(other) if isinstance(other, Sequence) else other)

    __hash__ = None  # type: ignore[assignment]

    def __deepcopy__(self, memo: dict[int, Any]) -> tuple[str, ...]:
        return tuple(self)  # what AsyncVectorEnv(copy=True) hands out: plain strings

    def __repr__(self) -> str:
        return f"SharedTexts({tuple(self)!r})"


@create_shared_memory.register(TextSpace)
def _create(space: TextSpace, n: int = 1, ctx: ModuleType = mp) -> Any:
    return ctx.Array("B", n * space.slot_bytes)


@read_from_shared_memory.register(TextSpace)
def _read(space: TextSpace, shared_memory: Any, n: int = 1) -> SharedTexts:
    return SharedTexts(shared_memory, n, space.slot_bytes)


@write_to_shared_memory.register(TextSpace)
def _write(space: TextSpace, index: int, value: str, shared_memory: Any) -> None:
    data = bounded(value, space.max_length).encode("utf-8", "surrogatepass")
    view = np.frombuffer(shared_memory.get_obj(), dtype=np.uint8)
    start = index * space.slot_bytes
    view[start: start + _HEADER] = np.frombuffer(len(data).to_bytes(_HEADER, "little"), np.uint8)
    view[start + _HEADER: start + _HEADER + len(data)] = np.frombuffer(data, np.uint8)
