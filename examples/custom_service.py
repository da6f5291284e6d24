"""Check a service written with the decorators, and compose tasks that cross into it.

The service lives in an installable package, examples/plugin_package (``pip install
./examples/plugin_package`` registers it for the CLI too, through the ``compoenv.services``
entry point); this script imports it from there directly.

Run: python examples/custom_service.py
"""

from __future__ import annotations

import sys
from pathlib import Path

from compoenv.compose import Composer, ComposerConfig
from compoenv.registry import Registry
from compoenv.testing import check_service

sys.path.insert(0, str(Path(__file__).resolve().with_name("plugin_package")))
from compoenv_giftcards import GiftCards  # noqa: E402  (installed or not)


def main() -> None:
    check_service(GiftCards)  # the library's conventions: phrases, interfaces, seeding
    registry = Registry(service for service in Registry.default() if service.name != "giftcards")
    registry.add(GiftCards)
    composer = Composer(registry, ComposerConfig(services=("contacts", "giftcards", "bank"),
                                                 require=("giftcards",)))
    for task in composer.generate(3, seed=1):
        print(f"[{', '.join(task.services)}] {task.instruction}")


if __name__ == "__main__":
    main()
