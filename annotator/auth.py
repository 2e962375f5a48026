"""The login backend: Django's ModelBackend, with the user looked up by one prepared statement.

With ``LOCAL_PASSWORDS`` off, it accepts a password from staff only (the admin's login page);
everyone else signs in through an identity provider (annotator.signin). Every path that checks
a password (the login page, /api/token/) goes through here.

Every request of a logged-in volunteer loads their user row; through the ORM that cost more
Python than the query itself (see lib.sql). Passwords, permissions and everything else
are ModelBackend's.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from django.conf import settings
from django.contrib.auth import backends, get_user_model
from django.contrib.auth.models import User
from django.http import HttpRequest

from lib import sql


def passwords_allowed(user: Any = None) -> bool:
    """Whether a password may sign `user` in (None: whether the password forms are shown):
    always, unless ``LOCAL_PASSWORDS`` is off, and then for staff only."""
    if settings.LOCAL_PASSWORDS:
        return True
    return user is not None and bool(user.is_staff)


@cache
def _user_sql() -> str:
    user_model = get_user_model()
    meta = user_model._meta
    return (
        f"SELECT {sql.columns(user_model, 'u')} FROM {meta.db_table} u"
        f" WHERE u.{meta.pk.column} = %(id)s"
    )


class ModelBackend(backends.ModelBackend):
    def authenticate(
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        **kwargs: Any,
    ) -> User | None:
        user = super().authenticate(request, username=username, password=password, **kwargs)
        return user if user is not None and passwords_allowed(user) else None

    def get_user(self, user_id: Any) -> User | None:
        row = sql.first(_user_sql(), {"id": user_id})
        if row is None:
            return None
        user, _ = sql.model_from_row(get_user_model(), row)
        return user if self.user_can_authenticate(user) else None
