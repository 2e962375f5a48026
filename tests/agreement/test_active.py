# ruff: noqa: RUF003 (the method is written in its paper's symbols)
"""Active sampling (`agreement.active`, Zrnic & Candès 2024): the weighted estimate is the
paper's formula, computed here by hand; inclusion probabilities spend the budget and keep a
floor; the draw is the seed's; over 300 seeded simulated studies with a rater whose confidence
says where it errs, the intervals cover the true shares and are narrower than a uniform
sample's of the same size, and not narrower when the confidence says nothing."""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest
from ppi_py import classical_mean_ci, ppi_mean_ci, ppi_mean_pointestimate

from agreement.active import (
    bernoulli_draw,
    compare_sampling,
    estimate_shares_active,
    inclusion_probabilities,
    uncertainty,
    uniform_size_for,
)
from agreement.estimates import estimate_shares

CODES = ["A.1", "B.1", "C.1", "C.2", "FP"]
SHARES = [0.4, 0.25, 0.15, 0.12, 0.08]
STUDIES, N, BUDGET = 300, 3000, 300


def simulated_study(seed: int, informative: bool = True, n_total: int = N):
    """Truth drawn from SHARES; the rater is right with probability q, its confidence: 70 % of
    the issues are easy (q ≈ 0.97), 30 % hard (q from 0.3 to 0.7). An uninformative rater
    reports the same confidence everywhere, however right it is."""
    rng = np.random.default_rng([seed, 7])  # never the draw's stream (the draw uses `seed`)
    truth = rng.choice(len(CODES), size=n_total, p=SHARES)
    easy = rng.random(n_total) < 0.7
    q = np.where(easy, rng.uniform(0.95, 0.99, n_total), rng.uniform(0.3, 0.7, n_total))
    wrong = (truth + rng.integers(1, len(CODES), n_total)) % len(CODES)
    machine = np.where(rng.random(n_total) < q, truth, wrong)
    confidence = q if informative else np.full(n_total, 0.8)
    return (
        [CODES[t] for t in truth],
        [CODES[m] for m in machine],
        [float(c) for c in confidence],
    )


def indicator(labels, code):
    return np.array([label == code for label in labels], dtype=float)


def test_the_weighted_estimate_is_the_papers_formula():
    truth, machine, confidence = simulated_study(1)
    pi = inclusion_probabilities([uncertainty(q) for q in confidence], BUDGET)
    drawn = [i for i, d in enumerate(bernoulli_draw(pi, 11)) if d]
    # Make Σ_S 1/π = N exactly by scaling the drawn issues' probabilities: the paper's
    # Horvitz–Thompson sum and ppi-python's rescaled weights then coincide.
    inverse_sum = sum(1.0 / pi[i] for i in drawn)
    p_sample = [pi[i] * inverse_sum / N for i in drawn]
    assert max(p_sample) <= 1 and sum(1 / p for p in p_sample) == pytest.approx(N)
    human = [truth[i] for i in drawn]
    on_sample = [machine[i] for i in drawn]
    paper = estimate_shares_active(CODES, human, on_sample, machine, p_sample, lam=1.0)
    for estimate in paper:
        f_all = indicator(machine, estimate.code)
        xi_over_pi = np.zeros(N)
        xi_over_pi[drawn] = 1.0 / np.array(p_sample)
        y = np.zeros(N)
        y[drawn] = indicator(human, estimate.code)
        # θ̂ = (1/N) Σ_i [f(x_i) + (Y_i − f(x_i)) ξ_i / π_i]
        theta = float(np.mean(f_all + (y - f_all) * xi_over_pi))
        assert estimate.share == pytest.approx(min(1.0, max(0.0, theta)), abs=1e-9)
        assert (estimate.n_human, estimate.n_total) == (len(drawn), N)

    # With the draw's own probabilities Σ_S 1/π ≠ N: the correction is the Hájek ratio.
    p_drawn = [pi[i] for i in drawn]
    hajek = estimate_shares_active(CODES, human, on_sample, machine, p_drawn, lam=1.0)
    human_only = estimate_shares_active(CODES, human, on_sample, machine, p_drawn, lam=0.0)
    inverse = 1.0 / np.array(p_drawn)
    assert abs(inverse.sum() - N) > 1  # the probe can tell the two forms apart
    for ratio, plain in zip(hajek, human_only, strict=True):
        y_s, f_s = indicator(human, ratio.code), indicator(on_sample, ratio.code)
        expected = indicator(machine, ratio.code).mean() + (inverse * (y_s - f_s)).sum() / (
            inverse.sum()
        )
        assert ratio.share == pytest.approx(expected, abs=1e-9)
        weighted_mean = float((inverse * y_s).sum() / inverse.sum())
        assert plain.share == pytest.approx(weighted_mean, abs=1e-9)
        assert ratio.classical_share == pytest.approx(weighted_mean, abs=1e-9)


