# ruff: noqa: RUF002 (the method is written in its paper's symbols)
"""Active sampling of the human sample (Zrnic & Candès, "Active statistical inference", ICML
2024): each issue i of the N in scope is drawn for human labeling with its own probability π_i,
larger where the machine rater is unsure, and the estimate weights the drawn issues by 1/π_i.

*The probabilities* follow the paper's recipe for a classifier: π_i ∝ u_i, the rater's
uncertainty, mixed with the uniform design for stability, π_i = (1 − τ)·n·u_i/Σu + τ·n/N,
so that Σπ_i = n (the budget) and every issue keeps at least τ·n/N; a π above 1 is set to 1
and the rest of the budget spread again over the others in proportion. u_i = √(1 − q_i) for a
confidence q_i in the machine's label: the error indicator of a share's code has variance
≈ 1 − q_i, and the variance-optimal π is proportional to its standard deviation. A label
without a confidence, or no valid label, has u = 1 (unknown counts as unsure).

*The draw* is Bernoulli (Poisson sampling, as in the paper): issue i is drawn when the seeded
uniform U_i (NumPy's `default_rng(seed)`) is below π_i, so the drawn count is n on average.

*The estimator* is the paper's, θ̂ = (1/N)·Σ_i [λ·f_i + (Y_i − λ·f_i)·ξ_i/π_i] (ξ_i = 1 when
drawn), computed by `ppi-python`: `ppi_mean_ci(Y, Ŷ, Ŷ_all, w = 1/π on the drawn rows)` with
the machine's labels on all N issues as the unlabeled set. `ppi_py` rescales the weights to
mean 1, so the correction term is Σ_S w_i·r_i / Σ_S w_i (the Hájek form of the paper's
Horvitz–Thompson sum, equal to it whenever Σ_S 1/π_i = N, and the steadier of the two when
the drawn count varies). λ is power-tuned per code as for the uniform sample (λ = 1 is the
paper's estimator, λ = 0 the weighted human-only one).

`compare_sampling` is the simulator: on a population whose every label is known (a finished
project), it replays seeded uniform and active samples of each size and reports the mean
interval width of each, and how many uniformly drawn human labels the active sample's width
would take: read off the uniform widths measured at the sizes asked for (linear in log width
against log n between two sizes; none beyond the largest), since the width does not fall as
1/√n all the way: `ppi_py` adds the machine labels' own variance, λ²·Var(Ŷ)/N, a floor that no
number of human labels removes and that both designs share. The labels saved are that number
less the active draws' mean size. `width_ratio` (W_u/W_a)² at the same n is the gain without
the floor's dilution (the labels saved if the width fell as 1/√n).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agreement.estimates import ALPHA, ShareEstimate, estimate_shares, weighted_shares

UNIFORM_SHARE = 0.2  # τ: the share of the budget spread uniformly


def uncertainty(confidence: float | None) -> float:
    """u = √(1 − q); no confidence (or no valid label) counts as fully unsure."""
    if confidence is None:
        return 1.0
    return (1.0 - min(1.0, max(0.0, float(confidence)))) ** 0.5


def inclusion_probabilities(
    uncertainties: Sequence[float], budget: float, uniform_share: float = UNIFORM_SHARE
) -> list[float]:
    """π_i = (1 − τ)·n·u_i/Σu + τ·n/N, capped at 1 with the excess spread again, Σπ = n."""
    import numpy as np

    u = np.asarray(uncertainties, dtype=float)
    big_n = len(u)
    if big_n == 0:
        raise ValueError("no issues to draw from")
    if not 0 < budget <= big_n:
        raise ValueError(f"the budget must be between 1 and the {big_n} issues in scope")
    if not 0 < uniform_share <= 1:
        raise ValueError("the uniform share must be in (0, 1]")
    if (u < 0).any() or not np.isfinite(u).all():
        raise ValueError("uncertainties must be finite and not negative")
    if u.sum() == 0:
        u = np.ones(big_n)  # the rater is sure of everything: the uniform design
    score = (1 - uniform_share) * u / u.sum() + uniform_share / big_n  # sums to 1
    pi = np.zeros(big_n)
    capped = np.zeros(big_n, dtype=bool)
    for _ in range(big_n):
        left = budget - capped.sum()
        free = ~capped
        pi[free] = left * score[free] / score[free].sum()
        over = free & (pi >= 1)
        if not over.any():
            break
        capped |= over
        pi[capped] = 1.0
    return [float(p) for p in pi]


def bernoulli_draw(probabilities: Sequence[float], seed: int) -> list[bool]:
    """Issue i is drawn when the seed's i-th uniform number is below π_i."""
    import numpy as np

    uniform = np.random.default_rng(seed).random(len(probabilities))
    return [bool(u < p) for u, p in zip(uniform, probabilities, strict=True)]


def estimate_shares_active(
    codes: Sequence[str],
    human: Sequence[str],
    machine_on_sample: Sequence[str],
    machine_all: Sequence[str],
    probabilities: Sequence[float],
    alpha: float = ALPHA,
    lam: float | None = None,
) -> list[ShareEstimate]:
    """Each code's share from an active sample: `human`, `machine_on_sample` and
    `probabilities` are the drawn issues' finals, machine labels and inclusion probabilities
    (same order), `machine_all` the machine's labels on every issue in scope, the drawn ones
    included. `lam` None tunes λ per code; 1 is the paper's estimator."""
    if len(probabilities) != len(human):
        raise ValueError("one inclusion probability per sampled issue")
    if any(not 0 < p <= 1 for p in probabilities):
        raise ValueError("inclusion probabilities must be in (0, 1]")
    weights = [1.0 / p for p in probabilities]
    return weighted_shares(codes, human, machine_on_sample, machine_all, weights, alpha, lam)


