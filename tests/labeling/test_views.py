"""The labeling pages as a volunteer and a lead use them, and who gets a 404."""

import pytest
from django.urls import reverse

from annotator.models import Membership, Role
from ingest.models import Repository
from ingest.permissions import attach
from labeling import resolution
from labeling.forms import LeadActionForm
from labeling.models import Annotation, DiscussionMessage, ProjectIssue, Resolution
from lib.refusal import Refusal
from tests.conftest import make_user
from tests.labeling.conftest import label_data, label_item


@pytest.fixture
def as_annotator(client, annotator):
    client.force_login(annotator)
    return client


def test_label_next_redirects_to_a_reserved_issue_and_saving_opens_the_next(
    as_annotator, project, items
):
    response = as_annotator.get(reverse("label_next", args=[project.pk]))
    assert response.status_code == 302
    page = as_annotator.get(response.url)
    assert page.status_code == 200
    body = page.content.decode()
    assert items[0].issue.title in body
    assert 'id="taxonomy-data"' in body
    assert "<script>" not in body.replace('<script id="taxonomy-data"', "")
    saved = as_annotator.post(response.url, label_data(project, "C.3.i", summary="hang"))
    assert saved.status_code == 302 and saved.url == reverse("label_next", args=[project.pk])
    assert Annotation.objects.get(annotator__username="ada-annotator").label_code == "C.3.i"
    nxt = as_annotator.get(saved.url)
    assert nxt.url.endswith(f"/label/{items[1].public_id}/")


def test_a_bad_label_shows_the_error_and_keeps_the_input(as_annotator, project, items):
    url = as_annotator.get(reverse("label_next", args=[project.pk])).url
    data = label_data(project, "C.3") | {"theme": label_data(project, "A.1")["theme"]}
    response = as_annotator.post(url, data | {"summary": "kept text"})
    assert response.status_code == 400
    body = response.content.decode()
    assert 'data-field="theme"' in body and "kept text" in body
    assert not Annotation.objects.exists()


def test_skip_hands_back_and_opens_another(as_annotator, project, items):
    url = as_annotator.get(reverse("label_next", args=[project.pk])).url
    response = as_annotator.post(reverse("skip_issue", args=[project.pk, items[0].public_id]))
    assert response.status_code == 302
    assert as_annotator.get(response.url).url != url
    assert as_annotator.get(url).status_code == 404


def test_nothing_left_page(as_annotator, project):
    response = as_annotator.get(reverse("label_next", args=[project.pk]))
    assert response.status_code == 200
    assert b"Nothing left" in response.content


def test_own_label_can_be_revised_from_my_progress(as_annotator, project, items, annotator):
    label_item(annotator, project, items[0], "C.1", summary="first")
    progress = as_annotator.get(reverse("my_progress", args=[project.pk]))
    edit_url = reverse("label_issue", args=[project.pk, items[0].public_id])
    assert edit_url in progress.content.decode()
    page = as_annotator.get(edit_url).content.decode()
    assert "revision 1" in page and "first" in page
    as_annotator.post(edit_url, label_data(project, "C.2", summary="second"))
    assert Annotation.objects.filter(annotator=annotator).count() == 2


def test_issue_text_is_rendered_through_the_sanitizer(as_annotator, project, items):
    issue = items[0].issue
    issue.body = "<script>window.pwned=1</script>\n\n```\ncode kept\n```"
    issue.save()
    issue.comments.create(forge_id="1", body='<img src=x onerror="window.pwned=1"> hello')
    url = as_annotator.get(reverse("label_next", args=[project.pk])).url
    response = as_annotator.get(url)
    body = response.content.decode()
    assert "window.pwned" not in body
    assert "<pre><code>code kept" in body and "hello" in body
    # Images may load on click from anywhere, on issue pages only; scripts stay 'self'.
    csp = response["Content-Security-Policy"]
    assert "img-src 'self' data: https: http:" in csp and "script-src 'self'" in csp


def test_researchers_and_outsiders_cannot_label(client, project, items, researcher, outsider):
    for user in (researcher, outsider):
        client.force_login(user)
        assert client.get(reverse("label_next", args=[project.pk])).status_code == 404


