"""The classifier's fast predict path (#23 item 9) gives the fitted pipeline's own outputs, bit
for bit: same hashed columns, same selection, same probabilities, whatever the chunking.

No database: a synthetic corpus (each label its own words, the rest shared; a few texts with
accents, capitals, punctuation and one-word or empty texts, which the tokenizer treats
specially). The reference is scikit-learn's `Pipeline.predict_proba` on the same model.
"""

from __future__ import annotations

import random

import numpy as np

from raters import classifier

LABELS = ["FP", "A.1", "B.1", "C.1", "C.2"]


def corpus(n: int, seed: int = 3) -> tuple[list[str], list[str]]:
    rng = random.Random(seed)
    shared = [f"word{i}" for i in range(400)] + ["Ünïcode", "CUDA_OOM", "x", "a-b", "don't"]
    own = {label: rng.sample(shared, 12) for label in LABELS}
    texts, targets = [], []
    for i in range(n):
        label = LABELS[i % len(LABELS)]
        words = rng.choices(own[label], k=15) + rng.choices(shared, k=40)
        rng.shuffle(words)
        texts.append(" ".join(words) + rng.choice(["", "!", "\n\nTraceback: x.y()", " É"]))
        targets.append(label)
    return texts, targets


def test_fast_predict_equals_the_pipelines_predict_proba():
    texts, targets = corpus(300)
    model = classifier.fit(texts[:200], targets[:200])
    unseen = [*texts[200:], "", "x", "one", "Ünïcode CUDA_OOM"]

    expected = model.pipeline.predict_proba(unseen)
    for chunk in (classifier.PREDICT_CHUNK, 7, 1):
        assert np.array_equal(model.proba(unseen, chunk=chunk), expected), chunk

    codes, confidences = model.predict(unseen)
    assert codes == [str(model.pipeline.classes_[i]) for i in expected.argmax(axis=1)]
    assert confidences == [float(p) for p in expected.max(axis=1)]


def test_the_fast_features_are_the_hashing_vectorizers():
    texts, targets = corpus(120)
    model = classifier.fit(texts, targets)
    vectorizer = model.pipeline[0]
    fast = classifier._features(vectorizer, texts)
    slow = vectorizer.transform(texts)
    # The probe can fire: a text with one more bigram gives a different matrix.
    assert (classifier._features(vectorizer, [texts[0] + " word1 word2"]) != slow[0]).nnz
    assert (fast != slow).nnz == 0 and fast.shape == slow.shape
