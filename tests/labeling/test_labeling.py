"""Submitting labels: validation, revisions, the K-slot rule, progress."""

import pytest

from labeling import queue, submission
from labeling.models import Annotation, ProjectIssue, Reservation
from lib.refusal import Refusal
from tests.labeling.conftest import label_data, label_item, take_and_label

# The queue, a submission or resolution: the labeling path matters, so each test runs on both.
pytestmark = pytest.mark.both_paths


def test_a_label_is_stored_with_summary_note_and_proposal(project, items, annotator):
    a = take_and_label(
        annotator,
        project,
        "C.3.i",
        summary="NCCL timeout at init",
        note="maybe env",
        proposed_category="Checkpoint sharding",
    )
    assert a.label_code == "C.3.i"
    assert (a.revision, a.is_current, a.is_pilot) == (1, True, False)
    assert a.proposed_category == "Checkpoint sharding"
    assert not Reservation.objects.filter(annotator=annotator).exists()
    assert ProjectIssue.objects.get(issue=a.issue).annotation_count == 1


def test_changing_a_label_writes_a_new_revision(project, items, annotator):
    first = label_item(annotator, project, items[0], "C.3")
    second = label_item(annotator, project, items[0], "C.4", summary="actually memory")
    first.refresh_from_db()
    assert (first.is_current, second.is_current, second.revision) == (False, True, 2)
    assert Annotation.objects.filter(issue=items[0].issue).count() == 2
    assert ProjectIssue.objects.get(pk=items[0].pk).annotation_count == 1
    # Saving the same label again writes nothing.
    again = label_item(annotator, project, items[0], "C.4", summary="actually memory")
    assert again.pk == second.pk


def test_pilot_annotations_are_marked(project, items, annotator):
    items[0].is_pilot = True
    items[0].save()
    assert take_and_label(annotator, project, "A.2").is_pilot


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({}, "issue_type"),
        ({"is_false_positive": "1"}, "false_positive_reason"),
        ({"is_false_positive": "1", "false_positive_reason": "bored"}, "false_positive_reason"),
        ({"issue_type": "x"}, "issue_type"),
        ({"issue_type": "999999"}, "issue_type"),
        ({"issue_type": "A"}, "theme"),
        ({"issue_type": "A", "theme": "C.1"}, "theme"),
        ({"issue_type": "C", "theme": "C.1", "sub_theme": "C.2.i"}, "sub_theme"),
        ({"issue_type": "C", "theme": "C.1", "summary": "x" * 5001}, "summary"),
    ],
)
def test_bad_labels_name_the_field(project, data, field):
    from tests.labeling.conftest import node

    resolved = {
        k: (str(node(project, v).pk) if k in {"issue_type", "theme", "sub_theme"} and v[0] in "ABC"
            else v)
        for k, v in data.items()
    }  # fmt: skip
    with pytest.raises(Refusal) as exc:
        submission.parse_label(project, resolved)
    assert exc.value.field == field


def test_a_node_of_another_taxonomy_version_is_refused(project, taxonomy_version):
    from taxonomy.loader import load_study_taxonomy

    other = load_study_taxonomy()
    assert other.pk != taxonomy_version.pk
    theme = other.nodes.get(code="C.1")
    with pytest.raises(Refusal) as exc:
        submission.parse_label(project, {"issue_type": theme.parent_id, "theme": theme.pk})
    assert exc.value.field == "issue_type"


def test_a_false_positive_ignores_the_levels(project):
    data = label_data(project, "C.1") | label_data(project, "FP")
    label = submission.parse_label(project, data)
    assert label.is_false_positive and label.issue_type_id is None


def test_an_issue_never_handed_out_cannot_be_labeled(project, items, annotator):
    label = submission.parse_label(project, label_data(project, "C.1"))
    with pytest.raises(submission.NotYours):
        submission.submit(annotator, project, items[3], label)


def test_a_skipped_issue_cannot_be_labeled(project, items, annotator):
    item = queue.next_issue_for(annotator, project)
    queue.skip(annotator, item)
    with pytest.raises(submission.NotYours):
        submission.submit(
            annotator, project, item, submission.parse_label(project, label_data(project, "C.1"))
        )


def test_an_expired_reservation_whose_slot_was_taken_is_refused(
    project, items, annotator, other_annotator
):
    from datetime import timedelta

    from django.utils import timezone

    project.annotations_per_issue = 1
    project.save()
    item = queue.next_issue_for(annotator, project)
    Reservation.objects.filter(annotator=annotator).update(
        expires_at=timezone.now() - timedelta(minutes=1)
    )
    assert queue.next_issue_for(other_annotator, project) == item
    label = submission.parse_label(project, label_data(project, "C.1"))
    with pytest.raises(Refusal) as exc:
        submission.submit(annotator, project, item, label)
    # Blind: the message speaks of the reservation, not of anyone else's work.
    assert "expired" in exc.value.message
    submission.submit(other_annotator, project, item, label)
    assert ProjectIssue.objects.get(pk=item.pk).status == ProjectIssue.Status.FINAL


def test_an_expired_reservation_with_a_free_slot_still_counts(project, items, annotator):
    from datetime import timedelta

    from django.utils import timezone

    item = queue.next_issue_for(annotator, project)
    Reservation.objects.filter(annotator=annotator).update(
        expires_at=timezone.now() - timedelta(minutes=1)
    )
    label = submission.parse_label(project, label_data(project, "C.1"))
    assert submission.submit(annotator, project, item, label).revision == 1


def test_a_final_issue_cannot_be_relabeled(
    project, items, annotator, other_annotator, third_annotator
):
    for user in (annotator, other_annotator, third_annotator):
        label_item(user, project, items[0], "C.3")
    with pytest.raises(Refusal):
        label_item(annotator, project, items[0], "C.4")


def test_progress_counts_mine_what_is_left_and_agreement_with_final(
    project, items, annotator, other_annotator, third_annotator
):
    label_item(annotator, project, items[0], "C.3.i")
    label_item(other_annotator, project, items[0], "C.3.i")
    label_item(third_annotator, project, items[0], "C.3.i")
    label_item(annotator, project, items[1], "C.2")
    p = submission.progress_of(annotator, project, with_agreement=True)
    assert (p.labeled, p.left, p.total, p.project_done) == (2, 4, 6, 1)
    assert (p.compared, p.matched_label) == (1, 1)
    assert submission.agreement_shares(p) == {"type": 100, "theme": 100, "label": 100}
    assert p.project_percent == 17
