# ruff: noqa: RUF002 (the method is written in its papers' symbols)
"""Shares of codes with machine help: prediction-powered inference (PPI++) beside the classical
estimate from the human sample alone.

Angelopoulos, Bates, Fannjiang, Jordan & Zrnic, "Prediction-powered inference" (Science 2023);
Angelopoulos, Duchi & Zrnic, "PPI++: Efficient prediction-powered inference" (2023). The
computation is the maintained package `ppi-python` (`ppi_py`), never reimplemented here.

For each code c the estimand is its share among the issues in scope. A uniform random sample of
n issues has human finals Y (Y_c = 1 if the final label is c) and machine labels Ŷ; the other N
issues have machine labels only. The PPI++ estimate is λ·mean(Ŷ_unlabeled) + mean(Y − λ·Ŷ),
with λ tuned per code from the data (clipped to [0, 1]): λ = 0 is the classical estimate, so a
machine that does not help cannot make the interval much wider than the human-only one, and a
biased machine cannot bias the estimate (its bias is measured on the sample and subtracted).
Intervals are the normal-approximation 95 % intervals of `ppi_mean_ci` and
`classical_mean_ci`, clipped to [0, 1]; a code with fewer than 10 issues in the sample that
have it (or that lack it) is marked `sparse`, since that approximation then undercovers. The
intervals treat the sample as drawn with replacement, so for a sample that is a large part of
the scope they are conservative. With inclusion weights (active sampling, `agreement.active`)
the sampled rows carry weights 1/π, as `ppi_py` takes them, and the machine's labels on every
issue in scope are the unlabeled set (`weighted_shares`).

The effective sample size is the number of human labels the classical interval would need to be
as narrow as the PPI interval: n · (classical width / PPI width)².

`plan_sizes` answers "how many human labels make every interval at most ±h": the classical
n = z²·p(1−p)/h²; with PPI++ and many more machine labels than human ones the variance per
human label shrinks by the squared correlation ρ between Y and Ŷ (measured on the sample), so
n = z²·p(1−p)·(1−ρ²)/h², plus what the machine-only part adds (λ²·Var(Ŷ)/N).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

ALPHA = 0.05
SPARSE = 10
Z = 1.959963984540054  # the 97.5 % quantile of the standard normal


@dataclass(frozen=True)
class ShareEstimate:
    code: str
    share: float
    ci_low: float
    ci_high: float
    classical_share: float
    classical_ci_low: float
    classical_ci_high: float
    n_human: int
    n_total: int
    effective_n: float | None
    # Fewer than SPARSE issues of the sample have the code, or fewer than SPARSE lack it: the
    # normal approximation behind both intervals is then unreliable (with 150 human labels a
    # 5 % code's interval covered 86 % of the time in simulation, not 95 %).
    sparse: bool = False

    def as_json(self, by: str | None = None) -> dict:
        return {
            "code": self.code,
            "by": by,
            "share": self.share,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "classical_share": self.classical_share,
            "classical_ci_low": self.classical_ci_low,
            "classical_ci_high": self.classical_ci_high,
            "n_human": self.n_human,
            "n_total": self.n_total,
            "effective_n": self.effective_n,
            "sparse": self.sparse,
        }


def _indicators(labels: Sequence[str], codes: Sequence[str]) -> np.ndarray:
    import numpy as np

    index = {code: k for k, code in enumerate(codes)}
    column = np.fromiter((index.get(label, -1) for label in labels), dtype=int, count=len(labels))
    out = np.zeros((len(labels), len(codes)), dtype=float)
    rows = np.flatnonzero(column >= 0)
    out[rows, column[rows]] = 1.0
    return out


def _sparse(column: np.ndarray) -> bool:
    count = int(column.sum())
    return count < SPARSE or len(column) - count < SPARSE


def _clip(value: float) -> float:
    return min(1.0, max(0.0, float(value)))


def estimate_shares(
    codes: Sequence[str],
    human: Sequence[str],
    machine_on_sample: Sequence[str],
    machine_elsewhere: Sequence[str],
    alpha: float = ALPHA,
    weights: Sequence[float] | None = None,
) -> list[ShareEstimate]:
    """Each code's share: `human` and `machine_on_sample` are the sampled issues' final and
    machine labels (same order), `machine_elsewhere` the machine's labels on the rest of the
    scope. A machine label that is no code (an invalid output) counts for no code."""
    import numpy as np
    from ppi_py import classical_mean_ci

    if len(human) != len(machine_on_sample):
        raise ValueError("the sample's human and machine labels differ in length")
    n, big_n = len(human), len(machine_elsewhere)
    if n < 2:
        raise ValueError("an estimate needs at least two human-labeled issues")
    y = _indicators(human, codes)
    y_hat = _indicators(machine_on_sample, codes)
    w = None if weights is None else np.asarray(weights, dtype=float)
    if big_n == 0:
        # Every issue is in the sample: the machine adds nothing; the classical estimate.
        whole = []
        for k, code in enumerate(codes):
            lo, hi = classical_mean_ci(y[:, k], w=w, alpha=alpha)
            share = float((y[:, k] if w is None else y[:, k] * (w / w.sum() * n)).mean())
            bounds = (_clip(lo), _clip(hi))
            whole.append(
                ShareEstimate(
                    code, share, *bounds, share, *bounds, n, n, float(n), _sparse(y[:, k])
                )
            )
        return whole
    y_unlabeled = _indicators(machine_elsewhere, codes)
    return _ppi_shares(codes, y, y_hat, y_unlabeled, w, alpha, n + big_n)


def weighted_shares(
    codes: Sequence[str],
    human: Sequence[str],
    machine_on_sample: Sequence[str],
    machine_all: Sequence[str],
    weights: Sequence[float],
    alpha: float = ALPHA,
    lam: float | None = None,
) -> list[ShareEstimate]:
    """Each code's share from a sample drawn with unequal probabilities (active sampling,
    `agreement.active`): the sampled rows carry `weights` (1/π), and the unlabeled set is the
    machine's labels on every issue in scope, the sampled ones included. `lam` None tunes λ
    per code (as `estimate_shares`); a number fixes it."""
    import numpy as np

    if not len(human) == len(machine_on_sample) == len(weights):
        raise ValueError("the sample's human labels, machine labels and weights differ in length")
    if len(human) < 2:
        raise ValueError("an estimate needs at least two human-labeled issues")
    w = np.asarray(weights, dtype=float)
    if not (np.isfinite(w).all() and (w > 0).all()):
        raise ValueError("weights must be finite and positive")
    y = _indicators(human, codes)
    y_hat = _indicators(machine_on_sample, codes)
    y_all = _indicators(machine_all, codes)
    return _ppi_shares(codes, y, y_hat, y_all, w, alpha, len(machine_all), lam)


def _ppi_shares(
    codes: Sequence[str],
    y: np.ndarray,
    y_hat: np.ndarray,
    y_unlabeled: np.ndarray,
    w: np.ndarray | None,
    alpha: float,
    n_total: int,
    lam: float | None = None,
) -> list[ShareEstimate]:
    import numpy as np
    from ppi_py import classical_mean_ci, ppi_mean_ci, ppi_mean_pointestimate

    n = len(y)
    kwargs = {"w": w, "lam_optim_mode": "element"} if lam is None else {"w": w, "lam": lam}
    with np.errstate(invalid="ignore", divide="ignore"):
        point = np.atleast_1d(ppi_mean_pointestimate(y, y_hat, y_unlabeled, **kwargs))
        low, high = (np.atleast_1d(b) for b in ppi_mean_ci(y, y_hat, y_unlabeled, alpha, **kwargs))
    for bad in np.flatnonzero(~np.isfinite(point) | ~np.isfinite(low) | ~np.isfinite(high)):
        k = int(bad)
        # The machine never varies on this code (it always or never says it): the tuned λ is
        # 0/0, and the machine carries no information, so λ = 0, the classical estimate.
        column = (y[:, k], y_hat[:, k], y_unlabeled[:, k])
        point[k] = np.squeeze(ppi_mean_pointestimate(*column, lam=0, w=w))
        low[k], high[k] = (np.squeeze(b) for b in ppi_mean_ci(*column, alpha, lam=0, w=w))
    out = []
    for k, code in enumerate(codes):
        c_low, c_high = classical_mean_ci(y[:, k], w=w, alpha=alpha)
        weighted = y[:, k] if w is None else y[:, k] * (w / w.sum() * n)
        ppi_width, classical_width = high[k] - low[k], float(c_high - c_low)
        effective = float(n * (classical_width / ppi_width) ** 2) if ppi_width > 0 else None
        out.append(
            ShareEstimate(
                code=code,
                share=_clip(point[k]),
                ci_low=_clip(low[k]),
                ci_high=_clip(high[k]),
                classical_share=float(weighted.mean()),
                classical_ci_low=_clip(c_low),
                classical_ci_high=_clip(c_high),
                n_human=n,
                n_total=n_total,
                effective_n=effective,
                sparse=_sparse(y[:, k]),
            )
        )
    return out


@dataclass(frozen=True)
class Plan:
    half_width: float
    n_classical: int  # human labels for every code's classical interval to be ±half_width
    n_ppi: int  # the same with the machine's labels on every other issue
    n_total: int


def plan_sizes(
    codes: Sequence[str],
    human: Sequence[str],
    machine_on_sample: Sequence[str],
    machine_elsewhere: Sequence[str],
    half_width: float,
) -> Plan:
    """Human labels needed so that every code's 95 % interval is at most ±`half_width`,
    classical and PPI++, from the variances and correlations measured on the current sample
    (a pilot sample: the answer is as good as its estimates of p and ρ)."""
    import numpy as np

    if not 0 < half_width < 0.5:
        raise ValueError("the half-width must be between 0 and 0.5")
    y = _indicators(human, codes)
    y_hat = _indicators(machine_on_sample, codes)
    y_all_hat = np.vstack([y_hat, _indicators(machine_elsewhere, codes)])
    total = len(y_all_hat)
    need_classical, need_ppi = 0, 0
    for k in range(len(codes)):
        var_y = float(y[:, k].var())
        var_hat = float(y_all_hat[:, k].var())
        if var_y == 0:
            continue  # never seen in the sample: the pilot cannot say; it asks nothing
        cov = float(np.mean((y[:, k] - y[:, k].mean()) * (y_hat[:, k] - y_hat[:, k].mean())))
        var_hat_sample = float(y_hat[:, k].var())
        lam = max(0.0, cov / var_hat_sample) if var_hat_sample > 0 else 0.0
        rectifier = var_y - 2 * lam * cov + lam * lam * var_hat_sample
        budget = (half_width / Z) ** 2 - lam * lam * var_hat / total
        need_classical = max(need_classical, math.ceil(var_y * (Z / half_width) ** 2))
        if budget <= 0:
            need_ppi = max(need_ppi, total)
        else:
            need_ppi = max(need_ppi, math.ceil(rectifier / budget))
    return Plan(
        half_width=half_width,
        n_classical=min(need_classical, total),
        n_ppi=min(need_ppi, need_classical, total),
        n_total=total,
    )
