"""The classifier machine rater: TF-IDF and a linear model, trained on the project's finals.

Features: the issue's title, body and first comments (`raters.runs.issue_texts`), hashed into
a fixed number of word uni- and bigram columns (`HashingVectorizer`: memory stays bounded
whatever the vocabulary); of the columns the training texts use, the `chi2_best_columns` that
tell the labels apart most (chi-squared) are kept, weighted by TF-IDF. Model: multinomial
logistic regression over one class per theme-level label ("FP", a theme code, or a type code
for a final label without a theme). The label is the most probable class.

Its confidence is calibrated (`raters.calibration`): log-loss does not make the model's
probability of its chosen class the chance that the label is right (on 1,200 synthetic issues
it said 0.64 on average and was right 80 % of the time, bench/RESULTS.md). A map from that raw
probability to the share of labels right (`raters.calibration.Calibrator`: scikit-learn's
isotonic or sigmoid calibration) is fitted on the cross-fitted out-of-fold labels of the final
issues below, and applied to every label; it is monotone, so no label changes. The raw
probability stays in the label's `parameters.uncalibrated_confidence`.

Predicting (`Model.proba`) goes in chunks and builds the hashed columns faster than the
pipeline's vectorizer would, with the same result bit for bit (bench/RESULTS.md).

Always out of sample (cross-fitting): a final issue's label comes from the model of the fold
that left it out (`FOLDS` folds, shuffled with `SEED`), and its confidence from the map fitted
on the other folds' out-of-fold labels (its own outcome never fits the map that reads it);
issues not final yet are labeled by the model trained on every final issue, with the map fitted
on every final issue's out-of-fold label. So every run fits the fold models, a run over open
issues too. `prompt_hash` of each label is a SHA-256 of the feature configuration and of the
(issue, label) pairs its model was trained on.

Everything runs in the process, on the embedded default: no outside service. scikit-learn is
imported inside the functions (it costs ~1 s to import; see docs/CONVENTIONS.md).
"""

from __future__ import annotations

import hashlib
import json
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import TYPE_CHECKING, Any

from django.utils.translation import gettext_noop

from raters.backends import BackendError, LabelRequest, Prediction
from raters.calibration import Calibrator

if TYPE_CHECKING:
    from labeling.models import MachineRater

MODEL_NAME = "tfidf-logreg"
FOLDS = 5
SEED = 0
# Fewer final issues than this, or only one distinct final label: nothing to learn from.
MIN_FINALS = 20
FEATURES: dict[str, Any] = {
    "text": "title + body + first 3 comments",
    "vectorizer": "hashing",
    # chi2 holds a classes x columns table: 2**18 columns keep it near 150 MB at 70 classes.
    "n_features": 2**18,
    "drop_unused_columns": True,
    "chi2_best_columns": 5000,
    "ngram_range": [1, 2],
    "sublinear_tf": True,
    "model": "logistic_regression",
    "C": 10.0,
    "folds": FOLDS,
    "seed": SEED,
    "calibration": "top-label, on the out-of-fold labels: isotonic from 500, else sigmoid",
}


def config_text() -> str:
    """The feature configuration as hashed (and as a release shows it)."""
    return json.dumps(FEATURES, sort_keys=True)


def training_hash(pairs: Sequence[tuple[int, str]]) -> str:
    """SHA-256 of the feature configuration and the (issue id, label) pairs trained on."""
    digest = hashlib.sha256(config_text().encode())
    for issue_id, code in sorted(pairs):
        digest.update(f"\n{issue_id}\t{code}".encode())
    return digest.hexdigest()


# Predicting: texts in chunks of this many (a chunk's hashed matrix, not the whole corpus's, is
# in memory); each row's probabilities are the pipeline's, bit for bit
# (tests/raters/test_predict_speed.py). Processes (joblib) were tried and dropped: on the
# loaded 2-core host two workers were no faster, and starting them cost ~10 s (bench/RESULTS.md).
PREDICT_CHUNK = 4000


