"""The one reader of issue URLs: an issue's forge, repository and number from its web URL.

The study's files name issues only by URL: `https://github.com/OWNER/NAME/issues/N` and
`https://gitee.com/OWNER/NAME/issues/IBD6YU` (Gitee numbers are alphanumeric and
case-sensitive). GitLab's `https://gitlab.com/GROUP/…/NAME/-/issues/N` (nested groups) is
accepted too. Also accepted, as a person copies them from a browser: `http`, `www.`, a
trailing slash, surrounding spaces (and a byte-order mark), a query string or a fragment
(`#issuecomment-…`), which name the same issue and are dropped.

The URL list import, the study label import and `manage.py sync github:owner/name` all read
through here, so they agree on what an issue URL is. The text is hostile: anything over 4 KiB
is not read; a part longer than its column is refused by `read_issue_url`; another scheme
(`javascript:`), another host (including `github.com.evil.example` and `user@github.com`), a
port, control, markup or escape characters in a segment, and a segment of only dots are
refused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.utils.translation import gettext

from ingest.models import Issue, Repository
from lib.inputlimits import column_limit

# Past this, text is not looked at (no URL of a forge issue comes near it).
MAX_TEXT = 4096
# What the issue and repository columns hold: `read_issue_url` refuses a longer value.
MAX_URL = column_limit(Issue, "url")
MAX_OWNER = column_limit(Repository, "owner")
MAX_NAME = column_limit(Repository, "name")
MAX_NUMBER = column_limit(Issue, "number")

HOSTS = {"github.com": "github", "gitee.com": "gitee", "gitlab.com": "gitlab"}

# One path segment: no separator, whitespace, query or fragment mark, control, markup or
# escape character (the old parsers' `[^/\s]+` less what no forge puts in an owner or a name).
_SEGMENT = r"[^/\s?#%&;=+,\x00-\x1f\x7f<>\"'`\\]+"
# scheme, optional www. (a GitLab URL never has it), host; then the path; then ?query/#fragment.
_URL = re.compile(
    r"^(?P<scheme>https?)://(?P<www>www\.)?(?P<host>[^/?#]*)(?P<path>/[^?#]*)?(?:[?#].*)?$",
    re.IGNORECASE | re.DOTALL,
)
_PATHS = {
    "github": re.compile(
        rf"^/(?P<owner>{_SEGMENT})/(?P<name>{_SEGMENT})/issues/(?P<number>\d+)/?$"
    ),
    "gitee": re.compile(
        rf"^/(?P<owner>{_SEGMENT})/(?P<name>{_SEGMENT})/issues/(?P<number>[A-Za-z0-9]+)/?$"
    ),
    "gitlab": re.compile(
        rf"^/(?P<owner>{_SEGMENT}(?:/{_SEGMENT})*)/(?P<name>{_SEGMENT})/-/issues/(?P<number>\d+)/?$"
    ),
}
# `manage.py sync`'s repository spec: `github:owner/name`, `gitlab:group/sub/name`.
_SPEC = re.compile(
    rf"^(?P<forge>github|gitee|gitlab):(?P<owner>{_SEGMENT}(?:/{_SEGMENT})*)/(?P<name>{_SEGMENT})$"
)


@dataclass(frozen=True)
class IssueRef:
    """One issue named by URL: its forge, repository (owner or group path, name) and number."""

    forge: str
    owner: str
    name: str
    number: str

    @property
    def repo_key(self) -> tuple[str, str, str]:
        return (self.forge, self.owner, self.name)

    @property
    def url(self) -> str:
        """The canonical URL on the forge's public host."""
        host = Repository.WEB_HOSTS[self.forge]
        sep = "/-/issues/" if self.forge == Repository.Forge.GITLAB else "/issues/"
        return f"https://{host}/{self.owner}/{self.name}{sep}{self.number}"


def _shape(text: str) -> IssueRef | str:
    text = text.strip().lstrip("\ufeff").strip()
    if len(text) > MAX_TEXT:
        return gettext("longer than %(limit)s characters") % {"limit": MAX_TEXT}
    m = _URL.match(text)
    if not m or not m["host"]:
        return gettext("not an issue URL")
    forge = HOSTS.get(m["host"].lower())
    if forge is None or (m["www"] and forge == "gitlab"):
        shown = f"{m['www'] or ''}{m['host']}"[:80]
        return gettext("unknown host %(host)s") % {"host": repr(shown)}
    parts = _PATHS[forge].match(m["path"] or "")
    if not parts or any(not seg.strip(".") for seg in (*parts["owner"].split("/"), parts["name"])):
        return gettext("not a %(forge)s issue URL") % {"forge": forge}
    return IssueRef(forge, parts["owner"], parts["name"], parts["number"])


def too_long(ref: IssueRef, url: str) -> str | None:
    """What of an issue URL is longer than its column holds, or None."""
    for what, value, limit in (
        (gettext("URL"), url.strip().lstrip("\ufeff").strip(), MAX_URL),
        (gettext("owner"), ref.owner, MAX_OWNER),
        (gettext("repository name"), ref.name, MAX_NAME),
        (gettext("issue number"), ref.number, MAX_NUMBER),
    ):
        if len(value) > limit:
            return gettext(
                "the %(what)s is too long, at most %(limit)s characters (this one has %(length)s)"
            ) % {"what": what, "limit": limit, "length": len(value)}
    return None


def read_issue_url(text: str) -> IssueRef | str:
    """An IssueRef that fits the issue and repository columns, or why `text` is not one (for a
    line-numbered message)."""
    ref = _shape(text)
    if isinstance(ref, str):
        return ref
    return too_long(ref, text) or ref


def parse_issue_url(text: str) -> IssueRef | None:
    """The forge, owner, name and number of an issue URL; None for an unknown forge or shape.
    Column lengths are the caller's to check (`too_long`), with its own message."""
    ref = _shape(text)
    return ref if isinstance(ref, IssueRef) else None


def has_extras(url: str) -> bool:
    """Whether a URL carries a query string or a fragment (parsed, but not the issue's own)."""
    return "?" in url or "#" in url


def parse_repo_spec(spec: str) -> tuple[str, str, str] | None:
    """(forge, owner, name) of `github:owner/name` (`gitlab:group/sub/name`), or None."""
    m = _SPEC.match(spec.strip())
    if not m or any(not seg.strip(".") for seg in (*m["owner"].split("/"), m["name"])):
        return None
    if len(m["owner"]) > MAX_OWNER or len(m["name"]) > MAX_NAME:
        return None  # the Repository columns
    return m["forge"], m["owner"], m["name"]
