"""Shared fixtures: composed task sets are built once per session (composition is seeded)."""

from __future__ import annotations

import pytest

from compoenv.compose import Composer, ComposerConfig
from compoenv.task import Task


@pytest.fixture(scope="session")
def tasks50() -> list[Task]:
    """50 verified 2-4 hop tasks over at least 2 services."""
    return list(Composer(config=ComposerConfig(min_hops=2, max_hops=4)).generate(50, seed=11))


@pytest.fixture(scope="session")
def task(tasks50: list[Task]) -> Task:
    return tasks50[0]
