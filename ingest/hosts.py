"""Where the ingest may send requests: forge API hosts, the admin's allowlist, public addresses.

A repository's API URL is chosen by a lead, and every URL the client follows after it (a
`Link: rel="next"`, a redirect) is chosen by the forge; both are hostile. So:

* An API URL must name a forge's public API host (`Repository.DEFAULT_API_URLS`: api.github.com,
  gitee.com, gitlab.com, each for its own forge) or a host an admin listed in FORGE_API_HOSTS
  (GitHub Enterprise, a self-hosted GitLab, the tests' fake forge), over https; plain http only
  for an entry written with an explicit `http://`. No user name or password in the URL, no
  query, no fragment (`base_url_refused`: the base URL's rule, shared with the model
  endpoints; not checked per request, whose URLs may carry a query). `check_api_url` says why
  a URL is refused (forms, the CLI).
* The public forge hosts (API and web: api.github.com, github.com, gitee.com, gitlab.com) are
  reached only as themselves: https on port 443, whatever FORGE_API_HOSTS says (they serve no
  other port, so another one is not theirs).
* A forge token goes only to an origin bound to its forge (`token_allowed`): the forge's own
  public API host on https port 443, or an exact origin an admin listed for that forge in
  FORGE_TOKEN_HOSTS (`github=host[:port]`, `gitlab=…`, `gitee=…`; `forge=http://host[:port]`
  for plain http). An entry that names no forge, or another forge's public host, is a
  configuration error: every process refuses to start (`IngestConfig.ready`).
* Every request goes through `ForgeSession`, whose adapter checks the URL's host against the
  same rule, and whose connections resolve the host name themselves and refuse a private,
  loopback, link-local, reserved or multicast address (IPv4-mapped and 6to4 forms included)
  before connecting, then connect to the address they checked: a DNS answer that changes
  between a check and the connection (rebinding) cannot slip an internal address in. A host an
  admin listed is trusted as it is (a self-hosted forge may well be on a private network).
* The session follows no redirects itself and ignores proxy variables and .netrc
  (`trust_env=False`: .netrc would add credentials of its own); the forge client follows
  redirects by hand, only within the API URL's origin (`same_origin`).

FORGE_API_HOSTS entries: `host`, `host:port`, `https://host[:port]` or `http://host[:port]`;
an entry without a port allows any port of that host. FORGE_TOKEN_HOSTS entries are exact: one
without a port means the scheme's default port (443, or 80 for `http://`).

The same rule, with another allowlist, guards the machine raters' model endpoints
(`MODEL_API_HOSTS`, `raters.llm`): `base_url_refused(url, setting=MODEL_API_HOSTS)`. That list
has no public defaults, so only a listed host may be named (a loopback server only when
listed).
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import threading
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

import requests
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.utils.translation import gettext
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import ConnectTimeoutError, NameResolutionError, NewConnectionError
from urllib3.util import connection as urllib3_connection

from ingest.models import Repository

DEFAULT_PORTS = {"http": 80, "https": 443}
# The allowlists (settings) this rule reads: the forges' (with public defaults) and the model
# endpoints' (none).
FORGE_API_HOSTS = "FORGE_API_HOSTS"
MODEL_API_HOSTS = "MODEL_API_HOSTS"
# NAT64 embeds an IPv4 address in its last 32 bits; a gateway would connect to it.
NAT64 = ipaddress.ip_network("64:ff9b::/96")


class HostRefused(Exception):
    """A URL the ingest must not send a request to; the message says why.

    Deliberately not an OSError: urllib3 and requests retry and wrap those, and this must stop
    the request as it is.
    """


@dataclass(frozen=True)
class AllowedHost:
    host: str
    port: int | None  # None: any port
    http: bool  # plain http allowed too

    def allows(self, scheme: str, host: str, port: int) -> bool:
        return (
            host == self.host
            and (self.port is None or self.port == port)
            and (scheme == "https" or self.http)
        )


def parse_allowed_host(entry: str, setting: str = FORGE_API_HOSTS) -> AllowedHost:
    """One allowlist entry; ImproperlyConfigured naming the setting and entry if it is not one."""
    text = entry.strip()
    has_scheme = "://" in text
    parts = urlsplit(text if has_scheme else f"https://{text}")
    try:
        port = parts.port
    except ValueError:
        port = -1
    if (
        parts.scheme not in DEFAULT_PORTS
        or not parts.hostname
        or port == -1
        or parts.path.strip("/")
        or parts.query
        or parts.fragment
        or parts.username is not None
    ):
        raise ImproperlyConfigured(
            f"{setting}: {entry!r} is not a host, host:port, https://host[:port] or "
            "http://host[:port]"
        )
    return AllowedHost(parts.hostname.lower(), port, parts.scheme == "http")


@lru_cache(maxsize=8)
def _parse_all(setting: str, entries: tuple[str, ...]) -> tuple[AllowedHost, ...]:
    return tuple(parse_allowed_host(e, setting) for e in entries if e.strip())


def allowed_hosts(setting: str = FORGE_API_HOSTS) -> tuple[AllowedHost, ...]:
    """An admin's allowlist (FORGE_API_HOSTS, or MODEL_API_HOSTS), read at every call: tests
    change it."""
    return _parse_all(setting, tuple(getattr(settings, setting, ()) or ()))


def forge_api_host(forge: str) -> str:
    """The public API host of a forge (api.github.com …); empty for an unknown forge."""
    return (urlsplit(Repository.DEFAULT_API_URLS.get(forge, "")).hostname or "").lower()


def public_hosts() -> dict[str, str]:
    """Every public forge host, API and web (api.github.com, github.com, gitee.com,
    gitlab.com), with the forge it belongs to."""
    hosts = {forge_api_host(f): f for f in Repository.DEFAULT_API_URLS}
    hosts.update((host.lower(), f) for f, host in Repository.WEB_HOSTS.items())
    return hosts


@dataclass(frozen=True)
class TokenOrigin:
    """Where one forge's token may go: that forge, and one exact scheme, host and port."""

    forge: str
    scheme: str
    host: str
    port: int


