"""Accounts that cannot impersonate, and API tokens that do not outlive a password.

Scenario: the study already has an account named ``admin``. Mallory, handed an invite link or
asking a lead for an account, tries names a reader cannot tell from it, or markup. Every way an
account is made refuses them with an error on the username field. Then Ada's API token: she
changes her password (or an admin does, or deactivates her), and the token she had stops working.
"""

from __future__ import annotations

import io
from html.parser import HTMLParser

import pytest
from django.contrib.auth.hashers import PBKDF2SHA1PasswordHasher, get_hasher, make_password
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse
from knox.models import AuthToken
from rest_framework.test import APIClient

from annotator.accounts import check_new_username, username_key
from annotator.models import Invite, Membership, Project, Role
from labeling.demo import DEMO_PROJECT
from tests.conftest import PASSWORD, make_user

pytestmark = pytest.mark.django_db

NEW_PASSWORD = "a sturdy new passphrase 42"

LOOK_ALIKES = {
    "upper case": "Admin",
    "zero-width space": "admin\u200b",
    "full-width letters": "\uff41\uff44\uff4d\uff49\uff4e",
    "markup": "<img src=x onerror=1>",
    "soft hyphen": "ad\u00admin",
    "right-to-left override": "\u202eadmin",
    "combining grapheme joiner": "adm\u034fin",
}


@pytest.fixture(autouse=True)
def fast_hashers(settings):
    # A fast hasher first; the second is there for the hash-upgrade scenario.
    settings.PASSWORD_HASHERS = [
        "django.contrib.auth.hashers.MD5PasswordHasher",
        "django.contrib.auth.hashers.PBKDF2SHA1PasswordHasher",
    ]


@pytest.fixture
def existing_admin(db):
    return User.objects.create_superuser("admin", password=PASSWORD)


@pytest.fixture
def site_admin(db):
    return User.objects.create_superuser("sam-siteadmin", password=PASSWORD)


class _FieldErrors(HTMLParser):
    """The input with a given id, and the text of the element its aria-describedby names."""

    def __init__(self, input_id: str):
        super().__init__()
        self.input_id = input_id
        self.input: dict[str, str | None] | None = None
        self.texts: dict[str, str] = {}
        self._open: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "input" and attrs.get("id") == self.input_id:
            self.input = attrs
        if attrs.get("id"):
            self._open.append(attrs["id"])
            self.texts.setdefault(attrs["id"], "")
        elif tag not in ("input", "br", "img", "meta", "link"):
            self._open.append("")

    def handle_endtag(self, tag):
        if self._open and tag not in ("input", "br", "img", "meta", "link"):
            self._open.pop()

    def handle_data(self, data):
        for element_id in self._open:
            if element_id:
                self.texts[element_id] += data


def username_error_shown(html: str, input_id: str) -> str:
    """The error text tied to the username input (aria-describedby), failing if there is none."""
    parser = _FieldErrors(input_id)
    parser.feed(html)
    assert parser.input is not None, f"no input #{input_id} on the page"
    assert parser.input.get("aria-invalid") == "true"
    described = (parser.input.get("aria-describedby") or "").split()
    errors = [parser.texts.get(i, "") for i in described if i.endswith("_error")]
    assert errors and errors[0].strip(), f"no error beside #{input_id}"
    return errors[0]


# --- The rule itself ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["ADMIN", "admin\u200b", "\uff41\uff44\uff4d\uff49\uff4e", "a\u00addmin"]
)
def test_look_alikes_share_the_key_of_the_name_they_imitate(name):
    assert username_key(name) == "admin"


def test_an_invisible_character_is_named_in_the_error(existing_admin):
    with pytest.raises(ValidationError) as refused:
        check_new_username("admin\u200b")
    assert "U+200B ZERO WIDTH SPACE" in refused.value.messages[0]


@pytest.mark.parametrize("name", ["vera.volunteer", "walt_2", "ops+bot@study", "admin-2"])
def test_ordinary_names_pass(existing_admin, name):
    assert check_new_username(name) == name


def test_a_look_alike_of_an_account_made_before_the_rule_is_refused(db):
    # A full-width name stored before this rule (bulk_create skips the model's checks).
    User.objects.bulk_create([User(username="\uff57\uff41\uff4c\uff54", password="!")])
    with pytest.raises(ValidationError) as refused:
        check_new_username("WALT")
    assert refused.value.code == "look_alike"


# --- Every way an account is made ---------------------------------------------------------


