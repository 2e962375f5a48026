"""Helpers for the labeling tests: labels by taxonomy code, and handing issues out.

A test where the labeling path matters (the queue, a submission, resolution: modules marked
`both_paths`) runs twice, once on each path: with the PL/pgSQL functions (`DB_FUNCTIONS` on,
the queue's reservation and a first label in one call each) and on the Python path alone
(`DB_FUNCTIONS` off, what SQLite and a database without the functions run). Every other test
runs once, on the default path: `test_paths_equal.py` proves both paths agree on every state.
A test that chooses its path itself (a `functions` parameter, or the `one_path` marker) and
the browser tests run once even in a `both_paths` module.
"""

from __future__ import annotations

import pytest

from annotator.models import Project
from labeling import queue, submission
from labeling.models import Annotation, ProjectIssue
from tests.builders import label_data, label_item, node

__all__ = ["label_data", "label_item", "node", "take_and_label"]


def take_and_label(user, project: Project, code: str, **extra) -> Annotation:
    """The user asks for the next issue and labels it with the code."""
    item = queue.next_issue_for(user, project)
    assert item is not None, f"{user} got no issue"
    return submission.submit(
        user, project, item, submission.parse_label(project, label_data(project, code, **extra))
    )


PATHS = {"pg-functions": True, "python-only": False}


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
    if metafunc.definition.get_closest_marker("both_paths") is not None and not _one_path(metafunc):
        metafunc.parametrize(
            "both_paths", list(PATHS.values()), ids=list(PATHS), indirect=True, scope="function"
        )


@pytest.fixture(autouse=True)
def both_paths(request, settings) -> bool | None:
    """Runs a `both_paths` test on the path its parameter names (DB_FUNCTIONS on or off);
    any other test gets None and keeps the settings as they are."""
    functions = getattr(request, "param", None)
    if functions is not None:
        settings.DB_FUNCTIONS = functions
    return functions


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
def _empty_cache():
    # Progress counts are cached for a few seconds; project ids repeat across runs.
    from django.core.cache import cache

    cache.clear()
