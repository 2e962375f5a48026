"""Storing an uploaded file of issues (read by `ingest.issue_files`): atomic, or nothing.

Where the issues go: an issue URL of a known forge goes to that forge's repository (made if
missing, as `import_issue_urls` makes it); any other URL goes to the upload's own repository,
`uploaded/<source>` of the forge "uploaded file" (`Repository.Forge.UPLOAD`, never synced).
A URL list is stored by `ingest.urllists.import_refs`, its issues known by URL until fetched.
Issues of a CSV or JSON Lines file are stored with what the file says (fetched now), keyword
filtered like a sync's (`ingest.filtering`), and their comments replace the ones an earlier
upload gave them; uploading the same file again updates the same issues.

`plan` checks the file against what is stored (a URL already stored as another issue) and
counts what would change: the dry run stops there; `store` checks again and writes everything
in one transaction.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.db import connection, transaction
from django.utils import timezone

from ingest.filtering import classify, matcher_for
from ingest.issue_files import IssueRow, Reading
from ingest.issue_urls import MAX_NAME
from ingest.models import Comment, Issue, Repository
from ingest.urllists import import_refs
from lib import sql

UPLOAD_OWNER = "uploaded"
DEFAULT_SOURCE = "uploads"
COMMENT_PREFIX = "upload-"  # forge_id of an uploaded comment: never a forge's own id
CHUNK = 2000


@dataclass
class Outcome:
    """What an upload changed (or, in a dry run, would change)."""

    issues: int = 0
    new_issues: int = 0
    updated_issues: int = 0
    new_repositories: int = 0
    comments: int = 0
    problems: list[str] = field(default_factory=list)
    issue_ids: list[int] = field(default_factory=list)
    to_fetch: list[int] = field(default_factory=list)  # URL-list issues not fetched yet
    repository_ids: list[int] = field(default_factory=list)
    # Set by the caller that queues them (dataset.uploads).
    added_to_queue: int = 0
    queued_for_fetching: int = 0

    def figures(self) -> dict[str, int]:
        names = (
            "issues", "new_issues", "updated_issues", "new_repositories", "comments",
            "added_to_queue", "queued_for_fetching",
        )  # fmt: skip
        return {name: getattr(self, name) for name in names}


def source_problem(source: str) -> str | None:
    """Why a source name cannot name the upload's repository, or None."""
    if not source.strip():
        return "a name is needed"
    if len(source) > MAX_NAME:
        return f"at most {MAX_NAME} characters"
    if any(ord(c) < 0x20 or c in "/\\\x7f" for c in source):
        return "no slash or control character"
    return None


def _repo_key(row: IssueRow, source: str) -> tuple[str, str, str]:
    if row.ref is not None:
        return row.ref.repo_key
    return (Repository.Forge.UPLOAD.value, UPLOAD_OWNER, source)


def _find_repositories(keys: Iterable[tuple[str, str, str]]) -> dict[tuple, Repository | None]:
    found: dict[tuple, Repository | None] = {}
    for key in dict.fromkeys(keys):
        forge, owner, name = key
        api_url = Repository.DEFAULT_API_URLS.get(forge, "")
        found[key] = Repository.objects.filter(
            forge=forge, api_url=api_url, owner=owner, name=name
        ).first()
    return found


def _chunks(items: list, size: int = CHUNK) -> Iterable[list]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def plan(reading: Reading, source: str) -> Outcome:
    """Check the rows against what is stored and count what storing them would do."""
    outcome = Outcome()
    if reading.kind == "urls":
        refs = reading.urls.refs
        repos = _find_repositories(ref.repo_key for ref in refs)
        outcome.new_repositories = sum(repo is None for repo in repos.values())
        known = _stored_numbers(repos)
        repo_ids = {key: repo.pk for key, repo in repos.items() if repo is not None}
        outcome.issues = len(refs)
        outcome.new_issues = sum(
            (repo_ids.get(ref.repo_key), ref.number) not in known for ref in refs
        )
        return outcome
    rows = reading.rows
    repos = _find_repositories(_repo_key(row, source) for row in rows)
    outcome.new_repositories = sum(repo is None for repo in repos.values())
    # A URL is unique among the stored issues: one stored as another issue cannot be this one.
    stored: dict[str, tuple[int, str]] = {}
    for chunk in _chunks([row.url for row in rows]):
        stored.update(
            (url, (repo_id, number))
            for url, repo_id, number in Issue.objects.filter(url__in=chunk).values_list(
                "url", "repository_id", "number"
            )
        )
    known = _stored_numbers(repos)
    names = {
        pk: str(repo)
        for pk, repo in Repository.objects.in_bulk({place[0] for place in stored.values()}).items()
    }
    first_line: dict[tuple[tuple[str, str, str], str], int] = {}
    for row in rows:
        key = _repo_key(row, source)
        repo = repos[key]
        place = stored.get(row.url)
        if place is not None and (repo is None or place != (repo.pk, row.number)):
            where = f"{names.get(place[0], place[0])}#{place[1]}"
            outcome.problems.append(
                f"{reading.name}, line {row.line}: url: already stored as issue {where}"
            )
            continue
        seen = first_line.setdefault((key, row.number), row.line)
        if seen != row.line:
            outcome.problems.append(
                f"{reading.name}, line {row.line}: number: {row.number[:40]!r} repeats line {seen}"
            )
            continue
        outcome.issues += 1
        outcome.comments += len(row.comments)
        if repo is not None and (repo.pk, row.number) in known:
            outcome.updated_issues += 1
        else:
            outcome.new_issues += 1
    return outcome


