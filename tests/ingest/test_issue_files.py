"""Reading an uploaded file of issues (ingest.issue_files): what a lead's CSV, JSON Lines or URL
list holds, and every problem named by its line. Pure reading: no database."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from ingest.issue_files import read_issue_file

HEADER = "url,title,body,labels,created_at,comments\n"


def test_a_csv_of_a_mailing_list_and_a_forge_is_read_with_labels_dates_and_comments():
    data = (
        HEADER + "https://lists.example.org/archive/2024/0042.html,Loss spikes after resume,"
        '"bf16 on 8 GPUs",bug; training,2024-03-01T10:00:00Z,'
        '"[{""author"": ""mia"", ""body"": ""same here"", ""created_at"": ""2024-03-02""}]"\n'
        "https://github.com/NVIDIA/Megatron-LM/issues/7,Hangs at step 0,,,2024-03-05,one reply\n"
    ).encode()
    reading = read_issue_file("list.csv", data)
    assert reading.kind == "csv" and reading.problems == []
    first, second = reading.rows
    assert first.ref is None and len(first.number) == 16  # a digest: not a forge issue
    assert first.labels == ["bug", "training"]
    assert first.created_at == datetime(2024, 3, 1, 10, tzinfo=UTC)
    assert [(c.author, c.body) for c in first.comments] == [("mia", "same here")]
    assert first.comments[0].created_at == datetime(2024, 3, 2, tzinfo=UTC)
    assert second.ref is not None and (second.ref.owner, second.number) == ("NVIDIA", "7")
    assert [c.body for c in second.comments] == ["one reply"]


def test_an_exported_issues_jsonl_line_is_read_and_its_other_keys_are_named_as_ignored():
    record = {
        "url": "https://gitee.com/mindspore/mindspore/issues/IBD6YU",
        "forge": "gitee",
        "number": "IBD6YU",
        "title": "NPU out of memory",
        "labels": ["bug"],
        "comments": [{"author": "li", "body": "fixed", "created_at": None}],
        "annotations": [],
    }
    reading = read_issue_file("issues.jsonl", (json.dumps(record) + "\n\n").encode())
    assert reading.kind == "jsonl" and reading.problems == []
    assert reading.rows[0].number == "IBD6YU" and reading.rows[0].comments[0].body == "fixed"
    assert reading.ignored_columns == ["forge", "annotations"]


def test_every_problem_is_named_by_its_line():
    lines = [
        "url,title,created_at",
        "https://example.org/a,Fine,2024-01-01",  # line 2
        "https://example.org/b,Bad date,yesterday",  # line 3
        "javascript:alert(1),Script,",  # line 4
        "https://github.com/NVIDIA/Megatron-LM/pull/3,A pull request,",  # line 5
        "https://example.org/a,Repeat,",  # line 6
        "https://example.org/c,,",  # line 7
        "https://example.org/d,Nul\x00title,",  # line 8
        "https://example.org/e,Too,many,cells",  # line 9
    ]
    reading = read_issue_file("f.csv", "\n".join(lines).encode())
    by_line = {p.split(":")[0]: p for p in reading.problems}
    assert sorted(by_line) == [f"f.csv, line {n}" for n in range(3, 10)]
    assert "'yesterday' is not an ISO 8601 date" in by_line["f.csv, line 3"]
    assert "not an http(s) URL" in by_line["f.csv, line 4"]
    assert "not a github issue URL" in by_line["f.csv, line 5"]
    assert "repeats line 2" in by_line["f.csv, line 6"]
    assert "title: empty" in by_line["f.csv, line 7"]
    assert "NUL" in by_line["f.csv, line 8"]
    assert "expected 3 cells, got 4" in by_line["f.csv, line 9"]
    assert [r.line for r in reading.rows] == [2]


def test_hostile_json_lines_and_bytes_are_problems_not_crashes():
    deep = '{"url": "https://example.org/x", "title": "t", "labels": ' + "[" * 5000 + "]" * 5000
    reading = read_issue_file("x.jsonl", (deep + "}\n[1, 2]\nnot json\n").encode())
    assert [p.split(":")[0] for p in reading.problems] == [
        "x.jsonl, line 1",
        "x.jsonl, line 2",
        "x.jsonl, line 3",
    ]
    assert "nested deeper" in reading.problems[0]
    latin1 = read_issue_file("y.csv", b"url,title\nhttps://example.org/a,caf\xe9\n")
    assert latin1.problems == ["y.csv, line 2: not UTF-8 (invalid continuation byte)"]


def test_a_csv_cell_over_the_limit_is_a_problem_on_its_line_and_reading_goes_on():
    big = "t" * 140_000
    text = f'url,title\nhttps://example.org/a,"two\nlines"\nhttps://example.org/b,{big}\n'
    reading = read_issue_file("f.csv", (text + "https://example.org/c,Fine\n").encode())
    assert len(reading.problems) == 1
    assert reading.problems[0].startswith("f.csv, line 4: a cell is over 131,072 characters")
    assert [(r.line, r.title) for r in reading.rows] == [(3, "two\nlines"), (5, "Fine")]


def test_a_csv_without_a_title_column_says_which_columns_are_needed():
    reading = read_issue_file("f.csv", b"URL,Subject\nhttps://example.org/a,x\n")
    assert len(reading.problems) == 1
    assert reading.problems[0].startswith("f.csv, line 1: missing column(s): title")


def test_a_url_list_is_read_by_the_url_list_reader_and_progress_is_reported():
    urls = "\n".join(f"https://github.com/NVIDIA/Megatron-LM/issues/{n}" for n in range(1, 1201))
    seen: list[int] = []
    reading = read_issue_file("list.txt", (urls + "\nnot a url\n").encode())
    assert reading.kind == "urls" and len(reading.urls.refs) == 1200
    assert reading.problems == ["list.txt, line 1201: not an issue URL: 'not a url'"]
    rows = "url,title\n" + "".join(f"https://example.org/{n},t{n}\n" for n in range(1200))
    read_issue_file("big.csv", rows.encode(), progress=lambda done, total: seen.append(done))
    assert seen == [500, 1000]


def test_a_preview_stops_after_its_rows():
    rows = "url,title\n" + "".join(f"https://example.org/{n},t{n}\n" for n in range(50))
    reading = read_issue_file("big.csv", rows.encode(), limit=10)
    assert reading.records == 10 and len(reading.rows) == 10


# Records shaped as the forges' APIs return them (../shared/reference/forge-apis.md): Mei
# saves a page of each forge's issue list as JSON Lines and uploads it as it is.
GITHUB_ISSUE = {
    "id": 2210001,
    "node_id": "I_kwDOAbc",
    "number": 10,
    "title": "Loss is NaN after resume",
    "body": None,
    "user": {"login": "octocat", "id": 1},
    "labels": [{"id": 7, "name": "bug"}, {"id": 8, "name": "training"}],
    "state": "closed",
    "state_reason": "completed",
    "comments": 3,
    "created_at": "2024-03-01T10:00:00Z",
    "updated_at": "2024-03-02T10:00:00Z",
    "closed_at": None,
    "html_url": "https://github.com/NVIDIA/Megatron-LM/issues/10",
    "url": "https://api.github.com/repos/NVIDIA/Megatron-LM/issues/10",
}
GITEE_ISSUE = {
    "id": 99,
    "number": "IBD6YU",
    "title": "NPU out of memory",
    "body": "on 910B",
    "user": {"login": "li", "id": 5},
    "labels": [{"name": "kind/bug"}],
    "state": "open",
    "comments": 0,
    "created_at": "2024-05-01T18:00:00+08:00",
    "html_url": "https://gitee.com/mindspore/mindspore/issues/IBD6YU",
    "url": "https://gitee.com/api/v5/repos/mindspore/mindspore/issues/IBD6YU",
}
GITLAB_ISSUE = {
    "id": 123456,
    "iid": 42,
    "title": "Pipeline hangs",
    "description": "after the upgrade",
    "author": {"username": "ana", "id": 3},
    "labels": ["bug"],
    "state": "opened",
    "user_notes_count": 2,
    "created_at": "2024-06-01T08:00:00.000Z",
    "web_url": "https://gitlab.com/group/project/-/issues/42",
}


def _jsonl(*records: dict) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def test_issues_as_each_forge_api_returns_them_are_read():
    reading = read_issue_file("api.jsonl", _jsonl(GITHUB_ISSUE, GITEE_ISSUE, GITLAB_ISSUE))
    assert reading.problems == []
    github, gitee, gitlab = reading.rows
    # The page's address, not the API's; the integer number; the login; label names.
    assert github.url == "https://github.com/NVIDIA/Megatron-LM/issues/10"
    assert github.ref is not None and github.number == "10" and github.author == "octocat"
    assert github.labels == ["bug", "training"] and github.body == "" and github.comments == []
    assert gitee.ref is not None and gitee.number == "IBD6YU" and gitee.author == "li"
    assert gitee.labels == ["kind/bug"]
    assert gitee.created_at == datetime(2024, 5, 1, 10, tzinfo=UTC)  # +08:00 read as such
    assert gitlab.ref is not None and gitlab.number == "42" and gitlab.author == "ana"
    assert gitlab.body == "after the upgrade" and gitlab.labels == ["bug"]
    # Keys read under another name are not named as ignored; the rest are.
    assert "html_url" not in reading.ignored_columns and "user" not in reading.ignored_columns
    assert {"node_id", "state_reason", "user_notes_count"} <= set(reading.ignored_columns)


def test_an_integer_number_of_an_export_record_is_accepted():
    record = {"url": "https://example.org/list/10", "title": "From a mailing list", "number": 10}
    reading = read_issue_file("one.jsonl", _jsonl(record))
    assert reading.problems == [] and reading.rows[0].number == "10"
    # The number must still match the URL's.
    wrong = {**GITHUB_ISSUE, "number": 11}
    reading = read_issue_file("wrong.jsonl", _jsonl(wrong))
    assert reading.problems == ["wrong.jsonl, line 1: number: '11' but the URL names issue 10"]


def test_a_boolean_a_fraction_or_a_huge_number_is_refused_on_its_line():
    fine = {"url": "https://example.org/a", "title": "fine", "number": 1}
    lines = [
        fine,
        {"url": "https://example.org/b", "title": "bool", "number": True},
        {"url": "https://example.org/c", "title": "float", "number": 10.0},
        {"url": "https://example.org/d", "title": "huge", "number": 2**70},
        {"url": "https://example.org/e", "title": "negative", "number": -3},
        {"url": "https://example.org/f", "title": "labels", "labels": [{"id": 1}]},
        {"url": "https://example.org/g", "title": "author", "author": 7},
    ]
    reading = read_issue_file("bad.jsonl", _jsonl(*lines))
    by_line = {p.split(":")[0]: p for p in reading.problems}
    assert sorted(by_line) == [f"bad.jsonl, line {n}" for n in range(2, 8)], reading.problems
    assert "number: True is not an issue number" in by_line["bad.jsonl, line 2"]
    assert "number: 10.0 is not an issue number" in by_line["bad.jsonl, line 3"]
    assert f"number: {2**70} is out of range" in by_line["bad.jsonl, line 4"]
    assert "number: -3 is out of range" in by_line["bad.jsonl, line 5"]
    assert "labels: not a list of names" in by_line["bad.jsonl, line 6"]
    assert "author: not text" in by_line["bad.jsonl, line 7"]
    assert [row.line for row in reading.rows] == [1]
