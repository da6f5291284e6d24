"""Task composition: random walks over the tool graph, instruction rendering, rubric, verification.

The names below are imported when first used: ``compoenv.compose.config`` (the options and the
motif names) is all that playing given tasks needs.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from compoenv.compose.config import MOTIFS, ComposerConfig

__all__ = ["Composer", "ComposerConfig", "MOTIFS", "Rejected", "derive_seed", "diagnose",
           "oracle_message", "replay", "verify_task"]

_WHERE = {"Composer": "generator", "derive_seed": "generator", "oracle_message": "verify",
          "replay": "verify", "verify_task": "verify", "Rejected": "walk", "diagnose": "doctor"}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        value = getattr(import_module(f"compoenv.compose.{_WHERE[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'compoenv.compose' has no attribute {name!r}")
