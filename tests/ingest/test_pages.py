"""Pages: repositories with a Sync button, a run's live progress, and Table I."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest
from django.urls import reverse

from ingest.models import Repository, SyncRun
from ingest.runs import start_sync
from ingest.steps import run_inline
from labeling.models import ProjectIssue
from tests.conftest import make_issue


@pytest.mark.django_db
def test_repositories_page_is_for_staff_and_leads_only(client, project, lead, annotator, outsider):
    url = reverse("repositories")
    for user in (annotator, outsider):
        client.force_login(user)
        assert client.get(url).status_code == 404
    client.force_login(lead)
    response = client.post(
        url, {"forge": "gitee", "owner": "ascend", "name": "MindSpeed", "group": "MindSpeed",
              "is_framework": "on", "sync_interval_hours": "24", "project": project.pk},
    )  # fmt: skip
    assert response.status_code == 302
    repo = Repository.objects.get(name="MindSpeed")
    assert repo.api_url == "https://gitee.com/api/v5"
    project.refresh_from_db()
    assert project.scope["repository_ids"] == [repo.pk]  # the project now uses it
    page = client.get(url).content.decode()
    assert "ascend/MindSpeed" in page and "never" in page


@pytest.mark.django_db
def test_sync_button_starts_a_run_and_its_page_polls_until_done(
    client, project, lead, fake, make_repo, settings
):
    settings.FORGE_TOKENS = {"github": "ghp_SECRET", "gitee": "", "gitlab": ""}
    forge, repo = make_repo("github", "NVIDIA", "Megatron-LM")
    forge.add_issue(1, comments=1)
    project.scope = {"repository_ids": [repo.pk]}
    project.save()
    client.force_login(lead)
    response = client.post(reverse("repository_sync", args=[repo.pk]))
    run = SyncRun.objects.get(repository=repo)
    assert response.url == reverse("sync_run", args=[run.pk])
    fragment = client.get(response.url, headers={"HX-Request": "true"}).content.decode()
    assert 'hx-trigger="every 2s"' in fragment and "<html" not in fragment
    # A second click while it runs goes to the same run.
    again = client.post(reverse("repository_sync", args=[repo.pk]))
    assert again.url == response.url and SyncRun.objects.count() == 1

    run_inline(run)
    page = client.get(response.url).content.decode()
    assert "hx-trigger" not in page and 'value="100"' in page
    assert "New issues" in page and "issues_new" not in page and "ghp_SECRET" not in page

    # Two runs of a one-issue repository: the list still counts one issue.
    run_inline(start_sync(repo, full=True, enqueue=False))
    listing = client.get(reverse("repositories")).content.decode()
    assert '<td class="num">1</td><td class="num">0</td>' in listing


@pytest.mark.django_db
def test_failed_run_shows_its_error_log(client, lead, project, fake, make_repo):
    _, repo = make_repo("github", "NVIDIA", "Megatron-LM")
    project.scope = {"repository_ids": [repo.pk]}
    project.save()
    fake.inject("401")
    run = run_inline(start_sync(repo, enqueue=False))
    client.force_login(lead)
    page = client.get(reverse("sync_run", args=[run.pk])).content.decode()
    assert "401 Unauthorized" in page and 'id="run-errors"' in page


@pytest.mark.django_db
def test_table_one_page_for_members(
    client, project, repository, lead, researcher, annotator, outsider
):
    for n, year in enumerate([2023, 2024, 2024, 2025]):
        issue = make_issue(repository, 900 + n, created_at=datetime(year, 5, 1, tzinfo=UTC))
        ProjectIssue.objects.create(project=project, issue=issue, position=n)
    url = reverse("table_one", args=[project.pk])
    for user in (lead, researcher, annotator):
        client.force_login(user)
        page = client.get(url).content.decode()
        assert "Megatron" in page
        assert '<td class="num">1</td><td class="num">2</td><td class="num">1</td>' in page
    client.force_login(outsider)
    assert client.get(url).status_code == 404


def _state(client, run) -> str:
    html = client.get(reverse("sync_run", args=[run.pk])).content.decode()
    return html


@pytest.mark.django_db
def test_each_state_of_a_run_reads_as_words(client, lead, project, fake, make_repo):
    _, repo = make_repo("github", "NVIDIA", "Megatron-LM")
    project.scope = {"repository_ids": [repo.pk]}
    project.save()
    client.force_login(lead)
    run = start_sync(repo, enqueue=False)
    assert "Queued" in _state(client, run)
    run.status, run.pages, run.pages_estimate = SyncRun.Status.RUNNING, 2, 4
    run.save()
    html = _state(client, run)
    assert "Running" in html and 'value="50"' in html and 'hx-trigger="every 2s"' in html
    run.status, run.next_attempt_at = (
        SyncRun.Status.WAITING,
        datetime(2026, 1, 1, 9, 30, tzinfo=UTC),
    )
    run.save()
    assert "resumes at 09:30:00 UTC" in _state(client, run)
    run.status = SyncRun.Status.FAILED
    run.errors = [{"at": "now", "message": "401 Unauthorized: bad credentials"}]
    run.save()
    html = _state(client, run)
    # A failed run: the reason up front, no moving bar, no polling, no raw figure names.
    assert 'id="run-reason"' in html and "401 Unauthorized" in html
    assert "<progress" not in html and "hx-trigger" not in html
    assert "API requests left in this hour" in html and "QUOTA_REMAINING" not in html.upper()
    assert "None" not in html.split('id="run-figures"')[1]


@pytest.mark.django_db(transaction=True)
def test_without_a_broker_sync_answers_at_once_and_the_run_goes_on(
    client, lead, project, settings, study_keyword_sets
):
    """The embedded first look has no broker: the run goes on in a thread of the web process
    while the page polls (the request used to wait for the whole run)."""
    from tests.fakeforge import FakeForge

    settings.CELERY_TASK_ALWAYS_EAGER = True
    with FakeForge(delay=0.5) as forge:
        fake_repo = forge.repo("github", "NVIDIA", "Megatron-LM")
        for n in range(1, 4):
            fake_repo.add_issue(n, title=f"LLM training hangs {n}", body="NCCL timeout")
        repo = Repository.objects.create(
            forge="github", api_url=forge.api_url("github"), owner="NVIDIA", name="Megatron-LM"
        )
        project.scope = {"repository_ids": [repo.pk]}
        project.save()
        client.force_login(lead)
        started = time.monotonic()
        response = client.post(reverse("repository_sync", args=[repo.pk]))
        answered = time.monotonic() - started
        assert response.status_code == 302
        assert answered < 0.5, f"the request took {answered:.2f} s: it waited for the forge"
        run = SyncRun.objects.get(repository=repo)
        deadline = time.monotonic() + 60
        while run.is_active and time.monotonic() < deadline:
            time.sleep(0.25)
            run.refresh_from_db()
        assert run.status == SyncRun.Status.DONE, run.errors
        assert repo.issues.count() == 3
        assert "Done" in client.get(response.url).content.decode()
