"""Rubric scoring and the completion-focused group reward."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compoenv.reward import Outcome, completion_focused, same_value, score_rubric
from compoenv.session import Session
from compoenv.task import AnswerCriterion, CallCriterion, StateCriterion, UnchangedCriterion
from compoenv.world import World


@pytest.mark.parametrize("expected, actual, equal", [
    ("Paris", " paris. ", True), (12.5, "12.50", True), (12.5, 12.51, False),
    ("1,234.50", 1234.5, True), (["a@x.com", "b@x.com"], ["B@x.com", "a@x.com"], True),
    (["a"], ["a", "b"], False), ({"city": "Oslo"}, {"city": "oslo", "x": 1}, True),
    ({"city": "Oslo"}, {"town": "Oslo"}, False), (True, "true", False), ("open", "opened", False),
])
def test_same_value_normalises_case_space_numbers_and_order(expected, actual, equal):
    assert same_value(expected, actual) is equal


def _session() -> Session:
    return Session.for_names(["contacts", "bank"], World.get(0))


def test_answer_criterion_matches_numbers_and_text_in_the_final_message():
    s = _session()
    money = AnswerCriterion(id="a", description="", value="1234.50")
    city = AnswerCriterion(id="b", description="", value="New York")
    r = score_rubric([money, city], Outcome(s, "It costs $1,234.50 and is in new  york."))
    assert r.passes == [True, True]
    r = score_rubric([money, city], Outcome(s, "It costs 1234.6 in York."))
    assert r.passes == [False, False]


def test_state_call_and_unchanged_criteria_follow_the_session():
    s = _session()
    contact = next(iter(s.state("contacts").contacts.values()))
    new_phone = "+1 555-123-4567"
    state = StateCriterion(id="s", description="", service="contacts", collection="contacts",
                           key=contact.id, match={"phone": new_phone})
    call = CallCriterion(id="c", description="", name="contacts__update_phone",
                         arguments={"contact_id": contact.id})
    guard = UnchangedCriterion(id="u", description="", service="contacts",
                               collection="contacts", except_keys=[contact.id], required=False)
    rubric = [state, call, guard]
    assert score_rubric(rubric, Outcome(s)).passes == [False, False, True]
    s.call("contacts__update_phone", {"contact_id": contact.id, "phone": new_phone})
    result = score_rubric(rubric, Outcome(s))
    assert result.passes == [True, True, True] and result.rubric_score == 1.0 and result.passed
    other = [k for k in s.state("contacts").contacts if k != contact.id][0]
    s.call("contacts__update_phone", {"contact_id": other, "phone": new_phone})
    assert score_rubric(rubric, Outcome(s)).passes == [True, True, False]


def test_score_is_weighted_mean_and_binary_needs_every_required_criterion():
    s = _session()
    a = AnswerCriterion(id="a", description="", value="yes", weight=3)
    b = AnswerCriterion(id="b", description="", value="blue", weight=1, required=False)
    c = AnswerCriterion(id="c", description="", value="green", weight=2)
    r = score_rubric([a, b, c], Outcome(s, "yes, green"))
    assert r.rubric_score == pytest.approx(5 / 6) and r.passed
    r = score_rubric([a, b, c], Outcome(s, "yes and blue"))
    assert r.rubric_score == pytest.approx(4 / 6) and not r.passed


def test_no_work_no_reward_guards_count_only_beside_work():
    s = _session()
    work = AnswerCriterion(id="a", description="", value="yes")
    guard = UnchangedCriterion(id="u", description="", service="contacts", collection="contacts",
                               required=False, weight=0.5)
    idle = score_rubric([work, guard], Outcome(s, "I'm done."))
    assert idle.passes == [False, True]  # the guard's own verdict stays honest
    assert (idle.rubric_score, idle.passed, idle.net_score, idle.worked) == (0.0, False, 0.0, False)
    done = score_rubric([work, guard], Outcome(s, "yes"))
    assert done.rubric_score == done.net_score == 1.0


def test_net_score_counts_failed_guards_against_the_score():
    s = _session()
    work = AnswerCriterion(id="a", description="", value="yes", weight=1)
    guard = UnchangedCriterion(id="u", description="", service="contacts", collection="contacts",
                               required=False, weight=1)
    key = next(iter(s.state("contacts").contacts))
    s.call("contacts__update_phone", {"contact_id": key, "phone": "+1 555-123-4567"})
    r = score_rubric([work, guard], Outcome(s, "yes"))
    # an optional guard adds nothing to the score; net of it, the damage costs its share
    assert r.rubric_score == pytest.approx(1.0) and r.net_score == 0.0 and r.passed


def test_a_failed_required_guard_voids_the_episode():
    s = _session()
    work = AnswerCriterion(id="a", description="", value="yes", weight=1)
    guard = UnchangedCriterion(id="u", description="", service="contacts", collection="contacts",
                               weight=1)
    key = next(iter(s.state("contacts").contacts))
    s.call("contacts__update_phone", {"contact_id": key, "phone": "+1 555-123-4567"})
    r = score_rubric([work, guard], Outcome(s, "yes"))
    assert r.worked and r.rubric_score == 0.0 and not r.passed and r.net_score == 0.0
    clean = score_rubric([work, guard], Outcome(_session(), "yes"))
    assert clean.rubric_score == 1.0 and clean.passed


def test_a_broken_criterion_fails_itself_not_the_episode():
    bad = StateCriterion(id="s", description="", service="nope", collection="x")
    r = score_rubric([bad], Outcome(_session()))
    assert r.passes == [False] and "criterion error" in r.criteria[0].detail


# --- completion-focused group reward ---------------------------------------------------------
matrices = st.integers(1, 8).flatmap(lambda k: st.lists(
    st.lists(st.booleans(), min_size=k, max_size=k), min_size=1, max_size=8))


def test_alpha_zero_lam_zero_is_the_plain_weighted_rubric():
    passes = [[1, 0, 1], [0, 0, 1], [1, 1, 1]]
    w = [2.0, 1.0, 1.0]
    plain = [sum(wi * p for wi, p in zip(w, row)) / sum(w) for row in passes]
    assert completion_focused(passes, w, alpha=0, lam=0) == pytest.approx(plain)


def test_alpha_zero_lam_zero_with_kinds_is_the_rubric_score():
    """With kinds, the writes carry the rubric score's share of it; guards are gates."""
    kinds = ["state", "answer", "unchanged", "call", "call"]
    required = [True, True, True, False, True]
    w = [1.0, 1.0, 0.5, 0.5, 1.0]
    passes = [[1, 0, 1, 1, 1], [1, 1, 1, 0, 0], [0, 1, 1, 1, 0]]
    # required writes (0, 4) carry 0.75, the rest (1, 3) 0.25; the guard adds nothing
    mixed = [0.75 * (row[0] + row[4]) / 2 + 0.25 * (row[1] + 0.5 * row[3]) / 1.5
             for row in passes]
    assert completion_focused(passes, w, required, alpha=0, lam=0, kinds=kinds) == \
        pytest.approx(mixed)


