"""Synthetic final issues whose text carries their label (with noise), for the raters' tests.

Each label has its own words; a noisy issue is written with another label's words, so no
classifier can be right on it. Ada and Otto labeled every issue (Ada agrees with the final
label more often than Otto), so the human kappas have something to summarise.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterator, Sequence

import pytest

from ingest.models import Issue, Repository
from labeling.models import Annotation, ProjectIssue, Resolution
from raters import classifier
from taxonomy.models import TaxonomyNode

WORDS = {
    "A.1": "install pip wheel version mismatch cuda toolkit how do i install",
    "B.1": "support request add feature please flash attention kernel would be great",
    "C.1": "out of memory oom gpu crash allocation failed checkpoint",
    "C.2": "nccl timeout hang deadlock distributed allreduce stuck",
    "FP": "resnet mnist tiny model small cnn image classification",
}
FILLER = [
    "the",
    "a",
    "when",
    "we",
    "run",
    "it",
    "with",
    "our",
    "setup",
    "and",
    "see",
    "this",
    "in",
    "the",
    "logs",
    "today",
]


def label_fields(project, code: str) -> dict:
    if code == "FP":
        return {"is_false_positive": True, "false_positive_reason": "lightweight_model"}
    nodes = {n.code: n for n in TaxonomyNode.objects.filter(version_id=project.taxonomy_version_id)}
    parts = code.split(".")
    return {
        "issue_type": nodes[parts[0]],
        "theme": nodes[".".join(parts[:2])] if len(parts) > 1 else None,
        "sub_theme": nodes[code] if len(parts) > 2 else None,
    }


def text_of(code: str, rng: random.Random) -> str:
    words = WORDS[code].split()
    return " ".join(rng.choice(words + FILLER) for _ in range(40))


def add_finals(
    project,
    repository: Repository,
    n: int,
    *,
    noise: float = 0.1,
    seed: int = 1,
    annotators=(),
    start: int = 1000,
    open_issues: int = 0,
) -> list[Issue]:
    """`n` final issues (and `open_issues` open ones) with synthetic text; returns them all."""
    rng = random.Random(seed)
    codes = list(WORDS)
    fields = {code: label_fields(project, code) for code in codes}
    position = ProjectIssue.objects.filter(project=project).count()
    # Issues, their places and annotations are built first and inserted in one statement per
    # table (the random draws keep their order, so the data is the same); resolutions are saved
    # one by one, after the rest, since their post_save is what queues a retraining.
    issues, placed, resolutions, annotations = [], [], [], []
    for i in range(n + open_issues):
        code = codes[i % len(codes)]
        written = rng.choice(codes) if rng.random() < noise else code
        issue = Issue(
            repository=repository,
            number=str(start + i),
            url=f"{repository.web_url}/issues/{start + i}",
            title=f"Problem {start + i}",
            body=text_of(written, rng),
        )
        final = i < n
        placed.append(
            ProjectIssue(
                project=project,
                issue=issue,
                position=position + i,
                status=ProjectIssue.Status.FINAL if final else ProjectIssue.Status.OPEN,
                annotation_count=len(annotators) if final else 0,
            )
        )
        if final:
            resolutions.append(
                Resolution(project=project, issue=issue, method="unanimous", **fields[code])
            )
            for k, user in enumerate(annotators):
                agree = rng.random() < (0.9 - 0.2 * k)
                said = code if agree else rng.choice([c for c in codes if c != code])
                annotations.append(
                    Annotation(project=project, issue=issue, annotator=user, **fields[said])
                )
        issues.append(issue)
    Issue.objects.bulk_create(issues)
    for row in [*placed, *resolutions, *annotations]:
        row.issue_id = row.issue.pk  # the issue had no id when the row was made
    ProjectIssue.objects.bulk_create(placed)
    Annotation.objects.bulk_create(annotations)
    for resolution in resolutions:
        resolution.save()
    return issues


@pytest.fixture
def finals(project, repository, annotator, other_annotator) -> list[Issue]:
    """60 final issues (10 % noisy text) and 10 open ones in the lead's project."""
    return add_finals(
        project, repository, 60, annotators=(annotator, other_annotator), open_issues=10
    )


# Fitted classifiers by training set, shared by every test that asks for `fit_once`.
_FITTED: dict[str, classifier.Model] = {}
_FITTED_MAX = 64  # a model holds a few MB (its hashed columns' variances)


@pytest.fixture
def fit_once(monkeypatch) -> Iterator[None]:
    """`raters.classifier.fit` fits each distinct training set once per session: a fit is
    deterministic (seeded folds, lbfgs), and the tests' `finals` are the same texts and labels
    in every test, so most of their runs train the very models an earlier test trained (a fit
    costs ~0.5 s, a run six of them). A training set not seen before is fitted for real."""
    real = classifier.fit

    def fit(texts: Sequence[str], targets: Sequence[str]) -> classifier.Model:
        key = hashlib.sha256(repr((list(texts), list(targets))).encode()).hexdigest()
        if key not in _FITTED:
            if len(_FITTED) >= _FITTED_MAX:
                _FITTED.clear()
            _FITTED[key] = real(texts, targets)
        return _FITTED[key]

    monkeypatch.setattr(classifier, "fit", fit)
    yield


# A real `celery worker` process (tests/ingest/test_worker.py).
from tests.ingest.test_worker import start_worker  # noqa: E402, F401
