"""The adaptive stopping rule: when an issue has enough labels to be decided before K.

Under the fixed rule every issue gets K labels. Under the adaptive rule (a project setting) an
issue is decided after at least `min_labels` labels as soon as the leading choice at the
deciding level is `lead` votes ahead of the runner-up. The deciding level is the theme, as in
the study: a label's deciding key is its (type, theme), or the exclusion key for a false
positive. A false-positive exclusion still needs every label taken so far. At K the fixed rules
(unanimity, the project's majority policy, else the disagreement queue) decide, so this rule
only ever answers for fewer than K labels.

An enlisted machine rater (a lead's choice, `labeling.models.MachineRater.enlisted`) whose label
on the issue reaches its confidence threshold is one more vote (`machine`): it is counted with
the human labels, in the minimum, the lead and the exclusion's unanimity, but only beside at
least one human label (it never decides alone), as one vote however confident, and only below K
in all (humans plus machine < K; at K the fixed rules decide on the K human labels).

This module is the rule in Python, for the Python submission path and for the policy
simulator; `labeling.submission`'s PL/pgSQL function states it again in SQL, and the
table-driven test of both paths proves they agree. How the machine's vote counts is stated
here only; which labels vote is `MachineLabel.objects.enlisted_votes` (read by
`labeling.resolution.enlisted_machine_vote`, and in SQL by the PL/pgSQL function, which declines
every label of an issue that has one, so the Python path counts it;
`tests/labeling/test_paths_equal.py`'s machine states).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Protocol

from annotator.models import Project
from labeling.labels import FP


class _Labelled(Protocol):
    is_false_positive: bool
    issue_type_id: int | None
    theme_id: int | None


def deciding_key(row: _Labelled) -> Hashable:
    """What the adaptive rule counts for an annotation or a `Label`: (type, theme), or FP."""
    if row.is_false_positive:
        return FP
    return (row.issue_type_id, row.theme_id)


@dataclass(frozen=True)
class AdaptiveRule:
    """At least `min_labels`, at most `k` labels; decided when the leader is `lead` ahead."""

    min_labels: int
    lead: int
    k: int

    @classmethod
    def of(cls, project: Project) -> AdaptiveRule | None:
        """The project's adaptive rule, or None when it labels every issue K times."""
        if project.stopping_rule != "adaptive":
            return None
        return cls(
            min_labels=max(1, project.min_labels),
            lead=max(1, project.lead_margin),
            k=project.annotations_per_issue,
        )


def early_decision(
    keys: Sequence[Hashable],
    rule: AdaptiveRule,
    exclusion: Hashable = FP,
    machine: Hashable | None = None,
) -> Hashable | None:
    """The deciding key an issue with these labels (in any order) is decided on before K, or None
    when it needs another label (or has K, where the fixed rules decide).

    `keys` are the human labels' deciding keys; `exclusion` is the key that needs unanimity;
    `machine` the deciding key of an enlisted machine rater's confident label, or None.
    """
    if machine is not None and keys:
        keys = [*keys, machine]  # one vote, and never without a human label
    n = len(keys)
    if n < rule.min_labels or n >= rule.k:
        return None
    ranked = Counter(keys).most_common(2)
    leader, votes = ranked[0]
    runner_up = ranked[1][1] if len(ranked) > 1 else 0
    if votes - runner_up < rule.lead:
        return None
    if leader == exclusion and votes != n:
        return None
    return leader
