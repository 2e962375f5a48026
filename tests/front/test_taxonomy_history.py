"""Each project's taxonomy history is its own; the global page shows the study's or a published one.

Two projects start from the study's taxonomy. Lena leads the pilot and edits it; Bruno leads a
second study on the same taxonomy, with Bea annotating. Neither Bruno nor Bea may read the
pilot's versions, edit notes or author names, nor export them; in the pilot, annotators see
the author's pseudonym, the lead their name. Whatever a lead imports, the global taxonomy page
keeps opening on the study's taxonomy until an administrator publishes a version.
"""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotator.models import Membership, Project, Role
from labeling.taxonomy_history import global_version
from taxonomy import edits
from taxonomy.files import export_json
from taxonomy.models import TaxonomyVersion
from tests.conftest import make_user

pytestmark = pytest.mark.django_db

NOTE_WORDS = "Hardware Compatibility Gaps"


@pytest.fixture
def second_study(taxonomy_version):
    """Another project on the same study taxonomy, with its own lead and annotator."""
    project = Project.objects.create(name="Second study", taxonomy_version=taxonomy_version)
    bruno, bea = make_user("bruno-lead-b"), make_user("bea-annotator-b")
    Membership.objects.create(project=project, user=bruno, role=Role.LEAD, pseudonym="b-1")
    Membership.objects.create(project=project, user=bea, role=Role.ANNOTATOR, pseudonym="b-2")
    return project, bruno, bea


@pytest.fixture
def pilot_edit(project, lead):
    """Lena renames a theme in the pilot: v2, noted and authored, in the pilot's history."""
    node = project.taxonomy_version.nodes.get(code="A.1")
    v2, _ = edits.rename(project, lead, node, NOTE_WORDS)
    return v2


def project_url(name: str, project, **kw) -> str:
    return reverse(name, kwargs={"project_id": project.pk, **kw})


def test_another_projects_members_cannot_see_its_versions_notes_or_authors(
    client, project, lead, pilot_edit, second_study
):
    other, bruno, bea = second_study
    study = project.taxonomy_version.parent
    for user in (bruno, bea):
        client.force_login(user)
        page = client.get(project_url("taxonomy_versions", other)).content.decode()
        assert f"v{study.number}" in page  # their own history: the study's version
        assert NOTE_WORDS not in page and lead.username not in page
        # The pilot's version, through every door: 404, as if it did not exist.
        doors = [
            project_url("taxonomy_export", other, version_id=pilot_edit.pk),
            project_url("taxonomy_version_csv", other, version_id=pilot_edit.pk, type_code="A"),
            project_url("taxonomy_diff", other) + f"?old={study.pk}&new={pilot_edit.pk}",
            reverse("taxonomy_version", kwargs={"version_id": pilot_edit.pk}),
        ]
        for door in doors:
            assert client.get(door).status_code == 404, door
        # The pilot's own pages stay closed to them too.
        assert client.get(project_url("taxonomy_versions", project)).status_code == 404


def test_in_the_project_leads_see_the_author_and_annotators_a_pseudonym(
    client, project, lead, annotator, pilot_edit
):
    pseudonym = Membership.objects.get(project=project, user=lead).pseudonym
    client.force_login(annotator)
    page = client.get(project_url("taxonomy_versions", project)).content.decode()
    assert NOTE_WORDS in page  # the project's own history, notes included
    assert pseudonym in page and lead.username not in page
    exported = client.get(project_url("taxonomy_export", project, version_id=pilot_edit.pk))
    assert exported.status_code == 200 and NOTE_WORDS in exported.content.decode()
    assert client.get(f"/taxonomy/{pilot_edit.pk}/").status_code == 200  # a member may open it

    client.force_login(lead)
    page = client.get(project_url("taxonomy_versions", project)).content.decode()
    assert lead.username in page


def test_an_author_outside_the_project_is_not_named_even_to_its_lead(
    client, project, lead, pilot_edit, second_study
):
    # Bruno's study is moved onto the pilot's v2 (say, by an administrator): it sees that
    # version and its lineage, but Lena is no member of it, so nobody there learns her name.
    other, bruno, _ = second_study
    other.taxonomy_version = pilot_edit
    other.save(update_fields=["taxonomy_version"])
    client.force_login(bruno)
    page = client.get(project_url("taxonomy_versions", other)).content.decode()
    assert NOTE_WORDS in page and lead.username not in page
    assert "someone outside this project" in page


def test_the_global_page_opens_on_the_study_or_the_published_version(
    client, project, lead, pilot_edit, outsider, second_study
):
    study = project.taxonomy_version.parent
    # Bruno imports the pilot's file into his study: newer than anything, yet not global.
    _, bruno, _ = second_study
    client.force_login(bruno)
    upload = SimpleUploadedFile("t.json", export_json(study).encode(), "application/json")
    client.post(project_url("taxonomy_import", second_study[0]), {"file": upload})
    imported = TaxonomyVersion.objects.get(origin=TaxonomyVersion.Origin.IMPORTED)
    assert imported.project == second_study[0]

    client.force_login(outsider)
    assert client.get("/taxonomy/")["Location"] == f"/taxonomy/{study.pk}/"
    assert client.get(f"/taxonomy/{study.pk}/").status_code == 200
    for private in (pilot_edit, imported):
        assert client.get(f"/taxonomy/{private.pk}/").status_code == 404
    page = client.get(f"/taxonomy/{study.pk}/").content.decode()
    assert f'value="{pilot_edit.pk}"' not in page  # not in the version picker either

    # An administrator publishes the pilot's v2: now it is what everyone opens on.
    pilot_edit.is_published = True
    pilot_edit.save(update_fields=["is_published"])
    assert global_version() == pilot_edit
    assert client.get("/taxonomy/")["Location"] == f"/taxonomy/{pilot_edit.pk}/"
    assert client.get(f"/taxonomy/{pilot_edit.pk}/").status_code == 200
    assert client.get(f"/taxonomy/{imported.pk}/").status_code == 404


def test_staff_may_open_any_version_and_publish_in_the_admin(client, pilot_edit):
    admin = make_user("adam-admin", is_staff=True, is_superuser=True)
    client.force_login(admin)
    assert client.get(f"/taxonomy/{pilot_edit.pk}/").status_code == 200
    changelist = reverse("admin:taxonomy_taxonomyversion_changelist")
    assert "is_published" in client.get(changelist).content.decode()


def test_loading_the_study_if_missing_ignores_a_projects_newer_edit(project, pilot_edit):
    from taxonomy.loader import load_study_taxonomy

    assert load_study_taxonomy(only_if_missing=True) == pilot_edit.parent


def test_another_projects_lead_cannot_read_the_agreement_report_under_its_version(
    client, pilot_edit, second_study
):
    other, bruno, _ = second_study
    client.force_login(bruno)
    page = project_url("agreement_report", other)
    assert client.get(page).status_code == 200
    assert client.get(f"{page}?version={pilot_edit.pk}").status_code == 404


def test_a_project_created_by_a_label_import_starts_on_the_study_not_an_edit(pilot_edit, tmp_path):
    from dataset.importer import get_or_create_project

    assert get_or_create_project("Imported study").taxonomy_version == pilot_edit.parent
