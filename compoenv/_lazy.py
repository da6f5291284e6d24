"""Package attributes imported at first use: what keeps ``import compoenv.<package>`` cheap for
a process that needs only part of it."""

from __future__ import annotations

import sys
from importlib import import_module
from typing import Any, Callable, Mapping


def lazy_attributes(package: str, where: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package`` that imports ``<package>.<where[name]>`` when
    ``name`` is first asked for, and keeps the value in the package's namespace."""
    namespace = sys.modules[package].__dict__

    def __getattr__(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = namespace[name] = getattr(import_module(f"{package}.{where[name]}"), name)
        return value

    return __getattr__
