"""The demo project gives a newcomer issues to label and accounts for every role."""

import pytest
from django.core.management import call_command

from annotator.models import Membership, Project, Role
from ingest.models import Issue
from labeling.demo import DEMO_ACCOUNTS, DEMO_PROJECT


@pytest.mark.django_db
def test_load_demo_creates_project_accounts_and_is_idempotent(settings, tmp_path, capsys):
    settings.DATA_DIR = tmp_path
    call_command("load_demo")
    call_command("load_demo")
    project = Project.objects.get(name=DEMO_PROJECT)
    assert project.project_issues.count() >= 24
    assert project.taxonomy_version.nodes.filter(level=3).count() == 70
    roles = set(Membership.objects.filter(project=project).values_list("role", flat=True))
    assert roles == {Role.LEAD, Role.ANNOTATOR, Role.RESEARCHER}
    assert Membership.objects.filter(project=project).count() == len(DEMO_ACCOUNTS)
    # Issues from all three repositories, with discussions, in an interleaved order.
    repos = [pi.issue.repository.name for pi in project.project_issues.order_by("position")[:6]]
    assert len(set(repos)) >= 2
    assert (
        Issue.objects.filter(project_issues__project=project, comments__isnull=False)
        .distinct()
        .count()
        >= 15
    )
    out = capsys.readouterr().out
    assert f"password is in {tmp_path / 'admin-password.txt'}" in out
    assert (tmp_path / "admin-password.txt").stat().st_mode & 0o077 == 0


@pytest.mark.django_db
def test_demo_password_is_not_in_the_output(settings, tmp_path, capsys):
    settings.DATA_DIR = tmp_path
    call_command("load_demo")
    password = (tmp_path / "demo-password.txt").read_text().strip()
    assert password not in capsys.readouterr().out


@pytest.mark.django_db
def test_the_demo_comes_with_some_labeling_history(settings, tmp_path):
    """Two volunteers have labeled the first twelve issues of the queue, demo-annotator-1 the
    first eight of them: finals and disagreements for the lead, issues that demo-annotator-1's
    first label completes, and labels spread over the last days for the dashboard."""
    from django.contrib.auth.models import User

    from labeling import queue
    from labeling.demo import HISTORY_DISAGREEMENTS
    from labeling.models import Annotation, ProjectIssue

    settings.DATA_DIR = tmp_path
    call_command("load_demo", "--no-admin")
    project = Project.objects.get(name=DEMO_PROJECT)
    items = list(project.project_issues.order_by("position"))
    assert [pi.annotation_count for pi in items[:14]] == [3] * 8 + [2] * 4 + [0] * 2
    statuses = [pi.status for pi in items[:8]]
    assert statuses.count(ProjectIssue.Status.DISAGREEMENT) == len(HISTORY_DISAGREEMENTS)
    assert statuses.count(ProjectIssue.Status.FINAL) == 8 - len(HISTORY_DISAGREEMENTS)
    days = {a.created_at.date() for a in Annotation.objects.filter(project=project)}
    assert len(days) >= 5
    newcomer = User.objects.get(username="demo-annotator-1")
    assert queue.next_issue_id_for(newcomer, project) == items[8].pk
    # The lead's guideline is there for the newcomer to read above the issue.
    assert "Not LLM-related" in project.guideline


@pytest.mark.django_db
def test_the_demo_without_history_has_no_labels(settings, tmp_path):
    from labeling.models import Annotation

    settings.DATA_DIR = tmp_path
    call_command("load_demo", "--no-admin", "--no-history")
    assert not Annotation.objects.exists()
