"""The labeling benchmark's project at ten times the study's size, built in SQL in a minute.

    BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/annotator_bench_10x \\
      .venv/bin/python bench/labeling_10x.py --issues 387000
    BENCH_DATABASE_URL=... .venv/bin/python bench/labeling_load.py realistic --seconds 40

`labeling_load.py setup` builds its 40,000 issues through the ORM (`bulk_create`), which at
387,000 issues (ten times the study's 38,700) takes many minutes of a shared host. This builds
the same project (`labeling_load.PROJECT`: K = 7, the bench users, a shuffled queue) with one
`INSERT ... SELECT generate_series` per table. Columns are read from the models, so it runs on
any checkout's schema: a field named below gets its SQL expression, every other one its
model default. Then any `labeling_load.py` scenario runs on it (it looks the project up by
name); the 100-comment issue of the `page` scenario is not made.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import labeling_load as load

BODY = "Training hangs at step 0 with `NCCL timeout`."  # short: the queue never reads it


def _insert_select(model, expressions: dict[str, str], source: str, params: dict) -> int:
    """INSERT INTO the model's table every concrete field: `expressions` (SQL over `source`)
    for those named, the field's default as a parameter for the others."""
    from django.db import connection

    columns, values = [], []
    for f in model._meta.concrete_fields:
        if f.primary_key or getattr(f, "generated", False):
            continue
        columns.append(connection.ops.quote_name(f.column))
        if f.name in expressions:
            values.append(expressions[f.name])
        else:
            key = f"default_{f.column}"
            params[key] = f.get_db_prep_save(f.get_default(), connection)
            values.append(f"%({key})s")
    statement = (
        f"INSERT INTO {model._meta.db_table} ({', '.join(columns)})"
        f" SELECT {', '.join(values)} FROM {source}"
    )
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        return cursor.rowcount


def build(issues: int) -> None:
    load.ensure_database()
    load.django_setup()
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.db import connection, transaction

    from annotator.models import Membership, Project, Role
    from ingest.models import Issue, Repository
    from labeling.models import ProjectIssue
    from taxonomy.loader import load_study_taxonomy

    started = time.monotonic()
    call_command("migrate", verbosity=0)
    with transaction.atomic():
        Project.objects.filter(name=load.PROJECT).delete()
        Repository.objects.filter(owner="bench").delete()
        User.objects.filter(username__startswith="bench-").delete()
        version = load_study_taxonomy(only_if_missing=True)
        project = Project.objects.create(
            name=load.PROJECT, taxonomy_version=version, annotations_per_issue=load.K
        )
        repos = [
            Repository.objects.create(
                forge="github", api_url="https://api.github.com", owner="bench", name=f"repo{r}"
            )
            for r in range(4)
        ]
        first_repo = repos[0].pk  # created in a row: consecutive ids
        assert [r.pk for r in repos] == list(range(first_repo, first_repo + 4))
        n = _insert_select(
            Issue,
            {
                "repository": "%(repo)s + g %% 4",
                "number": "g::text",
                "url": "'https://github.com/bench/repo' || (g %% 4) || '/issues/' || g",
                "title": "'Bench issue ' || g",
                "body": "%(body)s",
                "state": "'open'",
            },
            "generate_series(0, %(last)s) g",
            {"repo": first_repo, "body": BODY, "last": issues - 1},
        )
        # The queue: every issue, in a seeded shuffle (as `order_queue` makes it), each with
        # a random public id where the schema has one (ProjectIssue.public_id).
        with connection.cursor() as cursor:
            cursor.execute("SELECT setseed(0.5)")
        expressions = {
            "project": "%(project)s",
            "issue": "i.id",
            "position": "row_number() OVER (ORDER BY random()) - 1",
            "status": "'open'",
            "added_at": "now()",
        }
        if any(f.name == "public_id" for f in ProjectIssue._meta.concrete_fields):
            expressions["public_id"] = "4294967296 + floor(random() * 9002499812802560)::bigint"
        _insert_select(
            ProjectIssue,
            expressions,
            f"{Issue._meta.db_table} i WHERE i.repository_id BETWEEN %(repo)s AND %(repo)s + 3",
            {"project": project.pk, "repo": first_repo},
        )
        users = User.objects.bulk_create(
            [User(username=f"bench-{u}", password="!") for u in range(load.ANNOTATORS)]
            + [User(username="bench-reader", password="!")]
        )
        Membership.objects.bulk_create(
            [Membership(project=project, user=u, role=Role.ANNOTATOR) for u in users]
        )
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")
    took = time.monotonic() - started
    print(f"project {project.pk}: {n} issues, K={load.K}, {len(users)} users ({took:.0f} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--issues", type=int, default=387_000)
    build(parser.parse_args().issues)


if __name__ == "__main__":
    main()
