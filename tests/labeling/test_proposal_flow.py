"""The "propose a new category" box: a proposal the others vote on, then offered when accepted."""

from labeling import queue
from labeling.models import Proposal
from labeling.proposals import vote
from tests.labeling.conftest import label_item, take_and_label


def test_a_proposal_from_the_labeling_box_is_offered_once_everyone_approves(
    client, project, items, annotator, other_annotator
):
    first = take_and_label(
        annotator, project, "C.6", proposed_category="Tokenizer and Vocabulary Mismatch"
    )
    proposal = Proposal.objects.get(source_annotation=first)
    assert proposal.status == Proposal.Status.PENDING
    assert proposal.name == "Tokenizer and Vocabulary Mismatch"
    old_version = project.taxonomy_version_id

    vote(proposal, other_annotator, approve=True)
    proposal.refresh_from_db()
    project.refresh_from_db()
    assert proposal.status == Proposal.Status.ACCEPTED
    assert project.taxonomy_version_id != old_version
    new_node = project.taxonomy_version.nodes.get(name="Tokenizer and Vocabulary Mismatch")
    assert new_node.parent.code == "C.6"

    # The next issue's labeling page offers the new sub-theme.
    item = queue.next_issue_for(other_annotator, project)
    client.force_login(other_annotator)
    page = client.get(f"/projects/{project.pk}/label/{item.public_id}/")
    assert page.status_code == 200
    assert b"Tokenizer and Vocabulary Mismatch" in page.content
    assert new_node.code.encode() in page.content


def test_a_revision_with_the_same_text_does_not_propose_twice(project, items, annotator):
    label_item(annotator, project, items[0], "C.6", proposed_category="Tokenizer Mismatch")
    label_item(
        annotator,
        project,
        items[0],
        "C.6",
        summary="changed",
        proposed_category="Tokenizer Mismatch",
    )
    assert Proposal.objects.count() == 1
    label_item(annotator, project, items[0], "C.6", proposed_category="Tokenizer Drift")
    assert Proposal.objects.count() == 2
