"""A fake GitHub, Gitee and GitLab: a real HTTP server on 127.0.0.1 for ingest tests.

It serves the three APIs as `/work/shared/reference/forge-apis.md` describes them, from data a
test sets up (`FakeForge.repo(...)`, `FakeRepo.add_issue(...)`), records every request, counts
rate-limit quota down per request (not for a 304) and injects faults on demand
(`FakeForge.inject`, matching a path fragment and/or exact query parameters): 502, a slow
response past the client's timeout, a connection reset, truncated JSON, a null response,
primary and secondary rate limits, 401, spurious 404. Hostile behaviours too: an error that
echoes the request, credentials and all (`echo`: a 422 quoting the Authorization and
PRIVATE-TOKEN headers and the query string, as some proxies and misconfigured servers do), a
redirect to a URL of the test's choosing (`redirect`, with `location`), and `Link` headers
pointing at another host (`FakeForge.link_base`). `Recorder` is a second listener on
127.0.0.1 that records whatever reaches it, to show that nothing (no token) did.

A listing page is serialized once and its bytes (and ETag) served again until the data
changes: any change through the `FakeRepo` methods, `cursor_after`, `gitee_link` or `link_base`
starts afresh. A test that edits the dataclasses directly after requests were served calls
`FakeRepo.touch()`. Headers (rate-limit counters, Link, ETag) stay per request.

    GitHub  {url}/github             /repos/{o}/{r}/issues …
    Gitee   {url}/gitee/api/v5       /repos/{o}/{r}/issues …
    GitLab  {url}/gitlab/api/v4      /projects/{group%2Fname}/issues …
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit

CST = timezone(timedelta(hours=8))  # Gitee answers in +08:00


def ts(value: datetime | str) -> datetime:
    if isinstance(value, str):
        value = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return value if value.tzinfo else value.replace(tzinfo=UTC)


@dataclass
class FakeComment:
    id: int
    body: str | None
    user: str | None
    created: datetime
    updated: datetime
    system: bool = False


@dataclass
class FakeIssue:
    number: str
    title: str
    body: str | None
    user: str | None
    created: datetime
    updated: datetime
    labels: list[str] = field(default_factory=list)
    state: str = "open"
    closed: datetime | None = None
    pull_request: bool = False
    comments: list[FakeComment] = field(default_factory=list)
    moved_to: str | None = None  # a path: the issue answers 301 there
    html_url: str | None = None  # served instead of the forge's own link (hostile), if set
    deleted: bool = False  # 410


@dataclass
class FakeRepo:
    forge: str
    owner: str
    name: str
    issues: dict[str, FakeIssue] = field(default_factory=dict)
    next_comment_id: int = 1000
    project_id: int = 7
    version: int = 0  # bumped by every change made through these methods

    def add_issue(
        self,
        number: int | str,
        title: str = "",
        body: str | None = "",
        user: str | None = "alice",
        created: datetime | str = "2024-01-01T00:00:00Z",
        updated: datetime | str | None = None,
        labels: list[str] | None = None,
        comments: int = 0,
        pull_request: bool = False,
        state: str = "open",
    ) -> FakeIssue:
        created_at = ts(created)
        issue = FakeIssue(
            number=str(number),
            title=title or f"Issue {number}",
            body=body,
            user=user,
            created=created_at,
            updated=ts(updated) if updated else created_at,
            labels=labels or [],
            pull_request=pull_request,
            state=state,
        )
        self.issues[issue.number] = issue
        self.version += 1
        for i in range(comments):
            self.add_comment(number, f"comment {i} on {number}", at=issue.updated, bump=False)
        return issue

    def add_comment(
        self,
        number: int | str,
        body: str | None = "a comment",
        user: str | None = "bob",
        at: datetime | str | None = None,
        bump: bool = True,
    ) -> FakeComment:
        issue = self.issues[str(number)]
        when = ts(at) if at else issue.updated
        self.next_comment_id += 1
        self.version += 1
        comment = FakeComment(self.next_comment_id, body, user, when, when)
        issue.comments.append(comment)
        if bump and when > issue.updated:
            issue.updated = when  # a new comment updates its issue, as on the forges
        return comment

    def touch(self) -> None:
        """Mark the data changed (after editing the dataclasses directly)."""
        self.version += 1

    def edit_issue(self, number: int | str, at: datetime | str, **changes: Any) -> FakeIssue:
        issue = self.issues[str(number)]
        self.version += 1
        for key, value in changes.items():
            setattr(issue, key, value)
        issue.updated = ts(at)
        return issue


@dataclass
class Fault:
    # 502 | timeout | reset | truncated | null | secondary | primary | 401 | 404 | 403 | echo
    # | redirect
    kind: str
    path_contains: str = ""
    times: int = 1
    seconds: float = 0.0  # timeout delay, Retry-After, or primary reset
    status: int = 403
    retry_after: bool = True
    location: str = ""  # where a `redirect` fault sends the client
    query: dict[str, str] | None = None  # exact query parameters the request must carry

    def matches(self, path: str) -> bool:
        if self.times <= 0 or self.path_contains not in path:
            return False
        if self.query:
            given = dict(parse_qsl(urlsplit(path).query, keep_blank_values=True))
            return all(given.get(k) == str(v) for k, v in self.query.items())
        return True


@dataclass
class RequestRecord:
    method: str
    path: str
    query: dict[str, str]
    status: int
    headers: dict[str, str]  # of the response
    sent: dict[str, str] = field(default_factory=dict)  # the request's headers


@dataclass
class Quota:
    limit: int = 5000
    remaining: int = 5000
    window: float = 3600.0
    reset_at: float = 0.0
    exhausted_status: int = 403

    def tick(self, now: float) -> None:
        if now >= self.reset_at:
            self.remaining = self.limit
            self.reset_at = now + self.window


class FakeForge:
    def __init__(self, cursor_after: int = 1000, delay: float = 0.0) -> None:
        self.repos: dict[tuple[str, str, str], FakeRepo] = {}
        self.requests: list[RequestRecord] = []
        self.faults: list[Fault] = []
        self.quota = {f: Quota() for f in ("github", "gitee", "gitlab")}
        self.tokens: dict[str, str] = {}  # forge -> the token it demands (401 otherwise)
        self.cursor_after = cursor_after  # GitHub: offset where page numbers give 422
        self.gitee_link = False  # Gitee sends no Link header unless asked
        self.link_base: str | None = None  # Link headers on another host (hostile), if set
        self.delay = delay  # seconds added to every response (to catch a sync mid-way)
        self.lock = threading.Lock()
        self.cache: dict[tuple, list] = {}
        self.pages: dict[tuple, tuple[dict[str, str], bytes, str]] = {}  # serialized listings
        self.pages_generation: tuple = ()
        self.cpu_seconds = 0.0  # CPU time spent answering requests (benchmarks report it)
        self.server: ThreadingHTTPServer | None = None
        self.thread: threading.Thread | None = None

    # -- life cycle ---------------------------------------------------------------------------
    def start(self) -> FakeForge:
        forge = self

        class Handler(_Handler):
            fake = forge

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        # shutdown() waits for the loop's next poll: 20 ms, not the default 0.5 s per test.
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.thread.start()
        return self

    def stop(self) -> None:
        if self.server:
            self.server.shutdown()
            self.server.server_close()

    def __enter__(self) -> FakeForge:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def api_url(self, forge: str) -> str:
        return {
            "github": f"{self.url}/github",
            "gitee": f"{self.url}/gitee/api/v5",
            "gitlab": f"{self.url}/gitlab/api/v4",
        }[forge]

    def token_hosts(self, *forges: str) -> list[str]:
        """FORGE_TOKEN_HOSTS entries binding each forge's token (all three by default) to this
        listener's exact origin, as an admin of a self-hosted forge would write them."""
        port = self.url.rsplit(":", 1)[1]
        return [f"{f}=http://127.0.0.1:{port}" for f in forges or ("github", "gitee", "gitlab")]

    # -- data ------------------------------------------------------------------------------------
    def repo(self, forge: str, owner: str, name: str) -> FakeRepo:
        return self.repos.setdefault((forge, owner, name), FakeRepo(forge, owner, name))

    def inject(self, kind: str, path_contains: str = "", times: int = 1, **kw: Any) -> Fault:
        fault = Fault(kind, path_contains, times, **kw)
        with self.lock:
            self.faults.append(fault)
        return fault

    def set_quota(self, forge: str, limit: int, window: float, status: int = 403) -> None:
        self.quota[forge] = Quota(limit, limit, window, time.time() + window, status)

    def count(self, path_contains: str = "", status: int | None = None) -> int:
        return sum(
            1
            for r in self.requests
            if path_contains in r.path and (status is None or r.status == status)
        )

    def reset_counts(self) -> None:
        self.requests.clear()

    def generation(self) -> tuple:
        """Changes whenever what a listing page holds may change."""
        return (
            self.cursor_after,
            self.gitee_link,
            self.link_base,
            tuple((key, repo.version) for key, repo in self.repos.items()),
        )

    def take_fault(self, path: str) -> Fault | None:
        with self.lock:
            for fault in self.faults:
                if fault.matches(path):
                    fault.times -= 1
                    return fault
        return None


