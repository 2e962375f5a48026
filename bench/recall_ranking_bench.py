"""The filter-recall page with the classifier's ranking of the dropped issues: fitted in the
request (as the page did before the ranking job) against read from the stored ranking.

A project on its own database (default annotator_bench_recall, created and migrated if
missing; never a development or test database): --finals final issues (default 2,000) to learn
from and --dropped issues the keyword filter dropped (default 10,000), with synthetic text
(each of 20 theme-level labels and FP has its own words among a shared vocabulary). Timed in
one process, through Django's test client as the lead (middleware, session, rendering):

* before: `GET /projects/<id>/recall/` with the ranking computed in the request, as the page's
  `?rank=1` did (the report, the fit on every final issue, every dropped issue scored, the 25
  best read): the view's `ranking_state` replaced by that computation;
* after: the same page reading the ranking the job stored (`dataset.beyond_keywords`).

The job itself (`run_ranking_job`: fit, score, store) is timed once. Medians of --runs (default
5; --before-runs 3) after one warm-up request each.

    .venv/bin/python bench/recall_ranking_bench.py [--runs 5] [--before-runs 3] [--db NAME]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time

from _django import migrated_database, setup_stage

PROJECT = "Recall ranking bench"
CODES = ["FP"] + [f"{t}.{i}" for t, n in (("A", 4), ("B", 6), ("C", 10)) for i in range(1, n + 1)]


def text(rng: random.Random, words: list[str], vocabulary: list[str]) -> str:
    return " ".join(rng.choices(words, k=40) + rng.choices(vocabulary, k=160))


def seed(finals: int, dropped: int):
    """The project (made once), its lead, and the issue ids of its dropped issues."""
    from django.contrib.auth import get_user_model

    from annotator.models import Membership, Project, Role
    from ingest.models import Issue, Repository
    from labeling.models import ProjectIssue, Resolution
    from taxonomy.loader import load_study_taxonomy
    from taxonomy.models import TaxonomyNode

    lead, _ = get_user_model().objects.get_or_create(username="bench-lead")
    project = Project.objects.filter(name=PROJECT).first()
    if project is not None:
        return project, lead
    version = load_study_taxonomy(only_if_missing=True)
    project = Project.objects.create(name=PROJECT, taxonomy_version=version)
    Membership.objects.create(project=project, user=lead, role=Role.LEAD)
    repository = Repository.objects.create(
        forge=Repository.Forge.GITHUB, api_url="https://api.github.com", owner="bench",
        name="recall",
    )  # fmt: skip
    nodes = {n.code: n for n in TaxonomyNode.objects.filter(version=version)}
    codes = [c for c in CODES if c == "FP" or c in nodes]
    rng = random.Random(1)
    vocabulary = [f"w{i}" for i in range(5000)]
    words = {c: rng.sample(vocabulary, 30) for c in codes}
    issues, labels = [], []
    for n in range(finals + dropped):
        code = rng.choice(codes)
        issues.append(
            Issue(
                repository=repository, number=str(n + 1), title=f"Issue {n + 1}",
                url=f"{repository.web_url}/issues/{n + 1}", body=text(rng, words[code], vocabulary),
                filter_status=Issue.FilterStatus.KEPT if n < finals
                else Issue.FilterStatus.FILTERED_OUT,
            )
        )  # fmt: skip
        labels.append(code)
    Issue.objects.bulk_create(issues, batch_size=5000)
    items, resolutions = [], []
    for position, (issue, code) in enumerate(zip(issues[:finals], labels, strict=False)):
        items.append(
            ProjectIssue(
                project=project, issue=issue, position=position,
                status=ProjectIssue.Status.FINAL, annotation_count=3,
            )
        )  # fmt: skip
        if code == "FP":
            fields = {"is_false_positive": True, "false_positive_reason": "lightweight_model"}
        else:
            fields = {"issue_type": nodes[code.split(".")[0]], "theme": nodes[code]}
        resolutions.append(Resolution(project=project, issue=issue, method="unanimous", **fields))
    ProjectIssue.objects.bulk_create(items, batch_size=5000)
    Resolution.objects.bulk_create(resolutions, batch_size=5000)  # no signal: nothing retrains
    return project, lead


def in_request(project, top: int = 25, dropped=None):
    """The ranking as the page computed it in the request before the job (`?rank=1`)."""
    from django.utils import timezone

    from dataset.beyond_keywords import Candidate, RankingState, score_dropped
    from dataset.models import RecallRanking
    from ingest.models import Issue

    trained_on, ranked = score_dropped(project)
    best = ranked[:top]
    issues = Issue.objects.select_related("repository").in_bulk([i for i, _ in best])
    state = RankingState(rater=None, version=0)
    state.ready = RecallRanking(
        finished_at=timezone.now(), trained_on=trained_on, scored=len(ranked)
    )
    state.candidates = [
        Candidate(i, issues[i].repository.full_name, issues[i].title, issues[i].url, s)
        for i, s in best
    ]
    return state


def timed(call, runs: int) -> list[float]:
    call()  # warm-up
    out = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        out.append(time.perf_counter() - start)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--before-runs", type=int, default=3)
    parser.add_argument("--finals", type=int, default=2000)
    parser.add_argument("--dropped", type=int, default=10_000)
    parser.add_argument("--db", default="annotator_bench_recall")
    args = parser.parse_args()
    migrated_database(args.db)
    setup_stage(args.db)
    from django.conf import settings
    from django.test import Client

    from dataset import recall_views
    from dataset.beyond_keywords import begin_ranking, ranking_key, run_ranking_job
    from dataset.models import RecallRanking

    settings.ALLOWED_HOSTS = ["*"]
    project, lead = seed(args.finals, args.dropped)
    client = Client()
    client.force_login(lead)
    url = f"/projects/{project.pk}/recall/"

    def page() -> None:
        answer = client.get(url, secure=True)
        assert answer.status_code == 200, answer.status_code
        assert b'id="ranking-table"' in answer.content

    stored_view = recall_views.ranking_state
    recall_views.ranking_state = in_request
    before = timed(page, args.before_runs)
    recall_views.ranking_state = stored_view

    RecallRanking.objects.filter(project=project).delete()
    ranking, _ = begin_ranking(project, *ranking_key(project))
    start = time.perf_counter()
    ranking = run_ranking_job(ranking.pk)
    job = time.perf_counter() - start
    assert ranking.status == "done", ranking.error
    after = timed(page, args.runs)

    b, a = statistics.median(before), statistics.median(after)
    print(
        f"finals {args.finals}, dropped {args.dropped}; load average "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}\n"
        f"before (fitted in the request): median {b:.3f} s ({args.before_runs} runs, "
        f"min {min(before):.3f}, max {max(before):.3f})\n"
        f"after (stored ranking read): median {a:.3f} s ({args.runs} runs, "
        f"min {min(after):.3f}, max {max(after):.3f}); before/after {b / a:.0f}x\n"
        f"the job (fit, score, store {ranking.scored} scores): {job:.2f} s (one run)",
        flush=True,
    )


if __name__ == "__main__":
    main()
