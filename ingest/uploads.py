"""Storing an uploaded file of issues (read by `ingest.issue_files`): atomic, or nothing.

Where the issues go: an issue URL of a known forge goes to that forge's repository (made if
missing, as `import_issue_urls` makes it); any other URL goes to the project's own upload
repository, `uploaded-p<project id>/<source>` of the forge "uploaded file"
(`Repository.Forge.UPLOAD`, never synced), so two projects never share one.
A URL list is stored by `ingest.urllists.import_refs`, its issues known by URL until fetched.
Issues of a CSV or JSON Lines file are stored with what the file says (fetched now), keyword
filtered like a sync's (`ingest.filtering`), and their comments replace the ones an earlier
upload gave them.

Who may upload what (docs/SECURITY.md, #24 review H1 and H2):

* A row of a forge repository is refused on its line unless the uploader may put that
  repository in the project's scope (`ingest.permissions.scope_repositories`: one they manage,
  or one the project holds), with one answer whether the repository is stored for another
  project or not stored at all (#28 review, L2); a lead adds a new one on the Repositories page
  first. Admins, and the operator's `manage.py upload_issues` (no user), may upload to any
  repository, new or stored.
* An upload updates only issues of the project's own upload repository (the same file again
  updates them). An issue already stored anywhere else (fetched from its forge, or uploaded
  into a forge repository) is never rewritten, and its comments are left alone: it is linked
  into the queue as it is and counted `kept_issues` ("existing, kept"). Refusing it instead
  would make a file that overlaps the project's fetched issues unusable; keeping it loses
  nothing.

An issue's URL is unique within its repository only: a URL stored in a repository the uploader
may not use is answered as a new URL is, and the project's upload repository gets its own issue
of it (never the other one's text or labels).

`plan` checks the file against what is stored (a URL already stored as another issue of a
repository the uploader may use, a repository the uploader may not use) and counts what would
change: the dry run stops there; `store` checks again and writes everything in one
transaction.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.db import connection, transaction
from django.utils import timezone
from django.utils.translation import gettext

from annotator.models import Project
from ingest.filtering import classify, matcher_for
from ingest.issue_files import IssueRow, Reading
from ingest.issue_urls import MAX_NAME
from ingest.models import Comment, Issue, Repository
from ingest.permissions import is_ingest_admin, scope_repositories
from ingest.urllists import at_line, import_refs
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
    kept_issues: int = 0  # stored already outside the project's upload repository: untouched
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
            "issues", "new_issues", "updated_issues", "kept_issues", "new_repositories", "comments",
            "added_to_queue", "queued_for_fetching",
        )  # fmt: skip
        return {name: getattr(self, name) for name in names}


def source_problem(source: str) -> str | None:
    """Why a source name cannot name the upload's repository, or None."""
    if not source.strip():
        return gettext("a name is needed")
    if len(source) > MAX_NAME:
        return gettext("at most %(limit)s characters") % {"limit": MAX_NAME}
    if any(ord(c) < 0x20 or c in "/\\\x7f" for c in source):
        return gettext("no slash or control character")
    return None


RepoKey = tuple[str, str, str]


@dataclass(frozen=True)
class Target:
    """Where an upload goes and who sends it: the project, the uploader (None: the operator,
    through `manage.py upload_issues`, with every right) and the source naming the project's
    upload repository."""

    project: Project
    user: Any
    source: str

    @property
    def upload_key(self) -> RepoKey:
        return (Repository.Forge.UPLOAD.value, upload_owner(self.project.pk), self.source)


def upload_owner(project_id: int) -> str:
    """The owner of a project's upload repositories: its own, never another project's."""
    return f"{UPLOAD_OWNER}-p{project_id}"


def _repo_key(row: IssueRow, target: Target) -> RepoKey:
    if row.ref is not None:
        return row.ref.repo_key
    return target.upload_key


