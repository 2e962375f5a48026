"""Who may do what on the taxonomy evolution pages: leads edit, annotators propose and vote,
outsiders get 404."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from labeling.details import detail_lists
from labeling.models import DetailEntry, Proposal
from labeling.proposals import propose
from taxonomy.models import TaxonomyVersion
from tests.taxonomy.labels import annotate

pytestmark = pytest.mark.django_db

READ_PAGES = ["taxonomy_proposals", "taxonomy_versions", "taxonomy_diff"]
LEAD_PAGES = ["taxonomy_edit", "taxonomy_details"]


def url(name, project, **kw):
    return reverse(name, kwargs={"project_id": project.pk, **kw})


def test_outsider_gets_404_everywhere(client, project, outsider, annotator):
    proposal = propose(project, annotator, name="X", parent_code="A.2")
    client.force_login(outsider)
    for name in READ_PAGES + LEAD_PAGES:
        assert client.get(url(name, project)).status_code == 404, name
    version = project.taxonomy_version_id
    assert client.get(url("taxonomy_export", project, version_id=version)).status_code == 404
    posts = [
        url("taxonomy_proposals", project),
        url("taxonomy_proposal_vote", project, proposal_id=proposal.pk),
        url("taxonomy_proposal_reject", project, proposal_id=proposal.pk),
        url("taxonomy_proposals_import", project),
        url("taxonomy_import", project),
    ]
    for post in posts:
        assert client.post(post, {"approve": "yes", "reason": "r"}).status_code == 404, post
    assert proposal.votes.count() == 1


def test_annotator_proposes_and_votes_but_cannot_edit(
    client, project, annotator, other_annotator, issues_in_project
):
    client.force_login(annotator)
    page = client.get(url("taxonomy_proposals", project))
    assert page.status_code == 200
    assert b"Import proposals from labels" not in page.content
    response = client.post(
        url("taxonomy_proposals", project),
        {
            "parent": "A.2",
            "name": "Parameter Interaction Guidance",
            "description": "",
            "issue_urls": issues_in_project[0].url,
        },
    )
    assert response.status_code == 302
    proposal = Proposal.objects.get()
    assert list(proposal.issues.all()) == [issues_in_project[0]]

    for name in LEAD_PAGES:
        assert client.get(url(name, project)).status_code == 404, name
    v1 = project.taxonomy_version
    edit = {"operation": "rename", "based_on": v1.pk, "node": "A.2", "name": "Renamed"}
    assert client.post(url("taxonomy_edit", project), edit).status_code == 404
    reject = url("taxonomy_proposal_reject", project, proposal_id=proposal.pk)
    assert client.post(reject, {"reason": "no"}).status_code == 404
    assert client.post(url("taxonomy_proposals_import", project)).status_code == 404

    client.force_login(other_annotator)
    vote = url("taxonomy_proposal_vote", project, proposal_id=proposal.pk)
    assert client.post(vote, {"approve": "yes"}).status_code == 302
    proposal.refresh_from_db()
    assert proposal.status == "accepted"
    project.refresh_from_db()
    assert project.taxonomy_version.nodes.filter(name="Parameter Interaction Guidance").exists()


def test_other_annotators_do_not_see_who_proposed_or_unfinished_issues(
    client, project, annotator, other_annotator, lead, issues_in_project
):
    propose(project, annotator, name="Hidden", parent_code="A.2", issues=issues_in_project[:1])
    client.force_login(other_annotator)
    content = client.get(url("taxonomy_proposals", project)).content.decode()
    assert "Proposed by a volunteer" in content
    assert issues_in_project[0].url not in content
    client.force_login(lead)
    content = client.get(url("taxonomy_proposals", project)).content.decode()
    assert f"Proposed by {annotator.username}" in content
    assert issues_in_project[0].url in content


def test_researcher_may_read_versions_but_not_proposals(client, project, researcher):
    client.force_login(researcher)
    assert client.get(url("taxonomy_versions", project)).status_code == 200
    assert client.get(url("taxonomy_proposals", project)).status_code == 404


def test_lead_edits_and_is_sent_to_the_diff(client, project, lead):
    client.force_login(lead)
    v1 = project.taxonomy_version
    form = {"operation": "merge", "based_on": v1.pk, "node": "A.3", "other": "A.2"}
    response = client.post(url("taxonomy_edit", project), form, follow=True)
    v2 = TaxonomyVersion.objects.get(parent=v1)
    assert response.redirect_chain[-1][0].endswith(f"?old={v1.pk}&new={v2.pk}")
    content = response.content.decode()
    assert "was merged into A.2 Usage Gaps in LLM Operations" in content
    # The same form again is stale: the project now uses v2.
    again = client.post(url("taxonomy_edit", project), form)
    assert "changed since this page was loaded" in again.content.decode()
    assert TaxonomyVersion.objects.filter(parent=v2).count() == 0


def test_lead_imports_proposals_from_labels(client, project, lead, annotator, issues_in_project):
    annotate(project, issues_in_project[0], annotator, "B.2.i", proposed_category="Model zoo")
    client.force_login(lead)
    client.post(url("taxonomy_proposals_import", project))
    assert list(Proposal.objects.values_list("name", "parent__code")) == [("Model zoo", "B.2")]


def test_export_and_import_pages(client, project, lead):
    client.force_login(lead)
    version = project.taxonomy_version
    exported = client.get(url("taxonomy_export", project, version_id=version.pk))
    assert exported["Content-Disposition"].endswith('taxonomy-v1.json"')
    bad = SimpleUploadedFile("t.json", b'{"format": "x"}', content_type="application/json")
    response = client.post(url("taxonomy_import", project), {"file": bad}, follow=True)
    assert "t.json: format: must be" in response.content.decode()
    good = SimpleUploadedFile("t.json", exported.content, content_type="application/json")
    response = client.post(url("taxonomy_import", project), {"file": good}, follow=True)
    assert "Imported" in response.content.decode()
    assert version.taxonomy.versions.count() == 2


def test_lead_reviews_details_on_the_page(
    client, project, lead, annotator, other_annotator, issues_in_project
):
    issue = issues_in_project[0]
    annotate(project, issue, annotator, "C.3.i", summary="NCCL timeout at init")
    annotate(project, issue, other_annotator, "C.3.i", summary="NCCL init timeout")
    client.force_login(lead)
    details = url("taxonomy_details", project)
    client.post(details, {"action": "sync"})
    page = client.get(details).content.decode()
    assert 'data-code="C.3.i"' in page and "NCCL init timeout" in page
    ids = list(DetailEntry.objects.order_by("pk").values_list("pk", flat=True))
    client.post(details, {"action": "merge", "entries": ids, "text": "NCCL timeout"})
    client.post(details, {"action": "move", "entry": ids[0], "node": "C.3.ii"})
    assert detail_lists(project) == {"C.3.ii": ["NCCL timeout"]}
    # Annotators may not see others' summaries.
    client.force_login(annotator)
    assert client.get(details).status_code == 404
