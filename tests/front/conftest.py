"""Fixtures of the pages that span apps."""

import pytest

from labeling.models import ProjectIssue


@pytest.fixture
def items(issues_in_project, project):
    """The project's queue, in order (as in tests/labeling)."""
    return list(ProjectIssue.objects.filter(project=project).order_by("position"))