@dataclass(frozen=True)
class SamplingComparison:
    size: int  # the budget n (the uniform sample's size, the active sample's expected size)
    active_mean_drawn: float  # the active draws' mean size
    uniform_width: float  # mean over draws and codes of the PPI interval's width
    active_width: float
    # Uniform labels for the active width, read off the uniform widths (None: beyond the
    # largest size); the labels saved are that less the active draws' mean size.
    uniform_equivalent: float | None
    saved: float | None
    uniform_coverage: float  # share of (draw, code) intervals that held the true share
    active_coverage: float

    def as_json(self) -> dict:
        return {
            "size": self.size,
            "active_mean_drawn": round(self.active_mean_drawn, 1),
            "uniform_mean_width": self.uniform_width,
            "active_mean_width": self.active_width,
            "uniform_labels_for_active_width": None
            if self.uniform_equivalent is None
            else round(self.uniform_equivalent, 1),
            "human_labels_saved": None if self.saved is None else round(self.saved, 1),
            "saved_share": None
            if self.saved is None or not self.uniform_equivalent
            else round(self.saved / self.uniform_equivalent, 4),
            "width_ratio": round((self.uniform_width / self.active_width) ** 2, 4)
            if self.active_width
            else None,
            "uniform_coverage": self.uniform_coverage,
            "active_coverage": self.active_coverage,
        }


def _width(estimates: list[ShareEstimate]) -> float:
    return sum(e.ci_high - e.ci_low for e in estimates) / len(estimates)


def _covered(estimates: list[ShareEstimate], truth: dict[str, float]) -> int:
    return sum(e.ci_low <= truth[e.code] <= e.ci_high for e in estimates)


def uniform_size_for(width: float, sizes: Sequence[int], widths: Sequence[float]) -> float | None:
    """The uniform sample size whose mean width is `width`, on the measured curve (sizes
    ascending): linear in log width against log size between neighbours; a width at or above
    the smallest size's is that size's share by 1/√n; below the largest size's, None."""
    import math
    from itertools import pairwise

    if width <= 0:
        return None
    if width >= widths[0]:
        return sizes[0] * (widths[0] / width) ** 2
    points = list(zip(sizes, widths, strict=True))
    for (n0, w0), (n1, w1) in pairwise(points):
        if w1 <= width <= w0:
            if w0 == w1:
                return float(n0)
            step = (math.log(w0) - math.log(width)) / (math.log(w0) - math.log(w1))
            return math.exp(math.log(n0) + step * (math.log(n1) - math.log(n0)))
    return None


def compare_sampling(
    codes: Sequence[str],
    truth: Sequence[str],
    machine: Sequence[str],
    confidence: Sequence[float | None],
    sizes: Sequence[int],
    draws: int = 50,
    seed: int = 0,
    uniform_share: float = UNIFORM_SHARE,
) -> list[SamplingComparison]:
    """Uniform against active samples of each size on a population of known labels (`truth`,
    with the machine's label and confidence on each issue): `draws` seeded samples of each
    kind per size, the same seeds for every size. Sizes are taken in ascending order."""
    import numpy as np

    big_n = len(truth)
    if not len(machine) == len(confidence) == big_n:
        raise ValueError("truth, machine labels and confidences differ in length")
    if draws < 1:
        raise ValueError("draws: at least 1")
    shares = {code: sum(t == code for t in truth) / big_n for code in codes}
    u = [uncertainty(q) for q in confidence]
    sizes = sorted(set(sizes))
    measured = []
    for size in sizes:
        if not 2 <= size < big_n:
            raise ValueError(f"sizes: each between 2 and {big_n - 1}")
        pi = inclusion_probabilities(u, size, uniform_share)
        widths: dict[str, list[float]] = {"uniform": [], "active": []}
        covered = {"uniform": 0, "active": 0}
        drawn_sizes = []
        for draw in range(draws):
            rng = np.random.default_rng([seed, size, draw])
            chosen: list[int] = sorted(rng.choice(big_n, size=size, replace=False).tolist())
            mask = np.zeros(big_n, dtype=bool)
            mask[chosen] = True
            rest: list[int] = np.flatnonzero(~mask).tolist()
            uniform = estimate_shares(
                codes,
                [truth[i] for i in chosen],
                [machine[i] for i in chosen],
                [machine[i] for i in rest],
            )
            drawn: list[int] = np.flatnonzero(bernoulli_draw(pi, int(rng.integers(2**31)))).tolist()
            if len(drawn) < 2:
                continue
            active = estimate_shares_active(
                codes,
                [truth[i] for i in drawn],
                [machine[i] for i in drawn],
                machine,
                [pi[i] for i in drawn],
            )
            drawn_sizes.append(len(drawn))
            for kind, estimates in (("uniform", uniform), ("active", active)):
                widths[kind].append(_width(estimates))
                covered[kind] += _covered(estimates, shares)
        runs = len(drawn_sizes)
        measured.append(
            (
                size,
                float(np.mean(drawn_sizes)),
                float(np.mean(widths["uniform"])),
                float(np.mean(widths["active"])),
                covered["uniform"] / (runs * len(codes)),
                covered["active"] / (runs * len(codes)),
            )
        )
    uniform_widths = [row[2] for row in measured]
    out = []
    for size, mean_drawn, w_u, w_a, c_u, c_a in measured:
        equivalent = uniform_size_for(w_a, sizes, uniform_widths)
        out.append(
            SamplingComparison(
                size=size,
                active_mean_drawn=mean_drawn,
                uniform_width=w_u,
                active_width=w_a,
                uniform_equivalent=equivalent,
                saved=None if equivalent is None else equivalent - mean_drawn,
                uniform_coverage=c_u,
                active_coverage=c_a,
            )
        )
    return out
