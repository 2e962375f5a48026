"""What every forge client shares: `ForgeClient` (requests, retries, page sizes, rate limits,
redirects), the errors, URL and time helpers, and token redaction.

A forge's module (`github`, `gitee`, `gitlab`) subclasses `ForgeClient` with what differs:
its URLs, its pagination (`next_page`, `pages_estimate`), its credential (`auth_headers` or
`authorize_url`) and its JSON (`parse_issue`, `parse_comment`).

Failures are classified so the caller can act without sleeping a worker:
`RateLimited` carries the time to try again; `FatalForgeError` (401, 404, 410, 422 …) fails a
run clearly; 5xx, timeouts, resets and unreadable JSON are retried here with a short backoff
and become `TransientForgeError` once the retries run out. Busy endpoints answer 502/504 for
`per_page=100` and the cure is a smaller page, so after two server errors (or timeouts) in a
row a listing page is asked again at 50, then at 25, items (`Page.url` says which); the next
link returned goes back to 100 as soon as the position allows (at once for a cursor, at a
multiple of 100 for a page number).

A page's JSON is parsed once, with the standard library, from the bytes received. NUL
characters (`\\u0000`), which PostgreSQL cannot store in text or jsonb, are dropped from a page
that has any.

Secrets. A forge token is sent only to the origin (scheme, host, port) of the repository's API
URL, and only when that origin is bound to the repository's forge
(`ingest.hosts.token_allowed`). Redirects are followed here, by hand, and only within that
origin; a `next` link or a redirect to another origin is refused and fails the run with a line
in its log that says so (tokens never follow a forge's links elsewhere). The session itself
(`ingest.hosts.ForgeSession`) refuses hosts that are not forge API hosts or listed by an admin,
and addresses that are not public. Every message that leaves
this package (exceptions, logs) has been through `redact`, which removes the configured token
values and anything shaped like a GitHub, GitLab or Gitee token or like a credential in a
header or query string; a forge that echoes the request in an error body gets its echo
redacted before it is stored or shown.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qsl, quote, quote_plus, urlencode, urljoin, urlsplit, urlunsplit

import requests
from django.conf import settings
from django.utils import timezone

from ingest.budget import Budget
from ingest.budget import enabled as budget_enabled
from ingest.hosts import ForgeSession, HostRefused, same_origin, token_allowed
from ingest.models import Repository
from lib import metrics

# The package's one logger, under the name `install_log_redaction` filters (a filter on a
# logger does not see its children's records).
log = logging.getLogger("ingest.forges")

PER_PAGE = 100
SMALLER_PAGES = (50, 25)  # per_page tried after repeated server errors at 100
SHRINK_AFTER = 2  # server errors or timeouts in a row at one page size before a smaller one
TOKEN_PARAMS = {"access_token", "private_token"}
MAX_REDIRECTS = 5
BUDGET_SLEEP_MAX = 2.0  # seconds a request waits for the shared budget; longer: RateLimited

# Tokens by their shape, for text that may hold one the server never had (a forge's echo).
TOKEN_SHAPES = re.compile(
    r"\b(?:gh[pousr]_[A-Za-z0-9]{20,255}|github_pat_[A-Za-z0-9_]{20,255})"  # GitHub
    r"|\bgl(?:pat|oas|dt|rt|ptt|ft|imt|agent|soat|cbt|ffct|rtr)-[A-Za-z0-9_\-]{16,}"  # GitLab
    r"|(?<![0-9A-Za-z])[0-9a-fA-F]{32}(?![0-9A-Za-z])"  # Gitee: 32 hex digits
)
# A credential by its name: `Authorization: Bearer …`, `access_token=…`, `"PRIVATE-TOKEN": "…"`.
KEYED_SECRET = re.compile(
    r"(?i)((?:access|private|refresh|id)[_-]?token|authorization|token|password|client_secret)"
    r"(\s*[\"']?\s*(?:[:=]|%3d)\s*[\"']?\s*)"
    r"((?:bearer|token|basic)\s+)?"
    r"([^\s\"'&,;<>(){}\[\]]+)"
)
REDACTED = "***"


def redact(text: str, tokens: tuple[str, ...] = ()) -> str:
    """`text` without any forge token: the configured ones (FORGE_TOKENS) and `tokens` by
    value (raw and URL-encoded), others by shape or by the name they travel under."""
    text = str(text)
    values = [*tokens, *(getattr(settings, "FORGE_TOKENS", {}) or {}).values()]
    for value in sorted({v for v in values if v and len(v) >= 4}, key=len, reverse=True):
        for form in {value, quote(value, safe=""), quote_plus(value)}:
            text = text.replace(form, REDACTED)
    text = KEYED_SECRET.sub(lambda m: f"{m[1]}{m[2]}{m[3] or ''}{REDACTED}", text)
    return TOKEN_SHAPES.sub(REDACTED, text)


class RedactingFilter(logging.Filter):
    """Log records with their message and traceback redacted (urllib3 logs Gitee's URLs,
    token included, at DEBUG)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = redact(record.getMessage()), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True


