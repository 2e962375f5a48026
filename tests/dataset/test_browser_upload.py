"""In Chromium: Lena the lead opens "Upload issues" from her project page, uploads a small CSV of
mailing-list threads, sees the preview, dry-runs it, imports it, and finds the issues in her
project's issue list."""

from __future__ import annotations

import pytest

from annotator import outbox
from ingest.models import Issue
from labeling.models import ProjectIssue
from tests.conftest import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CSV = (
    "url,title,body,labels,created_at\n"
    "https://lists.example.org/ml/1,Loss spikes after resuming from a checkpoint,bf16,bug,"
    "2024-03-01\n"
    "https://lists.example.org/ml/2,DeepSpeed ZeRO-3 hangs on 8 GPUs,,training,2024-03-02\n"
    "https://lists.example.org/ml/3,<b>vLLM</b> returns empty completions,,,2024-03-03\n"
)


def test_a_lead_uploads_a_csv_previews_dry_runs_imports_and_sees_the_issues(
    page, live_server, lead, project, settings, tmp_path, monkeypatch
):
    settings.UPLOAD_ROOT = tmp_path / "uploads"
    # No worker in this test: the queued task runs in the server's thread, as a worker would.
    monkeypatch.setattr(outbox, "publish", lambda row_id: outbox.run_here(row_id))
    path = tmp_path / "threads.csv"
    path.write_text(CSV, encoding="utf-8")

    log_in(page, live_server, lead.username)
    page.goto(f"{live_server.url}/projects/{project.pk}/")
    page.get_by_role("link", name="Upload issues").click()
    page.set_input_files("#id_file", str(path))
    page.fill("#id_source", "ml-archive")

    page.click("#upload-preview")
    table = page.locator("#preview-table")
    table.wait_for()
    assert table.locator("tbody tr").count() == 3
    assert "DeepSpeed ZeRO-3 hangs on 8 GPUs" in table.inner_text()
    assert "<b>vLLM</b> returns empty completions" in table.inner_text()  # shown as text

    page.click("#upload-dry-run")
    dry_run = page.locator("#upload-jobs li").first
    assert "no problems" in dry_run.inner_text()
    assert dry_run.locator('dd[data-figure="new_issues"]').inner_text() == "3"
    assert not Issue.objects.exists()

    page.set_input_files("#id_file", str(path))
    page.fill("#id_source", "ml-archive")
    page.click("#upload-import")
    imported = page.locator("#upload-jobs li").first
    assert "imported" in imported.inner_text()
    assert imported.locator('dd[data-figure="added_to_queue"]').inner_text() == "3"
    assert ProjectIssue.objects.filter(project=project).count() == 3

    page.get_by_role("link", name="the project's issues").click()
    issues = page.locator("#issue-table")
    issues.wait_for()
    text = issues.inner_text()
    assert "Loss spikes after resuming from a checkpoint" in text
    assert "<b>vLLM</b> returns empty completions" in text