def test_setup_page_applies_scope_and_settings(client, lead, project, repository):
    from tests.conftest import make_issue

    for n in range(5):
        make_issue(repository, 500 + n)
    # The lead added the repository for this project (the repositories page's `attach`).
    attach(project, repository)
    client.force_login(lead)
    url = reverse("project_setup", args=[project.pk])
    assert client.get(url).status_code == 200
    client.post(url, {"action": "scope", "repositories": [repository.pk], "pilot_size": "2",
                      "seed": "9", "created_from": "", "created_to": ""})  # fmt: skip
    assert ProjectIssue.objects.filter(project=project, is_pilot=True).count() == 2
    client.post(url, {"action": "settings", "annotations_per_issue": "7",
                      "resolution_policy": "majority", "majority_threshold": "0.7"})  # fmt: skip
    project.refresh_from_db()
    assert (project.annotations_per_issue, project.majority_threshold) == (7, 0.7)
    response = client.post(url, {"action": "scope", "created_from": "tomorrow"}, follow=True)
    assert "created_from" in response.content.decode()


def test_a_lead_cannot_scope_in_a_repository_another_project_uses(client, lead, project):
    """A scope gives the right to sync a repository: it cannot be a way to take one over."""
    other = Repository.objects.create(
        forge=Repository.Forge.GITHUB, api_url="https://api.github.com", owner="o", name="r"
    )
    client.force_login(lead)
    url = reverse("project_setup", args=[project.pk])
    assert f'value="{other.pk}"' not in client.get(url).content.decode()
    response = client.post(
        url,
        {"action": "scope", "repositories": [other.pk], "pilot_size": "0", "seed": "0"},
        follow=True,
    )
    assert "repositories:" in response.content.decode()
    project.refresh_from_db()
    assert other.pk not in (project.scope or {}).get("repository_ids", [])


def test_the_setup_page_says_what_a_scope_did_and_why_one_was_refused(
    client, lead, project, repository
):
    from tests.conftest import make_issue

    make_issue(repository, 7)
    client.force_login(lead)
    url = reverse("project_setup", args=[project.pk])
    scope = {"action": "scope", "pilot_size": "0", "seed": "0"}
    # The lead may choose no repository yet: nothing to scope, and the page says so.
    response = client.post(url, scope, follow=True)
    assert "Not saved: repositories: you may manage none of them." in response.content.decode()
    assert not ProjectIssue.objects.filter(project=project).exists()
    attach(project, repository)
    response = client.post(url, scope)
    assert response.status_code == 302 and response.url == url
    text = client.get(url).content.decode()
    assert "Scope applied: 1 added, 0 removed, 1 in scope." in text


def test_no_repository_ticked_scopes_only_the_leads_own(client, lead, project, repository):
    """'None checked' on the setup page means the repositories the lead may choose, not every
    repository: else an empty tick would take over another project's repository."""
    from tests.conftest import make_issue

    other = Repository.objects.create(
        forge=Repository.Forge.GITHUB, api_url="https://api.github.com", owner="o", name="r"
    )
    make_issue(other, 1)
    make_issue(repository, 2)
    attach(project, repository)
    client.force_login(lead)
    url = reverse("project_setup", args=[project.pk])
    client.post(url, {"action": "scope", "pilot_size": "0", "seed": "0"})
    held = set(
        ProjectIssue.objects.filter(project=project).values_list("issue__repository", flat=True)
    )
    assert held == {repository.pk}
    project.refresh_from_db()
    assert project.scope["repository_ids"] == [repository.pk]


@pytest.fixture
def disputed(project, items, annotator, other_annotator, third_annotator):
    for user, code in [(annotator, "C.1"), (other_annotator, "C.2"), (third_annotator, "C.1")]:
        label_item(user, project, items[0], code, summary=f"{user.username} thinks {code}")
    return items[0]


def test_lead_queue_lists_and_filters_disagreements(client, lead, project, disputed):
    client.force_login(lead)
    url = reverse("disagreement_queue", args=[project.pk])
    assert str(disputed.issue.title) in client.get(url).content.decode()
    fragment = client.get(url, {"level": "type"}, HTTP_HX_REQUEST="true")
    assert b"<html" not in fragment.content and b"No disagreements match" in fragment.content
    assert disputed.issue.title in client.get(url, {"level": "theme"}).content.decode()


def test_lead_resolves_with_discussion_then_reopens(client, lead, project, disputed):
    client.force_login(lead)
    url = reverse("resolve_issue", args=[project.pk, disputed.pk])
    page = client.get(url).content.decode()
    for name in ("ada-annotator", "otto-annotator", "tia-annotator"):
        assert name in page
    assert "first disagreement: theme" in page
    client.post(url, {"action": "message", "body": "C.1 fits the symptom"})
    chosen = Annotation.objects.get(issue=disputed.issue, annotator__username="otto-annotator")
    client.post(url, {"action": "resolve", "source": str(chosen.pk), "method": "consensus"})
    final = Resolution.objects.get(is_current=True)
    assert (final.label_code, final.method, final.decided_by) == ("C.2", "consensus", lead)
    client.post(url, {"action": "reopen", "note": "oops"})
    data = {"action": "resolve", "source": "new", "method": "lead_decision"}
    client.post(url, data | label_data(project, "C.1.i"))
    assert [r.label_code for r in Resolution.objects.order_by("decided_at")] == ["C.2", "C.1.i"]
    page = client.get(url).content.decode()
    assert "C.1 fits the symptom" in page and "reopened by lena-lead" in page


