"""Motifs: each appears in composed tasks, phrases itself, and grades what it asks for."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from compoenv.agents import OracleAgent
from compoenv.compose import MOTIFS, Composer, ComposerConfig, Rejected, replay
from compoenv.compose.motifs import aggregate, fan_out
from compoenv.compose.walk import Binding, Walker
from compoenv.env import CompoWorldEnv
from compoenv.graph import ToolGraph
from compoenv.registry import Registry
from compoenv.rollout import run_episode
from compoenv.session import Session
from compoenv.world import World


@pytest.fixture(scope="module")
def tasks300():
    return list(Composer().generate(300, seed=21))


def only(motif: str, n: int = 6):
    config = ComposerConfig(motifs=(motif,) if motif != "house-rules" else
                            ("cross-service-constraint", "house-rules"))
    return [t for t in Composer(config=config).generate(40, seed=5)
            if motif in t.capabilities][:n]


def test_every_motif_appears_in_at_least_ten_percent_of_a_default_set(tasks300):
    counts = Counter(tag for t in tasks300 for tag in t.capabilities)
    for motif in MOTIFS:
        assert counts[motif] / len(tasks300) >= 0.10, (motif, counts)


def test_aggregation_asks_for_a_count_total_or_extreme_item():
    tasks = only("aggregation")
    assert tasks
    for t in tasks:
        text = t.instruction
        assert any(w in text for w in ("how many", "total", "highest", "lowest", "earliest",
                                       "latest")), text


def test_fan_out_runs_one_write_per_item_and_grades_each():
    tasks = only("fan-out")
    assert tasks
    for t in tasks:
        assert "for each" in t.instruction
        first = t.solution[1].name  # the list comes first, then one write per item
        writes = []
        for call in t.solution[1:]:
            if call.name != first:
                break
            writes.append(call)
        assert len(writes) >= 2
        assert len({str(c.arguments) for c in writes}) == len(writes)  # one call per item
        # nothing follows: "the payment's amount" after one payment per item names no one
        assert len(t.solution) == 1 + len(writes)
        created = [c for c in t.rubric if c.kind == "state" and c.required]
        assert len(created) >= len(writes)


def test_cross_service_constraint_mounts_both_branches_and_guards_the_other():
    tasks = only("cross-service-constraint")
    assert tasks
    for t in tasks:
        assert "otherwise" in t.instruction and " is above " in t.instruction
        executed = {c.name.split("__")[0] for c in t.solution}
        assert set(t.services) >= executed


def test_house_rules_are_stated_before_the_request():
    tasks = only("house-rules")
    assert tasks
    for t in tasks:
        assert t.instruction.startswith("House rules: Whenever ")
        assert "\nRequest: " in t.instruction and "apply the house rules" in t.instruction


def test_motif_control_limits_the_motifs_used():
    tasks = list(Composer(config=ComposerConfig(motifs=())).generate(15, seed=2))
    for t in tasks:
        assert not set(t.capabilities) & {"aggregation", "fan-out", "cross-service-constraint",
                                           "house-rules"}
    with pytest.raises(ValueError, match="unknown motifs"):
        ComposerConfig(motifs=("teleport",))


def test_oracle_solves_every_motif_task_through_the_text_interface(tasks300):
    env = CompoWorldEnv(tasks300, max_steps=12)
    for i, t in enumerate(tasks300):
        if set(t.capabilities) & {"aggregation", "fan-out", "cross-service-constraint"}:
            traj = run_episode(env, OracleAgent(per_action=2), options={"index": i})
            assert traj["meta"]["rubric_score"] == 1.0, t.id


def city_list_walker(tool: str) -> Walker:
    """A walker whose first step is ``tool``'s list of 2+ items for some city."""
    registry = Registry.default()
    graph = ToolGraph(registry.tools())
    spec = graph.specs[tool]
    session = Session(list(registry), World.get(0))
    walker = Walker(graph, session, random.Random(0), allowed={spec.service})
    for city in session.world.cities:
        if walker.execute(spec, [Binding("city", city.name)], fits=lambda found: len(found) > 1):
            return walker
    raise AssertionError(f"{tool} found no list of 2+ items")


def test_a_motif_that_cannot_use_a_list_names_the_list_tool():
    walker = city_list_walker("pharmacy__find_pharmacies")  # items have no number or date
    with pytest.raises(Rejected) as info:
        aggregate(walker, 0, report=False)
    assert (info.value.reason, info.value.tools) == ("no_aggregate",
                                                     ("pharmacy__find_pharmacies",))
    with pytest.raises(Rejected) as info:  # its writes lie in services it may not use
        fan_out(walker, 0)
    assert (info.value.reason, info.value.tools) == ("no_fan_out",
                                                     ("pharmacy__find_pharmacies",))


def test_distractors_are_unused_services_recorded_in_the_task():
    config = ComposerConfig(distractors=2)
    for t in Composer(config=config).generate(10, seed=4):
        assert len(t.distractors) == 2 and not set(t.distractors) & set(t.services)
        assert replay(t).rubric_score == 1.0
