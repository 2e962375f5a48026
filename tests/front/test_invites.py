"""Leads create volunteer accounts or one-time invite links on the project page; annotators and
outsiders cannot, and a lead grants no more than her own role. (Accepting an invite is
tests/annotator/test_invites.py.)"""

import pytest
from django.contrib.auth.models import User

from annotator.models import Invite, Membership, Role
from tests.annotator.test_accounts_security import NEW_PASSWORD


@pytest.mark.django_db
def test_annotator_cannot_create_invites_and_outsider_sees_nothing(
    client, annotator, outsider, project
):
    client.force_login(annotator)
    assert (
        client.post(f"/projects/{project.pk}/invites/", {"role": "lead", "days": 7}).status_code
        == 404
    )
    client.force_login(outsider)
    assert client.get(f"/projects/{project.pk}/").status_code == 404
    assert Invite.objects.count() == 0


@pytest.mark.django_db
def test_lead_creates_a_volunteer_account(client, lead, project):
    client.force_login(lead)
    client.post(
        f"/projects/{project.pk}/volunteers/",
        {"username": "walt", "password": NEW_PASSWORD, "role": "researcher"},
    )
    assert Membership.objects.get(project=project, user__username="walt").role == "researcher"


@pytest.mark.django_db
def test_a_lead_cannot_grant_admin_but_an_admin_can(client, lead, project):
    client.force_login(lead)
    page = client.get(f"/projects/{project.pk}/")
    assert b'value="admin"' not in page.content
    client.post(f"/projects/{project.pk}/invites/", {"role": "admin", "days": 7})
    client.post(
        f"/projects/{project.pk}/volunteers/",
        {"username": "eve", "password": NEW_PASSWORD, "role": "admin"},
    )
    assert Invite.objects.count() == 0
    assert not User.objects.filter(username="eve").exists()
    Membership.objects.filter(project=project, user=lead).update(role=Role.ADMIN)
    client.post(f"/projects/{project.pk}/invites/", {"role": "admin", "days": 7})
    assert Invite.objects.get().role == Role.ADMIN


@pytest.mark.django_db
def test_annotators_do_not_see_how_many_issues_are_disputed(client, annotator, lead, project):
    client.force_login(annotator)
    assert b"disagreement queue" not in client.get(f"/projects/{project.pk}/").content
    assert client.get("/").context["rows"][0]["is_lead"] is False
    client.force_login(lead)
    assert b"disagreement queue" in client.get(f"/projects/{project.pk}/").content