def parse_token_host(entry: str) -> TokenOrigin:
    """One FORGE_TOKEN_HOSTS entry, `forge=host[:port]` (https; port 443 when none is given)
    or `forge=http://host[:port]`; ImproperlyConfigured naming the entry if it is not one."""
    forge, equals, where = entry.strip().partition("=")
    forge = forge.strip().lower()
    forges = sorted(Repository.DEFAULT_API_URLS)
    if not equals or forge not in forges:
        raise ImproperlyConfigured(
            f"FORGE_TOKEN_HOSTS: {entry!r} names no forge. Each entry binds one forge's token "
            f"to one origin: {', '.join(f'{f}=host[:port]' for f in forges)} "
            "(or forge=http://host[:port] for plain http)."
        )
    listed = parse_allowed_host(where, "FORGE_TOKEN_HOSTS")
    scheme = "http" if listed.http else "https"
    owner = public_hosts().get(listed.host)
    if owner is not None and owner != forge:
        raise ImproperlyConfigured(
            f"FORGE_TOKEN_HOSTS: {entry!r}: {listed.host} is {owner}'s public host; "
            f"it receives only the {owner} token."
        )
    return TokenOrigin(forge, scheme, listed.host, listed.port or DEFAULT_PORTS[scheme])


@lru_cache(maxsize=8)
def _parse_token_hosts(entries: tuple[str, ...]) -> frozenset[TokenOrigin]:
    return frozenset(parse_token_host(e) for e in entries if e.strip())


def token_origins() -> frozenset[TokenOrigin]:
    """The admin's FORGE_TOKEN_HOSTS, read at every call: tests change it."""
    return _parse_token_hosts(tuple(getattr(settings, "FORGE_TOKEN_HOSTS", ()) or ()))


def token_allowed(forge: str, api_url: str) -> bool:
    """Whether this forge's token may be sent to `api_url`.

    Any lead can add a repository with its own API URL; without this check the server's tokens
    would go to whatever host they name. Only the forge's own public API host (https, port
    443) and the exact origins listed for this very forge in FORGE_TOKEN_HOSTS receive it; a
    repository of one forge pointed at a host listed for another gets no token.
    """
    if url_allowed(api_url, forge):
        return False
    scheme, host, port = origin(api_url)  # url_allowed has read the port
    if scheme == "https" and port == 443 and host == forge_api_host(forge):
        return True
    return TokenOrigin(forge, scheme, host, port) in token_origins()


