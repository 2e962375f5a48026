"""Helpers for the labeling tests: labels by taxonomy code, and handing issues out.

Every test here runs twice, once on each labeling path (`both_paths`): with the PL/pgSQL
functions (`DB_FUNCTIONS` on, the queue's reservation and a first label in one call each) and
on the Python path alone (`DB_FUNCTIONS` off, what SQLite and a database without the
functions run). A test that chooses its path itself (a `functions` parameter, or the
`one_path` marker) and the browser tests run once.
"""

from __future__ import annotations

import pytest
from django.db import connections

from annotator.models import Project
from labeling import queue, submission
from labeling.models import Annotation, ProjectIssue
from taxonomy.models import TaxonomyNode


def node(project: Project, code: str) -> TaxonomyNode:
    return TaxonomyNode.objects.get(version_id=project.taxonomy_version_id, code=code)


def label_data(project: Project, code: str, **extra) -> dict:
    """Form data for a label given by its most specific code ("C.3", "C.3.i") or "FP"."""
    if code == "FP":
        return {"is_false_positive": "1", "false_positive_reason": "keyword_in_names", **extra}
    parts = code.split(".")
    data = {"issue_type": str(node(project, parts[0]).pk)}
    data["theme"] = str(node(project, ".".join(parts[:2])).pk)
    if len(parts) > 2:
        data["sub_theme"] = str(node(project, code).pk)
    data.update(extra)
    return data


def take_and_label(user, project: Project, code: str, **extra) -> Annotation:
    """The user asks for the next issue and labels it with the code."""
    item = queue.next_issue_for(user, project)
    assert item is not None, f"{user} got no issue"
    return submission.submit(
        user, project, item, submission.parse_label(project, label_data(project, code, **extra))
    )


def label_item(user, project: Project, item: ProjectIssue, code: str, **extra) -> Annotation:
    """The user labels this particular issue (reserving it first, as the queue would)."""
    from datetime import timedelta

    from django.utils import timezone

    from labeling.models import Reservation

    Reservation.objects.get_or_create(
        project_issue=item,
        annotator=user,
        defaults={"expires_at": timezone.now() + timedelta(minutes=30)},
    )
    return submission.submit(
        user, project, item, submission.parse_label(project, label_data(project, code, **extra))
    )


PATHS = {"pg-functions": True, "python-only": False}


def pytest_configure(config) -> None:
    config.addinivalue_line(
        "markers",
        "one_path: the test sets DB_FUNCTIONS itself (or needs one path only): the labeling "
        "suite's both-paths fixture does not run it twice",
    )


def _one_path(metafunc) -> bool:
    definition = metafunc.definition
    uses_database = (
        "db" in metafunc.fixturenames
        or "transactional_db" in metafunc.fixturenames
        or definition.get_closest_marker("django_db") is not None
    )
    return (
        not uses_database  # neither path can run without one
        or definition.get_closest_marker("one_path") is not None
        or definition.get_closest_marker("browser") is not None
        # Parametrized over the paths by the test itself: twice already.
        or "functions" in metafunc.fixturenames
    )


def pytest_generate_tests(metafunc) -> None:
    if "both_paths" in metafunc.fixturenames and not _one_path(metafunc):
        metafunc.parametrize(
            "both_paths", list(PATHS.values()), ids=list(PATHS), indirect=True, scope="function"
        )


@pytest.fixture(autouse=True)
def both_paths(request, settings) -> bool | None:
    """Runs the test on the path its parameter names (DB_FUNCTIONS on or off); a one-path
    test gets None and keeps the settings as they are."""
    functions = getattr(request, "param", None)
    if functions is not None:
        settings.DB_FUNCTIONS = functions
    return functions


@pytest.fixture(scope="package", autouse=True)
def _shared_taxonomy_id(django_db_setup, django_db_blocker):
    """The study taxonomy loaded once for this package's tests (loading takes ~2 s).

    Package-scoped and autouse, so it is committed before any test's transaction starts, and
    removed when the package's tests are done, so other apps' tests never see it.
    """
    from taxonomy.loader import load_study_taxonomy
    from taxonomy.models import TaxonomyVersion

    with django_db_blocker.unblock():
        version = load_study_taxonomy()
    yield version.pk
    with django_db_blocker.unblock():
        # A transactional test may have emptied the tables already.
        version = TaxonomyVersion.objects.filter(pk=version.pk).first()
        if version is not None:
            taxonomy = version.taxonomy
            version.delete()
            if not taxonomy.versions.exists():
                taxonomy.delete()
        # The test database is torn down next; an open connection would block that.
        connections.close_all()


@pytest.fixture
def taxonomy_version(request, _shared_taxonomy_id, db):
    from taxonomy.loader import load_study_taxonomy
    from taxonomy.models import TaxonomyVersion

    marker = request.node.get_closest_marker("django_db")
    if marker and marker.kwargs.get("transaction"):
        # Transactional tests empty the database afterwards: load a copy of their own.
        return load_study_taxonomy()
    return TaxonomyVersion.objects.get(pk=_shared_taxonomy_id)


@pytest.fixture
def third_annotator(project):
    from annotator.models import Membership, Role
    from tests.conftest import make_user

    user = make_user("tia-annotator")
    Membership.objects.create(project=project, user=user, role=Role.ANNOTATOR)
    return user


@pytest.fixture
def items(issues_in_project, project):
    return list(ProjectIssue.objects.filter(project=project).order_by("position"))


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    # Personas are created for every test; PBKDF2's deliberate slowness costs seconds here.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _empty_cache():
    # Progress counts are cached for a few seconds; project ids repeat across runs.
    from django.core.cache import cache

    cache.clear()
