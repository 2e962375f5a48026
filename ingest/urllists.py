"""The study's per-year URL lists: one issue URL per line, turned into repositories and issues.

Blank lines, CRLF, stray spaces and repeats are fine; a malformed line or an unknown host is
reported with its file and line. The import is atomic: with any bad line nothing is written
unless the caller asks to skip bad lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from django.db import transaction

from ingest.models import Issue, Repository

PATTERNS = {
    Repository.Forge.GITHUB: re.compile(
        r"^https?://github\.com/(?P<owner>[\w.-]+)/(?P<name>[\w.-]+)/issues/(?P<number>\d+)/?$"
    ),
    Repository.Forge.GITEE: re.compile(
        r"^https?://gitee\.com/(?P<owner>[\w.-]+)/(?P<name>[\w.-]+)/issues/(?P<number>[A-Za-z0-9]+)/?$"
    ),
    Repository.Forge.GITLAB: re.compile(
        r"^https?://gitlab\.com/(?P<owner>[\w.-]+(?:/[\w.-]+)*)/(?P<name>[\w.-]+)/-/issues/(?P<number>\d+)/?$"
    ),
}
HOSTS = {"github.com": "github", "gitee.com": "gitee", "gitlab.com": "gitlab"}


@dataclass(frozen=True)
class IssueRef:
    forge: str
    owner: str
    name: str
    number: str

    @property
    def url(self) -> str:
        host = Repository.WEB_HOSTS[self.forge]
        sep = "/-/issues/" if self.forge == Repository.Forge.GITLAB else "/issues/"
        return f"https://{host}/{self.owner}/{self.name}{sep}{self.number}"


@dataclass
class UrlListResult:
    refs: list[IssueRef] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    duplicates: int = 0
    created_repositories: int = 0
    created_issues: int = 0
    issue_ids: list[int] = field(default_factory=list)


def parse_line(line: str) -> IssueRef | str:
    """An IssueRef, or the reason the line is not one."""
    text = line.strip().lstrip("\ufeff")
    host_match = re.match(r"^https?://([^/]+)/", text)
    if not host_match:
        return "not an issue URL"
    forge = HOSTS.get(host_match.group(1).lower())
    if forge is None:
        return f"unknown host {host_match.group(1)!r}"
    m = PATTERNS[forge].match(text)
    if not m:
        return f"not a {forge} issue URL"
    return IssueRef(forge, m["owner"], m["name"], m["number"])


def parse_files(paths: list[Path]) -> UrlListResult:
    result = UrlListResult()
    seen: set[IssueRef] = set()
    for path in paths:
        try:
            text = path.read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError) as exc:
            result.errors.append(f"{path}: cannot read: {exc}")
            continue
        for lineno, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            ref = parse_line(line)
            if isinstance(ref, str):
                result.errors.append(f"{path}, line {lineno}: {ref}: {line.strip()[:120]!r}")
            elif ref in seen:
                result.duplicates += 1
            else:
                seen.add(ref)
                result.refs.append(ref)
    return result


def import_refs(result: UrlListResult) -> UrlListResult:
    """Create the repositories and issues (known by URL only until hydrated)."""
    with transaction.atomic():
        repos: dict[tuple[str, str, str], Repository] = {}
        for ref in result.refs:
            key = (ref.forge, ref.owner, ref.name)
            if key not in repos:
                repos[key], created = Repository.objects.get_or_create(
                    forge=ref.forge,
                    api_url=Repository.DEFAULT_API_URLS[ref.forge],
                    owner=ref.owner,
                    name=ref.name,
                )
                result.created_repositories += created
            issue, created = Issue.objects.get_or_create(
                repository=repos[key], number=ref.number, defaults={"url": ref.url}
            )
            result.created_issues += created
            if issue.fetched_at is None:
                result.issue_ids.append(issue.pk)
    return result
