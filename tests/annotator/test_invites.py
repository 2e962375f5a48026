"""A one-time invite link is accepted once, then refused; an expired one too. Only its hash is
stored, and failed logins are throttled. (The lead's side, creating invites and accounts on the
project page, is tests/front/test_invites.py.)"""

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
def test_failed_logins_are_throttled(client, annotator):
    for _ in range(5):
        client.post("/accounts/login/", {"username": annotator.username, "password": "wrong"})
    # Even the right password is refused while the account is locked.
    locked = client.post("/accounts/login/", {"username": annotator.username, "password": PASSWORD})
    assert locked.status_code == 429
    assert b"Too many failed logins" in locked.content
