"""Taxonomy tests create several personas per test; a fast hasher keeps setup short.

(The default hasher is deliberately slow; these tests are not about passwords.)
"""

import pytest


@pytest.fixture(autouse=True)
def fast_password_hasher(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
