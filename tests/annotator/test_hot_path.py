"""The labeling hot path's plumbing: hand-written SQL that must load what the ORM would,
the login backend built on it, and the Redis cache that reuses its client."""

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.db import connection

from annotator.auth import ModelBackend
from annotator.models import Project
from annotator.permissions import membership_or_404
from ingest.models import Issue
from labeling.models import Annotation
from lib import sql
from tests.conftest import make_issue


def _same_fields(a, b) -> None:
    for field in type(a)._meta.concrete_fields:
        assert getattr(a, field.attname) == getattr(b, field.attname), field.name


def test_a_row_becomes_the_instance_the_orm_would_load(project):
    project.scope = {"repositories": [3, 5], "note": "ünïcode"}
    project.save()
    row = sql.first(
        f"SELECT {sql.columns(Project, 'p')} FROM annotator_project p WHERE p.id = %(id)s",
        {"id": project.pk},
    )
    built, end = sql.model_from_row(Project, row)
    assert end == len(row)
    _same_fields(built, Project.objects.get(pk=project.pk))
    # JSON arrives as text from the driver; the field's converter makes it an object again.
    assert built.scope == {"repositories": [3, 5], "note": "ünïcode"}
    assert not built._state.adding


def test_a_deferred_column_loads_when_read(repository):
    issue = make_issue(repository, 7, raw={"id": 7, "title": "big payload"})
    row = sql.first(
        f"SELECT {sql.columns(Issue, 'i', defer=('raw',))} FROM ingest_issue i WHERE i.id = %(id)s",
        {"id": issue.pk},
    )
    built, _ = sql.model_from_row(Issue, row, defer=("raw",))
    assert "raw" in built.get_deferred_fields()
    assert built.title == "Issue 7"
    assert built.raw == {"id": 7, "title": "big payload"}  # one query, on first access


def test_insert_writes_the_row_save_would(project, annotator, repository):
    issue = make_issue(repository, 8)
    annotation = Annotation(
        project=project, issue=issue, annotator=annotator, summary="hangs at step 0"
    )
    sql.insert(annotation)
    assert annotation.pk is not None and not annotation._state.adding
    stored = Annotation.objects.get(pk=annotation.pk)
    _same_fields(annotation, stored)
    assert (stored.revision, stored.is_current) == (1, True)  # the model's defaults


def test_hot_statements_are_planned_once_per_connection(db):
    # Generic plans for prepared statements: only lib.sql prepares any.
    with connection.cursor() as cursor:
        cursor.execute("SHOW plan_cache_mode")
        assert cursor.fetchone()[0] == "force_generic_plan"
    if settings.DB_PREPARED_STATEMENTS:
        for _ in range(2):
            assert sql.first("SELECT %(n)s::int + 1", {"n": 41}) == (42,)
        # The server holds it as a prepared statement of this connection.
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_prepared_statements WHERE statement = 'SELECT $1::int + 1'"
            )
            assert cursor.fetchone()[0] == 1


def test_no_statement_is_jit_compiled_however_costly_its_plan_looks(db):
    """At ten times the study the generic plan of the queue's next-issue function was
    estimated above `jit_above_cost`, and every call spent ~20 ms compiling it. The app's
    connections run without JIT: even with the threshold at 0, a query is not compiled."""
    with connection.cursor() as cursor:
        try:
            cursor.execute("SET jit = on")
            cursor.execute("SELECT pg_jit_available()")  # (false while jit is off)
            if not cursor.fetchone()[0]:
                pytest.skip("this PostgreSQL has no JIT to turn off")
            cursor.execute("SET jit_above_cost = 0")
            explain = "EXPLAIN (ANALYZE, FORMAT JSON) SELECT sum(g) FROM generate_series(1, 10) g"
            cursor.execute(explain)
            assert "JIT" in cursor.fetchone()[0][0], "the probe: JIT on compiles the query"
            cursor.execute("RESET jit")  # to the connection's own setting
            cursor.execute(explain)
            assert "JIT" not in cursor.fetchone()[0][0]
            cursor.execute("SHOW jit")
            assert cursor.fetchone()[0] == "off"
        finally:
            cursor.execute("RESET jit_above_cost")
            cursor.execute("RESET jit")


def test_login_backend_loads_active_users_only(annotator):
    backend = ModelBackend()
    loaded = backend.get_user(annotator.pk)
    _same_fields(loaded, annotator)
    annotator.is_active = False
    annotator.save()
    assert backend.get_user(annotator.pk) is None
    assert backend.get_user(10**12) is None


def test_membership_lookup_for_member_outsider_and_odd_ids(project, annotator, outsider):
    from django.http import Http404

    membership = membership_or_404(annotator, project.pk)
    assert membership.project == project
    assert membership.project.taxonomy_version == project.taxonomy_version
    for user, project_id in [(outsider, project.pk), (annotator, 2**63), (annotator, "x")]:
        with pytest.raises(Http404):
            membership_or_404(user, project_id)


def test_superuser_is_admin_of_a_project_without_membership(project):
    admin = get_user_model().objects.create_superuser("ada-admin", password="x" * 12)
    assert membership_or_404(admin, project.pk).role == "admin"


@pytest.mark.skipif(not settings.REDIS_URL, reason="needs Redis")
def test_the_redis_cache_reuses_one_client():
    client = cache._cache.get_client()
    assert cache._cache.get_client() is client
    assert cache._cache.get_client(write=True) is client  # one server: one pool
    cache.set("hot-path-probe", {"n": 1}, 5)
    assert cache.get("hot-path-probe") == {"n": 1}
