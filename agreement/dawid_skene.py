"""Dawid-Skene: each annotator's confusion matrix and each item's true class, by EM.

Dawid & Skene (1979), "Maximum likelihood estimation of observer error-rates using the EM
algorithm". The model: an item's true class k is drawn with prior p_k; annotator r, shown an
item of class k, answers l with probability pi_r[k, l], independently of the other annotators.
EM alternates

- E-step: T[i, k] = P(class k | item i's answers)
  ∝ p_k * prod over i's answers (r, l) of pi_r[k, l];
- M-step: p_k = mean_i T[i, k]; pi_r[k, l] = sum of T[i, k] over r's answers l, normalised per
  row k.

It starts from the (soft) majority vote, T[i] = the share of i's answers per class, as the paper
does. Additive smoothing (`smoothing` pseudo-counts on every prior and confusion cell) keeps a
class a rater never saw, or an answer they never gave, from becoming a hard zero that no later
evidence can move. An annotator who labeled only some items simply contributes no factor to the
others: the data are a list of (item, rater, label) answers, not a full items x raters grid.

Per-rater accuracy is the probability that the rater answers an item's true class, under the
model: accuracy_r = sum_k p_k * pi_r[k, k] (the diagonal of the confusion matrix weighted by
the class priors, not its plain mean, so a rare class counts as rarely as it occurs).

Pure and vectorised: numpy only (imported inside the functions), no database. Sums over the
answers of an item (E-step) and of a (rater, label) pair (M-step) are `np.add.reduceat` over
answers sorted once, in chunks so memory stays bounded (answers x classes floats per chunk).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import ArrayLike

# Answers per chunk in the grouped sums: a chunk is CHUNK x classes floats (~18 MB at 70).
CHUNK = 32_768


@dataclass
class Answers:
    """Answers as parallel integer arrays, with the two sort orders EM sums over."""

    item: np.ndarray  # index of the item, 0..n_items-1
    rater: np.ndarray  # index of the rater, 0..n_raters-1
    label: np.ndarray  # class index the rater gave, 0..n_classes-1
    n_items: int
    n_raters: int
    n_classes: int

    @property
    def cell(self) -> np.ndarray:
        """Each answer's (rater, label) pair as one index: rater * n_classes + label."""
        return self.rater * self.n_classes + self.label


@dataclass
class Fit:
    """What `fit` estimates."""

    posteriors: np.ndarray  # items x classes: P(true class | answers)
    priors: np.ndarray  # classes
    confusion: np.ndarray  # raters x classes (true) x classes (answered); rows sum to 1
    accuracy: np.ndarray  # raters: sum_k priors[k] * confusion[r, k, k]
    log_likelihood: float  # of the answers under the last M-step's parameters
    iterations: int
    converged: bool


def answers(
    item: ArrayLike, rater: ArrayLike, label: ArrayLike, n_items: int, n_raters: int, n_classes: int
) -> Answers:
    """Check and wrap the answer arrays (a ValueError names the bad argument)."""
    import numpy as np

    arrays = {}
    for name, values, bound in (
        ("item", item, n_items),
        ("rater", rater, n_raters),
        ("label", label, n_classes),
    ):
        array = np.asarray(values, dtype=np.int64).reshape(-1)
        if array.size and (array.min() < 0 or array.max() >= bound):
            raise ValueError(f"{name}: indices must lie in 0..{bound - 1}")
        arrays[name] = array
    if not len(arrays["item"]) == len(arrays["rater"]) == len(arrays["label"]):
        raise ValueError("item, rater, label: must have the same length")
    if n_classes < 1:
        raise ValueError("n_classes: must be at least 1")
    return Answers(
        item=arrays["item"],
        rater=arrays["rater"],
        label=arrays["label"],
        n_items=n_items,
        n_raters=n_raters,
        n_classes=n_classes,
    )


def _grouped_sum(
    source: np.ndarray, rows: np.ndarray, groups: np.ndarray, n_groups: int
) -> np.ndarray:
    """out[g] = sum of source[rows[a]] over answers a with groups[a] == g (`groups` sorted)."""
    import numpy as np

    out = np.zeros((n_groups, source.shape[1]), dtype=np.float64)
    for start in range(0, len(rows), CHUNK):
        g = groups[start : start + CHUNK]
        starts = np.concatenate(([0], np.flatnonzero(np.diff(g)) + 1))
        # Unique within the chunk, so `+=` adds each group once; a group cut by the chunk
        # boundary is finished by the next chunk.
        out[g[starts]] += np.add.reduceat(source[rows[start : start + CHUNK]], starts, axis=0)
    return out