@pytest.mark.parametrize("name", LOOK_ALIKES.values(), ids=LOOK_ALIKES.keys())
def test_lead_add_volunteer_form_refuses_look_alikes(client, lead, project, existing_admin, name):
    accounts_before = User.objects.count()
    client.force_login(lead)
    response = client.post(
        reverse("add_volunteer", args=[project.pk]),
        {"username": name, "password": NEW_PASSWORD, "role": Role.ANNOTATOR},
    )
    assert response.status_code == 400
    assert "username" in response.context["volunteer_form"].errors
    username_error_shown(response.content.decode(), "volunteer_username")
    assert User.objects.count() == accounts_before
    assert not Membership.objects.filter(project=project, user__username=name).exists()


def test_lead_add_volunteer_form_keeps_the_lead_on_the_page_with_the_other_fields(
    client, lead, project, existing_admin
):
    client.force_login(lead)
    response = client.post(
        reverse("add_volunteer", args=[project.pk]),
        {
            "username": "Admin",
            "password": NEW_PASSWORD,
            "role": Role.RESEARCHER,
            "email": "r@x.org",
        },
    )
    html = response.content.decode()
    assert 'value="r@x.org"' in html  # filled in as the lead left it
    assert NEW_PASSWORD not in html  # but never the password
    assert "differs from an existing one only by letter case" in username_error_shown(
        html, "volunteer_username"
    )


@pytest.mark.parametrize("name", LOOK_ALIKES.values(), ids=LOOK_ALIKES.keys())
def test_invite_acceptance_refuses_look_alikes(client, lead, project, existing_admin, name):
    invite, token = Invite.issue_for(project, Role.ANNOTATOR, lead)
    response = client.post(
        reverse("accept_invite", args=[token]), {"username": name, "password": NEW_PASSWORD}
    )
    assert response.status_code == 400
    username_error_shown(response.content.decode(), "id_username")
    invite.refresh_from_db()
    assert invite.used_at is None  # the link still works for a proper name
    accepted = client.post(
        reverse("accept_invite", args=[token]), {"username": "mia", "password": NEW_PASSWORD}
    )
    assert accepted.status_code == 302
    assert Membership.objects.get(project=project, user__username="mia").role == Role.ANNOTATOR


def test_invite_form_errors_are_shown_on_the_page(client, lead, project):
    client.force_login(lead)
    response = client.post(reverse("create_invite", args=[project.pk]), {"role": "lead", "days": 0})
    assert response.status_code == 400
    assert "days" in response.context["invite_form"].errors
    assert Invite.objects.count() == 0


@pytest.mark.parametrize("name", LOOK_ALIKES.values(), ids=LOOK_ALIKES.keys())
def test_admin_add_user_refuses_look_alikes(client, site_admin, existing_admin, name):
    client.force_login(site_admin)
    response = client.post(
        reverse("admin:auth_user_add"),
        {
            "username": name,
            "password1": NEW_PASSWORD,
            "password2": NEW_PASSWORD,
            "usable_password": "true",
        },
    )
    assert response.status_code == 200  # the admin shows its form again
    assert "username" in response.context["adminform"].form.errors
    assert User.objects.count() == 2


def test_admin_add_user_accepts_a_proper_name(client, site_admin):
    client.force_login(site_admin)
    client.post(
        reverse("admin:auth_user_add"),
        {
            "username": "nora",
            "password1": NEW_PASSWORD,
            "password2": NEW_PASSWORD,
            "usable_password": "true",
        },
    )
    assert User.objects.filter(username="nora").exists()


def test_renaming_into_a_look_alike_is_refused_anywhere(existing_admin):
    mallory = make_user("mallory")
    mallory.username = "Admin"
    with pytest.raises(ValidationError):
        mallory.save()
    assert User.objects.get(pk=mallory.pk).username == "mallory"


def test_create_user_in_code_is_refused_too(existing_admin):
    with pytest.raises(ValidationError) as refused:
        User.objects.create_user("admin\u200b", password=PASSWORD)
    # Outside a form the message says which name, with the invisible character visible.
    assert "'admin\\u200b'" in refused.value.messages[0]


def test_createsuperuser_refuses_a_look_alike(existing_admin):
    with pytest.raises(CommandError, match="only by letter case"):
        call_command(
            "createsuperuser",
            username="\uff41\uff44\uff4d\uff49\uff4e",
            email="",
            interactive=False,
            stdout=io.StringIO(),
        )
    assert User.objects.count() == 1


