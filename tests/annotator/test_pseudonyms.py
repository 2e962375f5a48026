"""Scenario: the exports, the agreement report and the issue page name Ada and Otto the same way,
by the pseudonyms stored on their memberships, and list rater-2 before rater-10."""

from __future__ import annotations

import pytest

from annotator.models import Membership, Project, Role
from annotator.pseudonyms import names_of, natural_order, pseudonyms, unnamed
from dataset.importer import rater_memberships


@pytest.mark.django_db
def test_members_appear_under_their_stored_pseudonyms(project, annotator, other_annotator):
    Membership.objects.filter(project=project, user=annotator).update(pseudonym="rater-10")
    Membership.objects.filter(project=project, user=other_annotator).update(pseudonym="rater-2")
    names = pseudonyms(project)
    assert names[annotator.pk] == "rater-10" and names[other_annotator.pk] == "rater-2"
    # The same map from the project's id (the issue page has only the id at hand).
    assert pseudonyms(project.pk) == names
    # An admin's export names people by username instead.
    assert pseudonyms(project, real_names=True)[annotator.pk] == "ada-annotator"


@pytest.mark.django_db
def test_someone_no_longer_a_member_keeps_a_neutral_name(project, annotator, outsider):
    Membership.objects.filter(project=project, user=annotator).update(pseudonym="rater-1")
    assert names_of(project, [annotator.pk, outsider.pk]) == ["rater-1", f"annotator-{outsider.pk}"]
    assert unnamed(outsider.pk) == f"annotator-{outsider.pk}"


def test_pseudonyms_sort_by_their_number_not_their_text():
    names = ["rater-10", "rater-2", "lena", "rater-1"]
    assert sorted(names, key=natural_order) == ["lena", "rater-1", "rater-2", "rater-10"]


@pytest.mark.django_db
def test_an_import_never_takes_a_person_for_an_imported_rater(taxonomy_version, lead):
    project = Project.objects.create(name="Import into", taxonomy_version=taxonomy_version)
    person = Membership.objects.create(project=project, user=lead, role=Role.LEAD)
    assert person.pseudonym == "rater-1"
    raters = rater_memberships(project, 2)
    assert lead.pk not in {m.user_id for m in raters}
    assert [m.pseudonym for m in raters] == ["rater-2", "rater-3"]
    # Run again (a second file of the same import): the same raters, found by their accounts.
    assert [m.pk for m in rater_memberships(project, 2)] == [m.pk for m in raters]
