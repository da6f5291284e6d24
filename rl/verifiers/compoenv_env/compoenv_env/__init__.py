"""The compoenv environment package: verifiers and prime-rl load it by its id, ``compoenv-env``."""

from __future__ import annotations

from compoenv.integrations.verifiers import CompoenvEnv, CompoenvTaskset, load_environment

__all__ = ["CompoenvEnv", "CompoenvTaskset", "load_environment"]
