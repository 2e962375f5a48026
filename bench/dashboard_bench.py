"""Benchmark the lead's dashboard (labeling.dashboard) on a project of the study's size.

The study's shape: 11 repositories, 38,742 issues, 7 annotators with 7 labels each (271,194
annotations, spread over 120 days), a final label on 90 % of the issues and the rest in the
disagreement queue, a reservation per annotator (on a disputed issue, so not an open one).
Seeded once with COPY (`lib.sql.copy_rows`) into its own database (default
annotator_bench_dashboard, created and migrated if missing; never a development or test
database), then timed in one process:

* each part of the page (`annotator_rows`, `repository_rows`, `progress_charts`, and
  `dashboard`, all of them: computing the project-wide figures, `fresh=True`, and from their
  snapshot), called directly;
* the whole page and the htmx fragment the page polls, through Django's test client as the
  lead (middleware, session, template rendering included), from the snapshot (younger than
  a poll: the runs before stored it).

Medians of --runs (default 5) after one warm-up call each: the wall time, and the CPU time
of the benchmark process plus its PostgreSQL backend (read from /proc, with parallel query
off for those runs so no worker escapes the count), which a busy shared machine inflates
far less than the wall time.

    .venv/bin/python bench/dashboard_bench.py [--runs 5] [--db NAME] [--reseed] [--times K]

Target (issue #14): a page render <= 1 s. `--times K` seeds a project K times the study's size
(K x 38,742 issues, the same mix; 100 pilot issues whatever K): issue #30 item 5 asks for a
page <= 300 ms at K = 10. The seed is kept per database, so use one database per K.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

from _django import migrated_database

ROOT = Path(__file__).resolve().parent.parent
PROJECT = "Dashboard bench"
ISSUES = 38_742
RATERS = 7
DAYS = 120
FINAL_SHARE = 0.9
# (owner, name, weight): the study's eleven repositories, weighted as in dataset_generate.
REPOS = [
    ("hpcaitech", "ColossalAI", 3),
    ("deepspeedai", "DeepSpeed", 6),
    ("NVIDIA", "Megatron-LM", 2),
    ("mindspore", "mindformers", 2),
    ("mindspore-lab", "mindnlp", 1),
    ("ascend", "MindSpeed", 1),
    ("mindspore", "mindspore", 4),
    ("pytorch", "pytorch", 10),
    ("tensorflow", "tensorflow", 3),
    ("NVIDIA", "TensorRT-LLM", 3),
    ("vllm-project", "vllm", 8),
]
# The study's type mix: questions, requirements, bugs.
MIX = {"A": 542, "B": 12_491, "C": 25_709}


def _django(env: dict[str, str]) -> None:
    os.environ.update(env)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ["ALLOWED_HOSTS"] = "testserver,localhost"
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()


def seed(reseed: bool, times: int = 1) -> int:
    """The bench project's id, seeding it first if it is missing (or `reseed`)."""
    from django.contrib.auth.models import User
    from django.db import connection, transaction
    from django.utils import timezone

    from annotator.models import Membership, Project, Role
    from ingest.models import Issue, Repository
    from labeling.models import Annotation, ProjectIssue, Reservation, Resolution, new_public_id
    from lib.sql import copy_rows, foreign_keys_validated_at_end
    from taxonomy.loader import load_study_taxonomy
    from taxonomy.models import TaxonomyNode

    existing = Project.objects.filter(name=PROJECT).first()
    if existing and not reseed:
        return existing.pk
    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute(
            "TRUNCATE annotator_project, ingest_repository CASCADE;"
            "DELETE FROM auth_user WHERE username LIKE 'bench-%%';"
        )
    rng = random.Random(20260314)
    now = timezone.now()
    with transaction.atomic():
        version = load_study_taxonomy(only_if_missing=True)
        lead = User.objects.create(username="bench-lead")
        raters = [User.objects.create(username=f"bench-rater-{i}") for i in range(1, RATERS + 1)]
        project = Project.objects.create(
            name=PROJECT, taxonomy_version=version, annotations_per_issue=RATERS
        )
        Membership.objects.create(project=project, user=lead, role=Role.LEAD)
        for user in raters:
            Membership.objects.create(project=project, user=user, role=Role.ANNOTATOR)
        repos = [
            Repository.objects.create(
                forge="github", api_url="https://api.github.com", owner=owner, name=name
            )
            for owner, name, _ in REPOS
        ]
        weights = [w for *_, w in REPOS]
        nodes = TaxonomyNode.objects.filter(version=version)
        types = {n.code: n.pk for n in nodes if n.level == TaxonomyNode.Level.TYPE}
        themes: dict[str, list[tuple[int, int]]] = {code: [] for code in types}
        for n in nodes:
            if n.level == TaxonomyNode.Level.THEME:
                type_code = n.code.split(".")[0]
                themes[type_code].append((types[type_code], n.pk))
        all_themes = [t for ts in themes.values() for t in ts]

        issue_rows = []
        for n in range(ISSUES * times):
            repo = rng.choices(repos, weights)[0]
            issue_rows.append(
                (repo.pk, str(n + 1), f"{repo.web_url}/issues/{n + 1}", f"Issue {n + 1}")
            )
        copy_rows(Issue, ["repository_id", "number", "url", "title"], issue_rows)
        issue_ids = list(
            Issue.objects.filter(repository__in=repos).order_by("pk").values_list("pk", flat=True)
        )
        kinds = [t for t, n in MIX.items() for _ in range(n * times)]
        rng.shuffle(kinds)
        pilot = set(rng.sample(range(ISSUES * times), 100))
        pi_rows, annotation_rows, resolution_rows = [], [], []
        for i, issue_id in enumerate(issue_ids):
            final = rng.choice(themes[kinds[i]])
            is_final = rng.random() < FINAL_SHARE
            # The issue's seven labels come within three days of its first; the final label
            # the moment the last arrives.
            days_ago = rng.uniform(0, DAYS - 1)
            last_at = None
            for rater in raters:
                at = now - timedelta(days=max(days_ago - rng.uniform(0, 3), 0))
                last_at = at if last_at is None else max(last_at, at)
                label = final if rng.random() < 0.85 else rng.choice(all_themes)
                annotation_rows.append(
                    (project.pk, issue_id, rater.pk, 1, True, i in pilot, at, False, *label)
                )
            status = "final" if is_final else "disagreement"
            pi_rows.append(
                (
                    project.pk,
                    issue_id,
                    new_public_id(),
                    i in pilot,
                    i,
                    status,
                    RATERS,
                    "" if is_final else "theme",
                )
            )
            if is_final:
                resolution_rows.append(
                    (project.pk, issue_id, "majority", last_at, True, False, *final)
                )
        copy_rows(
            ProjectIssue,
            [
                "project_id",
                "issue_id",
                "public_id",
                "is_pilot",
                "position",
                "status",
                "annotation_count",
                "disagreement_level",
            ],
            pi_rows,
        )
        names = [
            "project_id",
            "issue_id",
            "annotator_id",
            "revision",
            "is_current",
            "is_pilot",
            "created_at",
            "is_false_positive",
            "issue_type_id",
            "theme_id",
        ]
        with foreign_keys_validated_at_end(Annotation, len(annotation_rows)):
            copy_rows(Annotation, names, annotation_rows)
        copy_rows(
            Resolution,
            [
                "project_id",
                "issue_id",
                "method",
                "decided_at",
                "is_current",
                "is_false_positive",
                "issue_type_id",
                "theme_id",
            ],
            resolution_rows,
        )
        # A reservation each, for the query to read (on disputed issues: none is open).
        disputed = list(
            ProjectIssue.objects.filter(project=project, status="disagreement")[:RATERS]
        )
        for rater, item in zip(raters, disputed, strict=True):
            Reservation.objects.create(
                project_issue=item, annotator=rater, expires_at=now + timedelta(minutes=30)
            )
    with connection.cursor() as cursor:
        for table in ("annotator_annotation", "annotator_projectissue", "annotator_resolution"):
            cursor.execute(f"VACUUM ANALYZE {table}")
    print(
        f"seeded {len(issue_rows):,} issues, {len(annotation_rows):,} annotations, "
        f"{len(resolution_rows):,} final labels in {time.perf_counter() - started:.1f} s",
        flush=True,
    )
    return project.pk


