"""An issue's URL in the study's files: read by `ingest.issue_urls` (re-exported here), and
written back.

Writing them back (`study_issue_url`): the URL a forge returned is hostile, so the study export
writes it only when it is the issue URL of that very issue, and the canonical URL otherwise.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from ingest.issue_urls import IssueRef, has_extras, parse_issue_url
from ingest.models import Repository

__all__ = ["IssueRef", "canonical_issue_url", "parse_issue_url", "study_issue_url"]


def _on_public_host(repository: Repository) -> bool:
    default_api = Repository.DEFAULT_API_URLS.get(repository.forge, "")
    return repository.api_url.rstrip("/") == default_api.rstrip("/")


def canonical_issue_url(repository: Repository, number: str) -> str:
    """The web URL of issue `number` of `repository`: on the forge's public host, or on the
    host of the repository's API URL for a self-hosted forge or GitHub Enterprise."""
    if _on_public_host(repository):
        root = f"https://{Repository.WEB_HOSTS[repository.forge]}"
    else:
        parts = urlsplit(repository.api_url)
        root = f"{parts.scheme}://{parts.netloc}"
    issues = "-/issues" if repository.forge == Repository.Forge.GITLAB else "issues"
    return f"{root}/{repository.owner}/{repository.name}/{issues}/{number}"


def study_issue_url(url: str, repository: Repository, number: str) -> str | None:
    """None when `url` may be written as it is: a forge issue URL naming this very issue (any
    form `parse_issue_url` reads but for a query or fragment, on a public forge; exactly the
    canonical URL on a self-hosted one). Otherwise the canonical URL to write instead: a
    forge's `html_url` such as `=HYPERLINK(…)`, or a link elsewhere, never reaches the study
    file raw."""
    if repository.is_uploaded:
        return None  # no forge to point at: the upload checked it is an http(s) URL
    canonical = canonical_issue_url(repository, number)
    if url == canonical:
        return None
    if (
        _on_public_host(repository)
        and url == url.strip()
        and not has_extras(url)
        and url.startswith(("https://", "http://"))
    ):
        expected = IssueRef(str(repository.forge), repository.owner, repository.name, number)
        if parse_issue_url(url) == expected:
            return None
    return canonical
