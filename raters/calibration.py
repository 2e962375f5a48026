"""Calibration of a machine rater's confidences: measured (reliability and expected calibration
error, for every rater with confidences) and, for the classifier, made (a calibration map).

**Measured.** A label's confidence is calibrated when, among labels given confidence near p,
a share p is right. `reliability` sorts labels into `BINS` equal-width bins of confidence,
right-closed as in Guo et al. (2017) and `sklearn.calibration.calibration_curve`: bin i holds
the confidences in (i/10, (i+1)/10], the first bin 0 too; the edges are the decimals 0.1 … 0.9
as written (a confidence stored as 0.3 is in (0.2, 0.3]). Per bin: its edges, how many labels,
their mean confidence and their accuracy. `expected_calibration_error` is the mean over labels
of |accuracy - mean confidence| of their bin (bins weighted by their share of the labels). A
label is right when its theme-level code is the final label's (`raters.validation`).

**Made.** The classifier's raw confidence (the logistic regression's probability of its chosen
class) is not calibrated on small or noisy projects. `calibrator` fits a map from raw
confidence to the probability that the label is right, on out-of-fold predictions (each label
by a model that did not train on its issue) with scikit-learn's `CalibratedClassifierCV` over
the frozen raw confidence: isotonic regression from `ISOTONIC_FROM` labels on (it needs many:
scikit-learn advises against it well below 1,000), Platt's sigmoid below. The map is monotone,
so it changes no label and keeps their order by confidence; only what the number says.

numpy and scikit-learn are imported inside the functions (docs/CONVENTIONS.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lib.svgchart import Frame

BINS = 10
EDGES: tuple[float, ...] = tuple(i / BINS for i in range(1, BINS))  # 0.1 … 0.9, as written
# Fewer out-of-fold labels than this: Platt's sigmoid (two parameters); isotonic from here.
ISOTONIC_FROM = 500


def bin_of(confidence: float) -> int:
    """The bin of a confidence: i for (EDGES[i-1], EDGES[i]], 0 for [0, 0.1]."""
    return sum(confidence > edge for edge in EDGES)


def reliability(confidences: Sequence[float], hits: Sequence[bool]) -> list[list[Any]]:
    """Per bin `[low, high, n, mean confidence, accuracy]` (None for an empty bin's means)."""
    members: list[list[int]] = [[] for _ in range(BINS)]
    for i, confidence in enumerate(confidences):
        members[bin_of(confidence)].append(i)
    out: list[list[Any]] = []
    for b, rows in enumerate(members):
        low, high = (0.0, *EDGES)[b], (*EDGES, 1.0)[b]
        if not rows:
            out.append([low, high, 0, None, None])
            continue
        out.append(
            [
                low,
                high,
                len(rows),
                sum(confidences[i] for i in rows) / len(rows),
                sum(bool(hits[i]) for i in rows) / len(rows),
            ]
        )
    return out


def expected_calibration_error(bins: Sequence[Sequence[Any]]) -> float | None:
    """ECE of `reliability`'s bins; None without labels."""
    total = sum(row[2] for row in bins)
    if not total:
        return None
    return sum(row[2] / total * abs(row[4] - row[3]) for row in bins if row[2])


def _raw_confidence_estimator() -> Any:
    """A fitted binary "classifier" of whether a label is right whose score is the log-odds of
    the raw confidence it is given (one column): what `CalibratedClassifierCV` calibrates when
    the model itself is already fitted (`FrozenEstimator`), as its documentation describes."""
    import numpy as np
    from sklearn.base import BaseEstimator, ClassifierMixin

    class RawConfidence(ClassifierMixin, BaseEstimator):
        def fit(self, X: Any, y: Any) -> RawConfidence:
            self.classes_ = np.array([False, True])
            return self

        def decision_function(self, X: Any) -> Any:
            p = np.clip(np.asarray(X, dtype=float)[:, 0], 1e-9, 1 - 1e-9)
            return np.log(p / (1 - p))

        def predict(self, X: Any) -> Any:
            return self.decision_function(X) > 0

    return RawConfidence().fit(None, None)


class Calibrator:
    """A map from raw confidence to calibrated confidence, fitted on (raw confidence, right)."""

    def __init__(self, confidences: Sequence[float], hits: Sequence[bool]) -> None:
        import numpy as np
        from sklearn.calibration import CalibratedClassifierCV
        from sklearn.frozen import FrozenEstimator

        self.n = len(confidences)
        right = sum(bool(h) for h in hits)
        self.method = "isotonic" if self.n >= ISOTONIC_FROM else "sigmoid"
        self.model: Any = None
        self.constant: float | None = None
        if right in (0, self.n):
            # One outcome only: nothing to map; the share right with one success and one
            # failure added (the prior Platt's targets use), never a certain 0 or 1.
            self.method = "constant"
            self.constant = (right + 1) / (self.n + 2)
            return
        X = np.asarray(confidences, dtype=float).reshape(-1, 1)
        every = np.arange(self.n)
        self.model = CalibratedClassifierCV(
            FrozenEstimator(_raw_confidence_estimator()),
            method=self.method,
            # The frozen estimator learns nothing, so one split holding every label is the
            # whole calibration set (a k-fold split would refuse outcomes seen fewer than k
            # times, and give the same map).
            cv=[(every, every)],
        ).fit(X, np.asarray(hits, dtype=bool))

    def __call__(self, confidences: Sequence[float]) -> list[float]:
        import numpy as np

        if not len(confidences):
            return []
        if self.model is None:
            return [float(self.constant or 0.0)] * len(confidences)
        X = np.asarray(confidences, dtype=float).reshape(-1, 1)
        column = list(self.model.classes_).index(True)
        return [float(p) for p in self.model.predict_proba(X)[:, column]]

    def describe(self) -> dict[str, Any]:
        """What a label's parameters record of the map that gave its confidence."""
        return {"method": self.method, "fitted_on": self.n}


# The reliability diagram, drawn server-side as SVG (`lib.svgchart`); its colours are CSS
# classes in static/css/raters.css.
FRAME = Frame(300, 300, margin_left=46, margin_right=12, margin_top=12, margin_bottom=46)


def diagram(bins: Sequence[Sequence[Any]]) -> dict[str, Any]:
    """Coordinates of a reliability diagram: per bin of confidence (x), a bar up to the bin's
    accuracy and a mark at its mean confidence (y), beside the diagonal of a calibrated rater."""
    x, y = FRAME.x, FRAME.y  # confidence and accuracy are shares already
    bars = []
    for low, high, n, confidence, accuracy in bins:
        if not n:
            continue
        bars.append(
            {
                "low": low,
                "high": high,
                "n": n,
                "confidence": confidence,
                "accuracy": accuracy,
                "x": x(low) + 1,
                "width": round(x(high) - x(low) - 2, 1),
                "y": y(accuracy),
                "height": round(y(0.0) - y(accuracy), 1),
                "mark_y": y(confidence),
                "mark_x2": x(high) - 1,
            }
        )
    ticks = [i / 5 for i in range(6)]
    return {
        **FRAME.axes(),
        "x_ticks": [{"value": t, "x": x(t)} for t in ticks],
        "y_ticks": [{"value": t, "y": y(t)} for t in ticks],
        "bars": bars,
    }