@dataclass
class _Orders:
    """The answers sorted once: by item (for the E-step) and by (rater, label) (the M-step)."""

    item_by_item: np.ndarray
    cell_by_item: np.ndarray
    item_by_cell: np.ndarray
    cell_by_cell: np.ndarray


def _orders(data: Answers) -> _Orders:
    import numpy as np

    cell = data.cell
    by_item = np.argsort(data.item, kind="stable")
    by_cell = np.argsort(cell, kind="stable")
    return _Orders(
        item_by_item=data.item[by_item],
        cell_by_item=cell[by_item],
        item_by_cell=data.item[by_cell],
        cell_by_cell=cell[by_cell],
    )


def majority(data: Answers) -> np.ndarray:
    """The soft majority vote: each item's share of answers per class (uniform if none)."""
    import numpy as np

    counts = np.zeros((data.n_items, data.n_classes), dtype=np.float64)
    np.add.at(counts, (data.item, data.label), 1.0)
    total = counts.sum(axis=1, keepdims=True)
    return np.divide(
        counts,
        total,
        out=np.full_like(counts, 1.0 / data.n_classes),
        where=total > 0,
    )


def m_step(
    data: Answers, posteriors: np.ndarray, smoothing: float, orders: _Orders | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Class priors and confusion matrices (raters x true x answered) from the posteriors."""
    import numpy as np

    orders = orders or _orders(data)
    k = data.n_classes
    priors = posteriors.sum(axis=0) + smoothing
    priors = priors / priors.sum()
    # counts[r * K + l, k] = sum of T[i, k] over r's answers l.
    counts = _grouped_sum(posteriors, orders.item_by_cell, orders.cell_by_cell, data.n_raters * k)
    confusion = counts.reshape(data.n_raters, k, k).transpose(0, 2, 1) + smoothing
    totals = confusion.sum(axis=2, keepdims=True)
    # A rater with no answers at all (possible with smoothing 0) gets uniform rows.
    confusion = np.divide(confusion, totals, out=np.full_like(confusion, 1.0 / k), where=totals > 0)
    return priors, confusion


def e_step(
    data: Answers, priors: np.ndarray, confusion: np.ndarray, orders: _Orders | None = None
) -> tuple[np.ndarray, float]:
    """Posteriors (items x classes) and the log-likelihood of the answers."""
    import numpy as np

    orders = orders or _orders(data)
    k = data.n_classes
    with np.errstate(divide="ignore"):
        # log_answer[r * K + l, k] = log pi_r[k, l]
        log_answer = np.log(confusion.transpose(0, 2, 1).reshape(data.n_raters * k, k))
        log_prior = np.log(priors)
    log_joint = _grouped_sum(log_answer, orders.cell_by_item, orders.item_by_item, data.n_items)
    log_joint += log_prior
    top = log_joint.max(axis=1, keepdims=True)
    with np.errstate(invalid="ignore"):
        weights = np.exp(log_joint - top)
    norm = weights.sum(axis=1, keepdims=True)
    posteriors = weights / norm
    return posteriors, float((top + np.log(norm)).sum())


def accuracy(priors: np.ndarray, confusion: np.ndarray) -> np.ndarray:
    """Per rater, sum_k priors[k] * confusion[r, k, k]: P(the rater answers the true class)."""
    import numpy as np

    return np.einsum("k,rkk->r", priors, confusion)


def fit(
    data: Answers,
    smoothing: float = 0.01,
    tol: float = 1e-6,
    max_iter: int = 100,
    initial: np.ndarray | None = None,
) -> Fit:
    """EM from the majority vote (or `initial` posteriors) until the log-likelihood gains less
    than `tol` (relative to its size) or after `max_iter` rounds of M-step then E-step."""
    import numpy as np

    if smoothing < 0:
        raise ValueError("smoothing: must be 0 or more")
    if max_iter < 1:
        raise ValueError("max_iter: must be at least 1")
    orders = _orders(data)
    posteriors = majority(data) if initial is None else np.asarray(initial, dtype=np.float64)
    previous = -np.inf
    converged = False
    iterations = 0
    log_likelihood = -np.inf
    priors = confusion = np.empty(0)
    while iterations < max_iter:
        iterations += 1
        priors, confusion = m_step(data, posteriors, smoothing, orders)
        posteriors, log_likelihood = e_step(data, priors, confusion, orders)
        if np.isfinite(previous) and abs(log_likelihood - previous) <= tol * max(
            1.0, abs(log_likelihood)
        ):
            converged = True
            break
        previous = log_likelihood
    return Fit(
        posteriors=posteriors,
        priors=priors,
        confusion=confusion,
        accuracy=accuracy(priors, confusion),
        log_likelihood=log_likelihood,
        iterations=iterations,
        converged=converged,
    )
