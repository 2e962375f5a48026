"""In Chromium: the demo researcher downloads a release of the demo project, and the
datapackage.json inside validates with frictionless."""

from __future__ import annotations

import hashlib
import io
import zipfile

import pytest
from django.core.management import call_command
from django.urls import reverse

from dataset.models import Release
from dataset.releases import build_release
from labeling.demo import load_demo
from labeling.models import ProjectIssue
from taxonomy.models import TaxonomyNode
from tests.builders import final_issue
from tests.conftest import first_saved

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _label_some(project, count: int) -> None:
    """Three demo annotators agree on a few issues through the real submission, which makes
    them final."""
    themes = list(
        TaxonomyNode.objects.filter(
            version=project.taxonomy_version, level=TaxonomyNode.Level.THEME
        ).values_list("code", flat=True)[:3]
    )
    items = ProjectIssue.objects.filter(project=project).order_by("position")[:count]
    for n, item in enumerate(items):
        theme = themes[n % len(themes)]
        final_issue(project, item, theme, theme, theme)


def test_the_demo_researcher_downloads_a_release_that_validates(
    page, live_server, settings, tmp_path
):
    import frictionless

    settings.DATA_DIR = tmp_path / "data"
    settings.EXPORT_ROOT = tmp_path / "exports"
    demo = load_demo()
    project = demo.project
    password = demo.password_file.read_text().strip()
    _label_some(project, 6)
    call_command(
        "release",
        "--project",
        project.name,
        "--version",
        "1.0.0",
        "--note",
        "Demo release",
        "--user",
        "demo-lead",
        stdout=io.StringIO(),
    )
    release = Release.objects.get()

    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("#id_username", "demo-researcher")
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")
    page.goto(live_server.url + reverse("project_detail", args=[project.pk]))
    page.click("#releases-link")
    page.wait_for_url(f"**{reverse('releases', args=[project.pk])}")
    assert page.locator("#release-form").count() == 0  # researchers do not freeze releases
    row = page.locator(f"#release-{release.pk}")
    assert "1.0.0" in row.inner_text() and "6 issues" in row.inner_text()
    with page.expect_download() as info:
        row.locator("a.download").click()
    target = tmp_path / "downloaded.zip"
    info.value.save_as(target)

    data = target.read_bytes()
    assert hashlib.sha256(data).hexdigest() == release.sha256
    unpacked = tmp_path / "unpacked"
    with zipfile.ZipFile(target) as zf:
        zf.extractall(unpacked)
    report = frictionless.validate(str(unpacked / "datapackage.json"))
    assert report.valid, [
        (t.name, t.flatten(["rowNumber", "type", "note"])[:3]) for t in report.tasks
    ]
    assert {t.name for t in report.tasks} >= {"final-labels", "issues"}


def test_the_demo_lead_freezes_a_release_and_watches_it_build(
    page, live_server, settings, tmp_path
):
    settings.DATA_DIR = tmp_path / "data"
    settings.EXPORT_ROOT = tmp_path / "exports"
    demo = load_demo()
    project = demo.project
    password = demo.password_file.read_text().strip()
    _label_some(project, 4)
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))

    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("#id_username", "demo-lead")
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")
    page.goto(live_server.url + reverse("releases", args=[project.pk]))

    # A version that is not semver: the error appears in the form, nothing is queued.
    page.fill("#id_version", "v1")
    page.click("#start-release")
    page.locator("#version-error").wait_for()
    assert "semantic version" in page.locator("#version-error").inner_text()
    assert Release.objects.count() == 0

    page.fill("#id_version", "1.0.0")
    page.fill("#id_note", "The demo's first release")
    page.click("#start-release")
    release = first_saved(page, Release.objects)
    assert release is not None and release.version == "1.0.0"
    row = page.locator(f"#release-{release.pk}")
    row.wait_for()
    assert row.get_attribute("hx-trigger") == "every 1s"  # it polls while queued
    build_release(release.pk)  # what the worker runs
    row.locator("a.download").wait_for(timeout=10_000)  # the poll swapped in the finished row
    release.refresh_from_db()
    assert release.sha256 in row.inner_text() and "4 issues" in row.inner_text()
    assert not problems, problems
