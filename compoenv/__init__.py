"""compoenv: compositional tool-use environments for agent RL (the CompoWorld method)."""

from __future__ import annotations

from compoenv.service import Service, State, ToolError, ToolSpec, tool
from compoenv.world import World

__version__ = "0.1.0"
__all__ = ["Service", "State", "ToolError", "ToolSpec", "tool", "World", "Registry", "register",
           "Task", "CompoWorldEnv", "__version__"]


def __getattr__(name: str):  # lazy: `import compoenv` stays cheap
    if name in ("Registry", "register"):
        from compoenv import registry
        return getattr(registry, name)
    if name == "Task":
        from compoenv.task import Task
        return Task
    if name == "CompoWorldEnv":
        from compoenv.env import CompoWorldEnv
        return CompoWorldEnv
    raise AttributeError(f"module 'compoenv' has no attribute {name!r}")


def _register_envs() -> None:
    from gymnasium.envs.registration import register as gym_register, registry as gym_registry

    if "CompoWorld-v0" not in gym_registry:
        gym_register(id="CompoWorld-v0", entry_point="compoenv.env:CompoWorldEnv",
                     disable_env_checker=True)


_register_envs()
