"""Recognise an issue's forge, repository and number from its web URL.

The study's files name issues only by URL: `https://github.com/OWNER/NAME/issues/N` and
`https://gitee.com/OWNER/NAME/issues/IBD6YU` (Gitee numbers are alphanumeric and
case-sensitive). GitLab's `https://gitlab.com/GROUP/…/NAME/-/issues/N` is accepted too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

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