def _features(vectorizer: Any, texts: Sequence[str]) -> Any:
    """What the pipeline's `HashingVectorizer` gives, faster: the same preprocessor and
    tokenizer, its bigrams joined by `map` instead of sklearn's Python loop over slices, hashed
    by the `FeatureHasher` it wraps (same n_features, sign and dtype; its norm is None)."""
    from sklearn.feature_extraction import FeatureHasher

    restated = (
        tuple(vectorizer.ngram_range) == (1, 2)
        and vectorizer.norm is None
        and vectorizer.analyzer == "word"
        and vectorizer.stop_words is None
        and not vectorizer.binary
        and vectorizer.input == "content"
    )
    if not restated:
        return vectorizer.transform(texts)  # not the configuration this shortcut restates
    preprocess, tokenize = vectorizer.build_preprocessor(), vectorizer.build_tokenizer()

    def grams(text: str) -> list[str]:
        words = tokenize(preprocess(text))
        return words + list(map(" ".join, pairwise(words)))

    hasher = FeatureHasher(
        n_features=vectorizer.n_features,
        input_type="string",
        alternate_sign=vectorizer.alternate_sign,
        dtype=vectorizer.dtype,
    )
    return hasher.transform(grams(text) for text in texts)


def _proba(pipeline: Any, texts: Sequence[str]) -> Any:
    """`pipeline.predict_proba(texts)`: hashing as `_features`, the two column selections as one
    index (the columns VarianceThreshold keeps, of those the ones SelectKBest keeps), then the
    pipeline's TF-IDF and logistic regression."""
    vectorizer, used, best = pipeline[0], pipeline[1], pipeline[2]
    columns = used.get_support(indices=True)[best.get_support(indices=True)]
    return pipeline[3:].predict_proba(_features(vectorizer, texts)[:, columns])


@dataclass
class Model:
    """A fitted pipeline, or the one class of a training set that has only one."""

    classes: list[str]
    pipeline: Any = None

    def proba(self, texts: Sequence[str], chunk: int = PREDICT_CHUNK) -> Any:
        """The class probabilities of each text (rows in the order of `texts`)."""
        import numpy as np

        texts = list(texts)
        if not texts:
            return np.zeros((0, len(self.classes)))
        return np.vstack(
            [_proba(self.pipeline, texts[i : i + chunk]) for i in range(0, len(texts), chunk)]
        )

    def predict(self, texts: Sequence[str]) -> tuple[list[str], list[float]]:
        if self.pipeline is None:
            return [self.classes[0]] * len(texts), [1.0] * len(texts)
        proba = self.proba(texts)
        best = proba.argmax(axis=1)
        return [self.classes[i] for i in best], [float(p) for p in proba.max(axis=1)]

    def relevance(self, texts: Sequence[str]) -> list[float]:
        """Each text's probability of not being a false positive (1 - P(FP))."""
        if self.pipeline is None:
            return [0.0 if self.classes[0] == "FP" else 1.0] * len(texts)
        if "FP" not in self.classes:
            return [1.0] * len(texts)
        proba = self.proba(texts)  # chunked, as `predict`
        return [1.0 - float(p) for p in proba[:, self.classes.index("FP")]]


def fit(texts: Sequence[str], targets: Sequence[str]) -> Model:
    from sklearn.feature_extraction.text import HashingVectorizer, TfidfTransformer
    from sklearn.feature_selection import SelectKBest, VarianceThreshold, chi2
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from threadpoolctl import threadpool_limits

    classes = sorted(set(targets))
    if len(classes) < 2:
        return Model(classes=classes)
    best = SelectKBest(chi2, k=FEATURES["chi2_best_columns"])
    pipeline = make_pipeline(
        HashingVectorizer(
            n_features=FEATURES["n_features"],
            ngram_range=tuple(FEATURES["ngram_range"]),
            alternate_sign=False,
            norm=None,
        ),
        # Only the columns some training text uses: the model's size and each step's cost
        # follow the training vocabulary, not the 2**20 hashed columns.
        VarianceThreshold(0.0),
        # The columns that tell the labels apart most (chi-squared): the model's parameters
        # are columns x classes, so this bounds its memory and time (bench/RESULTS.md).
        best,
        TfidfTransformer(sublinear_tf=FEATURES["sublinear_tf"]),
        LogisticRegression(C=FEATURES["C"], max_iter=300),
    )
    try:
        # One BLAS thread: lbfgs's steps are small matrix products, and OpenBLAS's threads
        # spinning on them cost 10x the CPU of one thread on the loaded 2-core host (a fit of
        # 960 short texts: 2.9 s of CPU against 0.26 s; bench/RESULTS.md).
        with warnings.catch_warnings(), threadpool_limits(1, user_api="blas"):
            # A small project uses fewer columns than the budget: all are kept, as wanted.
            warnings.filterwarnings("ignore", message=r"k=\d+ is greater than n_features")
            pipeline.fit(list(texts), list(targets))
    except ValueError:
        # Every training text the same (no column varies): only the commonest label is known.
        return Model(classes=[max(classes, key=list(targets).count)])
    return Model(classes=[str(c) for c in pipeline.classes_], pipeline=pipeline)