def test_rare_criteria_weigh_more_than_common_ones():
    passes = [[1, 0], [1, 0], [1, 0], [1, 1]]
    r = completion_focused(passes, required=[False, False], lam=0)
    # the rollout that also passes the rare criterion gains more than the common one gives
    assert r[3] - r[0] > r[0]


def test_group_of_one_all_pass_and_all_fail_are_finite():
    # G=1: passed criteria weigh eps, the failed one 1 + eps; no completion bonus
    assert completion_focused([[1, 0, 1]]) == pytest.approx([0.5 * 0.1 / 1.15])
    assert completion_focused([[1, 1], [1, 1]]) == [1.0, 1.0]
    assert completion_focused([[0, 0], [0, 0]]) == [0.0, 0.0]
    assert completion_focused([]) == []


def test_mismatched_rows_are_rejected():
    with pytest.raises(ValueError, match="criterion results"):
        completion_focused([[1, 0], [1]])


@settings(max_examples=200, deadline=None)
@given(matrices, st.randoms(use_true_random=False))
def test_permuting_rollouts_permutes_rewards(passes, rnd):
    order = list(range(len(passes)))
    rnd.shuffle(order)
    r = completion_focused(passes)
    shuffled = completion_focused([passes[i] for i in order])
    assert shuffled == pytest.approx([r[i] for i in order])