Response = tuple[int, dict[str, str], Any]


class _Handler(BaseHTTPRequestHandler):
    fake: FakeForge
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # else headers and body wait on delayed ACKs (~40 ms)

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        started = time.thread_time()
        try:
            self._get()
        finally:
            spent = time.thread_time() - started
            with self.fake.lock:
                self.fake.cpu_seconds += spent

    def _get(self) -> None:
        fake = self.fake
        parts = urlsplit(self.path)
        path = parts.path
        query = dict(parse_qsl(parts.query, keep_blank_values=True))  # repeated keys: last wins
        forge = path.strip("/").split("/", 1)[0]
        if fake.delay:
            time.sleep(fake.delay)
        fault = fake.take_fault(self.path)
        if fault and fault.kind == "reset":
            self._record(path, query, 0, {})
            self.close_connection = True
            self.connection.close()
            return
        if fault and fault.kind == "timeout":
            time.sleep(fault.seconds)
        try:
            status, headers, body = self._route(forge, path, query, fault)
        except _HttpError as exc:
            status, headers, body = exc.status, {}, exc.body
        # A slow answer may find the client gone.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self._send(forge, path, query, status, headers, body, fault)

    # -- plumbing ------------------------------------------------------------------------------
    def _record(self, path: str, query: dict, status: int, headers: dict) -> None:
        with self.fake.lock:
            sent = dict(self.headers.items())
            self.fake.requests.append(RequestRecord("GET", path, query, status, headers, sent))

    def _send(self, forge, path, query, status, headers, body, fault) -> None:
        fake = self.fake
        quota = fake.quota.get(forge)
        if isinstance(body, _Serialized):
            payload, etag = body.payload, body.etag
        else:
            payload = b"" if body is ... else json.dumps(body).encode()
            etag = _etag(payload) if status == 200 else None
        if etag and self.headers.get("If-None-Match") == etag:
            status, payload, headers = 304, b"", {}
        elif quota is not None and status < 400:
            with fake.lock:
                quota.tick(time.time())
                if quota.remaining <= 0:
                    status = quota.exhausted_status
                    payload = json.dumps(
                        {
                            "message": "API rate limit exceeded for 127.0.0.1.",
                            "documentation_url": "https://docs.github.com/rest/rate-limit",
                        }
                    ).encode()
                    headers = {}
                else:
                    quota.remaining -= 1
        if fault and status == 200:
            if fault.kind == "truncated":
                payload = payload[: max(1, len(payload) // 2)]
            elif fault.kind == "null":
                payload = b"null"
        if quota is not None:
            names = (
                ("RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset")
                if forge == "gitlab"
                else ("X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset")
            )
            headers = {
                **headers,
                names[0]: str(quota.limit),
                names[1]: str(max(quota.remaining, 0)),
                names[2]: str(math.ceil(quota.reset_at)),
            }
        if etag and status == 200:
            headers["ETag"] = etag
        self._record(path, query, status, headers)
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        if status != 304:
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if status != 304:
            self.wfile.write(payload)

    def _route(self, forge: str, path: str, query: dict, fault: Fault | None) -> Response:
        fake = self.fake
        if fault and fault.kind == "echo":
            # A server that quotes the request back in its error body, credentials included.
            echoed = {
                "Authorization": self.headers.get("Authorization"),
                "PRIVATE-TOKEN": self.headers.get("PRIVATE-TOKEN"),
            }
            return (
                422,
                {},
                {"message": f"Validation Failed for GET {self.path} with headers {echoed}"},
            )
        if fault and fault.kind == "redirect":
            return fault.status, {"Location": fault.location}, {"message": "Moved"}
        if fault and fault.kind == "502":
            return 502, {}, {"message": "Server Error"}
        if fault and fault.kind in ("401", "404", "403"):
            msg = {"401": "Bad credentials", "404": "Not Found", "403": "Forbidden"}[fault.kind]
            return int(fault.kind), {}, {"message": msg}
        if fault and fault.kind == "secondary":
            headers = {"Retry-After": str(int(fault.seconds))} if fault.retry_after else {}
            return (
                fault.status,
                headers,
                {"message": "You have exceeded a secondary rate limit. Please wait."},
            )
        if fault and fault.kind == "primary":
            q = fake.quota[forge]
            with fake.lock:
                q.remaining = 0
                q.reset_at = time.time() + fault.seconds
        token = fake.tokens.get(forge)
        if token:
            given = {
                "github": (self.headers.get("Authorization") or "").removeprefix("Bearer "),
                "gitee": query.get("access_token", ""),
                "gitlab": self.headers.get("PRIVATE-TOKEN") or "",
            }[forge]
            if given != token:
                return (
                    401,
                    {},
                    {"message": "401 Unauthorized" if forge == "gitlab" else "Bad credentials"},
                )
        return self._listing_or_object(forge, path, query)

    def _listing_or_object(self, forge: str, path: str, query: dict) -> Response:
        """A listing page from the serialized pages when its data has not changed since."""
        fake = self.fake
        generation = fake.generation()
        key = (
            forge,
            path,
            tuple(sorted((k, v) for k, v in query.items() if k != "access_token")),
            self.headers.get("Host"),  # the Link header names it
        )
        with fake.lock:
            if fake.pages_generation != generation or len(fake.pages) > 5000:
                fake.pages.clear()
                fake.pages_generation = generation
            cached = fake.pages.get(key)
        if cached is not None:
            headers, payload, etag = cached
            return 200, dict(headers), _Serialized(payload, etag)
        if forge == "github":
            status, headers, body = self._github(path.removeprefix("/github"), query)
        elif forge == "gitee":
            status, headers, body = self._gitee(path.removeprefix("/gitee/api/v5"), query)
        elif forge == "gitlab":
            status, headers, body = self._gitlab(path.removeprefix("/gitlab/api/v4"), query)
        else:
            raise _HttpError(404, {"message": "Not Found"})
        if status != 200 or not isinstance(body, list):
            return status, headers, body  # single objects: moves and deletions stay live
        payload = json.dumps(body).encode()
        serialized = _Serialized(payload, _etag(payload))
        with fake.lock:
            if fake.pages_generation == generation:
                fake.pages[key] = (dict(headers), payload, serialized.etag)
        return status, headers, serialized

    def _memo(self, repo: FakeRepo, path: str, query: dict, build: Callable[[], list]) -> list:
        """A sorted listing, built once per data version (pages of a big listing share it)."""
        key = (
            repo.version,
            path,
            tuple(
                sorted((k, v) for k, v in query.items() if k not in ("page", "after", "per_page"))
            ),
        )
        with self.fake.lock:
            if key not in self.fake.cache:
                if len(self.fake.cache) > 50:
                    self.fake.cache.clear()
                self.fake.cache[key] = build()
            return self.fake.cache[key]

    def _base(self) -> str:
        return f"http://{self.headers.get('Host')}"

    def _link(self, path: str, query: dict, rels: dict[str, dict]) -> str:
        base = self.fake.link_base or self._base()
        return ", ".join(
            f'<{base}{path}?{urlencode({**query, **changes})}>; rel="{rel}"'
            for rel, changes in rels.items()
        )

    def _repo(self, forge: str, owner: str, name: str) -> FakeRepo:
        repo = self.fake.repos.get((forge, unquote(owner), unquote(name)))
        if repo is None:
            raise _HttpError(404, {"message": "Not Found"})
        return repo

    # -- GitHub --------------------------------------------------------------------------------
    def _github(self, path: str, query: dict) -> Response:
        parts = path.strip("/").split("/")
        if parts == ["rate_limit"]:
            q = self.fake.quota["github"]
            return 200, {}, {"resources": {"core": {"remaining": q.remaining}}}
        if len(parts) < 4 or parts[0] != "repos" or parts[3] != "issues":
            raise _HttpError(404, {"message": "Not Found"})
        repo = self._repo("github", parts[1], parts[2])
        rest = parts[4:]
        since = _since(query.get("since"))
        if not rest:
            issues = list(repo.issues.values())
            state = query.get("state", "open")
            if state != "all":
                issues = [i for i in issues if i.state == state]
            if since:
                issues = [i for i in issues if i.updated >= since]
            key = {"created": "created", "updated": "updated", "comments": "comments"}.get(
                query.get("sort", "created"), "created"
            )
            issues = self._memo(
                repo,
                path,
                query,
                lambda: sorted(
                    issues,
                    key=lambda i: (
                        len(i.comments) if key == "comments" else getattr(i, key),
                        int(i.number),
                    ),
                    reverse=query.get("direction", "desc") == "desc",
                ),
            )
            return self._github_page(path, query, _Lazy(issues, lambda i: self._gh_issue(repo, i)))
        if rest == ["comments"]:

            def build() -> list:
                rows = [(i, c) for i in repo.issues.values() for c in i.comments]
                if since:
                    rows = [(i, c) for i, c in rows if c.updated >= since]
                sort = query.get("sort", "created")
                rows.sort(
                    key=lambda r: (r[1].updated if sort == "updated" else r[1].created, r[1].id),
                    reverse=query.get("direction", "asc") == "desc",
                )
                return rows

            rows = self._memo(repo, path, query, build)
            return self._github_page(
                path, query, _Lazy(rows, lambda r: self._gh_comment(repo, r[0], r[1]))
            )
        issue = repo.issues.get(rest[0])
        if issue is None:
            raise _HttpError(404, {"message": "Not Found"})
        if issue.deleted:
            raise _HttpError(410, {"message": "This issue was deleted"})
        if issue.moved_to:
            if len(rest) > 1:
                raise _HttpError(404, {"message": "Not Found"})
            return (
                301,
                {"Location": f"{self._base()}/github{issue.moved_to}"},
                {"message": "Moved Permanently"},
            )
        if len(rest) == 1:
            return 200, {}, self._gh_issue(repo, issue)
        if rest[1:] == ["comments"]:
            comments = sorted(issue.comments, key=lambda c: c.id)
            if since:
                comments = [c for c in comments if c.updated >= since]
            return self._github_page(
                path, query, [self._gh_comment(repo, issue, c) for c in comments]
            )
        raise _HttpError(404, {"message": "Not Found"})

    def _github_page(self, path: str, query: dict, rows: list) -> Response:
        per_page = _per_page(query, default=30)
        after = query.get("after")
        full = "/github" + path
        if after:
            offset = _decode_cursor(after)
        else:
            page = _int(query.get("page"), 1)
            offset = (page - 1) * per_page
            if offset >= self.fake.cursor_after:
                raise _HttpError(
                    422,
                    {
                        "message": "Pagination with the page parameter is not supported for large "
                        "datasets, please use cursor based pagination (after/before)",
                        "documentation_url": "https://docs.github.com/rest/using-the-rest-api",
                    },
                )
        chunk = rows[offset : offset + per_page]
        headers: dict[str, str] = {}
        base_query = {k: v for k, v in query.items() if k not in ("page", "after")}
        rels: dict[str, dict] = {}
        nxt = offset + per_page
        if nxt < len(rows):
            if nxt >= self.fake.cursor_after or after:
                rels["next"] = {"after": _encode_cursor(nxt)}
            else:
                rels["next"] = {"page": nxt // per_page + 1}
        if len(rows) <= self.fake.cursor_after and not after:
            last = max(1, math.ceil(len(rows) / per_page))
            if offset > 0:
                rels["prev"] = {"page": offset // per_page}
                rels["first"] = {"page": 1}
            if nxt < len(rows):
                rels["last"] = {"page": last}
        if rels:
            headers["Link"] = self._link(full, base_query, rels)
        return 200, headers, chunk

    def _gh_user(self, login: str | None) -> dict | None:
        return (
            None
            if login is None
            else {"login": login, "id": abs(hash(login)) % 10**6, "type": "User"}
        )

    def _gh_issue(self, repo: FakeRepo, issue: FakeIssue) -> dict:
        api = f"{self._base()}/github/repos/{repo.owner}/{repo.name}"
        data = {
            "id": 10_000_000 + int(issue.number),
            "node_id": f"I_{issue.number}",
            "number": int(issue.number),
            "title": issue.title,
            "body": issue.body,
            "user": self._gh_user(issue.user),
            "labels": [{"name": lb} for lb in issue.labels],
            "state": issue.state,
            "state_reason": None,
            "comments": len(issue.comments),
            "created_at": _z(issue.created),
            "updated_at": _z(issue.updated),
            "closed_at": _z(issue.closed) if issue.closed else None,
            "html_url": issue.html_url
            or f"{self._base()}/{repo.owner}/{repo.name}/issues/{issue.number}",
            "url": f"{api}/issues/{issue.number}",
        }
        if issue.pull_request:
            data["pull_request"] = {"url": f"{api}/pulls/{issue.number}"}
        return data

    def _gh_comment(self, repo: FakeRepo, issue: FakeIssue, c: FakeComment) -> dict:
        api = f"{self._base()}/github/repos/{repo.owner}/{repo.name}"
        return {
            "id": c.id,
            "body": c.body,
            "user": self._gh_user(c.user),
            "created_at": _z(c.created),
            "updated_at": _z(c.updated),
            "issue_url": f"{api}/issues/{issue.number}",
            "html_url": f"{self._base()}/{repo.owner}/{repo.name}/issues/{issue.number}"
            f"#issuecomment-{c.id}",
        }

    # -- Gitee ----------------------------------------------------------------------------------
    def _gitee(self, path: str, query: dict) -> Response:
        parts = path.strip("/").split("/")
        if len(parts) < 4 or parts[0] != "repos" or parts[3] != "issues":
            raise _HttpError(404, {"message": "Not Found Project"})
        repo = self._repo("gitee", parts[1], parts[2])
        rest = parts[4:]
        since = _since(query.get("since"))
        if not rest:
            issues = [i for i in repo.issues.values() if not i.pull_request]
            state = query.get("state", "open")
            if state != "all":
                issues = [i for i in issues if i.state == state]
            if since:
                issues = [i for i in issues if i.updated >= since]
            key = "updated" if query.get("sort") == "updated" else "created"
            issues.sort(
                key=lambda i: (getattr(i, key), i.number),
                reverse=query.get("direction", "desc") == "desc",
            )
            return self._gitee_page(path, query, [self._ge_issue(repo, i) for i in issues])
        if rest == ["comments"]:
            rows = [(i, c) for i in repo.issues.values() for c in i.comments]
            if since:
                rows = [(i, c) for i, c in rows if c.updated >= since]
            key = "updated" if query.get("sort") == "updated" else "created"
            rows.sort(
                key=lambda r: (getattr(r[1], key), r[1].id),
                reverse=query.get("direction", "asc") == "desc",
            )
            return self._gitee_page(path, query, [self._ge_comment(i, c) for i, c in rows])
        issue = repo.issues.get(unquote(rest[0]))  # case-sensitive alphanumeric numbers
        if issue is None:
            raise _HttpError(404, {"message": "Not Found"})
        if len(rest) == 1:
            return 200, {}, self._ge_issue(repo, issue)
        if rest[1:] == ["comments"]:
            return self._gitee_page(
                path, query, [self._ge_comment(issue, c) for c in issue.comments]
            )
        raise _HttpError(404, {"message": "Not Found"})

    def _gitee_page(self, path: str, query: dict, rows: list) -> Response:
        per_page = _per_page(query, default=20)
        page = _int(query.get("page"), 1)
        total_pages = max(1, math.ceil(len(rows) / per_page)) if rows else 0
        headers = {"total_count": str(len(rows)), "total_page": str(total_pages)}
        if self.fake.gitee_link and page < total_pages:
            q = {k: v for k, v in query.items() if k != "access_token"}
            headers["Link"] = self._link("/gitee/api/v5" + path, q, {"next": {"page": page + 1}})
        return 200, headers, rows[(page - 1) * per_page : page * per_page]

    def _ge_user(self, login: str | None) -> dict | None:
        return None if login is None else {"login": login, "name": login}

    def _ge_issue(self, repo: FakeRepo, issue: FakeIssue) -> dict:
        return {
            "id": abs(hash(issue.number)) % 10**7,
            "number": issue.number,
            "title": issue.title,
            "body": issue.body,
            "user": self._ge_user(issue.user),
            "labels": [{"name": lb} for lb in issue.labels],
            "state": issue.state,
            "comments": len(issue.comments),
            "created_at": _cst(issue.created),
            "updated_at": _cst(issue.updated),
            "finished_at": _cst(issue.closed) if issue.closed else None,
            "html_url": issue.html_url
            or f"{self._base()}/{repo.owner}/{repo.name}/issues/{issue.number}",
            "issue_type": "任务",
        }

    def _ge_comment(self, issue: FakeIssue, c: FakeComment) -> dict:
        return {
            "id": c.id,
            "body": c.body,
            "user": self._ge_user(c.user),
            "created_at": _cst(c.created),
            "updated_at": _cst(c.updated),
            "target": {"issue": {"number": issue.number, "title": issue.title}},
        }

    # -- GitLab ---------------------------------------------------------------------------------
    def _gitlab(self, path: str, query: dict) -> Response:
        # /projects/{group%2Fname}/issues[/{iid}[/notes]]
        parts = path.strip("/").split("/")
        if len(parts) < 3 or parts[0] != "projects" or parts[2] != "issues":
            raise _HttpError(404, {"error": "404 Not Found"})
        owner, _, name = unquote(parts[1]).rpartition("/")
        repo = self.fake.repos.get(("gitlab", owner, name))
        if repo is None:
            raise _HttpError(404, {"message": "404 Project Not Found"})
        rest = parts[3:]
        if not rest:
            issues = list(repo.issues.values())
            state = query.get("state", "all")
            if state != "all":
                issues = [i for i in issues if i.state == state]
            after = _since(query.get("updated_after"))
            if after:
                issues = [i for i in issues if i.updated >= after]
            key = "updated" if query.get("order_by") == "updated_at" else "created"
            issues.sort(
                key=lambda i: (getattr(i, key), int(i.number)),
                reverse=query.get("sort", "desc") == "desc",
            )
            return self._gitlab_page(path, query, [self._gl_issue(repo, i) for i in issues])
        issue = repo.issues.get(rest[0])
        if issue is None:
            raise _HttpError(404, {"message": "404 Issue Not Found"})
        if len(rest) == 1:
            return 200, {}, self._gl_issue(repo, issue)
        if rest[1:] == ["notes"]:
            notes = sorted(
                issue.comments, key=lambda c: c.created, reverse=query.get("sort", "desc") == "desc"
            )
            return self._gitlab_page(path, query, [self._gl_note(c) for c in notes])
        raise _HttpError(404, {"error": "404 Not Found"})

    def _gitlab_page(self, path: str, query: dict, rows: list) -> Response:
        per_page = _per_page(query, default=20)
        page = _int(query.get("page"), 1)
        total_pages = max(1, math.ceil(len(rows) / per_page))
        headers = {
            "x-page": str(page),
            "x-per-page": str(per_page),
            "x-prev-page": str(page - 1) if page > 1 else "",
            "x-next-page": str(page + 1) if page < total_pages else "",
        }
        rels: dict[str, dict] = {"first": {"page": 1}}
        if page < total_pages:
            rels["next"] = {"page": page + 1}
        if len(rows) <= 10_000:
            headers["x-total"] = str(len(rows))
            headers["x-total-pages"] = str(total_pages)
            rels["last"] = {"page": total_pages}
        headers["Link"] = self._link("/gitlab/api/v4" + path, query, rels)
        return 200, headers, rows[(page - 1) * per_page : page * per_page]

    def _gl_issue(self, repo: FakeRepo, issue: FakeIssue) -> dict:
        return {
            "id": 500_000 + int(issue.number),
            "iid": int(issue.number),
            "project_id": repo.project_id,
            "title": issue.title,
            "description": issue.body,
            "author": None if issue.user is None else {"username": issue.user},
            "labels": list(issue.labels),
            "state": "opened" if issue.state == "open" else "closed",
            "user_notes_count": sum(1 for c in issue.comments if not c.system),
            "created_at": _z(issue.created, millis=True),
            "updated_at": _z(issue.updated, millis=True),
            "closed_at": _z(issue.closed, millis=True) if issue.closed else None,
            "web_url": issue.html_url
            or f"{self._base()}/{repo.owner}/{repo.name}/-/issues/{issue.number}",
        }

    def _gl_note(self, c: FakeComment) -> dict:
        return {
            "id": c.id,
            "body": c.body,
            "author": None if c.user is None else {"username": c.user},
            "created_at": _z(c.created, millis=True),
            "updated_at": _z(c.updated, millis=True),
            "system": c.system,
            "noteable_type": "Issue",
        }


@dataclass
class _Serialized:
    payload: bytes
    etag: str


def _etag(payload: bytes) -> str:
    return f'W/"{hashlib.sha1(payload).hexdigest()}"'


class _Lazy:
    """A listing converted to JSON dicts only for the slice a page serves."""

    def __init__(self, items: list, convert: Callable[[Any], dict]) -> None:
        self.items, self.convert = items, convert

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: slice) -> list[dict]:
        return [self.convert(x) for x in self.items[index]]


class _HttpError(Exception):
    def __init__(self, status: int, body: Any) -> None:
        super().__init__(status)
        self.status = status
        self.body = body


def _z(value: datetime, millis: bool = False) -> str:
    value = value.astimezone(UTC)
    if millis:
        return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"
    return value.strftime("%Y-%m-%dT%H:%M:%SZ")


def _cst(value: datetime) -> str:
    return value.astimezone(CST).isoformat(timespec="seconds")  # 2024-03-01T08:00:00+08:00


def _since(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        return ts(value)
    except ValueError:
        raise _HttpError(
            422, {"message": "Validation Failed", "errors": [{"field": "since"}]}
        ) from None


def _int(value: str | None, default: int) -> int:
    try:
        return max(1, int(value)) if value else default
    except ValueError:
        return default


def _per_page(query: dict, default: int) -> int:
    return min(100, _int(query.get("per_page"), default))  # silently cut to 100


def _encode_cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"cursor:{offset}".encode()).decode().rstrip("=")


def _decode_cursor(value: str) -> int:
    try:
        raw = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)).decode()
        return int(raw.removeprefix("cursor:"))
    except (ValueError, UnicodeDecodeError):
        raise _HttpError(422, {"message": "Invalid cursor"}) from None


class Recorder:
    """A second listener on 127.0.0.1 that answers every GET with an empty JSON list and
    records the path and headers of each request: what reached a host the client must not
    send anything to."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, str]]] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def do_GET(self) -> None:
                recorder.requests.append((self.path, dict(self.headers.items())))
                payload = b"[]"
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        # shutdown() waits for the loop's next poll: 20 ms, not the default 0.5 s per test.
        threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        ).start()

    @property
    def port(self) -> int:
        return self.server.server_address[1]

    def url(self, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}"

    def seen(self) -> str:
        """Everything that reached it, as one text to search for a token."""
        return repr(self.requests)

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
