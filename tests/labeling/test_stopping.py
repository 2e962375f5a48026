"""The adaptive stopping rule on its own, case by case (the rule both labeling paths and the
policy simulator use)."""

import pytest

from labeling.stopping import FP, AdaptiveRule, early_decision

# The labeling package's shared fixtures (the study taxonomy) need the test database.
pytestmark = [pytest.mark.django_db, pytest.mark.one_path]

RULE = AdaptiveRule(min_labels=2, lead=2, k=7)
A, B, C = ("Q", "Q.1"), ("Q", "Q.2"), ("B", "B.3")


@pytest.mark.parametrize(
    ("keys", "expected"),
    [
        ([A], None),  # below the minimum, even if unanimous
        ([A, A], A),  # two ahead of nothing
        ([A, B], None),  # a tie
        ([A, B, A], None),  # 2 - 1: one ahead
        ([A, B, A, A], A),  # 3 - 1
        ([A, B, C, A], None),  # 2 - 1 - 1
        ([A, B, C, A, A], A),  # 3 - 1 - 1
        ([FP, FP], FP),  # an exclusion decided by every label taken
        ([FP, FP, FP, A], None),  # three ahead, but an exclusion needs all of them
        ([FP, A, A, A], A),  # an exclusion vote does not block a theme's lead
        ([A, A, A, A, A, A, A], None),  # at K the fixed rules decide
    ],
)
def test_an_issue_is_decided_once_the_leader_is_far_enough_ahead(keys, expected):
    assert early_decision(keys, RULE) == expected


def test_a_larger_lead_needs_more_labels():
    rule = AdaptiveRule(min_labels=2, lead=3, k=7)
    assert early_decision([A, A], rule) is None
    assert early_decision([A, A, A], rule) == A


def test_a_lead_beyond_k_never_decides_early():
    """With a lead no panel below K can reach, every issue gets K labels (the full panel)."""
    rule = AdaptiveRule(min_labels=2, lead=7, k=7)
    assert all(early_decision([A] * n, rule) is None for n in range(1, 8))


def test_the_project_settings_make_the_rule():
    class Project:
        stopping_rule = "adaptive"
        min_labels = 3
        lead_margin = 1
        annotations_per_issue = 5

    assert AdaptiveRule.of(Project()) == AdaptiveRule(min_labels=3, lead=1, k=5)
    Project.stopping_rule = "fixed"
    assert AdaptiveRule.of(Project()) is None