def _stored_numbers(repos: dict[tuple, Repository | None]) -> set[tuple[int, str]]:
    ids = [repo.pk for repo in repos.values() if repo is not None]
    return set(Issue.objects.filter(repository_id__in=ids).values_list("repository_id", "number"))


def store(reading: Reading, source: str) -> Outcome:
    """Store a file without problems in one transaction; with any problem (the file's or one
    against what is stored), store nothing and return the problems."""
    with transaction.atomic():
        outcome = plan(reading, source)
        if reading.problems or outcome.problems:
            outcome.problems = reading.problems + outcome.problems
            return outcome
        if reading.kind == "urls":
            result = import_refs(reading.urls)
            found = _find_repositories(ref.repo_key for ref in reading.urls.refs)
            outcome.repository_ids = [r.pk for r in found.values() if r is not None]
            outcome.issue_ids = _issue_ids(
                (found[ref.repo_key], ref.number) for ref in reading.urls.refs
            )
            outcome.to_fetch = result.issue_ids
            return outcome
        made = _repositories(reading.rows, source)
        outcome.repository_ids = [repo.pk for repo in made.values()]
        _store_rows(reading, made, source)
        outcome.issue_ids = _issue_ids(
            (made[_repo_key(row, source)], row.number) for row in reading.rows
        )
        _store_comments(reading.rows, made, source)
    return outcome


def _repositories(rows: list[IssueRow], source: str) -> dict[tuple, Repository]:
    repos: dict[tuple, Repository] = {}
    for key in dict.fromkeys(_repo_key(row, source) for row in rows):
        forge, owner, name = key
        repos[key], _ = Repository.objects.get_or_create(
            forge=forge,
            api_url=Repository.DEFAULT_API_URLS.get(forge, ""),
            owner=owner,
            name=name,
        )
    return repos


def _issue_ids(pairs: Iterable[tuple[Repository | None, str]]) -> list[int]:
    wanted: dict[int, list[str]] = {}
    order: list[tuple[int, str]] = []
    for repo, number in pairs:
        assert repo is not None  # made by the caller
        wanted.setdefault(repo.pk, []).append(number)
        order.append((repo.pk, number))
    ids: dict[tuple[int, str], int] = {}
    for repo_id, numbers in wanted.items():
        for chunk in _chunks(numbers):
            ids.update(
                ((repo_id, number), pk)
                for number, pk in Issue.objects.filter(
                    repository_id=repo_id, number__in=chunk
                ).values_list("number", "pk")
            )
    return list(dict.fromkeys(ids[key] for key in order))


# The columns an upload writes, in the order of the rows `_store_rows` builds.
_COLUMNS = (
    "repository_id", "number", "url", "title", "body", "author", "state", "labels",
    "created_at", "updated_at", "closed_at", "comments_count", "raw", "filter_status",
    "matched_keywords", "fetched_at",
)  # fmt: skip
_JSON_COLUMNS = {"labels", "raw", "matched_keywords"}


def _store_rows(reading: Reading, repos: dict[tuple, Repository], source: str) -> None:
    """New issues by COPY (`lib.sql.copy_rows`, as `import_refs` stores a URL list: the ORM's
    bulk insert spent ~5 s of CPU compiling 10,000 rows), issues already stored by an upsert."""
    now = timezone.now()
    matchers = {key: matcher_for(repo) for key, repo in repos.items()}
    known = _stored_numbers(dict(repos))
    new_rows: list[tuple] = []
    old_rows: list[tuple] = []
    for row in reading.rows:
        key = _repo_key(row, source)
        repo = repos[key]
        status, found = classify(matchers[key], row.title, row.body, row.labels)
        values = (
            repo.pk, row.number, row.url, row.title, row.body, row.author, row.state,
            row.labels, row.created_at, row.updated_at, row.closed_at, len(row.comments),
            {"uploaded": reading.name, "line": row.line}, status, found, now,
        )  # fmt: skip
        (old_rows if (repo.pk, row.number) in known else new_rows).append(values)
    copy_json = connection.vendor == "postgresql"  # COPY reads JSON columns as text
    sql.copy_rows(
        Issue,
        _COLUMNS,
        (
            tuple(
                json.dumps(v) if copy_json and name in _JSON_COLUMNS else v
                for name, v in zip(_COLUMNS, values, strict=True)
            )
            for values in new_rows
        ),
    )
    Issue.objects.bulk_create(
        [Issue(**dict(zip(_COLUMNS, values, strict=True))) for values in old_rows],
        batch_size=CHUNK,
        update_conflicts=True,
        unique_fields=["repository", "number"],
        update_fields=[c for c in _COLUMNS if c not in ("repository_id", "number")],
    )


def _store_comments(rows: list[IssueRow], repos: dict[tuple, Repository], source: str) -> None:
    """The file's comments replace those an earlier upload gave the same issues."""
    ids = _issue_ids((repos[_repo_key(row, source)], row.number) for row in rows)
    for chunk in _chunks(ids):
        Comment.objects.filter(issue_id__in=chunk, forge_id__startswith=COMMENT_PREFIX).delete()
    comments = [
        Comment(
            issue_id=issue_id,
            forge_id=f"{COMMENT_PREFIX}{n}",
            author=comment.author,
            body=comment.body,
            created_at=comment.created_at,
            updated_at=comment.created_at,
        )
        for row, issue_id in zip(rows, ids, strict=True)
        for n, comment in enumerate(row.comments, start=1)
    ]
    Comment.objects.bulk_create(comments, batch_size=CHUNK)
