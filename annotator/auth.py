"""The login backend: Django's ModelBackend, with the user looked up by one prepared statement.

Every request of a logged-in volunteer loads their user row; through the ORM that cost more
Python than the query itself (see lib.sql). Passwords, permissions and everything else
are ModelBackend's.
"""

from __future__ import annotations

from functools import cache

from django.contrib.auth import backends, get_user_model

from lib import sql


@cache
def _user_sql() -> str:
    user_model = get_user_model()
    meta = user_model._meta
    return (
        f"SELECT {sql.columns(user_model, 'u')} FROM {meta.db_table} u"
        f" WHERE u.{meta.pk.column} = %(id)s"
    )


class ModelBackend(backends.ModelBackend):
    def get_user(self, user_id):
        row = sql.first(_user_sql(), {"id": user_id})
        if row is None:
            return None
        user, _ = sql.model_from_row(get_user_model(), row)
        return user if self.user_can_authenticate(user) else None
