"""Dawid-Skene by EM: one step worked by hand, and a synthetic crowd with known accuracies."""

from __future__ import annotations

from fractions import Fraction as F
from itertools import pairwise

import numpy as np
import pytest

from agreement import dawid_skene as ds

# A worked example small enough to do on paper: 3 items, 3 raters, 2 classes (0, 1).
#   item 0: r0=0 r1=0 r2=1
#   item 1: r0=0 r1=1 r2=1
#   item 2: r0=1 r1=1        (r2 did not label it)
WORKED = ds.answers(
    item=[0, 0, 0, 1, 1, 1, 2, 2],
    rater=[0, 1, 2, 0, 1, 2, 0, 1],
    label=[0, 0, 1, 0, 1, 1, 1, 1],
    n_items=3,
    n_raters=3,
    n_classes=2,
)


def test_majority_start_is_the_share_of_votes():
    expected = [[2 / 3, 1 / 3], [1 / 3, 2 / 3], [0, 1]]
    assert np.allclose(ds.majority(WORKED), expected)


def test_one_em_step_by_hand_with_laplace_smoothing():
    # M-step from the majority start T0 = [[2/3, 1/3], [1/3, 2/3], [0, 1]], smoothing 1:
    # priors: column sums (1, 2) + 1 each -> (2, 3) / 5.
    priors = [F(2, 5), F(3, 5)]
    # Confusion rows pi_r[k, l] = (sum of T0[i, k] over r's answers l) + 1, normalised per row.
    # r0 answered 0 on items 0, 1 and 1 on item 2:
    #   k=0: l=0 gets 2/3 + 1/3 = 1, l=1 gets 0   -> (2, 1) / 3
    #   k=1: l=0 gets 1/3 + 2/3 = 1, l=1 gets 1   -> (2, 2) / 4
    # r1 answered 0 on item 0 and 1 on items 1, 2:
    #   k=0: l=0 gets 2/3, l=1 gets 1/3           -> (5/3, 4/3) / 3
    #   k=1: l=0 gets 1/3, l=1 gets 2/3 + 1       -> (4/3, 8/3) / 4
    # r2 answered 1 on items 0, 1:
    #   k=0: l=1 gets 2/3 + 1/3 = 1               -> (1, 2) / 3
    #   k=1: l=1 gets 1/3 + 2/3 = 1               -> (1, 2) / 3
    pi = {
        0: [[F(2, 3), F(1, 3)], [F(1, 2), F(1, 2)]],
        1: [[F(5, 9), F(4, 9)], [F(1, 3), F(2, 3)]],
        2: [[F(1, 3), F(2, 3)], [F(1, 3), F(2, 3)]],
    }
    got_priors, got_conf = ds.m_step(WORKED, ds.majority(WORKED), smoothing=1.0)
    assert np.allclose(got_priors, [float(p) for p in priors])
    assert np.allclose(got_conf, [[[float(x) for x in row] for row in pi[r]] for r in range(3)])

    # E-step: T[i, k] ∝ p_k * prod over i's answers of pi_r[k, l].
    answers = {0: [(0, 0), (1, 0), (2, 1)], 1: [(0, 0), (1, 1), (2, 1)], 2: [(0, 1), (1, 1)]}
    expected = []
    likelihood = 0.0
    for i in range(3):
        joint = []
        for k in range(2):
            value = priors[k]
            for r, label in answers[i]:
                value *= pi[r][k][label]
            joint.append(value)
        expected.append([float(j / sum(joint)) for j in joint])
        likelihood += float(np.log(float(sum(joint))))
    # Item 0, for instance: 2/5 * 2/3 * 5/9 * 2/3 = 8/81 against 3/5 * 1/2 * 1/3 * 2/3 = 1/15.
    assert expected[0][0] == pytest.approx(float(F(8, 81) / (F(8, 81) + F(1, 15))))
    posteriors, log_likelihood = ds.e_step(WORKED, got_priors, got_conf)
    assert np.allclose(posteriors, expected)
    assert log_likelihood == pytest.approx(likelihood)

    # fit with one iteration is exactly that step; accuracy weighs the diagonal by the priors.
    one = ds.fit(WORKED, smoothing=1.0, max_iter=1)
    assert np.allclose(one.posteriors, expected)
    r0_accuracy = priors[0] * pi[0][0][0] + priors[1] * pi[0][1][1]  # 2/5*2/3 + 3/5*1/2
    assert one.accuracy[0] == pytest.approx(float(r0_accuracy))
    assert one.iterations == 1 and not one.converged


