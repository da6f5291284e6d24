"""Task composition: random walks over the tool graph, instruction rendering, rubric, verification.

The names below are imported when first used: ``compoenv.compose.config`` (the options and the
motif names) is all that playing given tasks needs.
"""

from __future__ import annotations

from compoenv._lazy import lazy_attributes
from compoenv.compose.config import MOTIFS, ComposerConfig

__all__ = ["Composer", "ComposerConfig", "MOTIFS", "Rejected", "derive_seed", "diagnose",
           "oracle_message", "replay", "verify_task"]

_WHERE = {"Composer": "generator", "derive_seed": "generator", "oracle_message": "verify",
          "replay": "verify", "verify_task": "verify", "Rejected": "walk", "diagnose": "doctor"}

__getattr__ = lazy_attributes(__name__, _WHERE)
