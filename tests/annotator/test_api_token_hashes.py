"""API tokens kept as hashes (#28 review, L1).

Scenario: Ada (an annotator) gets a token from `/api/token/` for a script, Bruno (a lead) one
on his account page. Mallory reads the database (a leaked backup, or the admin): nothing she
finds there opens the API, while Ada's and Bruno's keys do. Ada asks `/api/token/` again: she
gets a new key, never the old one, which stops working. A key DRF stored in clear before the
upgrade keeps working once the migration has hashed it, and the admin has no token page.
"""

from __future__ import annotations

import importlib
from datetime import UTC, datetime

import pytest
from django.contrib import admin
from django.contrib.auth.models import User
from django.db import connection
from django.urls import reverse
from knox.models import AuthToken
from rest_framework.test import APIClient

from tests.conftest import PASSWORD

pytestmark = pytest.mark.django_db

MIGRATION = importlib.import_module("annotator.migrations.0013_sec_hashed_api_tokens")


def opens_the_api(value: str) -> bool:
    """Whether `value`, sent as a bearer token, opens the API (200; refused: 401)."""
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {value}")
    status = client.get(reverse("api_projects")).status_code
    assert status in (200, 401), status
    return status == 200


def token_from_the_api(user: User) -> dict:
    response = APIClient().post(
        reverse("api_token"), {"username": user.username, "password": PASSWORD}
    )
    assert response.status_code == 200, response.content
    return response.json()


def token_from_the_page(client, user: User) -> str:
    client.force_login(user)
    page = client.post(reverse("api_token_page"), {"action": "create"}, follow=True)
    page = page.content.decode()
    return page.split('<code id="new-token">')[1].split("</code>")[0]


def every_stored_value() -> list[str]:
    """Every non-empty text of every row of the token table, read with SQL (not the model)."""
    table = connection.ops.quote_name(AuthToken._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT * FROM {table}")  # every column, whatever knox adds
        rows = cursor.fetchall()
    return [str(value) for row in rows for value in row if value not in (None, "")]


def test_the_token_table_holds_no_usable_key(client, annotator, lead, project):
    keys = [token_from_the_api(annotator)["token"], token_from_the_page(client, lead)]
    assert all(opens_the_api(key) for key in keys)  # the probe fires on a real key
    stored = every_stored_value()
    assert len(stored) >= 2 * 4  # digest, lookup prefix, user, created for each token
    assert not any(opens_the_api(value) for value in stored)
    # Nor is a key in any column: only its first 15 characters, the lookup prefix.
    assert not any(key in value for key in keys for value in stored)
    # The probe can fail: a table that held the key itself would be caught.
    assert any(opens_the_api(value) for value in [*stored, keys[0]])


def test_a_second_call_gives_a_new_key_and_never_the_old_one(annotator, project):
    first = token_from_the_api(annotator)
    assert set(first) == {"token", "created"}
    second = token_from_the_api(annotator)
    assert second["token"] != first["token"]
    assert opens_the_api(second["token"]) and not opens_the_api(first["token"])
    assert AuthToken.objects.filter(user=annotator).count() == 1


def test_a_wrong_password_gets_no_token(annotator):
    response = APIClient().post(
        reverse("api_token"), {"username": annotator.username, "password": "not it"}
    )
    assert response.status_code == 400
    assert "token" not in response.json()
    assert not AuthToken.objects.exists()


def test_a_header_that_is_not_text_is_refused_not_an_error(annotator):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=b"Token \xff\xfe\xfd".decode("latin-1"))
    assert client.get(reverse("api_projects")).status_code == 401


def _old_table(user: User, key: str, created: datetime) -> None:
    """DRF authtoken's table as an older database has it, with one key in clear."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE TABLE {MIGRATION.OLD_TABLE} (key varchar(40) PRIMARY KEY,"
            " created timestamp with time zone NOT NULL, user_id integer NOT NULL)"
        )
        cursor.execute(
            f"INSERT INTO {MIGRATION.OLD_TABLE} VALUES (%s, %s, %s)", [key, created, user.pk]
        )


def test_the_migration_hashes_a_clear_key_which_keeps_working(annotator, project):
    key = "9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b"  # DRF's shape: 40 hex characters
    created = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)
    assert not opens_the_api(key)
    _old_table(annotator, key, created)
    assert MIGRATION.move_clear_tokens(connection, AuthToken) == 1
    assert MIGRATION.OLD_TABLE not in connection.introspection.table_names()
    assert opens_the_api(key)
    token = AuthToken.objects.get(user=annotator)
    assert (token.created, token.expiry) == (created, None)
    assert not any(opens_the_api(value) for value in every_stored_value())
    # A new database never had the table: nothing to move.
    assert MIGRATION.move_clear_tokens(connection, AuthToken) == 0


def test_the_admin_has_no_token_pages(client, db):
    sam = User.objects.create_superuser("sam-siteadmin", password=PASSWORD)
    assert not admin.site.is_registered(AuthToken)
    client.force_login(sam)
    index = client.get(reverse("admin:index")).content.decode()
    assert "/admin/auth/user/" in index  # the probe: the index lists models
    assert "/admin/knox/" not in index and "authtoken" not in index.lower()
    assert client.get("/admin/knox/authtoken/").status_code == 404
