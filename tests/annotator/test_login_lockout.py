"""Failed logins lock one account from one address, never everyone there (#28 review, I5).

Scenario: Sam and Tom are the site's admins and work behind one office address. Mallory, at
that address too, tries five wrong passwords for Sam on `/admin/login/`. Sam's own right
password then waits out the lock from that address (brute force stays throttled), while Tom
signs in from the same address, and Sam from home. The site's login page and `/api/token/`
count the same way.
"""

from __future__ import annotations

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.urls import reverse
from rest_framework.test import APIClient

from tests.conftest import PASSWORD

pytestmark = pytest.mark.django_db

OFFICE = "203.0.113.7"
HOME = "198.51.100.20"


@pytest.fixture
def admins(db) -> tuple[User, User]:
    return (
        User.objects.create_superuser("sam-admin", password=PASSWORD),
        User.objects.create_superuser("tom-admin", password=PASSWORD),
    )


def attempt(client, url: str, username: str, password: str, address: str) -> int:
    response = client.post(url, {"username": username, "password": password}, REMOTE_ADDR=address)
    return response.status_code


def signed_in(url: str, username: str, address: str) -> bool:
    """Whether the right password signs `username` in from `address` (a fresh browser)."""
    from django.test import Client

    status = attempt(Client(), url, username, PASSWORD, address)
    assert status in (200, 302, 429), status
    return status == 302


@pytest.mark.parametrize("url_name", ["admin:login", "login"])
def test_wrong_passwords_for_one_account_lock_only_that_account_from_that_address(
    client, admins, url_name
):
    url = reverse(url_name)
    assert settings.AXES_FAILURE_LIMIT == 5
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert attempt(client, url, "sam-admin", "guess", OFFICE) == 200  # the form again
    assert attempt(client, url, "sam-admin", "guess", OFFICE) == 429  # the fifth locks
    # The lock holds Sam's right password too, from that address: guessing stays throttled.
    assert not signed_in(url, "sam-admin", OFFICE)
    # Nobody else at the address is locked out, nor Sam elsewhere.
    assert signed_in(url, "tom-admin", OFFICE)
    assert signed_in(url, "sam-admin", HOME)
    # And still locked at the office after those successes.
    assert not signed_in(url, "sam-admin", OFFICE)


def test_four_wrong_passwords_do_not_lock(client, admins):
    url = reverse("admin:login")
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert attempt(client, url, "sam-admin", "guess", OFFICE) == 200
    assert signed_in(url, "sam-admin", OFFICE)


def test_the_token_endpoint_counts_per_account_and_address(admins):
    url = reverse("api_token")

    def status(username: str, password: str, address: str) -> int:
        data = {"username": username, "password": password}
        return APIClient().post(url, data, REMOTE_ADDR=address).status_code

    for _ in range(settings.AXES_FAILURE_LIMIT):
        assert status("sam-admin", "guess", OFFICE) in (400, 429)
    locked = APIClient().post(
        url, {"username": "sam-admin", "password": PASSWORD}, REMOTE_ADDR=OFFICE
    )
    assert locked.status_code == 429
    assert "locked for 15 minutes" in locked.json()["detail"]
    assert "token" not in locked.json()
    assert status("tom-admin", PASSWORD, OFFICE) == 200
    assert status("sam-admin", PASSWORD, HOME) == 200
