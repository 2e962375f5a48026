"""Forge links are hostile: an issue's html_url is kept only if it is https (or the listed
http of the API host) on the forge's web host; anything else is replaced by the issue's
canonical URL, and a link is rendered only for an http(s) URL."""

from __future__ import annotations

import pytest
from django.template.loader import render_to_string

from ingest.hosts import web_origin_ok
from ingest.models import Issue, Repository
from ingest.runs import start_sync
from ingest.steps import run_inline
from ingest.templatetags.forge_links import http_link
from tests.conftest import make_issue

HOSTILE = [
    "javascript:alert(document.cookie)",
    "data:text/html,<script>alert(1)</script>",
    "https://evil.example/NVIDIA/Megatron-LM/issues/2",
    "//evil.example/x",
    "https://user:pw@127.0.0.1/x",
]


@pytest.mark.django_db
@pytest.mark.parametrize("forge", ["github", "gitee", "gitlab"])
def test_hostile_issue_links_are_replaced_by_canonical_urls(fake, make_repo, forge):
    forge_repo, repo = make_repo(forge, "acme", "engine")
    forge_repo.add_issue(1)  # the fake forge's own link: on the API URL's host, kept
    for n, url in enumerate(HOSTILE, start=2):
        forge_repo.add_issue(n).html_url = url
    forge_repo.touch()
    run = run_inline(start_sync(repo, enqueue=False))
    assert run.status == "done"
    urls = dict(Issue.objects.filter(repository=repo).values_list("number", "url"))
    assert urls["1"].startswith(fake.url + "/acme/engine/")
    for n in range(2, 2 + len(HOSTILE)):
        assert urls[str(n)] == f"{repo.web_url}/issues/{n}"
    # The forge's payload is kept as it came, for the record.
    raw = Issue.objects.get(repository=repo, number="2").raw
    assert raw["web_url" if forge == "gitlab" else "html_url"] == HOSTILE[0]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("forge", "url", "ok"),
    [
        ("github", "https://github.com/NVIDIA/Megatron-LM/issues/1", True),
        ("github", "http://github.com/NVIDIA/Megatron-LM/issues/1", False),
        ("github", "https://github.com.evil.example/x", False),
        ("github", "https://gitee.com/ascend/MindSpeed/issues/IBD6YU", False),
        ("gitee", "https://gitee.com/ascend/MindSpeed/issues/IBD6YU", True),
        ("gitlab", "https://gitlab.com/group/tool/-/issues/3", True),
        ("gitlab", "javascript:alert(1)", False),
        ("gitlab", "", False),
    ],
)
def test_links_on_a_public_forge_must_be_https_on_its_web_host(forge, url, ok):
    repo = Repository(forge=forge, api_url=Repository.DEFAULT_API_URLS[forge], owner="o", name="r")
    assert web_origin_ok(repo, url) is ok


def test_links_on_a_listed_host_are_on_that_host(settings):
    settings.FORGE_API_HOSTS = ["ghe.lab.example"]
    repo = Repository(forge="github", api_url="https://ghe.lab.example/api/v3", owner="o", name="r")
    assert web_origin_ok(repo, "https://ghe.lab.example/o/r/issues/1")
    assert not web_origin_ok(repo, "http://ghe.lab.example/o/r/issues/1")  # the API is https
    assert not web_origin_ok(repo, "https://github.com/o/r/issues/1")


@pytest.mark.parametrize(
    ("url", "link"),
    [
        ("https://github.com/NVIDIA/Megatron-LM/issues/1", True),
        ("http://127.0.0.1:8000/a/b/issues/1", True),
        ("HTTPS://GITHUB.COM/x", True),
        ("javascript:alert(1)", False),
        ("JavaScript:alert(1)", False),
        (" javascript:alert(1)", False),
        ("java\tscript:alert(1)", False),
        ("data:text/html,<b>x</b>", False),
        ("vbscript:msgbox", False),
        ("/relative/path", False),
        ("https://", False),
        ("", False),
        (None, False),
    ],
)
def test_http_link_filter(url, link):
    assert http_link(url) == (url if link else "")


@pytest.mark.django_db
def test_the_issue_view_renders_the_original_link_only_for_http_urls(repository):
    safe = make_issue(repository, 1)
    hostile = make_issue(repository, 2, url="javascript:alert(1)")
    page = render_to_string("labeling/_issue.html", {"issue": safe, "comments": []})
    assert f'href="{safe.url}"' in page and 'id="original-link"' in page
    page = render_to_string("labeling/_issue.html", {"issue": hostile, "comments": []})
    assert "javascript:" not in page and 'id="original-link"' not in page
