"""The Gitee v5 client: GitHub's API shape (`GitHubClient`), with Gitee's differences only.

Gitee takes the token in the query string (added at the last moment, never stored or logged),
sends no `Link` header as a rule (pages by its `total_page` header, or until a short page, so
listings name their page from the first URL on), names the closing time `finished_at`, keeps
pull requests out of the issue list, keys a comment to its issue by `target.issue.number`,
answers spurious 404s on sub-resources (retried), and is sent the plain JSON `Accept` header
of the other forges, not GitHub's media type and API version.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import requests

from ingest.forges.base import ForgeClient, query_param, to_int, with_params
from ingest.forges.github import GitHubClient
from ingest.models import Repository


class GiteeClient(GitHubClient):
    forge = Repository.Forge.GITEE
    closed_key = "finished_at"
    pull_requests_listed = False  # a separate resource

    def api_headers(self) -> dict[str, str]:
        return ForgeClient.api_headers(self)  # not GitHub's media type and version

    def auth_headers(self) -> dict[str, str]:
        return {}  # the token goes in the query (authorize_url)

    def authorize_url(self, url: str) -> str:
        # Gitee takes the token in the query string: added at the last moment, never stored.
        return with_params(url, access_token=self.token) if self.token else url

    def first_page(self) -> dict[str, int]:
        return {"page": 1}  # next_page counts on from it when there is no Link header

    def retry_not_found(self, url: str) -> bool:
        return "/comments" in urlsplit(url).path  # spurious 404s on sub-resources

    def next_page(self, response: requests.Response, url: str, items: list) -> str | None:
        link = super().next_page(response, url, items)
        if link:
            return link
        # No Link header (the usual case): page by total_page, or until a short page.
        page = to_int(query_param(url, "page")) or 1
        total_pages = to_int(response.headers.get("total_page"))
        if total_pages is not None:
            return with_params(url, page=page + 1) if page < total_pages else None
        per_page = to_int(query_param(url, "per_page")) or 20
        return with_params(url, page=page + 1) if len(items) >= per_page else None

    def pages_estimate(self, response: requests.Response) -> int | None:
        return to_int(response.headers.get("total_page"))

    def comment_issue(self, raw: dict, issue_number: str | None) -> str | None:
        if issue_number is None:
            issue_number = ((raw.get("target") or {}).get("issue") or {}).get("number")
        return str(issue_number) if issue_number else None
