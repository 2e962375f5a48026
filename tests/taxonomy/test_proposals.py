"""Volunteers propose new categories; only a unanimous vote adds one (the study's rule)."""

import pytest

from annotator.models import Membership, Role
from labeling.models import Proposal
from labeling.proposals import (
    ProposalError,
    proposals_from_annotations,
    propose,
    reject,
    tally,
    vote,
)
from taxonomy import edits
from tests.conftest import make_user
from tests.taxonomy.labels import annotate

pytestmark = pytest.mark.django_db


@pytest.fixture
def third_annotator(project):
    user = make_user("tia-annotator")
    Membership.objects.create(project=project, user=user, role=Role.ANNOTATOR)
    return user


def test_one_dissent_keeps_a_proposal_open(
    project, annotator, other_annotator, third_annotator, issues_in_project
):
    v1 = project.taxonomy_version
    proposal = propose(
        project,
        annotator,
        name="Parameter Interaction Guidance",
        parent_code="A.2",
        description="How parameter combinations change model behaviour.",
        issues=issues_in_project[:2],
    )
    assert proposal.level_label == "sub-theme"
    assert [u.username for u in tally(proposal)["approved"]] == [annotator.username]

    vote(proposal, other_annotator, approve=True)
    proposal = vote(proposal, third_annotator, approve=False, comment="covered by A.2.i")
    assert proposal.status == Proposal.Status.PENDING
    assert not tally(proposal)["unanimous"]
    project.refresh_from_db()
    assert project.taxonomy_version == v1
    assert not v1.taxonomy.versions.filter(number__gt=v1.number).exists()

    # The dissenter changes their mind: now everyone agrees, and the node exists.
    proposal = vote(proposal, third_annotator, approve=True)
    assert proposal.status == Proposal.Status.ACCEPTED
    project.refresh_from_db()
    v2 = project.taxonomy_version
    assert v2.parent == v1
    node = v2.nodes.get(name="Parameter Interaction Guidance")
    assert proposal.created_node == node
    assert (node.code, node.parent.code, node.level) == ("A.2.iii", "A.2", 3)


def test_a_lead_who_votes_counts_and_can_block(project, lead, annotator, other_annotator):
    proposal = propose(project, annotator, name="Thread Safety", parent_code="C.3")
    vote(proposal, lead, approve=False)
    proposal = vote(proposal, other_annotator, approve=True)
    assert proposal.status == Proposal.Status.PENDING
    assert [u.username for u in tally(proposal)["dissent"]] == [lead.username]
    proposal = vote(proposal, lead, approve=True)
    assert proposal.status == Proposal.Status.ACCEPTED


def test_a_lead_rejects_with_a_reason(project, lead, annotator, other_annotator):
    proposal = propose(project, annotator, name="Misc", parent_code="B")
    assert proposal.level_label == "theme"
    with pytest.raises(ProposalError, match="only a lead"):
        reject(proposal, other_annotator, "no")
    with pytest.raises(ProposalError, match="reason"):
        reject(proposal, lead, "  ")
    proposal = reject(proposal, lead, "Too vague to label with.")
    assert (proposal.status, proposal.rejection_reason) == ("rejected", "Too vague to label with.")
    with pytest.raises(ProposalError, match="already rejected"):
        vote(proposal, other_annotator, approve=True)


def test_bad_proposals_name_the_field(project, annotator, researcher):
    with pytest.raises(ProposalError, match=r"parent_code: no node 'Z\.9'"):
        propose(project, annotator, name="X", parent_code="Z.9")
    with pytest.raises(ProposalError, match=r"parent_code: A\.2\.i is a sub-theme"):
        propose(project, annotator, name="X", parent_code="A.2.i")
    with pytest.raises(ProposalError, match="name"):
        propose(project, annotator, name=" ", parent_code="A.2")
    proposal = propose(project, annotator, name="X", parent_code="A.2")
    with pytest.raises(ProposalError, match="only annotators and leads"):
        vote(proposal, researcher, approve=True)


def test_acceptance_follows_an_edit_made_meanwhile(project, lead, annotator, other_annotator):
    v1 = project.taxonomy_version
    proposal = propose(project, annotator, name="Loss Spikes", parent_code="A.3")
    edits.merge(project, lead, v1.nodes.get(code="A.3"), v1.nodes.get(code="A.2"))
    proposal = vote(proposal, other_annotator, approve=True)
    assert proposal.status == "accepted"
    assert proposal.created_node.parent.code == "A.2"
    assert proposal.created_node.version.parent.parent == v1


def test_proposals_from_the_labeling_box(project, annotator, other_annotator, issues_in_project):
    first, second = issues_in_project[:2]
    annotate(
        project,
        first,
        annotator,
        "C.4.ii",
        proposed_category="BF16 non-determinism: AllReduce results differ between runs",
    )
    annotate(project, second, other_annotator, "C.4.i", proposed_category="Loss scaling bugs")
    annotate(project, second, annotator, "C.4.i")
    created = proposals_from_annotations(project)
    assert [(p.name, p.parent.code, p.proposed_by) for p in created] == [
        ("BF16 non-determinism", "C.4", annotator),
        ("Loss scaling bugs", "C.4", other_annotator),
    ]
    assert created[0].description == "AllReduce results differ between runs"
    assert list(created[0].issues.all()) == [first]
    # Importing again creates nothing new.
    assert proposals_from_annotations(project) == []
