"""How a release is cited (#21): Lena (lead) gives the title, authors and licence when she
freezes a release, on the page, through the API or with `manage.py release`; they start from the
project's. A release without authors invents none: its page and CITATION.cff say the citation is
incomplete. Rita (researcher) reads what was released.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import jsonschema
import pytest
import yaml
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotator.models import Membership, Project, Role
from dataset.importer import import_labels
from dataset.models import Release
from dataset.releases import build_release, release_path
from tests.dataset.helpers import MINDSPEED

pytestmark = pytest.mark.django_db

CFF_SCHEMA = Path(__file__).resolve().parent.parent / "data" / "cff" / "schema-1.2.0.json"


@pytest.fixture
def study(taxonomy_version, lead, researcher, outsider, export_root):
    import_labels("Study", [MINDSPEED])
    project = Project.objects.get(name="Study")
    project.citation_authors = "Lovelace, Ada"
    project.licence = "CC-BY-4.0"
    project.save()
    Membership.objects.create(project=project, user=lead, role=Role.LEAD)
    Membership.objects.create(project=project, user=researcher, role=Role.RESEARCHER)
    return project


def released_file(release: Release, name: str) -> str:
    with zipfile.ZipFile(release_path(build_release(release.pk))) as zf:
        return zf.read(name).decode("utf-8")


def cff(release: Release) -> dict:
    data = yaml.safe_load(released_file(release, "CITATION.cff"))
    jsonschema.validate(data, json.loads(CFF_SCHEMA.read_text(encoding="utf-8")))
    return data


def test_the_form_starts_from_the_projects_citation(client, study, lead):
    client.force_login(lead)
    form = client.get(reverse("releases", args=[study.pk])).context["form"]
    assert form["title"].value() == "Study"
    assert form["authors"].value() == "Lovelace, Ada"
    assert form["licence"].value() == "CC-BY-4.0"


def test_lena_names_the_authors_with_an_orcid_and_the_citation_carries_them(client, study, lead):
    client.force_login(lead)
    response = client.post(
        reverse("releases", args=[study.pk]),
        {
            "version": "1.0.0",
            "title": "LLM framework issues",
            "authors": "Lovelace, Ada, 0000-0002-1825-0097\nHopper, Grace\nThe Study Group",
            "licence": "CC0-1.0",
        },
    )
    assert response.status_code == 302
    data = cff(Release.objects.get())
    assert data["title"] == "LLM framework issues" and data["license"] == "CC0-1.0"
    assert data["message"] == "If you use this dataset, please cite it as below."
    assert data["authors"] == [
        {
            "family-names": "Lovelace",
            "given-names": "Ada",
            "orcid": "https://orcid.org/0000-0002-1825-0097",
        },
        {"family-names": "Hopper", "given-names": "Grace"},
        {"name": "The Study Group"},
    ]
    croissant = json.loads(released_file(Release.objects.get(), "croissant.json"))
    assert [c["name"] for c in croissant["creator"]] == [
        "Ada Lovelace",
        "Grace Hopper",
        "The Study Group",
    ]
    assert croissant["license"].endswith("/CC0-1.0.html")


def test_a_release_without_authors_says_its_citation_is_incomplete(client, study, lead, researcher):
    client.force_login(lead)
    url = reverse("releases", args=[study.pk])
    client.post(url, {"version": "1.0.0", "title": "Study", "authors": "", "licence": ""})
    release = Release.objects.get()
    assert release.authors == "" and release.licence == "CC-BY-4.0"  # blank licence: project's
    data = cff(release)
    assert data["message"].startswith("Citation incomplete: this release names no author")
    # The format requires an author: the one entry says none was named; nothing is invented.
    assert data["authors"] == [{"name": "no author named (citation incomplete)"}]
    assert "contributors" not in json.dumps(data)
    sheet = released_file(release, "DATASHEET.md")
    assert "Citation incomplete: this release names no author." in sheet
    client.force_login(researcher)
    assert "citation incomplete" in client.get(url).content.decode()


@pytest.mark.parametrize(
    "data, field, words",
    [
        ({"authors": "Lovelace, Ada\nHopper, Grace, Brewster"}, "authors", "line 2"),
        ({"authors": "Lovelace, , 0000-0002-1825-0097"}, "authors", "line 1"),
        # Several people on a line written "Given Family": as organisations they would be one
        # wrong author each; refused, naming the line and the name.
        ({"authors": "Lovelace, Ada\nAda Lovelace; Grace Hopper"}, "authors", "line 2"),
        ({"authors": "Ada Lovelace; Grace Hopper"}, "authors", "“Ada Lovelace” is one of several"),
        ({"licence": "CC BY 4.0"}, "licence", "SPDX"),
        ({"title": "x" * 301}, "title", "300"),
    ],
)
def test_a_bad_citation_is_a_400_naming_the_field(client, study, lead, data, field, words):
    client.force_login(lead)
    response = client.post(reverse("releases", args=[study.pk]), {"version": "1.0.0", **data})
    assert response.status_code == 400
    errors = response.context["form"].errors
    assert field in errors and words in " ".join(errors[field])
    assert not Release.objects.exists()


def test_several_authors_on_a_line_separated_by_semicolons_are_each_an_author(client, study, lead):
    """Lena types the authors on one line, as in a paper's byline: each becomes an author of
    the citation, stored one per line."""
    client.force_login(lead)
    response = client.post(
        reverse("releases", args=[study.pk]),
        {
            "version": "1.0.0",
            "title": "Study",
            "authors": "Lovelace, Ada; Hopper, Grace, 0000-0002-1825-0097 ;\nThe Study Group",
            "licence": "CC0-1.0",
        },
    )
    assert response.status_code == 302
    release = Release.objects.get()
    assert release.authors.splitlines() == [
        "Lovelace, Ada",
        "Hopper, Grace, 0000-0002-1825-0097",
        "The Study Group",
    ]
    assert cff(release)["authors"] == [
        {"family-names": "Lovelace", "given-names": "Ada"},
        {
            "family-names": "Hopper",
            "given-names": "Grace",
            "orcid": "https://orcid.org/0000-0002-1825-0097",
        },
        {"name": "The Study Group"},
    ]


def test_the_api_takes_the_citation_and_reports_whether_it_is_complete(client, study, lead):
    client.force_login(lead)
    url = reverse("api_releases", args=[study.pk])
    made = client.post(
        url, {"version": "1.0.0", "authors": [], "title": "T"}, content_type="application/json"
    )
    assert made.status_code == 201
    body = made.json()
    assert body["citation_complete"] is False and body["authors"] == []
    assert body["title"] == "T" and body["licence"] == "CC-BY-4.0"
    Release.objects.all().delete()
    bad = client.post(
        url, {"version": "1.0.0", "licence": "not a licence"}, content_type="application/json"
    )
    assert bad.status_code == 400 and "licence" in bad.json()
    default = client.post(url, {"version": "1.0.0"}, content_type="application/json").json()
    assert default["authors"] == ["Lovelace, Ada"] and default["citation_complete"] is True


def test_the_command_takes_title_repeated_authors_and_licence(study):
    out, err = io.StringIO(), io.StringIO()
    call_command(
        "release",
        "--project",
        "Study",
        "--version",
        "1.0.0",
        "--title",
        "LLM issues",
        "--author",
        "Lovelace, Ada, https://orcid.org/0000-0002-1825-0097",
        "--author",
        "ACME Lab",
        "--license",
        "MIT",
        stdout=out,
        stderr=err,
    )
    release = Release.objects.get()
    assert release.title == "LLM issues" and release.licence == "MIT"
    assert release.authors.splitlines() == [
        "Lovelace, Ada, https://orcid.org/0000-0002-1825-0097",
        "ACME Lab",
    ]
    assert "citation incomplete" not in err.getvalue()
    call_command("release", "--project", "Study", "--version", "1.1.0", "--no-authors", stderr=err)
    assert "citation incomplete" in err.getvalue()
    with pytest.raises(CommandError, match=r"^author: line 1"):
        call_command("release", "--project", "Study", "--version", "2.0.0", "--author", "a,b,c")
    with pytest.raises(CommandError, match=r"^license: "):
        call_command("release", "--project", "Study", "--version", "2.0.0", "--license", "a b")
