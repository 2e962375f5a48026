"""Comparing K annotations level by level, majority policy, the lead's resolution, reopening."""

import pytest

from annotator.models import Project
from labeling import resolution
from labeling.models import ProjectIssue, Resolution
from lib.refusal import Refusal
from tests.labeling.conftest import label_item

# The queue, a submission or resolution: the labeling path matters, so each test runs on both.
pytestmark = pytest.mark.both_paths


@pytest.fixture
def raters(annotator, other_annotator, third_annotator):
    return [annotator, other_annotator, third_annotator]


def label_all(project, item, raters, codes):
    for user, code in zip(raters, codes, strict=True):
        label_item(user, project, item, code)
    item.refresh_from_db()
    return item


def test_nothing_is_compared_before_k_annotations(project, items, raters):
    item = label_all(project, items[0], raters[:2], ["C.1", "C.2"])
    assert item.status == ProjectIssue.Status.OPEN
    assert not Resolution.objects.exists()


def test_full_agreement_finalizes_unanimously(project, items, raters):
    item = label_all(project, items[0], raters, ["C.3.i", "C.3.i", "C.3.i"])
    assert item.status == ProjectIssue.Status.FINAL
    final = resolution.current_resolution(item)
    assert (final.label_code, final.method, final.decided_by) == ("C.3.i", "unanimous", None)


@pytest.mark.parametrize(
    ("codes", "level"),
    [
        (["FP", "C.1", "C.1"], "false_positive"),
        (["A.1", "C.1", "C.1"], "type"),
        (["C.1", "C.2", "C.1"], "theme"),
        (["C.3.i", "C.3.ii", "C.3.i"], "sub_theme"),
        (["C.3.i", "C.3", "C.3"], "sub_theme"),
    ],
)
def test_disagreement_is_found_at_the_first_level_that_differs(
    project, items, raters, codes, level
):
    item = label_all(project, items[0], raters, codes)
    assert item.status == ProjectIssue.Status.DISAGREEMENT
    assert item.disagreement_level == level
    assert item.split == pytest.approx(1 / 3, abs=1e-3)


def test_majority_policy_finalizes_at_the_threshold(project, items, raters):
    project.resolution_policy = Project.Policy.MAJORITY
    project.majority_threshold = 0.6
    project.save()
    item = label_all(project, items[0], raters, ["C.1", "C.2", "C.1"])
    assert item.status == ProjectIssue.Status.FINAL
    final = resolution.current_resolution(item)
    assert (final.label_code, final.method) == ("C.1", "majority")


def test_majority_below_the_threshold_goes_to_the_lead(project, items, raters):
    project.resolution_policy = Project.Policy.MAJORITY
    project.majority_threshold = 0.7
    project.save()
    item = label_all(project, items[0], raters, ["C.1", "C.2", "C.1"])
    assert item.status == ProjectIssue.Status.DISAGREEMENT


def test_false_positive_exclusion_needs_all_k(project, items, raters):
    project.resolution_policy = Project.Policy.MAJORITY
    project.majority_threshold = 0.6
    project.save()
    item = label_all(project, items[0], raters, ["FP", "FP", "C.1"])
    assert item.status == ProjectIssue.Status.DISAGREEMENT
    item = label_all(project, items[1], raters, ["FP", "FP", "FP"])
    final = resolution.current_resolution(item)
    assert (final.is_false_positive, final.false_positive_reason) == (True, "keyword_in_names")


def test_a_revision_cannot_settle_a_disagreement(project, items, raters):
    # Labels lock at K: only the lead settles it (a revision that did was a way to probe).
    item = label_all(project, items[0], raters, ["C.1", "C.2", "C.1"])
    assert item.status == ProjectIssue.Status.DISAGREEMENT
    with pytest.raises(Refusal, match="locked"):
        label_item(raters[1], project, item, "C.1")
    item.refresh_from_db()
    assert item.status == ProjectIssue.Status.DISAGREEMENT


def test_lead_resolves_and_reopens_keeping_history(project, items, raters, lead):
    item = label_all(project, items[0], raters, ["C.1", "C.2", "A.1"])
    chosen = resolution.current_annotations(item)[1]
    resolution.add_message(item, lead, "C.2: the symptom is the server's, as Otto says.")
    final = resolution.resolve(item, lead, chosen, Resolution.Method.CONSENSUS, "talked it over")
    item.refresh_from_db()
    assert item.status == ProjectIssue.Status.FINAL
    assert (final.label_code, final.method, final.decided_by) == ("C.2", "consensus", lead)
    with pytest.raises(Refusal):
        resolution.resolve(item, lead, chosen, Resolution.Method.LEAD_DECISION)
    resolution.reopen(item, lead, "new evidence")
    item.refresh_from_db()
    assert item.status == ProjectIssue.Status.DISAGREEMENT
    assert item.disagreement_level == "type"
    old = Resolution.objects.get(pk=final.pk)
    assert (old.is_current, old.reopened_by) == (False, lead)
    resolution.resolve(item, lead, chosen, Resolution.Method.LEAD_DECISION)
    assert [r.method for r in resolution.resolution_history(item)] == [
        "lead_decision",
        "consensus",
    ]


def test_resolve_refuses_an_automatic_method(project, items, raters, lead):
    item = label_all(project, items[0], raters, ["C.1", "C.2", "A.1"])
    with pytest.raises(Refusal):
        resolution.resolve(item, lead, resolution.current_annotations(item)[0], "unanimous")


def test_reopen_needs_a_final_label(project, items, lead):
    with pytest.raises(Refusal):
        resolution.reopen(items[0], lead)


def test_queue_filters_and_sorts_by_split(project, items, raters, lead, repository):
    a = label_all(project, items[0], raters, ["C.1", "C.2", "A.1"])  # type, split 2/3
    b = label_all(project, items[1], raters, ["C.1", "C.2", "C.1"])  # theme, split 1/3
    label_all(project, items[2], raters, ["C.1", "C.1", "C.1"])  # final
    assert list(resolution.disagreement_queue(project)) == [a, b]
    assert list(resolution.disagreement_queue(project, level="theme")) == [b]
    type_a = resolution.current_annotations(a)[2].issue_type_id
    assert list(resolution.disagreement_queue(project, type_id=type_a)) == [a]
    assert list(resolution.disagreement_queue(project, repository_id=repository.pk + 99)) == []
    assert list(resolution.disagreement_queue(project, sort="position")) == [a, b]


def test_compare_counts_votes_per_level(project, items, raters):
    item = label_all(project, items[0], raters, ["C.3.i", "C.3.ii", "FP"])
    c = resolution.compare(resolution.current_annotations(item))
    assert c.votes["false_positive"] == {False: 2, True: 1}
    assert sum(c.votes["type"].values()) == 3
    assert c.first_disagreement == "false_positive"
    assert c.top == (None, 1)  # three-way tie: no winner


def test_discussion_messages(project, items, lead):
    with pytest.raises(Refusal):
        resolution.add_message(items[0], lead, "   ")
    resolution.add_message(items[0], lead, "Looks like a bug to me")
    assert items[0].discussion.get().author == lead
