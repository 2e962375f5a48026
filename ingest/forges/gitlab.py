"""The GitLab REST v4 client.

A project is named by its URL-encoded path (`group%2Fproject`), an issue by its per-project
`iid`; comments are notes, listed only per issue (no repository-wide listing), and system
notes ("changed the label") are not discussion. Pages follow the `Link` header or
`x-next-page`; the token travels as a `PRIVATE-TOKEN` header.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from urllib.parse import quote

import requests

from ingest.forges.base import (
    PER_PAGE,
    ForgeClient,
    ParsedComment,
    format_time,
    login_of,
    parse_link_header,
    parse_time,
    to_int,
    with_params,
)
from ingest.models import Repository


class GitLabClient(ForgeClient):
    forge = Repository.Forge.GITLAB
    has_repository_comments = False  # notes only per issue

    def auth_headers(self) -> dict[str, str]:
        return {"PRIVATE-TOKEN": self.token} if self.token else {}

    @property
    def base(self) -> str:
        return f"{self.api_url}/projects/{quote(self.repository.full_name, safe='')}"

    def issues_url(self, since: datetime | None) -> str:
        return with_params(
            f"{self.base}/issues",
            scope="all",
            state="all",
            order_by="updated_at",
            sort="asc",
            per_page=PER_PAGE,
            updated_after=format_time(since) if since else None,
        )

    def comments_url(self, since: datetime | None) -> str | None:
        return None

    def newest_url(self, url: str) -> str:
        return with_params(url, sort="desc", per_page=1, page=None)

    def issue_url(self, number: str) -> str:
        return f"{self.base}/issues/{quote(number)}"

    def issue_comments_url(self, number: str) -> str:
        return with_params(
            f"{self.base}/issues/{quote(number)}/notes",
            order_by="created_at",
            sort="asc",
            per_page=PER_PAGE,
        )

    def next_page(self, response: requests.Response, url: str, items: list) -> str | None:
        link = parse_link_header(response.headers.get("Link")).get("next")
        if link:
            return link
        nxt = to_int(response.headers.get("x-next-page"))
        return with_params(url, page=nxt) if nxt else None

    def pages_estimate(self, response: requests.Response) -> int | None:
        return to_int(response.headers.get("x-total-pages"))

    def parse_issue(self, raw: dict) -> dict[str, Any]:
        return {
            "number": str(raw["iid"]),
            "url": raw.get("web_url") or "",
            "title": raw.get("title") or "",
            "body": raw.get("description") or "",
            "author": login_of(raw.get("author"), "username"),
            "state": raw.get("state") or "",
            "labels": [str(lb) if not isinstance(lb, dict) else lb.get("name", "")
                       for lb in raw.get("labels") or []],
            "created_at": parse_time(raw.get("created_at")),
            "updated_at": parse_time(raw.get("updated_at")),
            "closed_at": parse_time(raw.get("closed_at")),
            "comments_count": int(raw.get("user_notes_count") or 0),
            "is_pull_request": False,
        }  # fmt: skip

    def parse_comment(self, raw: dict, issue_number: str | None = None) -> ParsedComment | None:
        if raw.get("system"):
            return None  # "changed the label" and the like: not discussion
        return ParsedComment(
            issue_number,
            {
                "forge_id": str(raw["id"]),
                "author": login_of(raw.get("author"), "username"),
                "body": raw.get("body") or "",
                "created_at": parse_time(raw.get("created_at")),
                "updated_at": parse_time(raw.get("updated_at")),
            },
        )