def test_lead_pages_are_404_for_annotators_and_outsiders(
    client, project, disputed, annotator, outsider, researcher
):
    for user in (annotator, outsider, researcher):
        client.force_login(user)
        for name, args in [
            ("disagreement_queue", [project.pk]),
            ("project_setup", [project.pk]),
            ("resolve_issue", [project.pk, disputed.pk]),
        ]:
            assert client.get(reverse(name, args=args)).status_code == 404, (user, name)


def test_sub_theme_search_data_is_served_to_members_only(client, project, annotator, outsider):
    url = reverse("label_taxonomy", args=[project.pk, project.taxonomy_version_id])
    client.force_login(annotator)
    response = client.get(url)
    assert response.status_code == 200 and "max-age=3600" in response["Cache-Control"]
    nccl = [n for n in response.json()["nodes"] if n["code"] == "C.3.i"]
    assert any("NCCL" in d for d in nccl[0]["details"])
    wrong_version = reverse("label_taxonomy", args=[project.pk, project.taxonomy_version_id + 1])
    assert client.get(wrong_version).status_code == 404
    client.force_login(outsider)
    assert client.get(url).status_code == 404


def test_the_lead_actions_are_a_form_and_functions_of_the_resolution_module(
    lead, project, disputed, items, other_annotator
):
    """What the resolve page posts, without the page: `LeadActionForm` validates it and
    `resolution.apply_lead_action` carries it out, so a script could do the same."""
    otto = Annotation.objects.get(issue=disputed.issue, annotator=other_annotator)
    # Refused before anything is looked up: each error names its field.
    for data, error in [
        ({"action": "shout"}, "action"),
        ({"action": "message", "body": "  "}, "body"),
        ({"action": "resolve", "source": "new", "method": "vote"}, "method"),
        ({"action": "resolve", "source": "x1", "method": "consensus"}, "source"),
    ]:
        form = LeadActionForm(data, project=project)
        assert not form.is_valid() and error in form.errors, data
    # An annotation of another issue is not one a lead can adopt here.
    elsewhere = label_item(other_annotator, project, items[1], "A.1")
    form = LeadActionForm(
        {"action": "resolve", "source": str(elsewhere.pk), "method": "consensus"}, project=project
    )
    assert form.is_valid()
    with pytest.raises(Refusal, match="source: not an annotation"):
        resolution.apply_lead_action(disputed, lead, form.lead_action())
    assert not Resolution.objects.filter(issue=disputed.issue).exists()
    # Otto's is: adopted, it is the final label, with the lead's note.
    form = LeadActionForm(
        {"action": "resolve", "source": str(otto.pk), "method": "lead_decision", "note": "agreed"},
        project=project,
    )
    assert form.is_valid()
    said = resolution.apply_lead_action(disputed, lead, form.lead_action())
    assert said.startswith("Final label recorded")
    final = Resolution.objects.get(issue=disputed.issue, is_current=True)
    assert (final.label_code, final.note, final.decided_by) == ("C.2", "agreed", lead)


def test_a_bad_lead_action_is_named_on_the_page_and_saves_nothing(client, lead, project, disputed):
    client.force_login(lead)
    url = reverse("resolve_issue", args=[project.pk, disputed.pk])
    data = {"action": "resolve", "source": "new", "method": "lead_decision"}
    page = client.post(url, data | {"theme": "999999"}, follow=True).content.decode()
    assert "Not saved: theme: not a choice of this project&#x27;s taxonomy" in page
    page = client.post(url, {"action": "explode"}, follow=True).content.decode()
    assert "Not saved: action: unknown action" in page
    assert not Resolution.objects.filter(issue=disputed.issue).exists()


@pytest.fixture
def final_issue(project, items, annotator, other_annotator, third_annotator):
    for user in (annotator, other_annotator, third_annotator):
        label_item(user, project, items[2], "B.1")
    items[2].refresh_from_db()
    assert items[2].status == ProjectIssue.Status.FINAL
    return items[2]


