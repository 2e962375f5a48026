"""Reading an uploaded file of issues: CSV, JSON Lines, or a list of issue URLs.

Pure reading (no database): every problem is collected with the file's name and line before
anything is stored (`ingest.uploads` stores; the browser upload, its Celery task and
`manage.py upload_issues` all read through here).

* A URL list is read by `ingest.urllists.parse_text` (one URL per line), as the command
  `import_issue_urls` reads one.
* CSV and JSON Lines carry the issue itself, in the columns (keys) of the dataset export's
  `issues.jsonl`: `url` and `title` required; `number`, `body`, `author`, `state`, `labels`,
  `created_at`, `updated_at`, `closed_at`, `comments` optional. Other columns are ignored and
  named in the preview (an export's `annotations` and `status` are not imported). In CSV,
  `labels` are separated by `;` and `comments` is a JSON array (of strings or of objects with
  `author`, `body`, `created_at`) or else the text of one comment.
* A JSON Lines record may also be an issue as a forge's API returns it (docs: the shared
  forge-apis reference): `number` an integer (GitHub) or text (Gitee), GitLab's `iid`; the
  page's address in `html_url` (GitHub, Gitee) or `web_url` (GitLab), which wins over `url`
  (there the API's own address); the author as `user` or `author` objects (`login`,
  `username`); `description` (GitLab) for `body`; `labels` as objects with a `name`;
  `comments` as a count (no comment texts); `body` and `user` null. A boolean, a fraction or
  an integer out of range is still a problem on its line.

A URL is read by `ingest.issue_urls`: one of a known forge (github.com, gitee.com, gitlab.com)
must name an issue and goes to that forge's repository; any other http(s) URL (a mailing-list
archive, another tracker) goes to the upload's own repository, its number the `number` column
or else a digest of the URL. The text is hostile: cells over the CSV limit, NUL characters,
JSON nested too deep (`lib.inputlimits`), values longer than their columns, dates that are not
ISO 8601 and a URL repeated in the file are problems on their line.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, time

from django.core.exceptions import ValidationError
from django.core.validators import URLValidator
from django.utils.dateparse import parse_date, parse_datetime
from django.utils.translation import gettext, gettext_lazy

from ingest.issue_urls import HOSTS, MAX_NUMBER, MAX_URL, IssueRef, read_issue_url
from ingest.models import Comment, Issue
from ingest.urllists import UrlListResult, at_line, parse_text
from lib import csvread, inputlimits

KINDS = {"csv": "CSV", "jsonl": "JSON Lines", "urls": gettext_lazy("a list of issue URLs")}
COLUMNS = (
    "url", "number", "title", "body", "author", "state", "labels", "created_at",
    "updated_at", "closed_at", "comments",
)  # fmt: skip
# A forge API's names for the columns (see the module docstring): they are read, not ignored.
ALIASES = ("html_url", "web_url", "iid", "user", "description")
REQUIRED = ("url", "title")
# An issue number given as an integer: what the column and a bigint hold.
MAX_INTEGER_NUMBER = 2**63 - 1
DATES = ("created_at", "updated_at", "closed_at")
LABEL_SEPARATOR = ";"
PREVIEW_ROWS = 10
# Progress is reported every this many records.
PROGRESS_EVERY = 500

Progress = Callable[[int, int], None]  # (records read, lines in the file)

_url_shape = URLValidator(schemes=["http", "https"])


@dataclass
class CommentRow:
    author: str
    body: str
    created_at: datetime | None


@dataclass
class IssueRow:
    """One issue of a CSV or JSON Lines file, checked."""

    line: int
    url: str
    ref: IssueRef | None  # None: not a forge's issue (goes to the upload's repository)
    number: str
    title: str
    body: str = ""
    author: str = ""
    state: str = ""
    labels: list[str] = field(default_factory=list)
    created_at: datetime | None = None
    updated_at: datetime | None = None
    closed_at: datetime | None = None
    comments: list[CommentRow] = field(default_factory=list)


@dataclass
class Reading:
    """What a file holds: its rows (or URLs), and every problem by line."""

    name: str
    kind: str
    rows: list[IssueRow] = field(default_factory=list)
    urls: UrlListResult = field(default_factory=UrlListResult)
    problems: list[str] = field(default_factory=list)
    ignored_columns: list[str] = field(default_factory=list)
    records: int = 0  # rows or URL lines read (blank lines not counted)

    @property
    def count(self) -> int:
        return len(self.urls.refs) if self.kind == "urls" else len(self.rows)


def guess_kind(name: str, text: str) -> str:
    """The kind of a file from its name, else from its first non-blank character."""
    lower = name.lower()
    for ends, kind in ((".csv", "csv"), (".jsonl", "jsonl"), (".ndjson", "jsonl")):
        if lower.endswith(ends):
            return kind
    if lower.endswith(".txt"):
        return "urls"
    start = text.lstrip("\ufeff \t\r\n")[:8].lower()
    if start.startswith("{"):
        return "jsonl"
    if start.startswith(("http://", "https://")):
        return "urls"
    return "csv"


def decode(name: str, data: bytes) -> tuple[str, str | None]:
    """The text of an uploaded file, or a problem naming the line of its first bad byte."""
    try:
        return data.decode("utf-8-sig"), None
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        return "", f"{at_line(name, line)}: " + gettext("not UTF-8 (%(reason)s)") % {
            "reason": exc.reason
        }


def read_issue_file(
    name: str,
    data: bytes,
    kind: str | None = None,
    progress: Progress | None = None,
    limit: int | None = None,
) -> Reading:
    """Read an uploaded file (see the module docstring); `limit` stops after that many records
    (the preview)."""
    text, problem = decode(name, data)
    kind = kind or guess_kind(name, text)
    reading = Reading(name=name, kind=kind)
    if problem:
        reading.problems.append(problem)
        return reading
    if kind == "urls":
        lines = text.splitlines()
        if limit is not None:
            lines = [line for line in lines if line.strip()][:limit]
        parse_text(name, "\n".join(lines), None, reading.urls)
        reading.records = sum(bool(line.strip()) for line in lines)
        reading.problems.extend(reading.urls.errors)
        return reading
    total = text.count("\n") + 1
    records = _csv_records(reading, text) if kind == "csv" else _jsonl_records(reading, text)
    first_line: dict[str, int] = {}
    for line, values in records:
        reading.records += 1
        row = _issue_row(line, values)
        if isinstance(row, list):
            reading.problems.extend(f"{at_line(name, line)}: {message}" for message in row)
        elif row.url in first_line:
            reading.problems.append(
                f"{at_line(name, line)}: "
                + gettext("%(url)s repeats line %(line)s")
                % {"url": row.url[:200], "line": first_line[row.url]}
            )
        else:
            first_line[row.url] = line
            reading.rows.append(row)
        if progress and reading.records % PROGRESS_EVERY == 0:
            progress(reading.records, total)
        if limit is not None and reading.records >= limit:
            break
    if not reading.records and not reading.problems:
        reading.problems.append(f"{name}: " + gettext("no issues in the file"))
    return reading


def _csv_records(reading: Reading, text: str) -> Iterator[tuple[int, dict[str, object]]]:
    header: list[str] | None = None
    for line, cells, why in csvread.records(io.StringIO(text, newline="")):
        if cells is None:
            reading.problems.append(f"{at_line(reading.name, line)}: {why}")
            continue
        if header is None:
            header = [c.strip().lower() for c in cells]
            missing = [c for c in REQUIRED if c not in header]
            if missing:
                reading.problems.append(
                    f"{at_line(reading.name, line)}: "
                    + gettext("missing column(s): %(missing)s (the columns are %(columns)s)")
                    % {"missing": ", ".join(missing), "columns": ", ".join(COLUMNS)}
                )
                return
            reading.ignored_columns = [c[:40] for c in header if c not in COLUMNS]
            continue
        if not any(c.strip() for c in cells):
            continue
        if len(cells) != len(header):
            reading.problems.append(
                f"{at_line(reading.name, line)}: "
                + gettext("expected %(expected)s cells, got %(got)s")
                % {"expected": len(header), "got": len(cells)}
            )
            continue
        values: dict[str, object] = dict(zip(header, cells, strict=True))
        for column in ("labels", "comments"):
            value = values.get(column)
            if isinstance(value, str):
                values[column] = _csv_list(column, value)
        yield line, values


def _csv_list(column: str, cell: str) -> object:
    """A CSV cell of labels (`a; b`) or comments (a JSON array, or one comment's text)."""
    if column == "labels":
        return [part.strip() for part in cell.split(LABEL_SEPARATOR) if part.strip()]
    if not cell.strip():
        return []
    if cell.lstrip().startswith("["):
        try:
            return inputlimits.loads(cell)
        except (ValueError, RecursionError) as exc:
            return _Bad(
                "comments: " + gettext("not a JSON array (%(error)s)") % {"error": str(exc)[:120]}
            )
    return [cell]


@dataclass(frozen=True)
class _Bad:
    """A cell that could not be read; its message becomes the line's problem."""

    message: str


def _jsonl_records(reading: Reading, text: str) -> Iterator[tuple[int, dict[str, object]]]:
    for line, raw in enumerate(text.split("\n"), start=1):
        if not raw.strip():
            continue
        try:
            value = inputlimits.loads(raw)
        except inputlimits.JSONTooDeep as exc:
            reading.problems.append(f"{at_line(reading.name, line)}: {exc.message}")
            continue
        except (ValueError, RecursionError) as exc:
            reading.problems.append(
                f"{at_line(reading.name, line)}: "
                + gettext("not JSON (%(error)s)") % {"error": str(exc)[:120]}
            )
            continue
        if not isinstance(value, dict):
            reading.problems.append(
                f"{at_line(reading.name, line)}: " + gettext("not a JSON object")
            )
            continue
        _from_forge_api(value)
        for key in value:
            if (
                key not in COLUMNS
                and key not in ALIASES
                and str(key)[:40] not in reading.ignored_columns
            ):
                reading.ignored_columns.append(str(key)[:40])
        yield line, value


def _from_forge_api(record: dict[str, object]) -> None:
    """Read an issue as a forge's API returns it into the file's columns, in place (the
    values are checked afterwards like any other): the page's address, GitLab's `iid` and
    `description`, the author's object, label objects and a comment count."""
    page = record.get("html_url", record.get("web_url"))
    if isinstance(page, str) and page.strip():
        record["url"] = page
    if "number" not in record and "iid" in record:
        record["number"] = record["iid"]
    if "body" not in record and "description" in record:
        record["body"] = record["description"]
    if "author" in record:
        record["author"] = _login(record["author"])
    elif "user" in record:
        record["author"] = _login(record["user"])
    labels = record.get("labels")
    if isinstance(labels, list):
        record["labels"] = [
            label["name"] if isinstance(label, dict) and "name" in label else label
            for label in labels
        ]
    comments = record.get("comments")
    if isinstance(comments, int) and not isinstance(comments, bool) and comments >= 0:
        record["comments"] = None  # GitHub's and Gitee's count: the texts are not in the record
    elif isinstance(comments, list):
        for comment in comments:
            if isinstance(comment, dict) and "author" not in comment and "user" in comment:
                comment["author"] = _login(comment["user"])
            elif isinstance(comment, dict) and "author" in comment:
                comment["author"] = _login(comment["author"])


def _login(person: object) -> object:
    """An author as text: a forge's user object gives its login (GitHub, Gitee) or username
    (GitLab); null (a deleted account) is no author. Anything else is left to be refused."""
    if isinstance(person, dict):
        for key in ("login", "username"):
            if isinstance(person.get(key), str):
                return person[key]
        return None
    return person


def _number(values: dict[str, object], errors: list[str]) -> str:
    """The issue number: text, or a whole number as a forge's API gives it (GitHub's and
    GitLab's `number` / `iid`); never a boolean or a fraction."""
    value = values.get("number")
    if isinstance(value, bool | float):
        errors.append(
            "number: "
            + gettext("%(value)s is not an issue number (text or a whole number)")
            % {"value": repr(value)[:40]}
        )
        return ""
    if isinstance(value, int):
        if not 0 <= value <= MAX_INTEGER_NUMBER:
            errors.append(
                "number: "
                + gettext("%(value)s is out of range (0 to %(most)s)")
                % {"value": str(value)[:40], "most": MAX_INTEGER_NUMBER}
            )
            return ""
        return str(value)
    return _text(values, "number", errors, MAX_NUMBER).strip()


def _text(values: dict[str, object], name: str, errors: list[str], limit: int | None) -> str:
    value = values.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        errors.append(f"{name}: " + gettext("not text"))
        return ""
    if inputlimits.NUL in value:
        errors.append(f"{name}: " + gettext("NUL character (\\x00)"))
        return ""
    if limit is not None and len(value) > limit:
        errors.append(f"{name}: " + _too_long(limit, len(value)))
        return ""
    return value


def _too_long(limit: int, length: int) -> str:
    return gettext("at most %(limit)s characters (this one has %(length)s)") % {
        "limit": limit,
        "length": length,
    }


def _date(value: object, name: str, errors: list[str]) -> datetime | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    text = value.strip() if isinstance(value, str) else ""
    try:
        moment = parse_datetime(text)
        if moment is None and (day := parse_date(text)) is not None:
            moment = datetime.combine(day, time())
    except ValueError:
        moment = None
    if moment is None:
        errors.append(
            f"{name}: "
            + gettext("%(value)s is not an ISO 8601 date (2024-05-01T12:00Z)")
            % {"value": repr(str(value)[:40])}
        )
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def read_url(url: str) -> tuple[IssueRef | None, str | None]:
    """(the forge issue it names, None) for a forge's URL; (None, None) for another http(s)
    URL; (None, why) for something that is not a URL to store."""
    if len(url) > MAX_URL:
        return None, "url: " + _too_long(MAX_URL, len(url))
    try:
        _url_shape(url)
    except ValidationError:
        return None, "url: " + gettext("%(url)s is not an http(s) URL") % {"url": repr(url[:120])}
    host = url.split("://", 1)[1].split("/", 1)[0].lower().removeprefix("www.")
    if host in HOSTS:
        ref = read_issue_url(url)
        if isinstance(ref, str):
            return None, f"url: {ref}: {url[:120]!r}"
        return ref, None
    return None, None


def _issue_row(line: int, values: dict[str, object]) -> IssueRow | list[str]:
    """The checked row, or its problems."""
    errors: list[str] = []
    for name, value in values.items():
        if isinstance(value, _Bad):
            errors.append(value.message)
            values[name] = None
    url = _text(values, "url", errors, None).strip()
    title = _text(values, "title", errors, None).strip()
    if not url and "url" not in " ".join(errors):
        errors.append("url: " + gettext("empty"))
    if not title and "title" not in " ".join(errors):
        errors.append("title: " + gettext("empty"))
    ref, why = read_url(url) if url else (None, None)
    if why:
        errors.append(why)
    number = _number(values, errors)
    if ref is not None and number and number != ref.number:
        errors.append(
            "number: "
            + gettext("%(number)s but the URL names issue %(issue)s")
            % {"number": repr(number[:40]), "issue": ref.number}
        )
    if ref is not None:
        number = ref.number
    elif not number and url:
        # Stable, so the same file uploaded again updates the same issues.
        number = hashlib.sha256(url.encode()).hexdigest()[:16]
    row = IssueRow(line=line, url=url, ref=ref, number=number, title=title)
    row.body = _text(values, "body", errors, None)
    row.author = _text(values, "author", errors, inputlimits.max_length(Issue, "author"))
    row.state = _text(values, "state", errors, inputlimits.max_length(Issue, "state"))
    labels = values.get("labels")
    if labels is not None:
        if not isinstance(labels, list) or not all(isinstance(x, str) for x in labels):
            errors.append("labels: " + gettext("not a list of names"))
        elif any(inputlimits.NUL in x for x in labels):
            errors.append("labels: " + gettext("NUL character (\\x00)"))
        else:
            row.labels = labels
    for name in DATES:
        setattr(row, name, _date(values.get(name), name, errors))
    row.comments = _comments(values.get("comments"), errors)
    return errors or row


def _comments(value: object, errors: list[str]) -> list[CommentRow]:
    if value is None:
        return []
    if not isinstance(value, list):
        errors.append("comments: " + gettext("not a list"))
        return []
    out = []
    author_limit = inputlimits.max_length(Comment, "author")
    for n, item in enumerate(value, start=1):
        where: list[str] = []
        if isinstance(item, str):
            item = {"body": item}
        if not isinstance(item, dict):
            errors.append(f"comments[{n}]: " + gettext("not text or an object"))
            continue
        body = _text(item, "body", where, None)
        author = _text(item, "author", where, author_limit)
        created = _date(item.get("created_at"), "created_at", where)
        errors.extend(f"comments[{n}].{message}" for message in where)
        if not where:
            out.append(CommentRow(author=author, body=body, created_at=created))
    return out


def preview_rows(reading: Reading) -> list[dict[str, object]]:
    """The first rows as a template shows them (text only; the template escapes it)."""
    if reading.kind == "urls":
        return [{"url": ref.url} for ref in reading.urls.refs[:PREVIEW_ROWS]]
    return [
        {
            "line": row.line,
            "url": row.url,
            "title": row.title,
            "labels": ", ".join(row.labels),
            "created_at": row.created_at,
            "comments": len(row.comments),
        }
        for row in reading.rows[:PREVIEW_ROWS]
    ]
