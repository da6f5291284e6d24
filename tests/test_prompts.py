"""The tool listing text: a shared tuple listing is rendered once and reused, with the same
text as any other sequence of the same tools."""

from __future__ import annotations

import json

from compoenv import prompts
from compoenv.env import CompoWorldEnv
from compoenv.prompts import tools_block


def test_a_tuple_listing_is_rendered_once_as_a_list_of_it_would_be(task):
    env = CompoWorldEnv()
    tools = tuple(env.reset(options={"task": task})[1]["tools"])
    tools = tuple(json.loads(json.dumps(t)) for t in tools)  # plain dicts, a fresh tuple
    first = tools_block(tools)
    assert tools_block(tools) is first  # reused
    assert first == tools_block(list(tools))  # lists are rendered each time, the same
    for tool in tools:
        assert json.dumps(tool, separators=(",", ":")) in first
    other = tuple(dict(t) for t in tools[:1])
    assert tools_block(other) != first and prompts._BLOCKS[id(other)][0] is other


def test_the_cache_of_rendered_listings_stays_bounded():
    for i in range(1100):
        tools_block(({"type": "function", "function": {"name": f"t{i}"}},))
    assert len(prompts._BLOCKS) <= 1024