def origin(url: str) -> tuple[str, str, int]:
    """(scheme, host, port) of a URL, the port made explicit; ValueError for a bad port."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    return scheme, (parts.hostname or "").lower(), parts.port or DEFAULT_PORTS.get(scheme, 0)


def same_origin(url: str, base: str) -> bool:
    """Whether `url` is on the scheme, host and port of `base` (where credentials may go)."""
    try:
        return origin(url) == origin(base)
    except ValueError:
        return False


def is_listed(host: str, setting: str = FORGE_API_HOSTS) -> bool:
    """Whether an admin listed this host in the allowlist (any scheme or port)."""
    host = host.lower().rstrip(".")
    return any(entry.host == host for entry in allowed_hosts(setting))


def url_allowed(url: str, forge: str | None = None, setting: str = FORGE_API_HOSTS) -> str:
    """Why a request to `url` is refused ("" if it may go): scheme, host and port.

    `forge`: the public API host of that forge only; None: of any forge (the session, which
    does not know the forge, checks every request this way). `setting`: the allowlist; only
    FORGE_API_HOSTS adds the forges' public hosts to it.
    """
    try:
        scheme, host, port = origin(url)
    except ValueError:
        return gettext("the port is not a number")
    if scheme not in DEFAULT_PORTS:
        if not scheme:
            return gettext("no scheme: only https (or http for a listed host)")
        return gettext("%(scheme)s scheme: only https (or http for a listed host)") % {
            "scheme": scheme
        }
    if not host:
        return gettext("no host")
    parts = urlsplit(url)
    if parts.username is not None or parts.password is not None:
        return gettext("a user name or password in the URL")
    if host in public_hosts() and (scheme, port) != ("https", 443):
        # Checked before the allowlist: a listed public host does not open its other ports.
        return gettext("%(host)s is reached over https only, on port 443") % {"host": host}
    if any(entry.allows(scheme, host, port) for entry in allowed_hosts(setting)):
        return ""
    forges = [forge] if forge else list(Repository.DEFAULT_API_URLS)
    known = {forge_api_host(f) for f in forges} if setting == FORGE_API_HOSTS else set()
    if host in known:
        return ""
    if is_listed(host, setting):
        return gettext("%(origin)s is not allowed by %(setting)s (scheme or port)") % {
            "origin": f"{scheme}://{host}:{port}",
            "setting": setting,
        }
    if not known:
        return gettext("%(host)s is not listed in %(setting)s") % {"host": host, "setting": setting}
    names = ", ".join(sorted(known))
    return gettext("%(host)s is not a forge API host (%(names)s) nor listed in FORGE_API_HOSTS") % {
        "host": host,
        "names": names,
    }


def base_url_refused(url: str, forge: str | None = None, setting: str = FORGE_API_HOSTS) -> str:
    """Why a base URL a lead configures (a repository's API URL, a model endpoint) is refused
    ("" if it may be used): `url_allowed`'s rule, and no query or fragment, since paths are
    joined onto a base and a query there would be dropped or carried into every request.

    Not part of `url_allowed` itself, which also checks each request: a forge's next page
    (`Link: rel="next"`, `?page=2`) carries a query, as may any request a client builds.
    """
    if "?" in url or "#" in url:
        return gettext("a base URL has no query or fragment")
    return url_allowed(url, forge, setting)


def refused_address(address: str) -> str:
    """Why an IP address must not be connected to ("" if it may): not a public address."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])  # drop an IPv6 zone (fe80::1%eth0)
    embedded = None
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = ip.ipv4_mapped or ip.sixtofour or (ip.teredo or (None, None))[1]
        if embedded is None and ip in NAT64:
            embedded = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    for candidate in (embedded, ip):  # the embedded IPv4 address first: it is where it goes
        if candidate is None:
            continue
        if candidate.is_loopback:
            return gettext("%(address)s is a loopback address") % {"address": address}
        if candidate.is_link_local:
            return gettext("%(address)s is a link-local address") % {"address": address}
        if candidate.is_unspecified or candidate.is_multicast:
            return gettext("%(address)s is not a public address") % {"address": address}
        if candidate.is_private:
            return gettext("%(address)s is a private address") % {"address": address}
        if not candidate.is_global:
            return gettext("%(address)s is not a public address") % {"address": address}
    return ""


def public_addresses(host: str, port: int) -> list[str]:
    """The addresses `host` resolves to, all of them public, else HostRefused naming the one
    that is not (a name resolving to a public and a private address is refused whole).
    socket.gaierror when the name does not resolve."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    addresses: list[str] = []
    for _family, _type, _proto, _name, sockaddr in infos:
        address = str(sockaddr[0])
        why = refused_address(address)
        if why:
            raise HostRefused(gettext("%(host)s resolves to %(why)s") % {"host": host, "why": why})
        if address not in addresses:
            addresses.append(address)
    return addresses


def check_api_url(forge: str, url: str) -> str:
    """A repository's API URL made canonical (no trailing slash), or HostRefused saying why
    it cannot be one. A host name that does not resolve now is accepted (the forge may be
    down); it is checked again at every request."""
    url = url.strip()
    parts = urlsplit(url)
    why = base_url_refused(url, forge)
    if why:
        raise HostRefused(why)
    host = parts.hostname or ""
    if not is_listed(host):
        with contextlib.suppress(socket.gaierror, UnicodeError):
            public_addresses(host, origin(url)[2])
    return url.rstrip("/")


# -- the guarded session -------------------------------------------------------------------


class _GuardedConnectionMixin:
    """Resolve the host here, refuse any address that is not public, connect to the address
    that was checked (never resolve twice)."""

    def _new_conn(self) -> socket.socket:
        if is_listed(self.host):  # type: ignore[attr-defined]
            return super()._new_conn()  # type: ignore[misc]
        try:
            addresses = public_addresses(self._dns_host, self.port)  # type: ignore[attr-defined]
        except socket.gaierror as exc:
            raise NameResolutionError(self.host, self, exc) from exc  # type: ignore[attr-defined,arg-type]
        error: Exception | None = None
        for address in addresses:
            try:
                return urllib3_connection.create_connection(
                    (address, self.port),  # type: ignore[attr-defined]
                    self.timeout,  # type: ignore[attr-defined]
                    source_address=self.source_address,  # type: ignore[attr-defined]
                    socket_options=self.socket_options,  # type: ignore[attr-defined]
                )
            except TimeoutError as exc:
                error = ConnectTimeoutError(self, f"Connection to {self.host} timed out.")  # type: ignore[attr-defined]
                error.__cause__ = exc
            except OSError as exc:
                error = NewConnectionError(self, f"Failed to establish a new connection: {exc}")  # type: ignore[arg-type]
                error.__cause__ = exc
        assert error is not None
        raise error


class GuardedHTTPConnection(_GuardedConnectionMixin, HTTPConnection):
    pass


class GuardedHTTPSConnection(_GuardedConnectionMixin, HTTPSConnection):
    pass


class GuardedHTTPConnectionPool(HTTPConnectionPool):
    ConnectionCls = GuardedHTTPConnection


class GuardedHTTPSConnectionPool(HTTPSConnectionPool):
    ConnectionCls = GuardedHTTPSConnection


class GuardedAdapter(HTTPAdapter):
    """Checks every request's URL (`url_allowed`) and connects through guarded connections."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {
            "http": GuardedHTTPConnectionPool,
            "https": GuardedHTTPSConnectionPool,
        }

    def send(
        self, request: requests.PreparedRequest, *args: Any, **kwargs: Any
    ) -> requests.Response:
        why = url_allowed(request.url or "")
        if why:
            raise HostRefused(f"request refused: {why}")
        return super().send(request, *args, **kwargs)


