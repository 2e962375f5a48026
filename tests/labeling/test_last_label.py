"""Scenario: when each issue was last labeled, stored on its queue row for the issue list.

`ProjectIssue.last_label_at` is the newest current label's time (issue #30 item 5: the list
sorts a project of 387,420 issues by it). Ada's first label goes through the one-call path,
Otto's through the Python path, Ada's revision through the Python path too: each moves the
time to the label just stored. The study's import dates the issues it labels, new ones and
ones already in the queue. The migration that added the column fills it from the current
labels of a database labeled before it. Lena the lead's list, sorted by last label, follows.
(`tests/labeling/test_paths_equal.py` holds both paths to the same rows in every state.)
"""

from __future__ import annotations

import importlib
import io
from datetime import UTC, datetime, timedelta

import pytest
from django.apps import apps
from django.core.management import CommandError, call_command
from django.db import connection
from django.db.models import Max

from annotator.models import Project
from dataset.importer import import_labels
from ingest.models import Issue, Repository
from labeling import issue_list, submission
from labeling.models import Annotation, ProjectIssue
from tests.conftest import make_issue
from tests.dataset.helpers import GH, HEADER3, write_csv
from tests.labeling.conftest import label_data, label_item

pytestmark = [pytest.mark.django_db, pytest.mark.one_path]


def newest_label(item: ProjectIssue) -> datetime | None:
    """The newest current label's time, read from the labels themselves."""
    return Annotation.objects.filter(
        project_id=item.project_id, issue_id=item.issue_id, is_current=True
    ).aggregate(newest=Max("created_at"))["newest"]


def last_label_at(item: ProjectIssue) -> datetime | None:
    return ProjectIssue.objects.values_list("last_label_at", flat=True).get(pk=item.pk)


def by_last_label(project: Project, descending: bool = True) -> list[int]:
    filters = issue_list.IssueFilters(sort="last_label", descending=descending)
    return [row.item.pk for row in issue_list.issue_page(project, filters).object_list]


def test_every_label_moves_the_time_on_whichever_path_stores_it(
    project, repository, annotator, other_annotator, settings, monkeypatch
):
    project.annotations_per_issue = 3
    project.save()
    first = ProjectIssue.objects.create(project=project, issue=make_issue(repository, 1))
    second = ProjectIssue.objects.create(
        project=project, issue=make_issue(repository, 2), position=1
    )
    assert last_label_at(first) is None and last_label_at(second) is None
    one_call: list[int] = []
    real_submit_first = submission._submit_first

    def watched(*args, **kwargs):
        stored = real_submit_first(*args, **kwargs)
        if stored is not None:
            one_call.append(stored.pk)
        return stored

    monkeypatch.setattr(submission, "_submit_first", watched)

    settings.DB_FUNCTIONS = True
    ada = label_item(annotator, project, first, "C.1")
    assert one_call == [ada.pk]  # the PL/pgSQL function stored it
    assert last_label_at(first) == ada.created_at
    assert by_last_label(project) == [first.pk, second.pk]  # the unlabeled one last

    settings.DB_FUNCTIONS = False
    otto = label_item(other_annotator, project, second, "C.2")
    assert one_call == [ada.pk]  # the Python path stored Otto's
    assert last_label_at(second) == otto.created_at > ada.created_at
    assert by_last_label(project) == [second.pk, first.pk]
    assert by_last_label(project, descending=False) == [first.pk, second.pk]

    # Ada changes her mind: a revision (the Python path on either setting) is the newest label.
    settings.DB_FUNCTIONS = True
    revised = submission.submit(
        annotator, project, first, submission.parse_label(project, label_data(project, "C.3"))
    )
    assert revised.revision == 2 and ada.pk != revised.pk
    assert last_label_at(first) == revised.created_at == newest_label(first)
    assert by_last_label(project) == [first.pk, second.pk]
    # The same label sent again stores nothing and moves nothing.
    again = submission.submit(
        annotator, project, first, submission.parse_label(project, label_data(project, "C.3"))
    )
    assert again.pk == revised.pk and last_label_at(first) == revised.created_at


def test_the_import_dates_the_issues_it_labels(taxonomy_version, tmp_path):
    """A published file's labels all come at the import's time: new queue rows get it with
    their count, and an issue already in the queue that the file labels gets it too."""
    import_labels("Study", [write_csv(tmp_path / "a.csv", [HEADER3, [f"{GH}1", *["C.1"] * 4]])])
    project = Project.objects.get(name="Study")
    one = ProjectIssue.objects.get(project=project, issue__number="1")
    first_import = newest_label(one)
    assert first_import is not None and last_label_at(one) == first_import
    # Issue 3 joined the queue unlabeled (a scope, before the published file came).
    megatron = Repository.objects.get(name="Megatron-LM")
    three = ProjectIssue.objects.create(
        project=project,
        issue=Issue.objects.create(repository=megatron, number="3", url=f"{GH}3"),
        position=5,
    )
    assert last_label_at(three) is None
    header4 = ["Issue_URL", "Label1", "Label2", "Label3", "Label4", "Final_Label"]
    rows = [header4, [f"{GH}1", *["C.1"] * 5], [f"{GH}2", *["B.1"] * 5], [f"{GH}3", *["C.2"] * 5]]
    import_labels("Study", [write_csv(tmp_path / "b.csv", rows)])
    two = ProjectIssue.objects.get(project=project, issue__number="2")
    second_import = newest_label(two)
    assert second_import is not None and second_import > first_import
    # Issue 1 got rater-4's label, issue 3 its four: the second import's time, as issue 2's.
    assert [last_label_at(item) for item in (one, two, three)] == [second_import] * 3
    assert newest_label(one) == newest_label(three) == second_import
    # One time for all three: by row id (issue 3's row came before the second import's).
    assert by_last_label(project, descending=False) == [one.pk, three.pk, two.pk]


