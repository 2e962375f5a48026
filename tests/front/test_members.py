"""Scenario: a lead makes accounts and names members; every member has a pseudonym."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotator.models import Membership, Role
from tests.annotator.test_accounts_security import NEW_PASSWORD, username_error_shown
from tests.conftest import make_user

pytestmark = pytest.mark.django_db


def test_a_short_password_is_refused_beside_its_field_with_the_typed_values_kept(
    client, lead, project
):
    client.force_login(lead)
    response = client.post(
        reverse("add_volunteer", args=[project.pk]),
        {"username": "vera.volunteer", "password": "short", "role": Role.ANNOTATOR},
    )
    assert response.status_code == 400
    html = response.content.decode()
    assert "__all__" not in html
    assert "too short" in username_error_shown(html, "volunteer_password")
    assert 'value="vera.volunteer"' in html  # the username the lead typed stays
    assert not Membership.objects.filter(user__username="vera.volunteer").exists()


def test_a_new_member_gets_the_projects_next_rater_number(client, lead, project):
    highest = max(
        int(p.split("-")[1]) for p in project.memberships.values_list("pseudonym", flat=True)
    )
    client.force_login(lead)
    client.post(
        reverse("add_volunteer", args=[project.pk]),
        {"username": "walt_2", "password": NEW_PASSWORD, "role": Role.ANNOTATOR},
    )
    member = Membership.objects.get(user__username="walt_2")
    assert member.pseudonym == f"rater-{highest + 1}"
    # Every way a member joins gets one: a bare create too.
    other = Membership.objects.create(project=project, user=make_user("xena"), role=Role.ANNOTATOR)
    assert other.pseudonym == f"rater-{highest + 2}"


def test_the_lead_renames_a_pseudonym_and_a_taken_one_is_refused_beside_it(
    client, lead, project, annotator, other_annotator
):
    member = Membership.objects.get(project=project, user=annotator)
    taken = Membership.objects.get(project=project, user=other_annotator).pseudonym
    url = reverse("rename_member", args=[project.pk, member.pk])
    field = f"member-{member.pk}-pseudonym"
    client.force_login(lead)

    refused = client.post(url, {field: taken.upper()})
    assert refused.status_code == 400
    html = refused.content.decode()
    assert "another member's pseudonym" in username_error_shown(html, f"id_{field}")
    assert f'value="{taken.upper()}"' in html
    assert client.post(url, {field: "<b>x</b>"}).status_code == 400

    assert client.post(url, {field: " Ada L "}).status_code == 302
    member.refresh_from_db()
    assert member.pseudonym == "Ada L"


def test_only_a_lead_renames(client, project, annotator, researcher, outsider):
    member = Membership.objects.get(project=project, user=annotator)
    url = reverse("rename_member", args=[project.pk, member.pk])
    for user in (annotator, researcher, outsider):
        client.force_login(user)
        assert client.post(url, {f"member-{member.pk}-pseudonym": "me"}).status_code == 404
    member.refresh_from_db()
    assert member.pseudonym != "me"
