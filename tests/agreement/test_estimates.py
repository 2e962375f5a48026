"""Shares with machine help (`agreement.estimates`): equal to `ppi-python` called on the same
arrays one code at a time, covering the true shares of simulated studies with a machine of
known confusion (a biased one included), and a plan that delivers the half-width it promises."""

from __future__ import annotations

import numpy as np
import pytest
from ppi_py import classical_mean_ci, ppi_mean_ci, ppi_mean_pointestimate

from agreement.estimates import estimate_shares, plan_sizes

CODES = ["A.1", "B.1", "C.1", "C.2", "FP"]
SHARES = [0.45, 0.25, 0.15, 0.1, 0.05]  # unequal: a rare code and a common one


def confusion(accuracy: float, bias_to: int | None = None) -> np.ndarray:
    """Row t: the machine's label distribution when the truth is code t. A biased machine puts
    its mistakes on one code, so its raw share of that code is far too high."""
    k = len(CODES)
    matrix = np.full((k, k), (1 - accuracy) / (k - 1))
    if bias_to is not None:
        matrix[:] = 0.0
        matrix[:, bias_to] = 1 - accuracy
        matrix[np.arange(k), np.arange(k)] += accuracy
    else:
        matrix[np.arange(k), np.arange(k)] = accuracy
    assert np.allclose(matrix.sum(axis=1), 1.0)
    return matrix


def simulated_study(rng, n_total: int, matrix: np.ndarray):
    truth = rng.choice(len(CODES), size=n_total, p=SHARES)
    # Row t's cumulative distribution, read at a uniform draw: the machine's label.
    machine = (rng.random(n_total)[:, None] > np.cumsum(matrix, axis=1)[truth]).sum(axis=1)
    return [CODES[t] for t in truth], [CODES[m] for m in machine]


def test_estimates_equal_ppi_python_code_by_code():
    rng = np.random.default_rng(3)
    truth, machine = simulated_study(rng, 1500, confusion(0.8))
    n = 200
    human, on_sample, elsewhere = truth[:n], machine[:n], machine[n:]
    estimates = estimate_shares(CODES, human, on_sample, elsewhere)
    for estimate in estimates:
        y = np.array([h == estimate.code for h in human], dtype=float)
        y_hat = np.array([m == estimate.code for m in on_sample], dtype=float)
        y_unl = np.array([m == estimate.code for m in elsewhere], dtype=float)
        point = float(np.squeeze(ppi_mean_pointestimate(y, y_hat, y_unl)))
        low, high = (float(np.squeeze(b)) for b in ppi_mean_ci(y, y_hat, y_unl, alpha=0.05))
        c_low, c_high = classical_mean_ci(y, alpha=0.05)
        assert estimate.share == pytest.approx(point, abs=1e-9)
        assert estimate.ci_low == pytest.approx(max(0.0, low), abs=1e-9)
        assert estimate.ci_high == pytest.approx(min(1.0, high), abs=1e-9)
        assert estimate.classical_share == pytest.approx(y.mean(), abs=1e-12)
        assert estimate.classical_ci_low == pytest.approx(max(0.0, c_low), abs=1e-9)
        assert estimate.classical_ci_high == pytest.approx(min(1.0, c_high), abs=1e-9)
        assert (estimate.n_human, estimate.n_total) == (200, 1500)


def ppi_plus_by_hand(y, y_hat, y_unl, z=1.959963984540054):
    """PPI++ for a mean, written from Angelopoulos, Duchi & Zrnic (2023), not from the package:
    lambda = cov(Y, Yhat) / ((1 + n/N) Var(Yhat)), clipped to [0, 1], the variance of Yhat over
    every issue; theta = lambda mean(Yhat_unlabeled) + mean(Y - lambda Yhat); its variance the
    unlabeled term lambda^2 Var(Yhat_unlabeled) / N plus the rectifier's Var(Y - lambda Yhat) / n.
    """
    n, big_n = len(y), len(y_unl)
    my, mh = sum(y) / n, sum(y_hat) / n
    cov = sum((a - my) * (b - mh) for a, b in zip(y, y_hat, strict=True)) / n
    every = list(y_hat) + list(y_unl)
    m_all = sum(every) / len(every)
    var_all = sum((v - m_all) ** 2 for v in every) / (len(every) - 1)
    lam = min(1.0, max(0.0, cov / ((1 + n / big_n) * var_all))) if var_all else 0.0
    rect = [a - lam * b for a, b in zip(y, y_hat, strict=True)]
    m_rect, m_unl = sum(rect) / n, sum(y_unl) / big_n
    theta = lam * m_unl + m_rect
    var_rect = sum((r - m_rect) ** 2 for r in rect) / n
    var_unl = sum((u - m_unl) ** 2 for u in y_unl) / big_n
    half = z * (lam * lam * var_unl / big_n + var_rect / n) ** 0.5
    return theta, theta - half, theta + half


