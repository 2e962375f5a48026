"""Synthetic texted issues: seeded issue texts that carry their label weakly, for measuring how
well the classifier's confidences are calibrated (tests/raters/test_calibration.py and
bench/calibration_bench.py, 1,200 issues as in issue #28).

`texted_issues(n, seed)` gives (label, text) pairs over the study's 18 themes and "FP". Each
label has 12 words of its own and each type 20 words its themes share, all drawn from a
vocabulary of 3,000 words; labels are unequally common (weights 1 / rank^0.7, in a seeded
order). An issue's 40 words are one of its label's own words with probability 0.10, one of its
type's with 0.08, and otherwise any word of the vocabulary; 8 % of the issues are written with
a random label's words (no classifier can be right on them unless it is that label). The
classifier is right on about 0.8 of them out of sample, and its uncalibrated confidences
say less than that (a mean of about 0.64): the case #28 measured.

`add_texted_finals` stores them as final issues of a project (rows in bulk, as
`tests/raters/conftest.add_finals` does: no submission makes 1,200 finals in a second).
"""

from __future__ import annotations

import random

THEMES = {"A": 4, "B": 4, "C": 10}  # the study taxonomy's themes per type
LABELS = ["FP"] + [f"{t}.{i}" for t, k in THEMES.items() for i in range(1, k + 1)]


def texted_issues(
    n: int = 1200,
    seed: int = 0,
    *,
    words: int = 40,
    own: float = 0.10,
    shared: float = 0.08,
    noise: float = 0.08,
    vocabulary: int = 3000,
) -> list[tuple[str, str]]:
    """`n` (label, text) pairs, the same for the same seed."""
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(vocabulary)]
    own_words = {label: rng.sample(vocab, 12) for label in LABELS}
    type_words = {label.split(".")[0]: rng.sample(vocab, 20) for label in LABELS}
    weights = [1 / (rank + 1) ** 0.7 for rank in range(len(LABELS))]
    rng.shuffle(weights)
    out = []
    for _ in range(n):
        label = rng.choices(LABELS, weights)[0]
        written = rng.choice(LABELS) if rng.random() < noise else label
        text = []
        for _ in range(words):
            u = rng.random()
            if u < own:
                text.append(rng.choice(own_words[written]))
            elif u < own + shared:
                text.append(rng.choice(type_words[written.split(".")[0]]))
            else:
                text.append(rng.choice(vocab))
        out.append((label, " ".join(text)))
    return out


def add_texted_finals(project, repository, pairs: list[tuple[str, str]], start: int = 5000):
    """The pairs as final issues of the project (title "Problem N", the text as body)."""
    from ingest.models import Issue
    from labeling.models import ProjectIssue, Resolution
    from tests.raters.conftest import label_fields

    fields = {label: label_fields(project, label) for label in LABELS}
    position = ProjectIssue.objects.filter(project=project).count()
    issues = Issue.objects.bulk_create(
        Issue(
            repository=repository,
            number=str(start + i),
            url=f"{repository.web_url}/issues/{start + i}",
            title=f"Problem {start + i}",
            body=text,
        )
        for i, (_, text) in enumerate(pairs)
    )
    ProjectIssue.objects.bulk_create(
        ProjectIssue(
            project=project, issue=issue, position=position + i, status=ProjectIssue.Status.FINAL
        )
        for i, issue in enumerate(issues)
    )
    Resolution.objects.bulk_create(
        Resolution(project=project, issue=issue, method="unanimous", **fields[label])
        for issue, (label, _) in zip(issues, pairs, strict=True)
    )
    return issues