def test_the_migration_fills_the_time_from_the_current_labels(
    project, repository, annotator, other_annotator, taxonomy_version
):
    """A database labeled before the column existed: the migration's fill finds each item's
    newest current label (a revised one's replacement, never the replaced one), none for an
    issue nobody labeled, and another project's labels of the same issue stay theirs."""
    items = [
        ProjectIssue.objects.create(project=project, issue=make_issue(repository, n), position=n)
        for n in (1, 2, 3)
    ]
    elsewhere = Project.objects.create(name="Another study", taxonomy_version=taxonomy_version)
    shared = ProjectIssue.objects.create(project=elsewhere, issue=items[0].issue)
    t0 = datetime(2024, 3, 1, 12, tzinfo=UTC)

    def labeled(item, user, minutes: int, revision: int = 1, current: bool = True) -> None:
        Annotation.objects.create(
            project_id=item.project_id,
            issue_id=item.issue_id,
            annotator=user,
            revision=revision,
            is_current=current,
            created_at=t0 + timedelta(minutes=minutes),
            **submission.parse_label(project, label_data(project, "C.1")).fields(),
        )

    labeled(items[0], annotator, 10)
    labeled(items[0], other_annotator, 30)
    # Ada's first label of issue 2, then her revision: only the revision is current.
    labeled(items[1], annotator, 20, revision=1, current=False)
    labeled(items[1], annotator, 40, revision=2)
    # (Dates set by hand: a replaced label newer than its replacement, which no path writes,
    # tells whether the fill reads current labels only.)
    labeled(items[2], other_annotator, 50, revision=1, current=False)
    labeled(items[2], other_annotator, 5, revision=2)
    labeled(shared, annotator, 90)
    unlabeled = ProjectIssue.objects.create(project=project, issue=make_issue(repository, 4))
    ProjectIssue.objects.update(last_label_at=None)  # as the column was added
    migration = importlib.import_module("labeling.migrations.0007_projectissue_last_label_at")
    with connection.schema_editor() as editor:
        migration.fill(apps, editor)
    assert [last_label_at(item) for item in [*items, shared, unlabeled]] == [
        t0 + timedelta(minutes=30),
        t0 + timedelta(minutes=40),
        t0 + timedelta(minutes=5),
        t0 + timedelta(minutes=90),
        None,
    ]
    assert by_last_label(project) == [items[1].pk, items[0].pk, items[2].pk, unlabeled.pk]


def test_after_an_upgrade_the_command_dates_what_the_previous_release_stored(
    project, repository, annotator, other_annotator
):
    """During the upgrade a host of the previous release stores Otto's label without the time
    (its code does not know the column); once every host runs the new code, Olga runs
    `date_last_labels --since` the migration's time and the list is right again. Issues
    labeled before stay as they were; a bad time is refused naming --since."""
    before, during = datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 11, 28, 2, tzinfo=UTC)
    items = [
        ProjectIssue.objects.create(project=project, issue=make_issue(repository, n), position=n)
        for n in (1, 2)
    ]
    label = submission.parse_label(project, label_data(project, "C.1")).fields()
    Annotation.objects.create(
        project=project, issue=items[0].issue, annotator=annotator, created_at=before, **label
    )
    Annotation.objects.create(
        project=project, issue=items[1].issue, annotator=annotator, created_at=before, **label
    )
    ProjectIssue.objects.update(last_label_at=before)  # as the migration filled it
    # The previous release's host: Otto's label of issue 2, and only the count moves.
    Annotation.objects.create(
        project=project, issue=items[1].issue, annotator=other_annotator, created_at=during,
        **label,
    )  # fmt: skip
    ProjectIssue.objects.filter(pk=items[1].pk).update(annotation_count=2)
    assert last_label_at(items[1]) == before  # behind: Otto's label came later
    # Issue 1's time, set wrong by hand, tells whether --since leaves older labels alone.
    ProjectIssue.objects.filter(pk=items[0].pk).update(last_label_at=None)
    with pytest.raises(CommandError, match="--since: not a date and time: '2026-13-45T00:00'"):
        call_command("date_last_labels", "--since", "2026-13-45T00:00")
    out = io.StringIO()
    call_command("date_last_labels", "--since", "2026-11-28T01:00:00Z", stdout=out)
    assert out.getvalue() == "Dated the last label of 1 issues.\n"
    assert [last_label_at(item) for item in items] == [None, during]
    call_command("date_last_labels", stdout=out)  # every labeled issue
    assert [last_label_at(item) for item in items] == [before, during]
    assert by_last_label(project, descending=False) == [items[0].pk, items[1].pk]


def test_the_command_dates_every_issue_however_many_statements_it_takes(
    project, repository, annotator, monkeypatch
):
    """`refresh_last_label` sets the times a chunk of items per statement: three issues in
    chunks of two (two statements) are all dated, each from its own label."""
    monkeypatch.setattr(submission, "_REFRESH_CHUNK", 2)
    label = submission.parse_label(project, label_data(project, "C.1")).fields()
    items, times = [], []
    for n in (1, 2, 3):
        item = ProjectIssue.objects.create(
            project=project, issue=make_issue(repository, n), position=n
        )
        at = datetime(2026, 11, n, tzinfo=UTC)
        Annotation.objects.create(
            project=project, issue=item.issue, annotator=annotator, created_at=at, **label
        )
        items.append(item)
        times.append(at)
    ProjectIssue.objects.update(last_label_at=None)
    call_command("date_last_labels", stdout=io.StringIO())
    assert [last_label_at(item) for item in items] == times
