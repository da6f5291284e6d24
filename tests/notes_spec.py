"""A two-tool spec-only notes service, shared by the world-model backend tests."""

from __future__ import annotations

from compoenv.worldmodel import SimulatedService, service_from_spec, validate_spec

NOTE = {"type": "object", "required": ["id", "title", "body"],
        "properties": {"id": {"type": "string"}, "title": {"type": "string"},
                       "body": {"type": "string", "x-interface": "Text"}}}
SPEC = validate_spec({
    "name": "notes", "domain": "productivity", "description": "A simple notes app for tests.",
    "state": "world_model",  # every call goes to the world model backend under test
    "tools": [
        {"name": "create_note", "description": "Create a note.", "read_only": False,
         "parameters": {"type": "object", "required": ["title", "body"], "properties": {
             "title": {"type": "string"}, "body": {"type": "string"}}},
         "returns": NOTE},
        {"name": "list_notes", "description": "List the user's notes.", "read_only": True,
         "parameters": {"type": "object", "properties": {}},
         "returns": {"type": "array", "maxItems": 8, "items": NOTE}},
    ]})
Notes = service_from_spec(SPEC, SimulatedService)
