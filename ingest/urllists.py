"""The study's per-year URL lists: one issue URL per line, turned into repositories and issues.

Lines are read by `ingest.issue_urls`. Blank lines, CRLF, stray spaces and repeats are fine; a
malformed line or an unknown host is reported with its file and line. The import is atomic:
with any bad line nothing is written unless the caller asks to skip bad lines.

The study published one list per repository and year, `<repo>_<year>.txt`. The year in the name
(or one given by the caller) is stored as each issue's `study_year`: Table I counts an issue by
it until the issue's creation date has been fetched from its forge. A URL listed under two
different years is a bad line, named with both places.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from django.db import transaction
from django.utils.translation import gettext

from ingest.issue_urls import IssueRef, read_issue_url
from ingest.models import Issue, Repository
from lib import sql

# `<anything>_<YYYY>.txt`, as the study named its lists (Megatron-LM_2024.txt).
YEAR_IN_NAME = re.compile(r"^.+_(?P<year>\d{4})\.txt$", re.IGNORECASE)
FIRST_YEAR, LAST_YEAR = 1970, 2100  # a forge issue's year, or a typo


def year_from_name(path: Path) -> int | None:
    """The year a study list's file name carries, if it carries one that can be a year."""
    m = YEAR_IN_NAME.match(path.name)
    if m and FIRST_YEAR <= int(m["year"]) <= LAST_YEAR:
        return int(m["year"])
    return None


def check_year(year: int) -> int:
    if not FIRST_YEAR <= year <= LAST_YEAR:
        raise ValueError(f"year: {year} is not between {FIRST_YEAR} and {LAST_YEAR}")
    return year


@dataclass
class UrlListResult:
    refs: list[IssueRef] = field(default_factory=list)
    # The study year of each ref that came from a list with a year.
    years: dict[IssueRef, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    # Where each ref first appears, "<name>, line N" (problems found later name it).
    places: dict[IssueRef, str] = field(default_factory=dict)
    duplicates: int = 0
    created_repositories: int = 0
    created_issues: int = 0
    study_years_set: int = 0
    issue_ids: list[int] = field(default_factory=list)


def parse_line(line: str) -> IssueRef | str:
    """An IssueRef, or the reason the line is not one."""
    return read_issue_url(line)


def at_line(name: str, line: int) -> str:
    """Where a problem is, in the reader's language: the file's name and line number."""
    return gettext("%(file)s, line %(line)s") % {"file": name, "line": line}


def parse_files(paths: list[Path], year: int | None = None) -> UrlListResult:
    """Parse the lists; `year` overrides the year in the file names (for lists named otherwise)."""
    result = UrlListResult()
    seen: set[IssueRef] = set()
    year_from: dict[IssueRef, str] = {}  # where a ref got its year, for conflict messages
    for path in paths:
        list_year = year if year is not None else year_from_name(path)
        try:
            text = path.read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError) as exc:
            result.errors.append(f"{path}: " + gettext("cannot read: %(error)s") % {"error": exc})
            continue
        parse_text(str(path), text, list_year, result, seen, year_from)
    return result


def parse_text(
    name: str,
    text: str,
    list_year: int | None,
    result: UrlListResult,
    seen: set[IssueRef] | None = None,
    year_from: dict[IssueRef, str] | None = None,
) -> UrlListResult:
    """Add one list's lines to `result`; errors are named `<name>, line N` (the browser
    upload passes the uploaded file's name; `seen` and `year_from` span several lists)."""
    seen = set(result.refs) if seen is None else seen
    year_from = {} if year_from is None else year_from
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        ref = parse_line(line)
        if isinstance(ref, str):
            result.errors.append(f"{at_line(name, lineno)}: {ref}: {line.strip()[:120]!r}")
            continue
        if list_year is not None:
            known = result.years.get(ref)
            if known is not None and known != list_year:
                result.errors.append(
                    f"{at_line(name, lineno)}: "
                    + gettext(
                        "%(url)s is listed under %(year)s here but under %(known)s in %(where)s"
                    )
                    % {"url": ref.url, "year": list_year, "known": known, "where": year_from[ref]}
                )
                continue
            if known is None:
                result.years[ref] = list_year
                year_from[ref] = at_line(name, lineno)
        if ref in seen:
            result.duplicates += 1
        else:
            seen.add(ref)
            result.refs.append(ref)
            result.places.setdefault(ref, at_line(name, lineno))
    return result


def import_refs(result: UrlListResult) -> UrlListResult:
    """Create the repositories and issues (known by URL only until hydrated).

    An issue's study year is the year of the list it is in; a list read again with another year
    (a corrected file name, or `--year`) updates it.

    In batches, for the study's 38,742 URLs: one query for the issues already there, one COPY
    (`lib.sql.copy_rows`) for the new ones, one UPDATE per changed study year; never a query per
    URL. Atomic, as before.
    """
    with transaction.atomic():
        repos: dict[tuple[str, str, str], Repository] = {}
        for ref in result.refs:
            if ref.repo_key not in repos:
                repos[ref.repo_key], created = Repository.objects.get_or_create(
                    forge=ref.forge,
                    api_url=Repository.DEFAULT_API_URLS[ref.forge],
                    owner=ref.owner,
                    name=ref.name,
                )
                result.created_repositories += created
        repo_ids = {key: repo.pk for key, repo in repos.items()}
        # (repository id, number) -> (id, study year, fetched?) of the issues already stored.
        known = {
            (repository_id, number): (pk, year, fetched)
            for pk, repository_id, number, year, fetched in Issue.objects.filter(
                repository_id__in=set(repo_ids.values())
            ).values_list("pk", "repository_id", "number", "study_year", "fetched_at")
        }
        new_rows = []
        changed_years: dict[int, list[int]] = {}
        for ref in result.refs:
            key = (repo_ids[ref.repo_key], ref.number)
            year = result.years.get(ref)
            found = known.get(key)
            if found is None:
                new_rows.append((key[0], key[1], ref.url, year))
                result.study_years_set += year is not None
            elif year is not None and found[1] != year:
                changed_years.setdefault(year, []).append(found[0])
        sql.copy_rows(Issue, ("repository_id", "number", "url", "study_year"), new_rows)
        result.created_issues = len(new_rows)
        for year, ids in changed_years.items():
            result.study_years_set += Issue.objects.filter(pk__in=ids).update(study_year=year)
        if new_rows:
            stored = Issue.objects.filter(
                repository_id__in={row[0] for row in new_rows}, fetched_at__isnull=True
            ).values_list("repository_id", "number", "pk")
            known.update({(r, n): (pk, None, None) for r, n, pk in stored if (r, n) not in known})
        for ref in result.refs:
            pk, _, fetched = known[(repo_ids[ref.repo_key], ref.number)]
            if fetched is None:
                result.issue_ids.append(pk)
    return result