@settings(max_examples=200, deadline=None)
@given(matrices)
def test_full_completion_is_always_the_group_maximum_and_rewards_are_bounded(passes):
    r = completion_focused(passes)
    assert all(0.0 <= x <= 1.0 and not math.isnan(x) for x in r)
    full = [i for i, row in enumerate(passes) if all(row)]
    if full:
        assert max(r) == pytest.approx(r[full[0]])


@settings(max_examples=200, deadline=None)
@given(matrices, st.integers(0, 7))
def test_passing_one_more_criterion_never_lowers_a_rollouts_reward(passes, j):
    k = len(passes[0])
    j %= k
    row = passes[0]
    if row[j]:
        return
    better = [*passes[1:], [*row[:j], True, *row[j + 1:]]]
    worse = [*passes[1:], row]
    # criterion j's weight falls as it gets commoner, but never by more than the rollout gains
    for lam in (0.0, 0.5):
        assert (completion_focused(better, lam=lam)[-1]
                >= completion_focused(worse, lam=lam)[-1] - 1e-12)


@settings(max_examples=200, deadline=None)
@given(matrices, st.integers(0, 7), st.integers(0, 7))
def test_a_rarer_criterion_is_worth_more_than_a_commoner_one(passes, j, k):
    width = len(passes[0])
    j, k = j % width, k % width
    rate = [sum(row[c] for row in passes) for c in range(width)]
    if width < 2 or rate[j] >= rate[k]:
        return
    # two probe rollouts, one passing only j and one only k, keep j the rarer of the two
    probes = [[c == j for c in range(width)], [c == k for c in range(width)]]
    r = completion_focused([*passes, *probes], lam=0)
    assert r[-2] > r[-1]


@settings(max_examples=300, deadline=None)
@given(matrices, st.lists(st.booleans(), min_size=8, max_size=8), st.floats(0, 1),
       st.floats(0, 2))
def test_a_rollout_passing_no_required_criterion_gets_the_groups_lowest_reward(
        passes, required, lam, alpha):
    need = required[:len(passes[0])]
    if not any(need):
        return  # no required criterion: nothing to gate on
    r = completion_focused(passes, required=need, lam=lam, alpha=alpha)
    idle = [i for i, row in enumerate(passes) if not any(p for p, n in zip(row, need) if n)]
    for i in idle:
        assert r[i] == 0.0 == min(r)


def test_guards_alone_earn_nothing_in_a_group():
    # criterion 0 is the work, 1 and 2 are guards: passing only guards is worth nothing
    r = completion_focused([[0, 1, 1], [1, 0, 0], [1, 1, 1]], required=[True, False, False])
    assert r[0] == 0.0 < r[1] < r[2] == 1.0


def test_guards_are_gates_of_the_group_reward_too():
    """With kinds, a guard adds no reward, passing guards alone is no work, and a failed
    required guard gives the rollout the group's lowest reward, as in the rubric score."""
    kinds = ["state", "answer", "unchanged"]
    passes = [[1, 1, 1], [1, 1, 0], [0, 0, 1], [1, 0, 1]]
    r = completion_focused(passes, [1.0, 1.0, 0.5], [True, True, True], kinds=kinds)
    assert r[0] == max(r) and r[1] == 0.0 and r[2] == 0.0 and 0 < r[3] < r[0]
    with pytest.raises(ValueError):
        completion_focused(passes, kinds=["state"])
