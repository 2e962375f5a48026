"""Helpers for the labeling tests: labels by taxonomy code, and handing issues out."""

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
