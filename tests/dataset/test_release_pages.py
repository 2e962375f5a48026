"""Release pages and API as each persona meets them: the lead freezes, the researcher lists,
compares and downloads, the annotator and the outsider find nothing (404)."""

from __future__ import annotations

import hashlib
import html
import io
import json
import re
import zipfile

import pytest
from django.urls import reverse

from annotator.models import Membership, Project, Role
from dataset.importer import import_labels
from dataset.models import Release
from dataset.releases import build_release, create_release
from labeling import resolution as labeling_resolution
from labeling import submission
from labeling.models import ProjectIssue, Resolution
from tests.builders import label_data
from tests.dataset.helpers import MINDSPEED

pytestmark = pytest.mark.django_db


@pytest.fixture
def study(taxonomy_version, lead, annotator, researcher, outsider, export_root):
    import_labels("Study", [MINDSPEED])
    project = Project.objects.get(name="Study")
    for user, role in [
        (lead, Role.LEAD),
        (annotator, Role.ANNOTATOR),
        (researcher, Role.RESEARCHER),
    ]:
        Membership.objects.create(project=project, user=user, role=role)
    return project


def _done(project: Project, user, version: str, note: str = "") -> Release:
    return build_release(create_release(project, user, version, note).pk)


def test_a_researcher_on_an_empty_releases_page_is_told_who_makes_releases(
    client, project, lead, researcher
):
    """Rita (researcher) finds no release yet and no form: the page says the project's leads
    make releases. Lena (lead) gets the form instead, and not that sentence."""

    def who_releases(page: str) -> str | None:
        found = re.search(r'<p class="hint" id="who-releases">(.*?)</p>', page, re.S)
        return html.unescape(found.group(1)) if found else None

    url = reverse("releases", args=[project.pk])
    client.force_login(lead)
    page = client.get(url).content.decode()
    assert 'id="release-form"' in page and who_releases(page) is None
    client.force_login(researcher)
    page = client.get(url).content.decode()
    assert 'id="no-releases"' in page and 'id="release-form"' not in page
    assert "made by the project's leads" in (who_releases(page) or "")
    # The same in Chinese.
    page = client.get(url, HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "负责人" in (who_releases(page) or "")


def test_the_lead_freezes_a_release_on_the_page_and_watches_it_build(client, study, lead):
    client.force_login(lead)
    url = reverse("releases", args=[study.pk])
    page = client.get(url)
    assert page.status_code == 200 and b'id="release-form"' in page.content
    response = client.post(
        url, {"version": "1.0.0", "note": "First **public** release"}, HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 200
    release = Release.objects.get()
    assert release.status == Release.Status.PENDING and release.requested_by == lead
    assert 'hx-trigger="every 1s"' in response.content.decode()  # polls while it builds
    build_release(release.pk)  # what the Celery task runs
    row = client.get(reverse("release_row", args=[study.pk, release.pk])).content.decode()
    assert "hx-trigger" not in row and "released" in row
    release.refresh_from_db()
    assert release.sha256 in row and "<strong>public</strong>" in row
    listing = client.get(url).content.decode()
    assert "1.0.0" in listing and "80 issues" in listing and str(study.taxonomy_version) in listing
    assert "Fleiss" in listing


def test_a_bad_version_is_a_form_error_naming_the_field(client, study, lead):
    client.force_login(lead)
    url = reverse("releases", args=[study.pk])
    response = client.post(url, {"version": "v1", "note": ""})
    assert response.status_code == 400
    assert 'id="version-error"' in response.content.decode()
    assert "semantic version" in response.content.decode()
    _done(study, lead, "1.0.0")
    response = client.post(url, {"version": "0.9.9"}, HTTP_HX_REQUEST="true")
    # htmx swaps no 4xx: the refused form comes back in place of the form, with its error.
    assert response["HX-Retarget"] == "#release-form" and response["HX-Reswap"] == "outerHTML"
    assert 'id="version-error"' in response.content.decode()
    assert "not greater" in response.content.decode()
    assert Release.objects.count() == 1


def test_the_api_creates_for_leads_and_answers_400_naming_the_field(client, study, lead):
    client.force_login(lead)
    url = reverse("api_releases", args=[study.pk])
    bad = client.post(url, {"version": "1.0"}, content_type="application/json")
    assert bad.status_code == 400 and "version" in bad.json()
    made = client.post(url, {"version": "1.0.0", "note": "n"}, content_type="application/json")
    assert made.status_code == 201 and made.json()["status"] == "pending"
    assert made.json()["download_url"] is None


def test_the_researcher_lists_compares_and_downloads_but_cannot_create(
    client, study, lead, researcher
):
    first = _done(study, lead, "1.0.0")
    resolution = Resolution.objects.filter(project=study, is_current=True).order_by("pk")[0]
    old_code = resolution.label_code
    target = "B.1" if old_code != "B.1" else "A.1"
    # The lead reopens the final label and decides another, as on the resolve page.
    item = ProjectIssue.objects.get(project=study, issue=resolution.issue)
    labeling_resolution.reopen(item, lead)
    label = submission.parse_label(study, label_data(study, target))
    labeling_resolution.add_message(item, lead, f"{target}, as we agreed.")
    labeling_resolution.resolve(item, lead, label, Resolution.Method.CONSENSUS)
    second = _done(study, lead, "1.1.0")

    client.force_login(researcher)
    listing = client.get(reverse("releases", args=[study.pk]))
    assert listing.status_code == 200
    assert b'id="release-form"' not in listing.content and b'id="compare"' in listing.content
    # The page's download and the API's serve the same bytes, whose hash is the listed one.
    page_bytes = b"".join(
        client.get(reverse("release_download", args=[study.pk, first.pk])).streaming_content
    )
    api = client.get(reverse("api_releases", args=[study.pk])).json()
    assert [r["version"] for r in api] == ["1.1.0", "1.0.0"]
    entry = api[1]
    assert entry["sha256"] == first.sha256 and entry["counts"]["issues"] == 80
    assert entry["taxonomy_version"] == str(study.taxonomy_version)
    assert any(row["level"] == "theme" for row in entry["agreement"])
    assert {f["name"] for f in entry["files"]} >= {"datapackage.json", "CITATION.cff"}
    api_bytes = b"".join(client.get(entry["download_url"]).streaming_content)
    assert api_bytes == page_bytes
    assert hashlib.sha256(api_bytes).hexdigest() == first.sha256
    with zipfile.ZipFile(io.BytesIO(api_bytes)) as zf:
        assert json.loads(zf.read("datapackage.json"))["version"] == "1.0.0"

    # The compare form leads to the diff page, which names the change and its resolution.
    compare = client.get(reverse("releases", args=[study.pk]), {"a": "1.0.0", "b": "1.1.0"})
    assert compare.status_code == 302
    diff = client.get(compare["Location"]).content.decode()
    assert compare["Location"] == reverse("release_compare", args=[study.pk, "1.0.0", "1.1.0"])
    assert resolution.issue.url in diff and "consensus" in diff
    assert f"<code>{old_code}</code>" in diff and f"<code>{target}</code>" in diff
    assert 'id="changed-count">1<' in diff
    assert second.status == Release.Status.DONE

    # Creating is for leads and admins: the researcher's POSTs are 404 and change nothing.
    assert client.post(reverse("releases", args=[study.pk]), {"version": "2.0.0"}).status_code == (
        404
    )
    api_post = client.post(
        reverse("api_releases", args=[study.pk]),
        {"version": "2.0.0"},
        content_type="application/json",
    )
    assert api_post.status_code == 404
    assert Release.objects.count() == 2


@pytest.mark.parametrize("persona", ["annotator", "outsider"])
def test_annotators_and_outsiders_get_404_everywhere(client, study, lead, persona, request):
    made = _done(study, lead, "1.0.0")
    _done_b = _done(study, lead, "1.0.1")
    urls = [
        reverse("releases", args=[study.pk]),
        reverse("release_row", args=[study.pk, made.pk]),
        reverse("release_download", args=[study.pk, made.pk]),
        reverse("release_compare", args=[study.pk, "1.0.0", "1.0.1"]),
        reverse("api_releases", args=[study.pk]),
        reverse("api_release", args=[study.pk, made.pk]),
        reverse("api_release_download", args=[study.pk, made.pk]),
    ]
    # The probe can fire: the lead reaches every one of them.
    client.force_login(lead)
    assert [client.get(u).status_code for u in urls] == [200] * len(urls)
    client.force_login(request.getfixturevalue(persona))
    assert [client.get(u).status_code for u in urls] == [404] * len(urls)
    assert client.post(urls[0], {"version": "2.0.0"}).status_code == 404
    assert Release.objects.count() == 2 and _done_b.pk


def test_another_projects_release_is_not_reachable_through_this_project(
    client, study, lead, researcher, taxonomy_version
):
    other = Project.objects.create(name="Other", taxonomy_version=taxonomy_version)
    Membership.objects.create(project=other, user=researcher, role=Role.RESEARCHER)
    made = _done(study, lead, "1.0.0")
    client.force_login(researcher)
    assert client.get(reverse("release_download", args=[study.pk, made.pk])).status_code == 200
    assert client.get(reverse("release_download", args=[other.pk, made.pk])).status_code == 404
    assert client.get(reverse("api_release", args=[other.pk, made.pk])).status_code == 404


def test_a_failed_release_is_marked_older_once_a_later_release_succeeded(client, study, lead):
    """Lena's 1.0.0 failed (the disk was full); she made 1.0.0 again and it was released. The
    failure stays listed, said to be older, its error folded away."""
    failed = create_release(study, lead, "1.0.0")
    Release.objects.filter(pk=failed.pk).update(status=Release.Status.FAILED, error="disk full")
    client.force_login(lead)
    url = reverse("releases", args=[study.pk])
    # The probe: alone, the failure's error is shown as the current state.
    page = client.get(url).content.decode()
    assert '<span class="error">disk full</span>' in page and "older failure" not in page

    done = _done(study, lead, "1.0.0")
    assert done.status == Release.Status.DONE
    page = client.get(url).content.decode()
    row = page[page.index(f'id="release-{failed.pk}"') :]
    row = row[: row.index("</li>")]
    assert "an older failure: release 1.0.0 succeeded after it." in row
    assert '<details class="superseded-error">' in row and "disk full" in row