def _backend_cpu() -> float:
    """CPU seconds used so far by this connection's PostgreSQL backend (from /proc: the
    server runs on this machine)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        (pid,) = cursor.fetchone()
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _median(fn: Callable[[], object], runs: int) -> tuple[float, float]:
    """Median wall time, and median CPU time of this process and its PostgreSQL backend
    (with parallel query off, so no worker process escapes the count)."""
    from django.db import connection

    fn()  # warm-up: connection, templates, prepared statements
    walls, cpus = [], []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        walls.append(time.perf_counter() - start)
    with connection.cursor() as cursor:
        cursor.execute("SET max_parallel_workers_per_gather = 0")
    for _ in range(runs):
        backend, own = _backend_cpu(), time.process_time()
        fn()
        cpus.append(_backend_cpu() - backend + time.process_time() - own)
    with connection.cursor() as cursor:
        cursor.execute("RESET max_parallel_workers_per_gather")
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--db", default="annotator_bench_dashboard")
    parser.add_argument("--reseed", action="store_true")
    parser.add_argument("--times", type=int, default=1, help="K times the study's size")
    args = parser.parse_args()
    env = migrated_database(args.db)
    env["DEBUG"] = "0"  # DEBUG would keep every query in memory
    _django(env)

    from django.contrib.auth.models import User
    from django.test import Client
    from django.urls import reverse

    from annotator.models import Project
    from labeling import dashboard
    from labeling.models import Annotation

    project = Project.objects.get(pk=seed(args.reseed, args.times))
    print(
        f"project: {project.project_issues.count():,} issues, "
        f"{Annotation.objects.filter(project=project).count():,} annotations",
        flush=True,
    )
    client = Client()
    client.force_login(User.objects.get(username="bench-lead"))
    url = reverse("lead_dashboard", args=[project.pk])

    def page(htmx: bool) -> None:
        extra = {"HTTP_HX_REQUEST": "true"} if htmx else {}
        response = client.get(url, secure=True, **extra)
        assert response.status_code == 200, response.status_code

    timings = {
        "annotator_rows": lambda: dashboard.annotator_rows(project),
        "repository_rows": lambda: dashboard.repository_rows(project),
        "progress_charts": lambda: dashboard.progress_charts(project),
        "dashboard, computing": lambda: dashboard.dashboard(project, fresh=True),
        # The runs above stored a snapshot, younger than a poll: what the pages below read.
        "dashboard, snapshot": lambda: dashboard.dashboard(project),
        "page (GET, full)": lambda: page(False),
        "fragment (GET, htmx)": lambda: page(True),
    }
    load = os.getloadavg()[0]
    print(f"\nmedians of {args.runs} runs (load average {load:.1f} on {os.cpu_count()} cores):")
    print(f"  {'':<24} {'wall':>9}   {'CPU (client + PostgreSQL, serial)':>9}")
    for name, fn in timings.items():
        wall, cpu = _median(fn, args.runs)
        print(f"  {name:<24} {wall * 1000:6.0f} ms   {cpu * 1000:6.0f} ms", flush=True)


if __name__ == "__main__":
    main()