def _refused(repos: dict[tuple, Repository | None], target: Target) -> dict[tuple, str]:
    """The repositories of the file the uploader may not upload to, with the reason.

    One reason for a forge repository outside the uploader's scope whether it is stored (for
    another project) or not stored at all (#28 review, L2): the answer must not tell a lead
    which repositories the server holds. A lead adds a new one on the Repositories page first;
    admins and the operator may upload to any, new or stored."""
    if target.user is None or is_ingest_admin(target.user):
        return {}
    existing = {repo.pk for key, repo in repos.items() if repo is not None}
    allowed = set(
        scope_repositories(target.user, target.project)
        .filter(pk__in=existing)
        .values_list("pk", flat=True)
    )
    return {
        key: gettext(
            "repository %(repository)s: not one of this project's repositories; add it on the "
            "Repositories page first"
        )
        % {"repository": f"{key[0]}:{key[1]}/{key[2]}"}
        for key, repo in repos.items()
        if key != target.upload_key and (repo is None or repo.pk not in allowed)
    }


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


def plan(reading: Reading, target: Target) -> Outcome:
    """Check the rows against what is stored and count what storing them would do."""
    outcome = Outcome()
    if reading.kind == "urls":
        refs = reading.urls.refs
        repos = _find_repositories(ref.repo_key for ref in refs)
        refused = _refused(repos, target)
        for ref in refs:
            if ref.repo_key in refused:
                at = reading.urls.places.get(ref, reading.name)
                outcome.problems.append(f"{at}: url: {refused[ref.repo_key]}")
        # Counted without the refused rows: their figures would tell a stored repository
        # (some issues kept) from a new one (#28 review, L2).
        usable = {key: repo for key, repo in repos.items() if key not in refused}
        outcome.new_repositories = sum(repo is None for repo in usable.values())
        known = _stored_numbers(usable)
        repo_ids = {key: repo.pk for key, repo in usable.items() if repo is not None}
        refs = [ref for ref in refs if ref.repo_key not in refused]
        outcome.issues = len(refs)
        outcome.new_issues = sum(
            (repo_ids.get(ref.repo_key), ref.number) not in known for ref in refs
        )
        outcome.kept_issues = outcome.issues - outcome.new_issues
        return outcome
    rows = reading.rows
    repos = _find_repositories(_repo_key(row, target) for row in rows)
    refused = _refused(repos, target)
    outcome.new_repositories = sum(
        repo is None for key, repo in repos.items() if key not in refused
    )
    # A URL is unique within a repository. Stored in one the uploader may use (or the row's
    # own), as another issue, it cannot be this one; stored only in repositories the uploader
    # may not use, it is answered as a new URL is (#28 review, L2): the project's upload
    # repository gets its own issue of that URL.
    stored: dict[str, list[tuple[int, str]]] = {}
    for chunk in _chunks([row.url for row in rows]):
        for url, repo_id, number in Issue.objects.filter(url__in=chunk).values_list(
            "url", "repository_id", "number"
        ):
            stored.setdefault(url, []).append((repo_id, number))
    known = _stored_numbers(repos)
    names = _names_shown({place[0] for places in stored.values() for place in places}, target)
    first_line: dict[tuple[tuple[str, str, str], str], int] = {}
    for row in rows:
        key = _repo_key(row, target)
        if key in refused:
            outcome.problems.append(f"{at_line(reading.name, row.line)}: url: {refused[key]}")
            continue
        repo = repos[key]
        here = (repo.pk, row.number) if repo is not None else None
        taken = [
            place
            for place in stored.get(row.url, [])
            if place != here and (place[0] in names or (repo is not None and place[0] == repo.pk))
        ]
        if taken:
            place = taken[0]
            where = names.get(place[0]) or str(repo)
            stored_as = gettext("already stored as issue %(issue)s") % {
                "issue": f"{where}#{place[1]}"
            }
            outcome.problems.append(f"{at_line(reading.name, row.line)}: url: {stored_as}")
            continue
        seen = first_line.setdefault((key, row.number), row.line)
        if seen != row.line:
            outcome.problems.append(
                f"{at_line(reading.name, row.line)}: number: "
                + gettext("%(number)s repeats line %(line)s")
                % {"number": repr(row.number[:40]), "line": seen}
            )
            continue
        outcome.issues += 1
        if repo is None or (repo.pk, row.number) not in known:
            outcome.new_issues += 1
            outcome.comments += len(row.comments)
        elif key == target.upload_key:
            outcome.updated_issues += 1
            outcome.comments += len(row.comments)
        else:
            outcome.kept_issues += 1  # another repository's issue: linked, never rewritten
    return outcome


