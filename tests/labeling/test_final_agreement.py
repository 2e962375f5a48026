"""Scenario: Ada and Otto label six issues (K = 2); Lena (lead) settles their disagreements.
The lead's dashboard and each annotator's My progress page then show the same agreement with
the final labels, worked out by hand from the table below (`labeling.final_agreement`):

    issue  Ada     Otto    final                         Ada type/theme/label  Otto
    i0     C.3.i   C.3.i   C.3.i (unanimous)             yes yes yes           yes yes yes
    i1     C.3.i   C.3.ii  C.3.ii (Lena chose Otto's)    yes yes no            yes yes yes
    i2     C.2     C.1     C.2 (Lena chose Ada's)        yes yes yes           yes no  no
    i3     FP      A.1     FP (Lena chose Ada's)         yes yes yes           no  no  no
    i4     B.1     B.1     B.1, reopened by Lena         not final: not compared
    i5     C.1     -       open                          not compared

    Ada: 4 compared, type 4, theme 4, label 3 (100 %, 100 %, 75 %)
    Otto: 4 compared, type 3, theme 2, label 2 (75 %, 50 %, 50 %)
"""

from __future__ import annotations

import pytest
from django.urls import reverse

from labeling import dashboard, resolution, submission
from labeling.final_agreement import FinalAgreement, agreement_of, agreement_with_finals
from labeling.models import Annotation, ProjectIssue, Resolution
from tests.labeling.conftest import label_item, node


@pytest.fixture
def settled(project, items, annotator, other_annotator, lead):
    ada, otto = annotator, other_annotator
    project.annotations_per_issue = 2
    project.save()
    labels = [
        ("C.3.i", "C.3.i"),
        ("C.3.i", "C.3.ii"),
        ("C.2", "C.1"),
        ("FP", "A.1"),
        ("B.1", "B.1"),
    ]
    for item, (ada_code, otto_code) in zip(items, labels, strict=False):
        label_item(ada, project, item, ada_code)
        label_item(otto, project, item, otto_code)
    label_item(ada, project, items[5], "C.1")

    def choose(item, user) -> None:
        chosen = Annotation.objects.get(
            project=project, issue=item.issue, annotator=user, is_current=True
        )
        resolution.resolve(item, lead, chosen, Resolution.Method.LEAD_DECISION)

    choose(items[1], otto)
    choose(items[2], ada)
    choose(items[3], ada)
    resolution.reopen(ProjectIssue.objects.get(pk=items[4].pk), lead, "look again")
    statuses = list(
        ProjectIssue.objects.filter(project=project)
        .order_by("position")
        .values_list("status", flat=True)
    )
    assert statuses == ["final"] * 4 + ["disagreement", "open"]
    return ada, otto


def test_agreement_with_the_final_labels_at_type_theme_and_label_level(settled, project):
    ada, otto = settled
    assert agreement_of(project, ada.pk) == FinalAgreement(4, 4, 4, 3)
    assert agreement_of(project, otto.pk) == FinalAgreement(4, 3, 2, 2)
    assert agreement_of(project, ada.pk).shares() == {"type": 100, "theme": 100, "label": 75}
    assert agreement_of(project, otto.pk).shares() == {"type": 75, "theme": 50, "label": 50}
    # All annotators at once: the same figures.
    assert agreement_with_finals(project) == {
        ada.pk: FinalAgreement(4, 4, 4, 3),
        otto.pk: FinalAgreement(4, 3, 2, 2),
    }


def test_the_dashboard_and_my_progress_show_the_same_figures(client, settled, project, lead):
    ada, otto = settled
    rows = {row.user_id: row for row in dashboard.dashboard(project).annotators}
    for user, (type_share, theme_share) in ((ada, (100, 100)), (otto, (75, 50))):
        mine = submission.progress_of(user, project, with_agreement=True)
        shares = submission.agreement_shares(mine)
        row = rows[user.pk]
        assert (row.compared, row.type_share, row.theme_share) == (4, type_share, theme_share)
        assert (mine.compared, shares["type"], shares["theme"]) == (4, type_share, theme_share)

    # And on the pages each of them reads.
    client.force_login(lead)
    board = client.get(reverse("lead_dashboard", args=[project.pk])).content.decode()
    otto_row = board.split(f'data-user="{otto.username}"', 1)[1].split("</tr>", 1)[0]
    assert 'theme-share">50%<' in otto_row and 'type-share">75%<' in otto_row
    client.force_login(otto)
    page = client.get(reverse("my_progress", args=[project.pk])).content.decode()
    assert "your type matched 75%, your theme 50%, your full label 50%" in page


def test_a_theme_agrees_only_under_the_same_type(project, issues_in_project, annotator):
    """Two labels without a theme agree on the theme only when their types agree too (the
    dashboard's old rule; My progress used to count theme alone)."""
    items = list(ProjectIssue.objects.filter(project=project).order_by("position"))
    for item, (mine, final) in zip(items, [("A", "B"), ("A", "A")], strict=False):
        item.status = ProjectIssue.Status.FINAL
        item.save()
        Annotation.objects.create(
            project=project, issue=item.issue, annotator=annotator, issue_type=node(project, mine)
        )
        Resolution.objects.create(
            project=project,
            issue=item.issue,
            method=Resolution.Method.LEAD_DECISION,
            issue_type=node(project, final),
        )
    assert agreement_of(project, annotator.pk) == FinalAgreement(2, 1, 1, 1)


def test_before_any_final_label_there_is_nothing_to_compare(project, annotator):
    assert agreement_of(project, annotator.pk) == FinalAgreement(0, 0, 0, 0)
    assert agreement_of(project, annotator.pk).shares() == {
        "type": None,
        "theme": None,
        "label": None,
    }