def install_log_redaction() -> None:
    # Every ingest module that logs: a filter on a logger does not see its children's records.
    names = ("ingest", "ingest.forges", "ingest.sync", "ingest.tasks", "urllib3")
    jobs = ("ingest.runs", "ingest.steps", "ingest.storage", "ingest.hydration")
    for name in (*names, *jobs):
        logger = logging.getLogger(name)
        if not any(isinstance(f, RedactingFilter) for f in logger.filters):
            logger.addFilter(RedactingFilter())
    # A filter on a logger sees only records logged on that very logger, not its children's.
    logger = logging.getLogger("urllib3.connectionpool")
    if not any(isinstance(f, RedactingFilter) for f in logger.filters):
        logger.addFilter(RedactingFilter())


install_log_redaction()


def _setting(name: str, default: Any) -> Any:
    return getattr(settings, name, default)


class ForgeError(Exception):
    """A forge request failed; the message names the status and the (redacted) URL."""

    def __init__(self, message: str, *args: Any) -> None:
        super().__init__(redact(message), *args)


class FatalForgeError(ForgeError):
    """Retrying will not help: bad credentials, a missing repository, a rejected query."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class TransientForgeError(ForgeError):
    """Server errors, timeouts or resets that outlasted the retries."""


class RateLimited(ForgeError):
    """The quota (or a secondary limit) is exhausted: try again at `retry_at`."""

    def __init__(self, message: str, retry_at: datetime, secondary: bool = False) -> None:
        super().__init__(message)
        self.retry_at = retry_at
        self.secondary = secondary


def strip_token(url: str) -> str:
    """The URL without token query parameters, for storing and logging."""
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True)]
    kept = [(k, v) for k, v in query if k.lower() not in TOKEN_PARAMS]
    if len(kept) == len(query):
        return url
    return urlunsplit(parts._replace(query=urlencode(kept)))


def with_params(url: str, **params: Any) -> str:
    """The URL with query parameters set (replacing any of the same name)."""
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k not in params]
    query += [(k, str(v)) for k, v in params.items() if v is not None]
    return urlunsplit(parts._replace(query=urlencode(query)))


def query_param(url: str, name: str) -> str | None:
    for k, v in parse_qsl(urlsplit(url).query, keep_blank_values=True):
        if k == name:
            return v
    return None


def parse_time(value: str | None) -> datetime | None:
    """An ISO 8601 forge time as an aware UTC datetime (Gitee answers in +08:00)."""
    if not value:
        return None
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


def format_time(value: datetime) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_link_header(header: str | None) -> dict[str, str]:
    links: dict[str, str] = {}
    for part in (header or "").split(","):
        if ";" not in part:
            continue
        target, *params = part.split(";")
        url = target.strip().strip("<>")
        for param in params:
            key, _, value = param.strip().partition("=")
            if key == "rel":
                for rel in value.strip('"').split():
                    links[rel] = url
    return links


def _stated_quota(response: requests.Response) -> tuple[int | None, float | None, bool]:
    """The remaining requests and reset time (epoch seconds) an answer states, and whether it
    had rate-limit headers at all."""
    h = response.headers
    remaining = to_int(h.get("X-RateLimit-Remaining") or h.get("RateLimit-Remaining"))
    reset = to_int(h.get("X-RateLimit-Reset") or h.get("RateLimit-Reset"))
    if remaining is None or reset is None:
        return None, None, False
    return remaining, float(reset), True


def to_int(value: str | None) -> int | None:
    """A header's or query parameter's number; None when absent or not a number."""
    try:
        return int(value) if value not in (None, "") else None
    except ValueError:
        return None


@dataclass
class Page:
    url: str  # without token
    items: list[dict] = field(default_factory=list)
    next_url: str | None = None
    etag: str | None = None
    not_modified: bool = False
    pages_estimate: int | None = None
    final_url: str | None = None  # after redirects (a moved issue), without token


@dataclass
class ParsedComment:
    issue_number: str | None
    fields: dict[str, Any]


class ForgeClient:
    """Shared request logic; subclasses know URLs, pagination and JSON shapes."""

    forge: str = ""
    has_repository_comments = True

    def __init__(
        self,
        repository: Repository,
        token: str | None = None,
        session: ForgeSession | None = None,
    ) -> None:
        self.repository = repository
        self.api_url = repository.api_url.rstrip("/")
        if token is None:
            token = settings.FORGE_TOKENS.get(self.forge, "")
        self.token = token if token_allowed(self.forge, self.api_url) else ""
        # Only the guarded session: it checks every host and address, and follows no redirect.
        if session is not None and not isinstance(session, ForgeSession):
            raise TypeError("a forge client talks through an ingest.hosts.ForgeSession")
        self.session = session or ForgeSession()
        self.session.headers.setdefault("User-Agent", "issue-annotator-ingest")
        self.timeout = (
            _setting("INGEST_CONNECT_TIMEOUT", 5.0),
            _setting("INGEST_READ_TIMEOUT", 30.0),
        )
        self.max_retries: int = _setting("INGEST_MAX_RETRIES", 4)
        self.backoff: float = _setting("INGEST_BACKOFF_SECONDS", 1.0)
        self.secondary_wait: float = _setting("INGEST_SECONDARY_WAIT_SECONDS", 60.0)
        self.secondary_streak = 0  # rate-limit waits so far in the run: doubles the next one
        self.requests = 0
        self.retries = 0
        self.quota_remaining: int | None = None
        self.quota_reset: datetime | None = None
        # The forge's rate limit, shared with every other worker and host (ingest.budget).
        self.budget = (
            Budget(self.forge, self._origin_text(), self.token or "") if budget_enabled() else None
        )

    # -- secrets ----------------------------------------------------------------------
    def redact(self, text: str) -> str:
        return redact(text, (self.token,) if self.token else ())

    def api_headers(self) -> dict[str, str]:
        """Headers every request carries (no secret)."""
        return {"Accept": "application/json"}

    def auth_headers(self) -> dict[str, str]:
        """The credential headers, for a request to the API URL's own origin only."""
        return {}

    def authorize_url(self, url: str) -> str:
        """The URL with a credential in its query (Gitee), for the API URL's origin only."""
        return url

    def sends_token_to(self, url: str) -> bool:
        return bool(self.token) and same_origin(url, self.api_url)

    def _check_origin(self, url: str, what: str) -> None:
        """Refuse a URL off the API URL's origin: a forge's next link or redirect chooses it,
        and nothing (least of all a token) goes anywhere the repository does not name."""
        if not same_origin(url, self.api_url):
            parts = urlsplit(url)
            elsewhere = f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"[:200]
            raise FatalForgeError(
                f"{what} leads to another host ({elsewhere}, not {self._origin_text()}):"
                " refused, no request sent there"
            )

    def _spend_budget(self) -> None:
        """Take one request from the shared budget: at once, after a short wait (another
        worker's probe of a new window), or RateLimited until the forge's reset."""
        if self.budget is None:
            return
        while (wait := self.budget.take()) > 0:
            if wait > BUDGET_SLEEP_MAX:
                raise RateLimited(
                    f"the {self.forge} rate limit shared by all workers is spent at"
                    f" {self._origin_text()}; waiting for the forge's reset",
                    timezone.now() + timedelta(seconds=wait),
                )
            time.sleep(wait)

    def _origin_text(self) -> str:
        parts = urlsplit(self.api_url)
        return f"{parts.scheme}://{parts.netloc}"

    def _get(self, url: str, headers: dict[str, str]) -> tuple[requests.Response, str]:
        """GET `url`, following redirects by hand within the API URL's origin; the response
        and the URL it came from."""
        current = url
        for hop in range(MAX_REDIRECTS + 1):
            self._check_origin(current, "a redirect" if hop else "the URL")
            sent = {**headers, **self.api_headers()}
            target = current
            if self.sends_token_to(current):
                sent.update(self.auth_headers())
                target = self.authorize_url(current)
            self._spend_budget()
            try:
                response = self.session.get(
                    target, headers=sent, timeout=self.timeout, allow_redirects=False
                )
            except BaseException:
                if self.budget is not None:
                    self.budget.answered(None, None, headers=True)
                raise
            if self.budget is not None:
                self.budget.answered(*_stated_quota(response))
            if not response.is_redirect:
                return response, current
            location = response.headers.get("Location", "")
            response.close()
            current = urljoin(current, location)
        raise FatalForgeError(f"more than {MAX_REDIRECTS} redirects from {self.redact(url)}")

    # -- URLs ---------------------------------------------------------------------------
    def issues_url(self, since: datetime | None) -> str:
        raise NotImplementedError

    def comments_url(self, since: datetime | None) -> str | None:
        raise NotImplementedError

    def issue_url(self, number: str) -> str:
        raise NotImplementedError

    def issue_comments_url(self, number: str) -> str:
        raise NotImplementedError

    def next_page(self, response: requests.Response, url: str, items: list) -> str | None:
        raise NotImplementedError

    def newest_url(self, url: str) -> str:
        """The listing at `url` reduced to its newest item (one request, to split a long run)."""
        return with_params(url, direction="desc", per_page=1, page=None, after=None)

    def updated_at(self, listing: str, raw: dict) -> datetime | None:
        """The update time of an item of the issue listing or of the comment listing."""
        if listing == "issues":
            return self.parse_issue(raw)["updated_at"]
        comment = self.parse_comment(raw)
        return comment.fields["updated_at"] if comment else None

    def pages_estimate(self, response: requests.Response) -> int | None:
        return None

    # -- JSON -----------------------------------------------------------------------------
    def parse_issue(self, raw: dict) -> dict[str, Any]:
        raise NotImplementedError

    def parse_comment(self, raw: dict, issue_number: str | None = None) -> ParsedComment | None:
        raise NotImplementedError

    # -- requests -------------------------------------------------------------------------
    def _read_quota(self, response: requests.Response) -> None:
        h = response.headers
        remaining = to_int(h.get("X-RateLimit-Remaining") or h.get("RateLimit-Remaining"))
        reset = to_int(h.get("X-RateLimit-Reset") or h.get("RateLimit-Reset"))
        if remaining is not None:
            self.quota_remaining = remaining
        if reset is not None:
            self.quota_reset = datetime.fromtimestamp(reset, UTC)

    def _message(self, response: requests.Response) -> str:
        """The forge's error message, redacted: a forge may echo the request, credentials
        and all, in its error body."""
        try:
            data = response.json()
        except ValueError:
            return self.redact(response.text[:200])
        if isinstance(data, dict):
            return self.redact(str(data.get("message") or data.get("error") or data)[:300])
        return self.redact(str(data)[:300])

    def _rate_limit(self, response: requests.Response) -> RateLimited | None:
        """A RateLimited for a 403/429 that is a rate limit; None for another kind of 403."""
        message = self._message(response)
        now = timezone.now()
        retry_after = to_int(response.headers.get("Retry-After"))
        secondary = "secondary rate limit" in message.lower()
        where = self.redact(strip_token(response.url))
        if retry_after is not None:
            return RateLimited(
                f"{response.status_code} {message} (Retry-After {retry_after}s) at {where}",
                now + timedelta(seconds=retry_after),
                secondary=True,
            )
        if self.quota_remaining == 0 and self.quota_reset is not None:
            return RateLimited(
                f"{response.status_code} quota exhausted at {where}: {message}",
                max(self.quota_reset, now) + timedelta(seconds=1),
            )
        if secondary or response.status_code == 429:
            # No Retry-After and quota left: wait at least a minute, doubling each time.
            wait = self.secondary_wait * (2 ** min(self.secondary_streak, 5))
            return RateLimited(
                f"{response.status_code} {message} at {where}",
                now + timedelta(seconds=wait),
                secondary=True,
            )
        return None

    def get_page(self, url: str, etag: str | None = None) -> Page:
        """One page of a listing (or one object), retried on transient failures.

        After two server errors or timeouts in a row, a listing page is asked again with a
        smaller `per_page` (100 → 50 → 25) at the same position, each smaller size with a
        fresh set of retries, before giving up.
        """
        clean = strip_token(url)
        where = self.redact(clean)
        sizes = self._page_sizes(clean)
        tried = sizes[:1]
        attempt_url, last_error = clean, ""
        made = at_size = in_a_row = 0
        left = self.max_retries + 1
        while left:
            if at_size:
                time.sleep(self.backoff * 2 ** (at_size - 1))
            if made:
                self.retries += 1
            page, last_error, server_error = self._attempt(attempt_url, etag, retry_404=made < 2)
            made, at_size, left = made + 1, at_size + 1, left - 1
            if page is not None:
                return page
            in_a_row = in_a_row + 1 if server_error else 0
            if in_a_row >= SHRINK_AFTER and len(tried) < len(sizes):
                tried.append(sizes[len(tried)])
                attempt_url = resize_page(clean, tried[-1])
                etag = None  # the ETag belongs to the full page
                at_size = in_a_row = 0
                left = self.max_retries + 1
                log.warning("forge keeps failing at %s, trying per_page=%s", where, tried[-1])
        sizes_note = f" (per_page {', '.join(map(str, tried))})" if len(tried) > 1 else ""
        raise TransientForgeError(
            f"gave up after {made} attempts{sizes_note} at {where}: {self.redact(last_error)}"
        )

    def _page_sizes(self, url: str) -> list[int]:
        """The page sizes to try for `url`: its own, then the smaller ones (listings only)."""
        size = to_int(query_param(url, "per_page"))
        if size is None:
            return [0]  # one object: no page size to change
        return [size, *(s for s in SMALLER_PAGES if s < size)]

    def _attempt(
        self, url: str, etag: str | None, retry_404: bool
    ) -> tuple[Page | None, str, bool]:
        """One request: (the page, "", False), or (None, the error, whether it was a server
        error or a timeout, after which a smaller page may help). Raises what is not retried."""
        where = self.redact(url)
        headers = {"If-None-Match": etag} if etag else {}
        try:
            self.requests += 1
            response, final = self._get(url, headers)
        except HostRefused as exc:
            raise FatalForgeError(f"{exc} (at {where})") from None
        except requests.Timeout as exc:
            metrics.forge_response(self.forge, "timeout", None)
            log.warning("forge request timed out, will retry: %s", where)
            return None, f"{type(exc).__name__} at {where}", True
        except requests.ConnectionError as exc:
            metrics.forge_response(self.forge, "connection", None)
            log.warning("forge request failed, will retry: %s at %s", type(exc).__name__, where)
            return None, f"{type(exc).__name__} at {where}", False
        except requests.RequestException as exc:
            metrics.forge_response(self.forge, "error", None)
            # Its text may hold the URL with Gitee's token: name the kind of failure only.
            raise FatalForgeError(f"{type(exc).__name__} at {where}") from None
        self._read_quota(response)
        status = response.status_code
        # Per forge and status, and the quota left as the forge last stated it (lib.metrics).
        metrics.forge_response(self.forge, status, self.quota_remaining)
        if status == 304:
            return Page(url=url, not_modified=True, etag=etag), "", False
        if 300 <= status < 400:
            raise FatalForgeError(f"{status} without a Location to follow at {where}", status)
        if status in (403, 429):
            limited = self._rate_limit(response)
            if limited is not None:
                raise limited
            return None, f"403 {self._message(response)} at {where}", False  # a few retries
        if status == 401:
            raise FatalForgeError(
                f"401 Unauthorized at {where}: check the {self.forge} token", status
            )
        if status == 404 and retry_404 and self.retry_not_found(url):
            return None, f"404 at {where}", False
        if status in (404, 410):
            raise FatalForgeError(f"{status} {self._message(response)} at {where}", status)
        if status >= 500:
            log.warning("forge answered %s, will retry: %s", status, where)
            return None, f"{status} server error at {where}", True
        if status >= 400:
            raise FatalForgeError(f"{status} {self._message(response)} at {where}", status)
        content = response.content
        try:
            data = json.loads(content)
        except ValueError:  # truncated or garbled body
            log.warning("unreadable forge JSON, will retry: %s", where)
            return None, f"unreadable JSON at {where}", False
        if data is None:
            return None, f"empty (null) response at {where}", False
        if b"\\u0000" in content:
            data = _without_nul(data)
        items = data if isinstance(data, list) else [data]
        full_size = query_param(url, "per_page") in (None, str(PER_PAGE))
        return (
            Page(
                url=url,
                items=items,
                next_url=self._next(response, url, final, items)
                if isinstance(data, list)
                else None,
                etag=response.headers.get("ETag"),
                pages_estimate=self.pages_estimate(response) if full_size else None,
                final_url=self.redact(strip_token(final)) if final != url else None,
            ),
            "",
            False,
        )

    def _next(self, response: requests.Response, url: str, final: str, items: list) -> str | None:
        nxt = self.next_page(response, url, items)
        if not nxt:
            return None
        nxt = urljoin(final, nxt)
        self._check_origin(nxt, "the next page link")
        return full_size_page(strip_token(nxt))

    def retry_not_found(self, url: str) -> bool:
        return False

    def iter_pages(self, url: str) -> Iterator[Page]:
        """Every page of a listing (used for small per-issue listings)."""
        next_url: str | None = url
        while next_url:
            page = self.get_page(next_url)
            yield page
            next_url = page.next_url


