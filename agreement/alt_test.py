# ruff: noqa: RUF002, RUF003 (the statistics are written in the paper's symbols)
"""The alternative annotator test: may a machine rater stand in for the human annotators?

Calderon, Reichart & Dror, "The Alternative Annotator Test for LLM-as-a-Judge" (ACL 2025).
Given items each labeled by several humans and a machine's label on each, leave one annotator
out at a time. On each item that annotator labeled, score the machine and the left-out human by
how well they agree with the *remaining* humans (alignment by accuracy: the share of the
remaining humans' labels equal to theirs). The machine wins the item if its score is at least
the human's (W_f = 1), the human wins it if the human's is at least the machine's (W_h = 1);
a tie counts for both. Per annotator j the null hypothesis is that the machine's advantage
probability ρ_f(j) = mean W_f is at most the human's ρ_h(j) = mean W_h minus ε, the cost-benefit
margin; it is tested with a one-sided one-sample t-test of d = W_h − W_f against ε
(H1: mean d < ε). The p-values of all annotators are adjusted by Benjamini–Yekutieli (FDR
q = 0.05, statsmodels' `fdr_by`); the machine "wins" against annotator j when j's adjusted
p-value is at most q. The winning rate ω is the share of annotators it wins against, and the
machine passes when ω ≥ 0.5. The advantage probability ρ (the mean of ρ_f over annotators)
compares machines with one another: higher is better.

Only items with at least `min_humans` human labels count (3 here: with one left out, a
consensus of at least two remains), and only annotators with at least `min_items` such items
(30, the paper's floor for the t-test's normality). Fewer than 3 such annotators is "not enough
data", reported with the counts, never a pass or a fail. A t-test whose differences do not
vary (every d the same) has no p-value; it is then decided exactly: p = 0 if that constant d
is below ε, else 1.

`alt_test` is pure (codes in, result out); `raters.alt_test` gathers a project's human labels
and a rater's labels at theme level and calls it.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

DEFAULT_EPSILON = 0.2
FDR_Q = 0.05
MIN_HUMANS_PER_ITEM = 3
MIN_ITEMS_PER_ANNOTATOR = 30
MIN_ANNOTATORS = 3

A = TypeVar("A", bound=Hashable)  # an annotator
Item = TypeVar("Item", bound=Hashable)
L = TypeVar("L", bound=Hashable)  # a label


@dataclass(frozen=True)
class Comparison:
    """One left-out annotator: the machine against that annotator."""

    annotator: Hashable
    n_items: int
    machine_advantage: float  # ρ_f(j): the share of items where the machine scored ≥ the human
    human_advantage: float  # ρ_h(j)
    p_value: float
    p_adjusted: float  # Benjamini–Yekutieli
    won: bool  # the null rejected at q: the machine represents the others at least as well


@dataclass(frozen=True)
class AltTestResult:
    epsilon: float
    n_items: int  # items with at least `min_humans` human labels and a machine label
    n_annotators: int  # annotators compared (with at least `min_items` of those items)
    enough_data: bool
    winning_rate: float | None = None
    advantage_probability: float | None = None
    passed: bool | None = None
    comparisons: tuple[Comparison, ...] = field(default_factory=tuple)
    # Every annotator's count of usable items, compared or not: what "not enough data" means.
    items_per_annotator: Mapping[Hashable, int] = field(default_factory=dict)
    min_items: int = MIN_ITEMS_PER_ANNOTATOR
    min_humans: int = MIN_HUMANS_PER_ITEM

    def as_json(self) -> dict:
        """The keys `raters --json`, the API and a release carry under `alt_test`."""
        return {
            "epsilon": self.epsilon,
            "n_items": self.n_items,
            "n_annotators": self.n_annotators,
            "enough_data": self.enough_data,
            "winning_rate": self.winning_rate,
            "passed": self.passed,
            "advantage_probability": self.advantage_probability,
            "min_items_per_annotator": self.min_items,
            "min_humans_per_item": self.min_humans,
            "comparisons": [
                {
                    "annotator": str(c.annotator),
                    "n_items": c.n_items,
                    "machine_advantage": c.machine_advantage,
                    "human_advantage": c.human_advantage,
                    "p_value": c.p_value,
                    "p_adjusted": c.p_adjusted,
                    "won": c.won,
                }
                for c in self.comparisons
            ],
        }


def _accuracy(label: L, others: list[L]) -> float:
    return sum(label == other for other in others) / len(others)


def _one_sided_p(differences: list[int], epsilon: float) -> float:
    """P-value of H0: mean(d) ≥ ε against H1: mean(d) < ε (one-sample t-test)."""
    from scipy.stats import ttest_1samp

    if len(set(differences)) == 1:
        return 0.0 if differences[0] < epsilon else 1.0
    return float(ttest_1samp(differences, epsilon, alternative="less").pvalue)


def alt_test(
    humans: Mapping[A, Mapping[Item, L]],
    machine: Mapping[Item, L],
    epsilon: float = DEFAULT_EPSILON,
    q: float = FDR_Q,
    min_humans: int = MIN_HUMANS_PER_ITEM,
    min_items: int = MIN_ITEMS_PER_ANNOTATOR,
    min_annotators: int = MIN_ANNOTATORS,
) -> AltTestResult:
    """The alt-test of `machine` ({item: label}) against `humans` ({annotator: {item: label}}).

    A machine label that can never match a human's (an invalid output) should be passed as a
    value no human uses, so it counts as a miss rather than being left out."""
    from statsmodels.stats.multitest import multipletests

    labelers: dict[Item, list[A]] = {}
    for annotator, labels in humans.items():
        for item in labels:
            labelers.setdefault(item, []).append(annotator)
    items = {i for i, who in labelers.items() if len(who) >= min_humans and i in machine}
    per_annotator = {
        annotator: sorted((i for i in labels if i in items), key=repr)
        for annotator, labels in humans.items()
    }
    counts: dict[Hashable, int] = {a: len(its) for a, its in per_annotator.items()}
    compared = [a for a, its in per_annotator.items() if len(its) >= min_items]
    if len(compared) < min_annotators:
        return AltTestResult(
            epsilon=epsilon,
            n_items=len(items),
            n_annotators=len(compared),
            enough_data=False,
            items_per_annotator=counts,
            min_items=min_items,
            min_humans=min_humans,
        )

    rows = []
    for annotator in compared:
        machine_wins, human_wins = [], []
        for item in per_annotator[annotator]:
            others = [humans[h][item] for h in labelers[item] if h != annotator]
            human_score = _accuracy(humans[annotator][item], others)
            machine_score = _accuracy(machine[item], others)
            machine_wins.append(int(machine_score >= human_score))
            human_wins.append(int(human_score >= machine_score))
        differences = [h - m for h, m in zip(human_wins, machine_wins, strict=True)]
        rows.append(
            (
                annotator,
                len(differences),
                sum(machine_wins) / len(machine_wins),
                sum(human_wins) / len(human_wins),
                _one_sided_p(differences, epsilon),
            )
        )
    rejected, adjusted, _, _ = multipletests([row[4] for row in rows], alpha=q, method="fdr_by")
    comparisons = tuple(
        Comparison(a, n, mf, mh, p, float(p_adj), bool(won))
        for (a, n, mf, mh, p), p_adj, won in zip(rows, adjusted, rejected, strict=True)
    )
    winning_rate = sum(c.won for c in comparisons) / len(comparisons)
    return AltTestResult(
        epsilon=epsilon,
        n_items=len(items),
        n_annotators=len(comparisons),
        enough_data=True,
        winning_rate=winning_rate,
        advantage_probability=sum(c.machine_advantage for c in comparisons) / len(comparisons),
        passed=winning_rate >= 0.5,
        comparisons=comparisons,
        items_per_annotator=counts,
        min_items=min_items,
        min_humans=min_humans,
    )
