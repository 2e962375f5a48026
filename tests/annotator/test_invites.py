"""Leads create volunteer accounts or one-time invite links; a used link is refused."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from annotator.models import Invite, Membership, Role
from tests.conftest import PASSWORD

NEW_PASSWORD = "a sturdy new passphrase 42"


def _invite_link(client, lead, project, role="annotator"):
    client.force_login(lead)
    response = client.post(
        f"/projects/{project.pk}/invites/", {"role": role, "days": 7}, follow=True
    )
    message = next(str(m) for m in response.context["messages"])
    return message.split("single use): ")[1].replace("http://testserver", "")


@pytest.mark.django_db
def test_invite_used_once_then_refused(client, lead, project):
    link = _invite_link(client, lead, project)
    client.logout()
    first = client.post(link, {"username": "vera-volunteer", "password": NEW_PASSWORD})
    assert first.status_code == 302
    vera = User.objects.get(username="vera-volunteer")
    assert Membership.objects.get(project=project, user=vera).role == Role.ANNOTATOR
    client.logout()
    second = client.post(link, {"username": "mallory", "password": NEW_PASSWORD})
    assert second.status_code == 410
    assert b"already been used" in second.content
    assert not User.objects.filter(username="mallory").exists()
    assert client.get(link).status_code == 410


@pytest.mark.django_db
def test_only_a_hash_of_the_token_is_stored(lead, project):
    invite, token = Invite.issue_for(project, Role.ANNOTATOR, lead)
    assert token not in invite.token_hash
    assert Invite.lookup(token) == invite
    assert Invite.lookup(token + "x") is None


@pytest.mark.django_db
def test_expired_invite_is_refused(client, lead, project):
    invite, token = Invite.issue_for(project, Role.ANNOTATOR, lead)
    Invite.objects.filter(pk=invite.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    response = client.get(f"/invite/{token}/")
    assert response.status_code == 410
    assert b"expired" in response.content


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
def test_failed_logins_are_throttled(client, annotator):
    for _ in range(5):
        client.post("/accounts/login/", {"username": annotator.username, "password": "wrong"})
    # Even the right password is refused while the account is locked.
    locked = client.post("/accounts/login/", {"username": annotator.username, "password": PASSWORD})
    assert locked.status_code == 429
    assert b"Too many failed logins" in locked.content


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