def test_a_refusal_of_the_issues_state_is_said_without_a_field(
    client, lead, project, disputed, final_issue
):
    """Lena records a final label on an issue that has one, and reopens one that has none: the
    page refuses both (400) and says why, naming no field (none is at fault)."""
    client.force_login(lead)
    url = reverse("resolve_issue", args=[project.pk, final_issue.pk])
    data = {"action": "resolve", "source": "new", "method": "lead_decision"}
    answer = client.post(url, data | label_data(project, "C.1"))
    assert answer.status_code == 400
    assert "Not saved: The issue is already final; reopen it first." in answer.content.decode()
    url = reverse("resolve_issue", args=[project.pk, disputed.pk])
    answer = client.post(url, {"action": "reopen", "note": "second thoughts"})
    assert answer.status_code == 400
    assert "Not saved: The issue has no final label to reopen." in answer.content.decode()
    assert Resolution.objects.filter(issue=final_issue.issue, is_current=True).count() == 1
    assert not Resolution.objects.filter(issue=disputed.issue).exists()


def test_an_annotator_asks_for_a_change_on_a_final_issue_and_the_lead_sees_it(
    client, project, final_issue, annotator, lead
):
    client.force_login(annotator)
    url = reverse("label_issue", args=[project.pk, final_issue.public_id])
    page = client.get(url).content.decode()
    assert 'id="final-label"' in page and 'id="change-request-form"' in page
    send = reverse("request_change", args=[project.pk, final_issue.public_id])
    body = "B.1.ii fits better: the log shows a timeout"
    page = client.post(send, {"body": body}, follow=True).content.decode()
    assert "Sent to the lead." in page and body in page  # under "You asked"
    request = DiscussionMessage.objects.get(project_issue=final_issue)
    assert request.is_change_request and request.author == annotator
    # Nothing else changed: the issue stays final.
    final_issue.refresh_from_db()
    assert final_issue.status == ProjectIssue.Status.FINAL
    client.force_login(lead)
    queue = client.get(reverse("disagreement_queue", args=[project.pk])).content.decode()
    assert "Change requests on final issues" in queue and body in queue


def test_only_an_annotator_of_the_final_issue_may_ask_for_a_change(
    client, project, final_issue, annotator
):
    finn = make_user("finn-annotator")
    Membership.objects.create(project=project, user=finn, role=Role.ANNOTATOR)
    send = reverse("request_change", args=[project.pk, final_issue.public_id])
    # The probe fires: Ada, who labeled it, may.
    client.force_login(annotator)
    assert client.post(send, {"body": "please look again"}).status_code == 302
    # Finn did not label it: as if it did not exist.
    client.force_login(finn)
    assert client.post(send, {"body": "me too"}).status_code == 404
    page = reverse("label_issue", args=[project.pk, final_issue.public_id])
    assert client.get(page).status_code == 404
    assert DiscussionMessage.objects.filter(project_issue=final_issue).count() == 1


def test_from_my_progress_ada_reaches_her_final_issues_to_ask_for_a_change(
    client, project, items, lead, annotator, other_annotator, third_annotator
):
    """Ada's final issues link to their page, where she asks the lead for a change; an issue
    final without her label, and one of hers not final yet, offer no such link."""
    from tests.builders import final_issue

    final_issue(project, items[0], "C.1", "C.2", "C.2", final="C.2")  # Ada, Ben, Tia label it
    label_item(annotator, project, items[1], "C.3")  # hers, not final
    # Final without Ada: Ben and Tia label it, and the lead decides.
    for user in (other_annotator, third_annotator):
        label_item(user, project, items[2], "B.1")
    items[2].refresh_from_db()
    if items[2].status != ProjectIssue.Status.FINAL:
        from labeling.submission import parse_label

        resolution.resolve(
            items[2],
            lead,
            parse_label(project, label_data(project, "B.1")),
            Resolution.Method.LEAD_DECISION,
        )
    items[2].refresh_from_db()
    assert items[2].status == ProjectIssue.Status.FINAL

    client.force_login(annotator)
    page = client.get(reverse("my_progress", args=[project.pk])).content.decode()
    ask = reverse("label_issue", args=[project.pk, items[0].public_id]) + "#change-request-form"
    assert page.count('class="ask-change"') == 1 and f'href="{ask}"' in page
    assert reverse("label_issue", args=[project.pk, items[1].public_id]) in page
    assert f"/label/{items[2].public_id}/" not in page  # final, but never hers

    issue_page = client.get(ask.split("#")[0]).content.decode()
    assert 'id="change-request-form"' in issue_page
    sent = client.post(
        reverse("request_change", args=[project.pk, items[0].public_id]),
        {"body": "I now think it is C.1"},
    )
    assert sent.status_code == 302
    assert DiscussionMessage.objects.filter(
        project_issue=items[0], author=annotator, is_change_request=True
    ).exists()
