"""Benchmark: the issue list (labeling.issue_list) of a project of 40,000 issues.

A page of 50 rows as the page asks for it (the count, the rows, their final labels): a search
for a rare word, one for a common word, a filtered page (final, type C, a theme) and the
unfiltered list sorted by the last label; the review's slow searches (#20 F2: a negated word
alone, a phrase of common words, 40 negated words); each the median of several runs (a case
slower than 5 s: of fewer, its first run counted). Unless `--skip-unindexed`, the two word
searches are timed again without the GIN index (dropped inside a transaction that is rolled
back), to show what it is worth.

    .venv/bin/python bench/issue_list_bench.py [--issues 40000] [--runs 5] [--skip-unindexed]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from _django import setup

setup()

from django.contrib.auth.models import User  # noqa: E402
from django.db import connection, transaction  # noqa: E402

from annotator.models import Project  # noqa: E402
from ingest.models import Issue, Repository  # noqa: E402
from labeling import issue_list  # noqa: E402
from labeling.models import Annotation, ProjectIssue, Resolution  # noqa: E402
from taxonomy.loader import load_study_taxonomy  # noqa: E402
from taxonomy.models import TaxonomyNode  # noqa: E402

WORDS = [
    "the", "model", "training", "fails", "with", "error", "when", "loading", "checkpoint",
    "on", "device", "graph", "operator", "shape", "dtype", "tensor", "optimizer", "kernel",
    "memory", "out", "of", "range", "step", "loss", "dataset", "config", "version", "install",
    "build", "compile", "run", "script", "python", "log", "warning", "Traceback", "int64",
]  # fmt: skip
RARE = "segfaulted"  # in one issue of 400; the search looks for "segfaults"
LOREM = ["lorem", "ipsum", "dolor", "sit", "amet"]  # opens every other body (the review's case)
OWNER = "bench-issuelist"


def build(n: int) -> Project:
    """The project with its issues, statuses, labels and final labels (made once, kept)."""
    project = Project.objects.filter(name=OWNER).first()
    if project is not None and ProjectIssue.objects.filter(project=project).count() == n:
        return project
    Project.objects.filter(name=OWNER).delete()
    Repository.objects.filter(owner=OWNER).delete()
    version = load_study_taxonomy()
    project = Project.objects.create(name=OWNER, taxonomy_version=version)
    project.annotations_per_issue = 2
    project.save()
    rater, _ = User.objects.get_or_create(username=f"{OWNER}-rater")
    rng = random.Random(14)
    repos = [
        Repository.objects.create(
            forge="github", api_url="https://api.github.com", owner=OWNER, name=f"r{i}"
        )
        for i in range(4)
    ]
    start = datetime(2022, 1, 1, tzinfo=UTC)
    issues = []
    for i in range(n):
        body = rng.choices(WORDS, k=rng.randint(40, 160))
        if i % 400 == 0:
            body.insert(rng.randrange(len(body)), RARE)
        if i % 2 == 0:
            body[:0] = LOREM
        repo = repos[i % 4]
        issues.append(
            Issue(
                repository=repo,
                number=str(i),
                url=f"{repo.web_url}/issues/{i}",
                title=" ".join(rng.choices(WORDS, k=8)),
                body=" ".join(body),
                created_at=start + timedelta(minutes=37 * i),
            )
        )
    issues = Issue.objects.bulk_create(issues, batch_size=2000)
    # A study half way: a third final, a tenth in disagreement, a fifth in progress.
    statuses = []
    levels = list(issue_list.LEVEL_NAMES)
    for i in range(n):
        roll = i % 30
        if roll < 10:
            statuses.append(("final", 2, ""))
        elif roll < 13:
            statuses.append(("disagreement", 2, rng.choice(levels)))
        elif roll < 19:
            statuses.append(("open", 1, ""))
        else:
            statuses.append(("open", 0, ""))
    items = ProjectIssue.objects.bulk_create(
        [
            ProjectIssue(
                project=project,
                issue=issue,
                position=i,
                status=status,
                annotation_count=count,
                disagreement_level=level,
            )
            for i, (issue, (status, count, level)) in enumerate(zip(issues, statuses, strict=True))
        ],
        batch_size=2000,
    )
    themes = list(TaxonomyNode.objects.filter(version=version, level=TaxonomyNode.Level.THEME))
    labels, finals = [], []
    for i, item in enumerate(items):
        if item.annotation_count == 0:
            continue
        theme = themes[i % len(themes)]
        label = {"issue_type_id": theme.parent_id, "theme_id": theme.pk}
        labels.append(
            Annotation(
                project=project,
                issue_id=item.issue_id,
                annotator=rater,
                created_at=start + timedelta(days=300, minutes=11 * i),
                **label,
            )
        )
        if item.status == "final":
            finals.append(
                Resolution(project=project, issue_id=item.issue_id, method="unanimous", **label)
            )
    Annotation.objects.bulk_create(labels, batch_size=2000)
    Resolution.objects.bulk_create(finals, batch_size=2000)
    with connection.cursor() as cursor:
        for table in ("ingest_issue", "annotator_projectissue", "annotator_annotation",
                      "annotator_resolution"):  # fmt: skip
            cursor.execute(f"ANALYZE {table}")
    return project


def timed(fn: Callable[[], object], runs: int) -> tuple[float, list[float], object]:
    times, result = [], None
    for _ in range(runs):
        started = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times), times, result


def page_of(project: Project, **filters: Any) -> Callable[[], str]:
    def run() -> str:
        try:
            page = issue_list.issue_page(project, issue_list.IssueFilters(**filters), 1)
        except ValueError as refused:  # the search refused up front, or out of time
            return f"refused: {refused}"
        return f"{page.paginator.count} rows, page of {len(page.object_list)}"

    return run


# The review's slow searches (#20 F2): a negated word alone, a phrase of common words, and 40
# negated words (alone, and after one word to find).
NEGATED = " ".join(f"-{word}" for word in [*WORDS, "lorem", "ipsum", "dolor"][:40])
REVIEW_CASES = {
    "search, negated only (-lorem)": {"q": "-lorem"},
    'search, phrase ("lorem ipsum dolor")': {"q": '"lorem ipsum dolor"'},
    'search, phrase ("loading checkpoint")': {"q": '"loading checkpoint"'},
    "search, 40 negated words": {"q": NEGATED},
    "search, a word and 39 negated": {"q": "segfaults " + NEGATED.rsplit(" ", 1)[0]},
    "search, either word (checkpoint OR deadlock)": {"q": "checkpoint or deadlock"},
}
SLOW_SECONDS = 5.0  # a case slower than this is not warmed up: its first run counts


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--issues", type=int, default=40_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--skip-unindexed", action="store_true")
    args = parser.parse_args()
    started = time.perf_counter()
    project = build(args.issues)
    print(f"{args.issues} issues ready in {time.perf_counter() - started:.1f} s")
    theme = TaxonomyNode.objects.filter(
        version_id=project.taxonomy_version_id, code__startswith="C.", level=2
    ).first()
    cases = {
        "search, rare word (segfaults)": page_of(project, q="segfaults"),
        "search, common word (memory)": page_of(project, q="memory"),
        "filtered: final, type C, a theme": page_of(
            project, status="final", final_type="C", theme=theme.code if theme else ""
        ),
        "filtered: disagreement at the theme, by number": page_of(
            project, status="disagreement", level="theme", sort="number", descending=False
        ),
        "everything, by last label": page_of(project, sort="last_label"),
        "search + filter: memory, in progress": page_of(project, q="memory", status="in_progress"),
        **{name: page_of(project, **filters) for name, filters in REVIEW_CASES.items()},
    }
    for name, fn in cases.items():
        started = time.perf_counter()
        fn()  # warm
        first = time.perf_counter() - started
        if first > SLOW_SECONDS:
            median, times, result = timed(fn, max(args.runs // 2, 1))
            times = [first, *times]
            median = statistics.median(times)
        else:
            median, times, result = timed(fn, args.runs)
        print(f"{name}: median {median * 1000:.1f} ms of {len(times)} "
              f"({', '.join(f'{t * 1000:.1f}' for t in times)}); {result}")  # fmt: skip
    if args.skip_unindexed:
        return
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("DROP INDEX ingest_issue_search_document")
        for name in ("search, rare word (segfaults)", "search, common word (memory)"):
            median, times, result = timed(cases[name], args.runs)
            print(f"{name}, WITHOUT the index: median {median * 1000:.1f} ms "
                  f"({', '.join(f'{t * 1000:.1f}' for t in times)}); {result}")  # fmt: skip
        transaction.set_rollback(True)


if __name__ == "__main__":
    main()