def resize_page(url: str, size: int) -> str:
    """The same position of a listing asked with `size` items a page (a smaller page)."""
    old = to_int(query_param(url, "per_page")) or size
    if query_param(url, "after") is not None:  # a cursor marks a position, whatever the size
        return with_params(url, per_page=size)
    page = to_int(query_param(url, "page")) or 1
    return with_params(url, page=(page - 1) * old // size + 1, per_page=size)


def full_size_page(url: str) -> str:
    """A next link of a shrunk listing back at the largest page size its position allows."""
    size = to_int(query_param(url, "per_page"))
    if size is None or size >= PER_PAGE:
        return url
    larger = [s for s in (PER_PAGE, *SMALLER_PAGES) if s > size]
    if query_param(url, "after") is not None:  # a cursor marks a position, whatever the size
        return with_params(url, per_page=PER_PAGE)
    page = to_int(query_param(url, "page"))
    if page is None:
        return url
    offset = (page - 1) * size
    for bigger in larger:  # largest first
        if offset % bigger == 0:
            return with_params(url, page=offset // bigger + 1, per_page=bigger)
    return url


def _without_nul(value: Any) -> Any:
    """`value` with NUL characters dropped from every string (PostgreSQL cannot store them)."""
    if isinstance(value, str):
        return value.replace("\x00", "")
    if isinstance(value, list):
        return [_without_nul(v) for v in value]
    if isinstance(value, dict):
        return {_without_nul(k): _without_nul(v) for k, v in value.items()}
    return value


def login_of(user: dict | None, key: str = "login") -> str:
    """The login of a forge's user object, which may be null (a deleted account)."""
    return (user or {}).get(key) or ""
