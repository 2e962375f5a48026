"""Recognise an issue's forge, repository and number from its web URL.

The study's files name issues only by URL: `https://github.com/OWNER/NAME/issues/N` and
`https://gitee.com/OWNER/NAME/issues/IBD6YU` (Gitee numbers are alphanumeric and
case-sensitive). GitLab's `https://gitlab.com/GROUP/…/NAME/-/issues/N` is accepted too.

Writing them back (`study_issue_url`): the URL a forge returned is hostile, so the study export
writes it only when it is the issue URL of that very issue, and the canonical URL otherwise.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from ingest.models import Repository

_PATTERNS = [
    (
        Repository.Forge.GITHUB,
        re.compile(r"^https?://(?:www\.)?github\.com/([^/\s]+)/([^/\s]+)/issues/(\d+)/?$"),
    ),
    (
        Repository.Forge.GITEE,
        re.compile(r"^https?://(?:www\.)?gitee\.com/([^/\s]+)/([^/\s]+)/issues/([A-Za-z0-9]+)/?$"),
    ),
    (
        Repository.Forge.GITLAB,
        re.compile(r"^https?://gitlab\.com/((?:[^/\s]+/)*[^/\s]+)/([^/\s]+)/-/issues/(\d+)/?$"),
    ),
]


@dataclass(frozen=True)
class IssueRef:
    forge: str
    owner: str
    name: str
    number: str

    @property
    def repo_key(self) -> tuple[str, str, str]:
        return (self.forge, self.owner, self.name)


def parse_issue_url(url: str) -> IssueRef | None:
    """The forge, owner, name and number of an issue URL; None for an unknown forge or shape."""
    for forge, pattern in _PATTERNS:
        match = pattern.match(url.strip())
        if match:
            owner, name, number = match.groups()
            return IssueRef(str(forge), owner, name, number)
    return None


def _on_public_host(repository: Repository) -> bool:
    default_api = Repository.DEFAULT_API_URLS.get(repository.forge, "")
    return repository.api_url.rstrip("/") == default_api.rstrip("/")


def canonical_issue_url(repository: Repository, number: str) -> str:
    """The web URL of issue `number` of `repository`: on the forge's public host, or on the
    host of the repository's API URL for a self-hosted forge or GitHub Enterprise."""
    if _on_public_host(repository):
        root = f"https://{Repository.WEB_HOSTS[repository.forge]}"
    else:
        parts = urlsplit(repository.api_url)
        root = f"{parts.scheme}://{parts.netloc}"
    issues = "-/issues" if repository.forge == Repository.Forge.GITLAB else "issues"
    return f"{root}/{repository.owner}/{repository.name}/{issues}/{number}"


def study_issue_url(url: str, repository: Repository, number: str) -> str | None:
    """None when `url` may be written as it is: a forge issue URL naming this very issue (any
    form `parse_issue_url` reads, on a public forge; exactly the canonical URL on a self-hosted
    one). Otherwise the canonical URL to write instead: a forge's `html_url` such as
    `=HYPERLINK(…)`, or a link elsewhere, never reaches the study file raw."""
    canonical = canonical_issue_url(repository, number)
    if url == canonical:
        return None
    if _on_public_host(repository) and url == url.strip():
        expected = IssueRef(str(repository.forge), repository.owner, repository.name, number)
        if parse_issue_url(url) == expected:
            return None
    return canonical
