"""API tokens, stored as hashes only (#28 review, L1; docs/SECURITY.md).

django-rest-knox keeps a token's SHA-512 digest and its first 15 characters (the lookup key),
never the token: the database, a backup of it or the admin holds nothing that opens the API.
A request's token is hashed and compared with `hmac.compare_digest` against the rows of its
lookup key. Tokens do not expire (`REST_KNOX["TOKEN_TTL"] = None`, as DRF's did); one token
per user, replaced on request and revoked with the password (`annotator.accounts`).

Keys made by DRF's `authtoken` (40 hex characters) were hashed in place by annotator migration
0013, so scripts keep working with the key they have; new keys are 64 hex characters. The
header stays `Authorization: Token <key>`.
"""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext_lazy as _
from drf_spectacular.contrib.knox_auth_token import KnoxTokenScheme
from knox.auth import TokenAuthentication as KnoxTokenAuthentication
from rest_framework import exceptions


class TokenAuthentication(KnoxTokenAuthentication):
    """knox's authentication, refusing a header that is not text with a 401 instead of a 500
    (knox decodes the token as UTF-8 without catching the error)."""

    def authenticate_credentials(self, token: bytes) -> Any:
        try:
            token.decode("utf-8")
        except UnicodeDecodeError:
            raise exceptions.AuthenticationFailed(_("Invalid token.")) from None
        return super().authenticate_credentials(token)


class TokenScheme(KnoxTokenScheme):
    """The OpenAPI schema's description of the header, for this subclass of knox's class."""

    target_class = "annotator.tokens.TokenAuthentication"
    name = "tokenAuth"  # as DRF's TokenAuthentication was named in the schema