def _names_shown(repository_ids: set[int], target: Target) -> dict[int, str]:
    """The names of stored repositories a problem may name: those of the project's scope rule
    (another project's repository is not named to a lead who may not manage it)."""
    repositories = Repository.objects.filter(pk__in=repository_ids)
    if target.user is not None:
        repositories = repositories.filter(
            pk__in=scope_repositories(target.user, target.project).values("pk")
        )
    return {repo.pk: str(repo) for repo in repositories}


def _stored_numbers(repos: dict[tuple, Repository | None]) -> set[tuple[int, str]]:
    ids = [repo.pk for repo in repos.values() if repo is not None]
    return set(Issue.objects.filter(repository_id__in=ids).values_list("repository_id", "number"))


def store(reading: Reading, target: Target) -> Outcome:
    """Store a file without problems in one transaction; with any problem (the file's or one
    against what is stored), store nothing and return the problems."""
    with transaction.atomic():
        outcome = plan(reading, target)
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
        made = _repositories(reading.rows, target)
        outcome.repository_ids = [repo.pk for repo in made.values()]
        # Decided before writing: the rows this upload owns (new issues, and issues of the
        # project's upload repository); every other stored issue is kept as it is.
        known = _stored_numbers(dict(made))
        owned = [
            row
            for row in reading.rows
            if _repo_key(row, target) == target.upload_key
            or (made[_repo_key(row, target)].pk, row.number) not in known
        ]
        _store_rows(reading.name, owned, made, target, known)
        outcome.issue_ids = _issue_ids(
            (made[_repo_key(row, target)], row.number) for row in reading.rows
        )
        _store_comments(owned, made, target)
    return outcome


def _repositories(rows: list[IssueRow], target: Target) -> dict[tuple, Repository]:
    repos: dict[tuple, Repository] = {}
    for key in dict.fromkeys(_repo_key(row, target) for row in rows):
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


def _store_rows(
    name: str,
    rows: list[IssueRow],
    repos: dict[tuple, Repository],
    target: Target,
    known: set[tuple[int, str]],
) -> None:
    """New issues by COPY (`lib.sql.copy_rows`, as `import_refs` stores a URL list: the ORM's
    bulk insert spent ~5 s of CPU compiling 10,000 rows), issues of the project's upload
    repository already stored by an upsert (the caller passes only the rows the upload owns)."""
    now = timezone.now()
    matchers = {key: matcher_for(repo) for key, repo in repos.items()}
    new_rows: list[tuple] = []
    old_rows: list[tuple] = []
    for row in rows:
        key = _repo_key(row, target)
        repo = repos[key]
        status, found = classify(matchers[key], row.title, row.body, row.labels)
        values = (
            repo.pk, row.number, row.url, row.title, row.body, row.author, row.state,
            row.labels, row.created_at, row.updated_at, row.closed_at, len(row.comments),
            {"uploaded": name, "line": row.line}, status, found, now,
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


def _store_comments(rows: list[IssueRow], repos: dict[tuple, Repository], target: Target) -> None:
    """The file's comments replace those an earlier upload gave the same issues (only issues the
    upload owns: the caller leaves out every issue it keeps as it is)."""
    ids = _issue_ids((repos[_repo_key(row, target)], row.number) for row in rows)
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
