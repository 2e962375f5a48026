"""The one SQL module: ingest's batched statements and converters, the study import's COPY."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import IntegrityError, connection, transaction
from django.test.utils import CaptureQueriesContext

from ingest.models import Issue, Repository
from labeling.models import ProjectIssue
from lib import sql

pytestmark = pytest.mark.django_db


def test_a_batch_of_statements_is_one_round_trip_and_answers_the_last_select(repository):
    with CaptureQueriesContext(connection) as queries:
        found = sql.batch(
            ("UPDATE ingest_repository SET name = %s WHERE id = %s", ["renamed", repository.pk]),
            ("SELECT name, id FROM ingest_repository WHERE id = %s", [repository.pk]),
            ("SELECT 1 WHERE false", []),  # returns no row: the answer is its empty result
        )
    assert len(queries) == 1
    assert found == []
    assert sql.batch(("SELECT name FROM ingest_repository WHERE id = %s", [repository.pk])) == [
        ("renamed",)
    ]


def test_a_batch_that_fails_midway_writes_nothing_in_its_transaction(repository):
    with pytest.raises(IntegrityError), transaction.atomic():
        sql.batch(
            ("UPDATE ingest_repository SET name = %s WHERE id = %s", ["half", repository.pk]),
            ("INSERT INTO ingest_repository (id) VALUES (%s)", [repository.pk]),
        )
    repository.refresh_from_db()
    assert repository.name != "half"


def test_times_and_json_read_by_plain_sql_come_back_as_the_orm_gives_them():
    naive_text = "2024-05-01 12:30:00"  # as SQLite's ORM keeps a time
    assert sql.aware_time(naive_text) == datetime(2024, 5, 1, 12, 30, tzinfo=UTC)
    when = datetime(2024, 5, 1, 12, 30, tzinfo=UTC)
    assert sql.aware_time(when) is when
    assert sql.aware_time(None) is None
    assert sql.from_json('{"a": [1, 2]}') == {"a": [1, 2]}
    assert sql.from_json(b"[1]") == [1]
    assert sql.from_json({"already": "decoded"}) == {"already": "decoded"}
    row = sql.batch(("SELECT %s::timestamptz", [sql.db_time(when)]))[0]
    assert row[0] == when


def test_column_names_are_quoted_columns_of_the_fields():
    assert sql.column_names(Issue, ["repository", "number"]) == '"repository_id", "number"'


def test_copy_fills_columns_not_given_with_their_defaults(repository):
    rows = [(repository.pk, str(n), f"https://github.com/o/n/issues/{n}") for n in range(1, 4)]
    assert sql.copy_rows(Issue, ["repository_id", "number", "url"], iter(rows)) == 3
    stored = Issue.objects.filter(repository=repository).order_by("number")
    assert [i.number for i in stored] == ["1", "2", "3"]
    field = Issue._meta.get_field("filter_status")
    assert {i.filter_status for i in stored} == {field.get_default()}


def test_a_large_load_drops_and_restores_the_foreign_keys(repository):
    def foreign_keys() -> set[str]:
        found = sql.batch(
            (
                "SELECT pg_get_constraintdef(oid) FROM pg_constraint"
                " WHERE conrelid = 'ingest_issue'::regclass AND contype = 'f'",
                [],
            )
        )
        return {r[0] for r in found}

    before = foreign_keys()
    assert before
    with transaction.atomic():
        with sql.foreign_keys_validated_at_end(Issue, rows=5, from_rows=1):
            assert foreign_keys() == set()  # checked once at the end, not row by row
        assert foreign_keys() == before
    # A row pointing nowhere fails when the keys come back, not silently.
    missing = Repository.objects.order_by("-pk").first().pk + 1000
    with (
        pytest.raises(IntegrityError),
        transaction.atomic(),
        sql.foreign_keys_validated_at_end(Issue, rows=5, from_rows=1),
    ):
        sql.copy_rows(Issue, ["repository_id", "number", "url"], [(missing, "1", "u")])
    assert foreign_keys() == before


@pytest.mark.django_db
def test_copy_calls_a_unique_columns_default_for_every_row(project, repository):
    """ProjectIssue.public_id (random, unique in a project) is not given: each row draws its
    own, where one value for the whole COPY would break the constraint at the second row."""
    issues = [
        Issue.objects.create(repository=repository, number=str(n), url=f"u{n}") for n in range(5)
    ]
    rows = [(project.pk, issue.pk, n) for n, issue in enumerate(issues)]
    assert sql.copy_rows(ProjectIssue, ["project_id", "issue_id", "position"], rows) == 5
    ids = list(ProjectIssue.objects.filter(project=project).values_list("public_id", flat=True))
    assert len(ids) == 5 and len(set(ids)) == 5
