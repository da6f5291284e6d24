"""Task composition: random walks over the tool graph, instruction rendering, rubric, verification."""

from compoenv.compose.generator import Composer, ComposerConfig, derive_seed
from compoenv.compose.motifs import MOTIFS
from compoenv.compose.verify import oracle_message, replay, verify_task
from compoenv.compose.walk import Rejected
from compoenv.compose.doctor import diagnose

__all__ = ["Composer", "ComposerConfig", "MOTIFS", "Rejected", "derive_seed", "diagnose",
           "oracle_message", "replay", "verify_task"]