def test_the_tuned_estimate_is_ppi_python_with_weights_on_every_issue():
    truth, machine, confidence = simulated_study(2)
    pi = inclusion_probabilities([uncertainty(q) for q in confidence], BUDGET)
    drawn = [i for i, d in enumerate(bernoulli_draw(pi, 12)) if d]
    human, on_sample = [truth[i] for i in drawn], [machine[i] for i in drawn]
    probabilities = [pi[i] for i in drawn]
    w = (len(drawn) / N) / np.array(probabilities)
    for estimate in estimate_shares_active(CODES, human, on_sample, machine, probabilities):
        y, y_hat = indicator(human, estimate.code), indicator(on_sample, estimate.code)
        y_all = indicator(machine, estimate.code)
        point = float(np.squeeze(ppi_mean_pointestimate(y, y_hat, y_all, w=w)))
        low, high = (float(np.squeeze(b)) for b in ppi_mean_ci(y, y_hat, y_all, 0.05, w=w))
        c_low, c_high = classical_mean_ci(y, w=w, alpha=0.05)
        assert estimate.share == pytest.approx(point, abs=1e-9)
        assert (estimate.ci_low, estimate.ci_high) == pytest.approx(
            (max(0.0, low), min(1.0, high)), abs=1e-9
        )
        assert estimate.classical_ci_low == pytest.approx(max(0.0, c_low), abs=1e-9)
        assert estimate.classical_ci_high == pytest.approx(min(1.0, c_high), abs=1e-9)


def test_probabilities_spend_the_budget_keep_a_floor_and_follow_the_uncertainty():
    u = [uncertainty(q) for q in (0.99, 0.9, 0.5, None, 0.0, 1.0)]
    assert u[3] == u[4] == 1.0 and u[5] == 0.0 and u[0] < u[1] < u[2] < u[3]
    pi = inclusion_probabilities(u * 100, budget=60, uniform_share=0.2)
    assert sum(pi) == pytest.approx(60, abs=1e-9)
    assert min(pi) >= 0.2 * 60 / 600 - 1e-12  # a rater sure of an issue leaves it a chance
    assert pi[0] < pi[1] < pi[2] < pi[3] == pi[4]
    # A budget near the scope caps the most uncertain at 1 and spreads the rest again.
    capped = inclusion_probabilities([0.0] * 90 + [1.0] * 10, budget=50, uniform_share=0.1)
    assert max(capped) == 1.0 and capped[-1] == 1.0
    assert sum(capped) == pytest.approx(50, abs=1e-9) and max(capped) <= 1.0
    for bad in ({"budget": 0}, {"budget": 601}, {"budget": 60, "uniform_share": 0.0}):
        with pytest.raises(ValueError):
            inclusion_probabilities(u * 100, **{"budget": 60, **bad})


def test_the_draw_is_the_seeds():
    pi = inclusion_probabilities([uncertainty(q) for q in simulated_study(3)[2]], BUDGET)
    first = bernoulli_draw(pi, 5)
    assert first == bernoulli_draw(pi, 5)
    assert first != bernoulli_draw(pi, 6)
    sizes = [sum(bernoulli_draw(pi, seed)) for seed in range(40)]
    assert abs(np.mean(sizes) - BUDGET) < 3 * np.sqrt(BUDGET) / np.sqrt(40)


