"""The GitHub REST v3 client.

Pages follow the `Link` header only, never a page number built here: past about 1,000 items
GitHub switches a listing to `after=` cursors. Pull requests come back in the issue list,
marked by their `pull_request` object. The token travels as a Bearer header.
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
    query_param,
    to_int,
    with_params,
)
from ingest.models import Repository


class GitHubClient(ForgeClient):
    forge = Repository.Forge.GITHUB
    closed_key = "closed_at"  # the issue's closing time
    pull_requests_listed = True  # the issue list mixes pull requests in

    def api_headers(self) -> dict[str, str]:
        return {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"}

    def auth_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    @property
    def base(self) -> str:
        r = self.repository
        return f"{self.api_url}/repos/{quote(r.owner)}/{quote(r.name)}"

    def first_page(self) -> dict[str, int]:
        """The page parameter of a listing's first URL: none, the `Link` header leads on."""
        return {}

    def issues_url(self, since: datetime | None) -> str:
        return with_params(
            f"{self.base}/issues",
            state="all",
            sort="updated",
            direction="asc",
            **self.first_page(),
            per_page=PER_PAGE,
            since=format_time(since) if since else None,
        )

    def comments_url(self, since: datetime | None) -> str:
        return with_params(
            f"{self.base}/issues/comments",
            sort="updated",
            direction="asc",
            **self.first_page(),
            per_page=PER_PAGE,
            since=format_time(since) if since else None,
        )

    def issue_url(self, number: str) -> str:
        return f"{self.base}/issues/{quote(number)}"

    def issue_comments_url(self, number: str) -> str:
        return with_params(
            f"{self.base}/issues/{quote(number)}/comments", **self.first_page(), per_page=PER_PAGE
        )

    def next_page(self, response: requests.Response, url: str, items: list) -> str | None:
        # Never build page numbers: past ~1,000 items GitHub switches to `after=` cursors.
        return parse_link_header(response.headers.get("Link")).get("next")

    def pages_estimate(self, response: requests.Response) -> int | None:
        last = parse_link_header(response.headers.get("Link")).get("last")
        return to_int(query_param(last, "page")) if last else None

    def parse_issue(self, raw: dict) -> dict[str, Any]:
        return {
            "number": str(raw["number"]),
            "url": raw.get("html_url") or "",
            "title": raw.get("title") or "",
            "body": raw.get("body") or "",
            "author": login_of(raw.get("user")),
            "state": raw.get("state") or "",
            "labels": [
                lb.get("name", "") if isinstance(lb, dict) else str(lb)
                for lb in raw.get("labels") or []
            ],
            "created_at": parse_time(raw.get("created_at")),
            "updated_at": parse_time(raw.get("updated_at")),
            "closed_at": parse_time(raw.get(self.closed_key)),
            "comments_count": int(raw.get("comments") or 0),
            # A pull request in the issue list is marked by its `pull_request` object.
            "is_pull_request": self.pull_requests_listed and "pull_request" in raw,
        }

    def parse_comment(self, raw: dict, issue_number: str | None = None) -> ParsedComment | None:
        return ParsedComment(
            self.comment_issue(raw, issue_number),
            {
                "forge_id": str(raw["id"]),
                "author": login_of(raw.get("user")),
                "body": raw.get("body") or "",
                "created_at": parse_time(raw.get("created_at")),
                "updated_at": parse_time(raw.get("updated_at")),
            },
        )

    def comment_issue(self, raw: dict, issue_number: str | None) -> str | None:
        """The number of the issue a comment belongs to: `issue_number` when the listing was
        one issue's, else read from the comment (its `issue_url`)."""
        if issue_number is None:
            issue_url = raw.get("issue_url") or ""
            issue_number = issue_url.rstrip("/").rsplit("/", 1)[-1] or None
        return issue_number