def test_estimates_equal_ppi_plus_plus_written_by_hand():
    rng = np.random.default_rng(12)
    truth, machine = simulated_study(rng, 900, confusion(0.75, bias_to=2))
    n = 120
    for estimate in estimate_shares(CODES, truth[:n], machine[:n], machine[n:]):
        as_ones = [[float(c == estimate.code) for c in part] for part in
                   (truth[:n], machine[:n], machine[n:])]  # fmt: skip
        theta, low, high = ppi_plus_by_hand(*as_ones)
        assert estimate.share == pytest.approx(min(1.0, max(0.0, theta)), abs=1e-9)
        assert estimate.ci_low == pytest.approx(max(0.0, low), abs=1e-9)
        assert estimate.ci_high == pytest.approx(min(1.0, high), abs=1e-9)


def test_a_good_machine_narrows_the_interval_and_a_useless_one_does_not_bias_it():
    rng = np.random.default_rng(4)
    truth, good = simulated_study(rng, 3000, confusion(0.9))
    useless = list(rng.choice(CODES, size=3000))
    n = 300
    narrow = estimate_shares(CODES, truth[:n], good[:n], good[n:])
    plain = estimate_shares(CODES, truth[:n], useless[:n], useless[n:])
    for with_good, with_useless in zip(narrow, plain, strict=True):
        assert with_good.ci_high - with_good.ci_low < (
            with_good.classical_ci_high - with_good.classical_ci_low
        )
        assert with_good.effective_n is not None and with_good.effective_n > n
        # λ near 0: the estimate stays near the classical one, the interval near its width.
        width = with_useless.ci_high - with_useless.ci_low
        classical_width = with_useless.classical_ci_high - with_useless.classical_ci_low
        assert width <= classical_width * 1.1


@pytest.mark.slow
@pytest.mark.parametrize(
    "matrix", [confusion(0.8), confusion(0.8, bias_to=1)], ids=["noisy", "biased"]
)
def test_intervals_cover_the_true_shares_of_simulated_studies(matrix):
    """500 seeded studies of 2,000 issues with 400 human-labeled at random: each code's 95 %
    interval covers the code's true share among the 2,000 at least 93 % of the time (every
    code has at least 20 expected issues in the sample; see `sparse` for fewer)."""
    studies, n_total, n = 500, 2000, 400
    covered = np.zeros(len(CODES))
    for seed in range(studies):
        rng = np.random.default_rng(seed)
        truth, machine = simulated_study(rng, n_total, matrix)
        sample = rng.permutation(n_total)
        labeled, rest = sample[:n], sample[n:]
        estimates = estimate_shares(
            CODES,
            [truth[i] for i in labeled],
            [machine[i] for i in labeled],
            [machine[i] for i in rest],
        )
        for k, estimate in enumerate(estimates):
            true_share = sum(t == estimate.code for t in truth) / n_total
            covered[k] += estimate.ci_low <= true_share <= estimate.ci_high
    coverage = covered / studies
    assert (coverage >= 0.93).all(), dict(zip(CODES, coverage.round(3), strict=True))


def test_the_plan_delivers_the_half_width_it_promises():
    """Plan from a pilot of 300, then draw that many human labels from a fresh study of the
    same kind: every interval is within the half-width (5 % slack for sampling noise)."""
    rng = np.random.default_rng(8)
    matrix = confusion(0.85)
    truth, machine = simulated_study(rng, 20000, matrix)
    plan = plan_sizes(CODES, truth[:300], machine[:300], machine[300:], half_width=0.03)
    assert 0 < plan.n_ppi < plan.n_classical <= plan.n_total
    # The classical plan is the textbook n = z² p(1-p) / h² for the most uncertain code.
    p = max(SHARES, key=lambda s: s * (1 - s))
    assert plan.n_classical == pytest.approx(1.96**2 * p * (1 - p) / 0.03**2, rel=0.15)
    fresh_truth, fresh_machine = simulated_study(np.random.default_rng(9), 20000, matrix)
    n = plan.n_ppi
    estimates = estimate_shares(CODES, fresh_truth[:n], fresh_machine[:n], fresh_machine[n:])
    for estimate in estimates:
        assert (estimate.ci_high - estimate.ci_low) / 2 <= 0.03 * 1.05, estimate


def test_a_code_seen_fewer_than_ten_times_in_the_sample_is_marked_sparse():
    human = ["A.1"] * 40 + ["B.1"] * 9 + ["FP"] * 1
    estimates = estimate_shares(CODES, human, human, ["A.1"] * 100)
    assert {e.code: e.sparse for e in estimates} == {
        "A.1": False, "B.1": True, "C.1": True, "C.2": True, "FP": True,
    }  # fmt: skip
    assert estimates[0].as_json("github.com/a/b")["by"] == "github.com/a/b"


def test_a_machine_that_never_says_a_code_leaves_its_share_to_the_humans():
    """λ would be 0/0 for a code the machine never gives: it is 0, the classical estimate."""
    human = ["A.1"] * 30 + ["B.1"] * 20
    machine = ["A.1"] * 50
    estimates = {e.code: e for e in estimate_shares(CODES, human, machine, ["A.1"] * 200)}
    b = estimates["B.1"]
    assert b.share == pytest.approx(0.4)
    assert (b.ci_low, b.ci_high) == pytest.approx((b.classical_ci_low, b.classical_ci_high))
    assert all(np.isfinite([e.share, e.ci_low, e.ci_high]).all() for e in estimates.values())


def test_fewer_than_two_human_labels_is_refused():
    with pytest.raises(ValueError, match="at least two"):
        estimate_shares(CODES, ["A.1"], ["A.1"], ["A.1", "B.1"])