def test_each_em_round_raises_the_likelihood():
    steps = [ds.fit(WORKED, max_iter=n).log_likelihood for n in (1, 2, 3, 5, 10)]
    assert all(b >= a - 1e-12 for a, b in pairwise(steps))


def test_bad_answers_name_the_argument():
    with pytest.raises(ValueError, match="rater"):
        ds.answers([0], [3], [0], n_items=1, n_raters=2, n_classes=2)
    with pytest.raises(ValueError, match="label"):
        ds.answers([0], [0], [-1], n_items=1, n_raters=1, n_classes=2)


def _crowd(seed: int = 7):
    """600 items, 6 classes of unequal frequency, 7 raters as in the study, of known accuracy
    (the last at chance: a uniform guess), each labeling a random 85% of the items."""
    rng = np.random.default_rng(seed)
    n_items, n_classes = 600, 6
    truth = rng.choice(n_classes, size=n_items, p=[0.3, 0.25, 0.15, 0.12, 0.1, 0.08])
    accuracies = [0.95, 0.9, 0.8, 0.7, 0.6, 0.5, None]  # None: chance
    items, raters, labels = [], [], []
    for r, acc in enumerate(accuracies):
        for i in range(n_items):
            if rng.random() > 0.85:
                continue
            if acc is None:
                label = int(rng.integers(n_classes))
            elif rng.random() < acc:
                label = int(truth[i])
            else:  # a wrong class, uniformly
                label = int(rng.choice([c for c in range(n_classes) if c != truth[i]]))
            items.append(i)
            raters.append(r)
            labels.append(label)
    data = ds.answers(items, raters, labels, n_items, len(accuracies), n_classes)
    return data, truth


def test_a_synthetic_crowd_recovers_the_raters_order_with_the_chance_rater_last():
    data, truth = _crowd()
    fit = ds.fit(data)
    assert fit.converged and fit.iterations < 100
    # Ranked by estimated accuracy: the order they were drawn with, chance last and near 1/6.
    assert list(np.argsort(-fit.accuracy)) == [0, 1, 2, 3, 4, 5, 6]
    assert fit.accuracy[6] < 0.3
    assert fit.accuracy[0] == pytest.approx(0.95, abs=0.04)
    assert fit.accuracy[5] == pytest.approx(0.5, abs=0.08)
    # The model's labels beat the majority vote's (ties broken towards the lower class).
    model_right = (fit.posteriors.argmax(axis=1) == truth).mean()
    majority_right = (ds.majority(data).argmax(axis=1) == truth).mean()
    assert model_right >= majority_right and model_right > 0.97


def test_planted_wrong_finals_come_first_when_ranked_by_their_posterior():
    data, truth = _crowd()
    fit = ds.fit(data)
    # The finals the workflow would record: the crowd's strict majority (a unanimous or
    # majority final), the true class where the vote ties (a lead deciding well); and on 12
    # issues where at least four annotators agreed on the true class, a slip: a final label
    # fewest of the annotators chose.
    counts = np.zeros((data.n_items, data.n_classes), dtype=int)
    np.add.at(counts, (data.item, data.label), 1)
    strict = (counts == counts.max(axis=1, keepdims=True)).sum(axis=1) == 1
    finals = np.where(strict, counts.argmax(axis=1), truth)
    clear = np.flatnonzero(counts[np.arange(len(truth)), truth] >= 4)
    planted = np.random.default_rng(11).choice(clear, size=12, replace=False)
    finals[planted] = counts[planted].argmin(axis=1)
    final_posterior = fit.posteriors[np.arange(len(truth)), finals]
    ranked = np.argsort(final_posterior, kind="stable")
    assert set(ranked[:12].tolist()) == set(planted.tolist())


def test_chunked_sums_match_one_chunk_and_an_unlabeled_item_keeps_the_priors(monkeypatch):
    data, _ = _crowd()
    whole = ds.fit(data)
    # Chunks of 7 answers cut through items and (rater, label) groups everywhere.
    monkeypatch.setattr(ds, "CHUNK", 7)
    chunked = ds.fit(data)
    assert np.allclose(whole.posteriors, chunked.posteriors)
    assert np.allclose(whole.confusion, chunked.confusion)

    # An item nobody labeled: its posterior is the class priors.
    lonely = ds.answers([0, 0, 1], [0, 1, 0], [1, 1, 0], n_items=3, n_raters=2, n_classes=2)
    fit = ds.fit(lonely, max_iter=3)
    assert np.allclose(fit.posteriors[2], fit.priors)
