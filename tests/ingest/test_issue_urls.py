"""One reader of issue URLs for the URL lists, the study label import and `manage.py sync`.

Table-driven: every form the two old parsers accepted (dataset.forges: `www.`, any owner
characters; ingest.urllists: `[\\w.-]` segments, nested GitLab groups) is still read, plus a
query string or fragment; hostile text is refused with a reason naming what is wrong.
"""

from __future__ import annotations

import pytest

from dataset.forges import parse_issue_url as dataset_parse
from ingest.issue_urls import IssueRef, parse_issue_url, parse_repo_spec, read_issue_url
from ingest.urllists import parse_line

GH, GE, GL = "github", "gitee", "gitlab"

ACCEPTED = [
    # (url, forge, owner, name, number)
    ("https://github.com/NVIDIA/Megatron-LM/issues/1194", GH, "NVIDIA", "Megatron-LM", "1194"),
    ("https://github.com/NVIDIA/Megatron-LM/issues/1194/", GH, "NVIDIA", "Megatron-LM", "1194"),
    ("http://github.com/NVIDIA/Megatron-LM/issues/7", GH, "NVIDIA", "Megatron-LM", "7"),
    ("https://www.github.com/a.b/c_d/issues/7", GH, "a.b", "c_d", "7"),
    ("https://GitHub.com/o/n/issues/7", GH, "o", "n", "7"),
    ("https://github.com/o/n/issues/7?foo=bar", GH, "o", "n", "7"),
    ("https://github.com/o/n/issues/7#issuecomment-123", GH, "o", "n", "7"),
    ("https://github.com/o/n/issues/7/?x=1#top", GH, "o", "n", "7"),
    ("  https://github.com/o/n/issues/7 \r", GH, "o", "n", "7"),
    ("\ufeffhttps://github.com/o/n/issues/7", GH, "o", "n", "7"),
    ("https://gitee.com/ascend/MindSpeed/issues/IBD6YU", GE, "ascend", "MindSpeed", "IBD6YU"),
    ("https://gitee.com/ascend/MindSpeed/issues/ibd6yu/", GE, "ascend", "MindSpeed", "ibd6yu"),
    ("http://www.gitee.com/ascend/MindSpeed/issues/I8ABC1", GE, "ascend", "MindSpeed", "I8ABC1"),
    ("https://gitee.com/ascend/MindSpeed/issues/IBD6YU?from=list", GE, "ascend", "MindSpeed",
     "IBD6YU"),
    ("https://gitlab.com/group/project/-/issues/12", GL, "group", "project", "12"),
    ("https://gitlab.com/a/b/c/project/-/issues/12/", GL, "a/b/c", "project", "12"),
    ("http://gitlab.com/a/b/project/-/issues/12#note_5", GL, "a/b", "project", "12"),
    ("https://github.com/ünï/cödé/issues/3", GH, "ünï", "cödé", "3"),  # old urllists: \w
]  # fmt: skip

REFUSED = [
    # (text, the reason read_issue_url gives, in part)
    ("javascript:alert(1)//github.com/o/n/issues/1", "not an issue URL"),
    ("ftp://github.com/o/n/issues/1", "not an issue URL"),
    ("github.com/o/n/issues/1", "not an issue URL"),
    ("", "not an issue URL"),
    ("https://bitbucket.org/a/b/issues/1", "unknown host 'bitbucket.org'"),
    ("https://github.com.evil.example/o/n/issues/1", "unknown host"),
    ("https://user@github.com/o/n/issues/1", "unknown host"),
    ("https://github.com:8443/o/n/issues/1", "unknown host"),
    ("https://www.gitlab.com/g/p/-/issues/1", "unknown host"),
    ("https://github.com/o/n/pull/1", "not a github issue URL"),
    ("https://github.com/o/n/issues/ABC", "not a github issue URL"),  # GitHub: digits only
    ("https://github.com/o/n/issues/", "not a github issue URL"),
    ("https://github.com/o/issues/1", "not a github issue URL"),
    ("https://github.com/../n/issues/1", "not a github issue URL"),
    ("https://github.com/o/<script>/issues/1", "not a github issue URL"),
    ("https://github.com/o/n%2F..%2F/issues/1", "not a github issue URL"),
    ("https://github.com/o/n\x00/issues/1", "not a github issue URL"),
    ("https://github.com/o/n/issues/1 https://github.com/o/n/issues/2", "not a github"),
    ("https://gitee.com/o/n/issues/IB-6YU", "not a gitee issue URL"),
    ("https://gitlab.com/g/p/issues/1", "not a gitlab issue URL"),  # GitLab needs /-/
    ("https://gitlab.com/p/-/issues/1", "not a gitlab issue URL"),  # no owner
    ("https://github.com/o/n/issues/" + "9" * 33, "issue number is too long, at most 32"),
    (f"https://github.com/{'o' * 201}/n/issues/1", "owner is too long, at most 200"),
    (f"https://github.com/o/n/issues/1?{'x' * 600}", "URL is too long, at most 500"),
    ("https://github.com/o/n/issues/1#" + "x" * 5000, "longer than 4096 characters"),
]


@pytest.mark.parametrize(("url", "forge", "owner", "name", "number"), ACCEPTED)
def test_every_issue_url_form_names_the_same_issue_in_every_reader(url, forge, owner, name, number):
    expected = IssueRef(forge, owner, name, number)
    assert parse_issue_url(url) == expected
    assert dataset_parse(url) == expected  # the study label import
    assert parse_line(url) == expected  # the URL lists
    sep = "/-/issues/" if forge == GL else "/issues/"
    assert expected.url == f"https://{forge}.com/{owner}/{name}{sep}{number}"
    assert expected.repo_key == (forge, owner, name)


@pytest.mark.parametrize(("text", "reason"), REFUSED)
def test_hostile_or_foreign_text_is_no_issue_and_says_why(text, reason):
    got = read_issue_url(text)
    assert isinstance(got, str), got
    assert reason in got
    assert len(got) < 200  # a reason, not the hostile text echoed back
    if "too long" not in reason:  # lengths are the caller's to check after parse_issue_url
        assert parse_issue_url(text) is None
        assert dataset_parse(text) is None


def test_a_url_list_line_reports_the_reason_for_a_lead():
    assert parse_line("https://bitbucket.org/a/b/issues/1") == "unknown host 'bitbucket.org'"
    assert parse_line("not a url at all") == "not an issue URL"
    assert parse_line("https://github.com/a/b/pull/1") == "not a github issue URL"


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("github:NVIDIA/Megatron-LM", ("github", "NVIDIA", "Megatron-LM")),
        ("gitee:ascend/MindSpeed", ("gitee", "ascend", "MindSpeed")),
        ("gitlab:group/sub/project", ("gitlab", "group/sub", "project")),
        ("github:o/n.js", ("github", "o", "n.js")),
        ("bitbucket:o/n", None),
        ("github:o", None),
        ("github:../n", None),
        ("github:o/n?x=1", None),
        ("github:o/<n>", None),
        (f"github:{'o' * 201}/n", None),
    ],
)
def test_the_sync_command_reads_repository_specs_with_the_same_segments(spec, expected):
    assert parse_repo_spec(spec) == expected
