"""The machine raters page and API: leads and researchers read the validation, leads add and
run raters; annotators and outsiders get 404 (machine labels would anchor annotators)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from labeling.models import MachineRater
from raters.models import RaterRun
from raters.runs import create_run, run_rater

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fit_once")]


@pytest.fixture
def trained(project, finals) -> MachineRater:
    rater = MachineRater.objects.create(project=project, name="tfidf", kind="classifier")
    run_rater(create_run(rater, "final").pk)
    return rater


@pytest.mark.parametrize("who", ["lead", "researcher"])
def test_leads_and_researchers_read_the_validation(client, request, project, trained, who):
    client.force_login(request.getfixturevalue(who))
    response = client.get(reverse("raters_page", args=[project.pk]))
    assert response.status_code == 200
    body = response.content.decode()
    assert 'data-rater="tfidf"' in body and 'id="human-kappa"' in body
    from raters.validation import validation_report

    kappa = validation_report(project)["raters"][0]["kappa_theme"]
    assert f"{kappa:.3f}" in body
    # Only a lead may add or run a rater.
    assert ('id="add-rater"' in body) == (who == "lead")
    assert ("run-rater" in body) == (who == "lead")


@pytest.mark.parametrize("who", ["annotator", "other_annotator", "outsider"])
def test_annotators_and_outsiders_get_404(client, request, project, trained, who):
    client.force_login(request.getfixturevalue(who))
    urls = [
        reverse("raters_page", args=[project.pk]),
        reverse("api_raters", args=[project.pk]),
        reverse("rater_add", args=[project.pk]),
        reverse("rater_run", args=[project.pk, trained.pk]),
        reverse("rater_run_status", args=[project.pk, RaterRun.objects.get().pk]),
    ]
    lead_only_probe = client.get(urls[0]).status_code
    assert lead_only_probe == 404
    for url in urls:
        assert client.get(url).status_code == 404, url
        if not url.startswith("/api/"):  # the API is read-only (a POST there is a 405)
            assert client.post(url, {"name": "x", "kind": "classifier"}).status_code == 404, url
    assert MachineRater.objects.count() == 1


def test_a_researcher_cannot_add_or_run(client, project, researcher, trained):
    client.force_login(researcher)
    assert (
        client.post(
            reverse("rater_add", args=[project.pk]), {"name": "x", "kind": "classifier"}
        ).status_code
        == 404
    )
    assert client.post(reverse("rater_run", args=[project.pk, trained.pk])).status_code == 404
    assert RaterRun.objects.count() == 1


def test_the_lead_adds_a_rater_and_a_bad_one_is_a_400_naming_the_field(client, project, lead):
    client.force_login(lead)
    url = reverse("rater_add", args=[project.pk])
    response = client.post(url, {"name": "tfidf", "kind": "classifier"})
    assert response.status_code == 302
    assert MachineRater.objects.get().created_by == lead
    response = client.post(url, {"name": "tfidf", "kind": "classifier"})
    assert response.status_code == 400
    assert b'data-field="name"' in response.content
    assert b"already has a rater named" in response.content
    response = client.post(url, {"name": "g", "kind": "llm", "api_key_env": "sk-secret value"})
    assert response.status_code == 400
    assert b'data-field="api_key_env"' in response.content
    assert MachineRater.objects.count() == 1


def test_the_lead_runs_a_rater_and_watches_its_progress(
    client, project, lead, finals, django_capture_on_commit_callbacks
):
    rater = MachineRater.objects.create(project=project, name="tfidf", kind="classifier")
    client.force_login(lead)
    with django_capture_on_commit_callbacks() as queued:
        response = client.post(
            reverse("rater_run", args=[project.pk, rater.pk]),
            {"only": "final"},
            HTTP_HX_REQUEST="true",
        )
    assert response.status_code == 200 and b"queued" in response.content
    run = RaterRun.objects.get()
    assert len(queued) == 1  # the task, sent to the worker on commit; run here instead
    run_rater(run.pk)
    status = client.get(reverse("rater_run_status", args=[project.pk, run.pk]))
    assert b"done" in status.content and b"60 issues labeled" in status.content
    bad = client.post(reverse("rater_run", args=[project.pk, rater.pk]), {"only": "some"})
    assert bad.status_code == 400 and bad.content.startswith(b"only:")


def test_a_second_click_on_run_while_the_first_run_is_queued_starts_nothing(
    client, project, lead, finals, django_capture_on_commit_callbacks
):
    rater = MachineRater.objects.create(project=project, name="tfidf", kind="classifier")
    client.force_login(lead)
    url = reverse("rater_run", args=[project.pk, rater.pk])
    with django_capture_on_commit_callbacks() as queued:
        assert client.post(url, {"only": "all"}).status_code == 302
        again = client.post(url, {"only": "all"})
    first = RaterRun.objects.get()
    assert again.status_code == 400
    assert again.content.decode() == f"rater: run {first.pk} of tfidf is queued: wait for it"
    assert len(queued) == 1
    run_rater(first.pk)
    assert client.post(url, {"only": "all"}).status_code == 302  # done: a new run may start
    assert RaterRun.objects.count() == 2


def test_the_api_lists_raters_with_their_figures(client, project, researcher, trained):
    client.force_login(researcher)
    response = client.get(reverse("api_raters", args=[project.pk]))
    assert response.status_code == 200
    [row] = response.json()["raters"]
    assert (row["name"], row["n"], row["settings"]["version"]) == ("tfidf", 60, 1)
    assert "api_key_env" not in row["settings"]


def test_a_failed_run_is_marked_older_once_a_later_run_of_its_rater_succeeded(
    client, project, lead
):
    """Lena's first run of "clf" failed (an unreachable endpoint); her second succeeded. The
    page says the failure is older and folds its error away; "llm"'s failure, with nothing
    after it, is shown as it is."""
    clf = MachineRater.objects.create(project=project, name="clf", kind="classifier")
    llm = MachineRater.objects.create(project=project, name="llm", kind="classifier")
    old = RaterRun.objects.create(rater=clf, status="failed", error="endpoint unreachable")
    new = RaterRun.objects.create(rater=clf, status="done", total=3, done=3)
    current = RaterRun.objects.create(rater=llm, status="failed", error="model not found")
    client.force_login(lead)
    page = client.get(reverse("raters_page", args=[project.pk])).content.decode()

    def item(run) -> str:
        start = page.index(f'id="run-{run.pk}"')
        return page[start : page.index("</li>", start)]

    assert f"an older failure: #{new.pk} succeeded after it." in item(old)
    assert '<details class="superseded-error">' in item(old)
    assert "endpoint unreachable" in item(old)  # still there, folded
    assert "older failure" not in item(current) and "superseded-error" not in item(current)
    assert '<span class="error">model not found</span>' in item(current)