@cache
def studies(informative: bool, count: int = STUDIES) -> dict:
    """STUDIES seeded studies, each estimated from an active draw and from a uniform sample of
    the budget's size: per code, how often the interval held the true share, and the mean
    interval widths."""
    covered = {code: 0 for code in CODES}
    widths: dict[str, list[float]] = {"active": [], "uniform": []}
    for seed in range(count):
        truth, machine, confidence = simulated_study(seed, informative)
        shares = {code: truth.count(code) / N for code in CODES}
        pi = inclusion_probabilities([uncertainty(q) for q in confidence], BUDGET)
        drawn = [i for i, d in enumerate(bernoulli_draw(pi, seed)) if d]
        active = estimate_shares_active(
            CODES,
            [truth[i] for i in drawn],
            [machine[i] for i in drawn],
            machine,
            [pi[i] for i in drawn],
        )
        chosen = set(np.random.default_rng([seed, 3]).choice(N, BUDGET, replace=False).tolist())
        uniform = estimate_shares(
            CODES,
            [truth[i] for i in sorted(chosen)],
            [machine[i] for i in sorted(chosen)],
            [machine[i] for i in range(N) if i not in chosen],
        )
        for estimate in active:
            covered[estimate.code] += estimate.ci_low <= shares[estimate.code] <= estimate.ci_high
        widths["active"].append(np.mean([e.ci_high - e.ci_low for e in active]))
        widths["uniform"].append(np.mean([e.ci_high - e.ci_low for e in uniform]))
    return {
        "coverage": {code: hits / count for code, hits in covered.items()},
        "active": float(np.mean(widths["active"])),
        "uniform": float(np.mean(widths["uniform"])),
    }


def test_active_intervals_cover_the_true_shares():
    coverage = studies(informative=True)["coverage"]
    assert min(coverage.values()) >= 0.93, coverage


def test_an_informative_confidence_narrows_the_intervals_and_a_flat_one_does_not():
    informative, flat = studies(informative=True), studies(informative=False, count=100)
    # At the same number of human labels the active intervals are narrower...
    assert informative["active"] < 0.93 * informative["uniform"], informative
    # ...because of the confidence: with one confidence everywhere the draw is uniform.
    assert flat["active"] == pytest.approx(flat["uniform"], rel=0.03), flat
    assert min(flat["coverage"].values()) >= 0.93


def test_the_simulator_reports_the_human_labels_saved():
    truth, machine, confidence = simulated_study(4, n_total=1500)
    rows = compare_sampling(CODES, truth, machine, confidence, [300, 150, 600], draws=30, seed=1)
    assert [row.size for row in rows] == [150, 300, 600]
    widths = [row.uniform_width for row in rows]
    for row in rows[:2]:
        assert row.active_width < row.uniform_width
        # Read off the uniform curve: between the sizes whose widths bracket the active one.
        assert row.uniform_equivalent == pytest.approx(
            uniform_size_for(row.active_width, [150, 300, 600], widths)
        )
        assert row.size < row.uniform_equivalent < 2 * row.size
        assert row.saved == pytest.approx(row.uniform_equivalent - row.active_mean_drawn)
        assert row.saved > 0.1 * row.size
        assert set(row.as_json()) >= {"size", "human_labels_saved", "uniform_mean_width"}
    _, _, flat = simulated_study(4, informative=False, n_total=1500)
    control = compare_sampling(CODES, truth, machine, flat, [150, 300, 600], draws=30, seed=1)
    for row in control[:2]:
        assert row.saved is not None and abs(row.saved) < 0.1 * row.size


def test_the_uniform_curve_is_read_between_sizes_and_not_beyond():
    sizes, widths = [100, 400], [0.2, 0.1]
    assert uniform_size_for(0.2, sizes, widths) == pytest.approx(100)
    assert uniform_size_for(0.1, sizes, widths) == pytest.approx(400)
    # Halfway in log width is halfway in log size: √(100 · 400).
    assert uniform_size_for((0.2 * 0.1) ** 0.5, sizes, widths) == pytest.approx(200)
    assert uniform_size_for(0.4, sizes, widths) == pytest.approx(25)  # 1/√n below the sizes
    assert uniform_size_for(0.05, sizes, widths) is None