def test_load_demo_refuses_to_add_a_look_alike_and_creates_nothing(settings, tmp_path):
    settings.DATA_DIR = tmp_path
    make_user("Demo-Lead")  # made before the demo: its demo-lead would be a look-alike
    with pytest.raises(CommandError, match="'demo-lead'"):
        call_command("load_demo", "--no-admin", stdout=io.StringIO())
    assert not Project.objects.filter(name=DEMO_PROJECT).exists()
    assert not User.objects.filter(username__startswith="demo-annotator").exists()


# --- API tokens ---------------------------------------------------------------------------


def _token_for(user: User, password: str = PASSWORD) -> str:
    response = APIClient().post(
        reverse("api_token"), {"username": user.username, "password": password}
    )
    assert response.status_code == 200, response.content
    return response.json()["token"]


def _api_status(token: str) -> int:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    return client.get(reverse("api_projects")).status_code


def test_a_password_change_revokes_the_api_token(client, annotator, project):
    token = _token_for(annotator)
    assert _api_status(token) == 200
    client.force_login(annotator)
    response = client.post(
        reverse("password_change"),
        {"old_password": PASSWORD, "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD},
        follow=True,
    )
    assert response.status_code == 200
    assert b"no longer works" in response.content
    assert _api_status(token) == 401
    fresh = _token_for(annotator, NEW_PASSWORD)
    assert fresh != token
    assert _api_status(fresh) == 200


def test_an_admin_setting_the_password_revokes_the_api_token(client, site_admin, annotator):
    token = _token_for(annotator)
    client.force_login(site_admin)
    response = client.post(
        reverse("admin:auth_user_password_change", args=[annotator.pk]),
        {"password1": NEW_PASSWORD, "password2": NEW_PASSWORD, "usable_password": "true"},
    )
    assert response.status_code == 302
    assert _api_status(token) == 401


def test_set_password_in_code_revokes_the_api_token(annotator):
    token = _token_for(annotator)
    annotator.set_password(NEW_PASSWORD)
    annotator.save()
    assert _api_status(token) == 401


def test_a_new_hash_saved_directly_revokes_the_api_token(annotator):
    token = _token_for(annotator)
    annotator.password = make_password(NEW_PASSWORD)
    annotator.save()
    assert _api_status(token) == 401


def test_deactivation_revokes_the_api_token_for_good(annotator):
    token = _token_for(annotator)
    annotator.is_active = False
    annotator.save()
    assert _api_status(token) == 401
    # Reactivated, the account needs a new token: the old one stays dead.
    annotator.is_active = True
    annotator.save()
    assert _api_status(token) == 401
    assert not AuthToken.objects.filter(user=annotator).exists()


def test_logging_in_or_editing_the_profile_keeps_the_token(client, annotator):
    token = _token_for(annotator)
    client.force_login(annotator)  # saves last_login
    annotator.first_name = "Ada"
    annotator.save()
    assert _api_status(token) == 200


def test_a_password_hash_upgrade_at_login_keeps_the_token(client, annotator):
    token = _token_for(annotator)
    # An older hasher's hash, stored behind the signals' back: the next login re-hashes it.
    # Its algorithm is what makes the login re-hash; a thousand rounds instead of the default
    # million keep the hashing and the login's check of it cheap.
    sha1 = PBKDF2SHA1PasswordHasher()
    User.objects.filter(pk=annotator.pk).update(
        password=sha1.encode(PASSWORD, sha1.salt(), iterations=1_000)
    )
    # Logging in on the login page re-hashes the same password (`/api/token/` would too, but
    # it makes a new token each time).
    response = client.post(reverse("login"), {"username": annotator.username, "password": PASSWORD})
    assert response.status_code == 302
    assert User.objects.get(pk=annotator.pk).password.startswith(get_hasher().algorithm + "$")
    assert _api_status(token) == 200


# --- The schema ---------------------------------------------------------------------------


def test_the_schema_needs_a_login(client, annotator):
    anonymous = client.get(reverse("api_schema"), {"format": "json"})
    assert anonymous.status_code in (401, 403)
    assert b"paths" not in anonymous.content
    client.force_login(annotator)
    assert client.get(reverse("api_schema"), {"format": "json"}).status_code == 200
    token = _token_for(annotator)
    with_token = APIClient()
    with_token.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    assert with_token.get(reverse("api_schema"), {"format": "json"}).status_code == 200