class ForgeSession(requests.Session):
    """The only session the ingest talks to forges with (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__()
        self.trust_env = False  # no proxy variables, no .netrc credentials
        adapter = GuardedAdapter()
        self.mount("http://", adapter)
        self.mount("https://", adapter)


# -- links a forge returns -------------------------------------------------------------------


def web_origin_ok(repository: Repository, url: str) -> bool:
    """Whether `url` may be stored as an issue's link (a forge's `html_url` / `web_url`):
    https on the forge's web host (github.com, gitee.com, gitlab.com) for a repository on a
    forge's public API, or on the API URL's own host for one on a host an admin listed (GitHub
    Enterprise, a self-hosted GitLab: one host serves both), where plain http is allowed only
    when the API URL itself is http. Anything else (`javascript:`, `data:`, another host) is
    not a link to this repository's issue."""
    try:
        scheme, host, port = origin(url)
        api_scheme, api_host, _ = origin(repository.api_url)
    except ValueError:
        return False
    parts = urlsplit(url)
    if parts.username is not None or parts.password is not None or not host:
        return False
    if api_host == forge_api_host(repository.forge):
        on_web_host = host == Repository.WEB_HOSTS.get(repository.forge)
        return scheme == "https" and port == 443 and on_web_host
    return host == api_host and (scheme == "https" or (scheme == "http" == api_scheme))


_sessions = threading.local()


def forge_session() -> ForgeSession:
    """One HTTP session per thread, kept between pages: the connection to the forge stays open.
    Tokens travel per request, never in the session."""
    session = getattr(_sessions, "session", None)
    if session is None:
        session = _sessions.session = ForgeSession()
    return session
