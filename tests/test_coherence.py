"""Requests hang together: services that belong in one request, flows that carry something
new, messages about what was found, and a line of context."""

from __future__ import annotations

import random
from typing import Annotated
import pytest

from compoenv.compose import Composer, ComposerConfig
from compoenv.compose.context import CONTEXTS, context_line
from compoenv.compose.values import fresh_value
from compoenv.graph import ToolGraph
from compoenv.interfaces import PersonName, Url
from compoenv.registry import Registry
from compoenv.roles import IDENTITY, Role
from compoenv.service import Service, tool
from compoenv.world import World


Site = Annotated[Url, Role("website")]


def _service(name: str, related: tuple[str, ...]) -> type[Service]:
    class Finder(Service):
        """Finds people."""

        domain = "testing"

        @tool(read_only=True)
        def find(self, name: Annotated[PersonName, Role("contact")]) -> Site:
            """Find a person's home page."""
            return f"https://example.org/{name}"

        @tool()
        def bookmark(self, url: Site) -> str:
            """Bookmark a page."""
            return "saved"

    Finder.name, Finder.related = name, related
    Finder.__name__ = Finder.__qualname__ = f"Finder_{name}"
    return Finder


def test_unrelated_services_share_no_edge_and_undeclared_ones_join_anything():
    alpha, beta = _service("alpha", ("gamma",)), _service("beta", ("delta",))
    loose, hub = _service("loose", ()), _service("hub", ("*",))
    registry = Registry([alpha, beta, loose, hub])
    assert not registry.related("alpha", "beta")
    assert registry.related("alpha", "loose") and registry.related("beta", "hub")
    graph = ToolGraph(registry.tools(), registry.related)
    pairs = {(graph.specs[e.source].service, e.target_service)
             for n in graph.specs for e in graph.out_edges(n)}
    assert ("alpha", "beta") not in pairs and ("beta", "alpha") not in pairs
    assert {("alpha", "loose"), ("loose", "beta"), ("hub", "alpha"), ("beta", "hub")} <= pairs
    everything = ToolGraph(registry.tools())  # no relation given: every pair joins
    assert ("alpha", "beta") in {(everything.specs[e.source].service, e.target_service)
                                 for n in everything.specs for e in everything.out_edges(n)}


def test_every_library_service_declares_existing_neighbours():
    registry = Registry.default()
    names = set(registry.names())
    for name in names:
        related = registry.get(name).related
        assert related, f"{name} declares no related services"
        assert set(related) - {"*"} <= names, (name, set(related) - names)


@pytest.fixture(scope="module")
def walks() -> list:
    composer = Composer(config=ComposerConfig(min_hops=2, max_hops=5))
    out = []
    for seed in range(400):
        try:
            out.append(composer._build(seed))
        except Exception:  # a rejected seed: the composer tries the next one
            continue
    assert len(out) > 150
    return out


def test_every_value_flows_between_related_services(walks):
    registry = Registry.default()
    for _, walk in walks:
        for step in walk.steps:
            # the value a step is chosen for (its first binding) comes along a graph edge; a
            # start that needs nothing ("list my open issues") carries nothing
            carried = step.bindings[0] if step.bindings else None
            if carried is not None and carried.source is not None:
                source = walk.steps[carried.source].spec.service
                assert registry.related(source, step.spec.service), (source, step.spec.name)


def test_a_carried_value_is_never_one_the_request_states(walks):
    for task, walk in walks:
        for i, step in enumerate(walk.steps):
            stated = {str(b.value).casefold() for s in walk.steps[:i] for b in s.bindings
                      if b.source is None}
            carried = step.bindings[0] if step.bindings else None
            if carried is not None and carried.source is not None:
                assert str(carried.value).casefold() not in stated, (task.instruction, carried)


def test_what_is_written_to_a_person_is_the_users_own_words(walks):
    for task, walk in walks:
        for step in walk.steps:
            to_person = any(s.interface in IDENTITY and s.required for s in step.spec.inputs)
            for b in step.bindings:
                if to_person and b.interface in ("Text", "EmailSubject"):
                    assert b.source is None, (task.instruction, step.spec.name, b.param)


def test_fan_out_reaches_different_people_none_of_them_named_in_the_request(walks):
    seen = 0
    for task, walk in walks:
        if "fan-out" not in walk.motifs:
            continue
        seen += 1
        named = {str(b.value).casefold() for b in walk.steps[0].bindings if b.source is None}
        carried = [tuple(b.value for b in s.bindings if b.source == 0) for s in walk.steps[1:]]
        assert len(set(carried)) == len(carried), task.instruction
        assert not {str(v).casefold() for c in carried for v in c} & named, task.instruction
    assert seen


def test_a_message_to_someone_found_is_about_what_was_found():
    world, rng = World(0), random.Random(0)
    schema = {"type": "string", "x-interface": "EmailSubject"}
    assert fresh_value("subject", schema, world, rng, about=("support ticket", False)) in (
        "About the support ticket", "Following up on the support ticket",
        "A question about the support ticket")
    body = fresh_value("body", {"type": "string", "x-interface": "Text"}, world, rng,
                       about=("pharmacy", True))
    assert "opening hours" in body or "availability" in body
    hire = fresh_value("body", {"type": "string", "x-interface": "Text"}, world, rng,
                       about=("personal trainer", True))
    assert hire.startswith("Hello,")
    lead = fresh_value("subject", schema, world, rng, about=("lead", True))
    assert lead in ("Following up", "Quick intro call?")


def test_requests_open_with_a_line_of_context_from_their_domain(walks):
    user = World(0).user
    line = context_line("hr", user, seed=3)
    assert line in {t.format(employer=user.employer) for t in CONTEXTS["hr"]}
    assert context_line("productivity", user, seed=3) is None
    opened = sum(any(t.split("{")[0] in task.instruction for ts in CONTEXTS.values()
                     for t in ts) for task, _ in walks)
    assert opened > len(walks) // 3


def test_a_write_that_changes_a_record_needs_more_than_which_record():
    from compoenv.compose.identity import call_problem
    from compoenv.schema import Slot
    from compoenv.service import ToolSpec

    def spec(name: str, read_only: bool = False, description: str = "d") -> ToolSpec:
        params = {"type": "object", "required": ["playlist_id"], "properties": {
            "playlist_id": {"type": "string"}, "title": {"type": "string"}}}
        return ToolSpec(service="music", name=name, description=description,
                        read_only=read_only, simulated=True, parameters=params,
                        returns={"type": "object"},
                        inputs=(Slot("MusicPlaylistId", ("playlist_id",)),))
    world = World.get(0)
    assert call_problem(spec("update_playlist"), {"playlist_id": "p1"}, world) == "empty_update"
    assert call_problem(spec("update_playlist"), {"playlist_id": "p1", "title": "Runs"},
                        world) is None
    assert call_problem(spec("delete_playlist"), {"playlist_id": "p1"}, world) is None
    # an imported operation's verb may trail its name, or only its description may say it
    assert call_problem(spec("music_playlists_patch"), {"playlist_id": "p1"},
                        world) == "empty_update"
    assert call_problem(spec("music_playlists_2", description="Updates a playlist."),
                        {"playlist_id": "p1"}, world) == "empty_update"
    assert call_problem(spec("music_playlists_3", description="Deletes a playlist."),
                        {"playlist_id": "p1"}, world) is None
    assert call_problem(spec("get_playlist", read_only=True), {"playlist_id": "p1"},
                        world) is None