def fold_of(issue_ids: Sequence[int], folds: int = FOLDS, seed: int = SEED) -> dict[int, int]:
    """Which fold leaves each final issue out (a seeded shuffle, so reruns agree)."""
    from sklearn.model_selection import KFold

    ids = sorted(issue_ids)
    out: dict[int, int] = {}
    splitter = KFold(n_splits=min(folds, len(ids)), shuffle=True, random_state=seed)
    for k, (_, held_out) in enumerate(splitter.split(ids)):
        for i in held_out:
            out[ids[i]] = k
    return out


class ClassifierBackend:
    trains = True

    def __init__(self, rater: MachineRater) -> None:
        self.rater = rater

    def label(self, request: LabelRequest) -> Iterator[Prediction]:
        finals = request.finals
        if len(finals) < MIN_FINALS or len(set(finals.values())) < 2:
            raise BackendError.translatable(
                gettext_noop(
                    "classifier: needs at least %(least)s final issues with two different "
                    "labels to train on (this project has %(finals)s)"
                ),
                least=MIN_FINALS,
                finals=len(finals),
            )
        texts = request.final_texts
        params = {**FEATURES, "trained_on": len(finals)}
        version = f"v{self.rater.version + 1}"
        wanted = {item.issue_id for item in request.items}
        other_items = [item for item in request.items if item.issue_id not in finals]

        # Out of sample: each final issue by the model of the fold that left it out. Every final
        # issue is predicted, asked for or not: the calibration maps are fitted on all of them.
        folds = fold_of(list(finals))
        held: dict[int, list[int]] = {}
        raw: dict[int, tuple[str, float]] = {}
        hashes: dict[int, str] = {}
        done = 0
        for k in sorted(set(folds.values())):
            held[k] = [i for i in finals if folds[i] == k]
            train = [(i, code) for i, code in finals.items() if folds[i] != k]
            model = fit([texts[i] for i, _ in train], [code for _, code in train])
            codes, confidences = model.predict([texts[i] for i in held[k]])
            raw.update(zip(held[k], zip(codes, confidences, strict=True), strict=True))
            hashes[k] = training_hash(train)
            done += sum(i in wanted for i in held[k])
            request.progress(done)

        def calibrated(leave_out: int | None) -> Calibrator:
            """The map fitted on the out-of-fold labels of every final issue outside fold
            `leave_out` (all of them for None), against their final labels."""
            pairs = [(raw[i][1], raw[i][0] == finals[i]) for i in finals if folds[i] != leave_out]
            return Calibrator([c for c, _ in pairs], [hit for _, hit in pairs])

        def labeled(
            ids: list[int],
            codes: list[str],
            raws: list[float],
            hashed: str,
            cal: Calibrator,
            fold: int | None,
        ) -> Iterator[Prediction]:
            """The labels of `ids`, their raw confidences mapped by `cal`."""
            described = cal.describe()
            for i, code, before, after in zip(ids, codes, raws, cal(raws), strict=True):
                yield Prediction(
                    issue_id=i,
                    code=code,
                    confidence=after,
                    raw_output=code,
                    prompt_hash=hashed,
                    model=MODEL_NAME,
                    model_version=version,
                    parameters={
                        **params,
                        "calibration": described,
                        "uncalibrated_confidence": before,
                    },
                    fold=fold,
                )

        # A fold's labels are calibrated by the map of the other folds' labels: an issue's own
        # outcome never fits the map that reads its confidence.
        for k, ids in held.items():
            asked = [i for i in ids if i in wanted]
            if asked:
                codes = [raw[i][0] for i in asked]
                raws = [raw[i][1] for i in asked]
                yield from labeled(asked, codes, raws, hashes[k], calibrated(k), k)
        if other_items:
            # Issues not final yet: the model trained on every final issue, calibrated by the
            # map of every final issue's out-of-fold label.
            train = list(finals.items())
            model = fit([texts[i] for i, _ in train], [code for _, code in train])
            codes, confidences = model.predict([item.text for item in other_items])
            ids = [item.issue_id for item in other_items]
            hashed = training_hash(train)
            yield from labeled(ids, codes, confidences, hashed, calibrated(None), None)
            done += len(other_items)
            request.progress(done)
