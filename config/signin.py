"""Sign-in through the team's identity provider, configured from the environment.

`social_providers(environ)` turns the environment into django-allauth's
``SOCIALACCOUNT_PROVIDERS``: OpenID Connect providers (any provider by its discovery URL,
allauth's ``openid_connect`` provider with ``server_url``) and GitHub. Nothing configured gives
an empty dict: no provider buttons, and sign-in works exactly as with passwords alone.

* ``OIDC_PROVIDERS``: a JSON list of ``{"id", "name", "server_url", "client_id", "secret"}``,
  one per provider (Keycloak, GitLab, an institutional SSO);
* or one provider through ``OIDC_SERVER_URL``, ``OIDC_CLIENT_ID``, ``OIDC_CLIENT_SECRET`` and
  ``OIDC_NAME`` (its id is ``oidc``);
* ``GITHUB_CLIENT_ID`` and ``GITHUB_CLIENT_SECRET``: "Sign in with GitHub".

A bad value fails at start-up (ImproperlyConfigured) naming the variable and the entry; the
message never quotes a secret. A ``server_url`` must be https, except to a loopback host
(localhost, 127.0.0.0/8, ::1), so the token exchange and the id_token never cross a network in
clear text.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured

_PROVIDER_ID = re.compile(r"[a-z0-9][a-z0-9_-]{0,39}")
_OIDC_KEYS = frozenset({"id", "name", "server_url", "client_id", "secret"})


def is_loopback(host: str | None) -> bool:
    """Whether `host` (a URL's hostname, brackets stripped) names this machine: localhost,
    127.0.0.0/8 or ::1."""
    if not host:
        return False
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _server_url(value: Any, where: str) -> str:
    """The provider's issuer URL: https, since the token exchange carries the client secret
    and the id_token; plain http only to a loopback host (a provider on this machine, such as
    the tests')."""
    if not isinstance(value, str) or urlsplit(value).scheme not in ("https", "http"):
        raise ImproperlyConfigured(f"{where}: server_url must be an http(s) URL")
    parts = urlsplit(value)
    if not parts.netloc or not parts.hostname:
        raise ImproperlyConfigured(f"{where}: server_url has no host")
    if parts.scheme == "http" and not is_loopback(parts.hostname):
        raise ImproperlyConfigured(
            f"{where}: server_url must use https (plain http only for localhost, "
            "127.0.0.0/8 or ::1): the token exchange would travel in clear text"
        )
    return value


def _text(entry: Mapping[str, Any], key: str, where: str) -> str:
    value = entry.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ImproperlyConfigured(f"{where}: {key} is missing or empty")
    return value.strip()


def _oidc_app(entry: Mapping[str, Any], where: str) -> dict[str, Any]:
    unknown = sorted(set(entry) - _OIDC_KEYS)
    if unknown:
        raise ImproperlyConfigured(f"{where}: unknown keys {', '.join(unknown)}")
    provider_id = _text(entry, "id", where)
    if not _PROVIDER_ID.fullmatch(provider_id):
        raise ImproperlyConfigured(
            f"{where}: id must be lower-case letters, digits, - and _ (at most 40)"
        )
    return {
        "provider_id": provider_id,
        "name": _text(entry, "name", where),
        "client_id": _text(entry, "client_id", where),
        "secret": _text(entry, "secret", where),
        "settings": {"server_url": _server_url(entry.get("server_url"), where)},
    }


def _oidc_apps(environ: Mapping[str, str]) -> list[dict[str, Any]]:
    listed = environ.get("OIDC_PROVIDERS", "").strip()
    single = environ.get("OIDC_SERVER_URL", "").strip()
    if listed and single:
        raise ImproperlyConfigured("Set OIDC_PROVIDERS or OIDC_SERVER_URL, not both.")
    if single:
        entry = {
            "id": "oidc",
            "name": environ.get("OIDC_NAME", "").strip() or "Single sign-on",
            "server_url": single,
            "client_id": environ.get("OIDC_CLIENT_ID", ""),
            "secret": environ.get("OIDC_CLIENT_SECRET", ""),
        }
        return [_oidc_app(entry, "OIDC_SERVER_URL")]
    if not listed:
        return []
    try:
        entries = json.loads(listed)
    except json.JSONDecodeError as exc:
        # Its message gives the position only, never the text (which holds secrets).
        raise ImproperlyConfigured(f"OIDC_PROVIDERS is not JSON: {exc.msg} at {exc.pos}") from None
    if not isinstance(entries, list):
        raise ImproperlyConfigured("OIDC_PROVIDERS must be a JSON list of providers")
    apps = []
    for number, entry in enumerate(entries, start=1):
        where = f"OIDC_PROVIDERS entry {number}"
        if not isinstance(entry, dict):
            raise ImproperlyConfigured(f"{where}: must be a JSON object")
        apps.append(_oidc_app(entry, where))
    ids = [app["provider_id"] for app in apps]
    if len(set(ids)) != len(ids) or "github" in ids:
        raise ImproperlyConfigured("OIDC_PROVIDERS: every id must be unique and not github")
    return apps


def social_providers(environ: Mapping[str, str]) -> dict[str, Any]:
    """allauth's ``SOCIALACCOUNT_PROVIDERS`` from the environment (empty: none configured)."""
    providers: dict[str, Any] = {}
    oidc = _oidc_apps(environ)
    if oidc:
        # PKCE on every OpenID Connect exchange (a stolen code is worthless without the
        # verifier); the token endpoint's client authentication as the provider prefers.
        providers["openid_connect"] = {"APPS": oidc, "OAUTH_PKCE_ENABLED": True}
    github_id = environ.get("GITHUB_CLIENT_ID", "").strip()
    github_secret = environ.get("GITHUB_CLIENT_SECRET", "").strip()
    if bool(github_id) != bool(github_secret):
        raise ImproperlyConfigured(
            "Set both GITHUB_CLIENT_ID and GITHUB_CLIENT_SECRET, or neither."
        )
    if github_id:
        providers["github"] = {
            "APPS": [{"client_id": github_id, "secret": github_secret}],
            # The login name and public profile; no e-mail scope, no repository access.
            "SCOPE": ["read:user"],
        }
    return providers
