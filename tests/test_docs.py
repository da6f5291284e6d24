"""The repository explains itself: the docs name what exists, and nothing cites a missing file."""

from __future__ import annotations

import re
from pathlib import Path

from compoenv.world import World

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def test_the_architecture_names_every_package_folder_and_module_it_lists():
    text = (DOCS / "architecture.md").read_text()
    folders = [p.name for p in (ROOT / "compoenv").iterdir()
               if p.is_dir() and (p / "__init__.py").exists()]
    assert all(f"compoenv/{name}/" in text for name in folders), folders
    for module in re.findall(r"`compoenv/([\w/]+\.py)`", text):
        assert (ROOT / "compoenv" / module).is_file(), module


def test_no_file_cites_a_design_document_outside_the_repository():
    tracked = [p for p in ROOT.rglob("*") if p.suffix in (".py", ".md", ".sh", ".cfg", ".toml")
               and ".git" not in p.parts and "build" not in p.parts]
    citing = [str(p.relative_to(ROOT)) for p in tracked
              if "DESIGN.md" in p.read_text(encoding="utf-8", errors="ignore")
              and p.name != "test_docs.py"]
    assert citing == []


def test_the_service_guide_documents_the_world_api_that_exists():
    text = (DOCS / "services.md").read_text()
    world = World(0)
    for name in set(re.findall(r"`world\.(\w+)", text)):
        assert hasattr(world, name), f"docs/services.md documents world.{name}"
    person = world.people[0]
    fields = re.search(r"A `Person` has (.*?)\.\n\n", text, re.S).group(1)
    for name in re.findall(r"`([a-z_]+)`", fields):
        assert hasattr(person, name), f"docs/services.md documents Person.{name}"


def test_the_readme_points_to_the_docs():
    readme = (ROOT / "README.md").read_text()
    assert "docs/architecture.md" in readme and "docs/services.md" in readme
