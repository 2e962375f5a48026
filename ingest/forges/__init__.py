"""Forge clients for GitHub REST v3, Gitee v5 and GitLab v4 on `requests` sessions.

Each client builds the first URL of a listing, fetches one page at a time (following the
forge's own pagination: GitHub's Link header, which switches to `after=` cursors on deep
listings; Gitee's `total_page` header; GitLab's Link or `x-next-page`), and turns forge JSON
into field dicts for `Issue` and `Comment`, with times in UTC.

One module per forge: `github` (`GitHubClient`), `gitee` (`GiteeClient`, GitHub's client with
Gitee's differences overridden), `gitlab` (`GitLabClient`); what they share is in `base`:
`ForgeClient` (requests, retries, smaller pages, rate limits, redirects within the origin), the
errors, and token redaction (`redact`, the log filter); its docstring says how failures and
secrets are handled. `client_for` picks a repository's client. The names are imported from
here (`from ingest.forges import client_for, redact`).
"""

from typing import Any

from ingest.forges.base import (
    BUDGET_SLEEP_MAX,
    KEYED_SECRET,
    MAX_REDIRECTS,
    PER_PAGE,
    REDACTED,
    SHRINK_AFTER,
    SMALLER_PAGES,
    TOKEN_PARAMS,
    TOKEN_SHAPES,
    FatalForgeError,
    ForgeClient,
    ForgeError,
    ForgeSession,
    HostRefused,
    Page,
    ParsedComment,
    RateLimited,
    RedactingFilter,
    TransientForgeError,
    format_time,
    full_size_page,
    install_log_redaction,
    log,
    parse_link_header,
    parse_time,
    query_param,
    redact,
    resize_page,
    same_origin,
    strip_token,
    token_allowed,
    with_params,
)
from ingest.forges.gitee import GiteeClient
from ingest.forges.github import GitHubClient
from ingest.forges.gitlab import GitLabClient
from ingest.models import Repository

CLIENTS: dict[str, type[ForgeClient]] = {
    Repository.Forge.GITHUB: GitHubClient,
    Repository.Forge.GITEE: GiteeClient,
    Repository.Forge.GITLAB: GitLabClient,
}


def client_for(repository: Repository, **kwargs: Any) -> ForgeClient:
    """The client of the repository's forge."""
    return CLIENTS[repository.forge](repository, **kwargs)


__all__ = [
    "BUDGET_SLEEP_MAX",
    "CLIENTS",
    "KEYED_SECRET",
    "MAX_REDIRECTS",
    "PER_PAGE",
    "REDACTED",
    "SHRINK_AFTER",
    "SMALLER_PAGES",
    "TOKEN_PARAMS",
    "TOKEN_SHAPES",
    "FatalForgeError",
    "ForgeClient",
    "ForgeError",
    "ForgeSession",
    "GitHubClient",
    "GitLabClient",
    "GiteeClient",
    "HostRefused",
    "Page",
    "ParsedComment",
    "RateLimited",
    "RedactingFilter",
    "TransientForgeError",
    "client_for",
    "format_time",
    "full_size_page",
    "install_log_redaction",
    "log",
    "parse_link_header",
    "parse_time",
    "query_param",
    "redact",
    "resize_page",
    "same_origin",
    "strip_token",
    "token_allowed",
    "with_params",
]
