"""SkyRL entry point for compoenv: the "compoenv" env class, and the completion-focused group
reward over each prompt's n samples.

Run (see rl/skyrl/run_compoenv.sh for a full command):
    python rl/skyrl/main_compoenv.py environment.env_class=compoenv generator.max_turns=16 ...

It is SkyRL's own main entry point (``skyrl.train.entrypoints.main_base``) with two changes:
the training task imports ``compoenv.integrations.skyrl`` (which registers the env class with
skyrl_gym in that process, where the generator makes its envs), and the generator is SkyRL's
``SkyRLGymGenerator`` with ``CompletionFocusedGenerator`` mixed in. COMPOENV_REWARD_ALPHA,
COMPOENV_REWARD_EPS and COMPOENV_REWARD_LAM set completion_focused's parameters (defaults 1.0,
0.05, 0.5); COMPOENV_GROUP_REWARD=0 keeps SkyRL's per-trajectory rubric score.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import ray
from skyrl.train.config import SkyRLTrainConfig
from skyrl.train.entrypoints.main_base import BasePPOExp, validate_cfg
from skyrl.train.utils import initialize_ray

_REWARD = {"alpha": ("COMPOENV_REWARD_ALPHA", 1.0), "eps": ("COMPOENV_REWARD_EPS", 0.05),
           "lam": ("COMPOENV_REWARD_LAM", 0.5)}


def reward_settings() -> dict[str, float] | None:
    """completion_focused's parameters from the environment; None for no group reward."""
    if os.environ.get("COMPOENV_GROUP_REWARD", "1").strip() == "0":
        return None
    return {key: float(os.environ.get(name, "").strip() or default)
            for key, (name, default) in _REWARD.items()}


class CompoenvPPOExp(BasePPOExp):
    """SkyRL's experiment with compoenv's group-reward generator."""

    def __init__(self, cfg: SkyRLTrainConfig, reward: dict[str, float] | None) -> None:
        self.reward = reward
        super().__init__(cfg)

    def get_generator(self, cfg: Any, tokenizer: Any, inference_engine_client: Any) -> Any:
        generator = super().get_generator(cfg, tokenizer, inference_engine_client)
        if self.reward is None:
            return generator
        from compoenv.integrations.skyrl import CompletionFocusedGenerator

        base = type(generator)
        mixed = type(f"CompletionFocused{base.__name__}", (CompletionFocusedGenerator, base), {
            "reward_alpha": self.reward["alpha"], "reward_eps": self.reward["eps"],
            "reward_lam": self.reward["lam"]})
        generator.__class__ = mixed  # the same object, its generate now rewards by group
        return generator


@ray.remote(num_cpus=1)
def skyrl_entrypoint(cfg: SkyRLTrainConfig, reward: dict[str, float] | None) -> None:
    import compoenv.integrations.skyrl  # noqa: F401  registers env_class "compoenv" here

    CompoenvPPOExp(cfg, reward).run()


def main() -> None:
    cfg = SkyRLTrainConfig.from_cli_overrides(sys.argv[1:])
    validate_cfg(cfg)
    initialize_ray(cfg)
    ray.get(skyrl_entrypoint.remote(cfg, reward_settings()))  # read here, where they are set


if __name__ == "__main__":
    main()
