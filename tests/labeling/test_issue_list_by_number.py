"""The issue list sorted by number, read repository by repository (`issue_list.ByRepository`).

A page of the list by number reads only the repositories it falls in instead of sorting the
whole project (issue #30 item 5). These tests hold it to the one query's order
(`issue_list.issue_list`, a plain ORDER BY of `_ordering`) on data where cutting by repository
could go wrong: repositories whose owner and name sort otherwise than their ids, two of one
owner and name (on two forges) whose issues interleave and tie on a number, numbers of every
length (9, 10, 100) and Gitee's text numbers, each direction, every page (small pages, so some
span two repositories), each filter. Then the queue row's copy of its repository, which the
counts read: kept by the database through every write, and a row without one falls back to
the one query; and the plans (counts without a join, a page's ids from the number index).
"""

from __future__ import annotations

import random
import re
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from ingest.models import Issue, Repository
from labeling import issue_list
from labeling.models import ProjectIssue
from lib import sql
from tests.conftest import make_issue

pytestmark = [pytest.mark.django_db, pytest.mark.one_path]

GITHUB = ("github", "https://api.github.com")
GITEE = ("gitee", "https://gitee.com/api/v5")

# (owner, name, forge): created in this order, so their ids do not follow owner and name.
REPOSITORIES = [
    ("zeta", "engine", GITHUB),
    ("alpha", "zoo", GITEE),
    ("alpha", "bee", GITHUB),
    ("mid", "twin", GITHUB),
    ("mid", "twin", GITEE),  # the same owner and name on another forge
]
NUMBERS = {
    ("zeta", "engine", GITHUB): ["100", "9", "10", "1", "99", "1000", "11", "2"],
    ("alpha", "zoo", GITEE): ["IBD6YU", "I8ZQ1A", "AB", "Z", "IBD6YV", "I1", "ZZZZZZ"],
    ("alpha", "bee", GITHUB): ["10", "9", "100"],
    ("mid", "twin", GITHUB): ["10", "9", "100", "5", "77"],
    ("mid", "twin", GITEE): ["10", "IBD6YU", "9", "6", "I2"],  # 10 and 9 tie with GitHub's
}


@pytest.fixture
def numbered(project) -> dict[tuple[str, str, str], ProjectIssue]:
    """The issues above as queue rows, stored in a shuffled order (the rows' ids decide ties
    only), with statuses, levels and dates spread over them; by (owner, name, forge, number)."""
    repositories = {
        (owner, name, forge): Repository.objects.create(
            forge=forge[0], api_url=forge[1], owner=owner, name=name, group=owner
        )
        for owner, name, forge in REPOSITORIES
    }
    issues = [
        (key, number) for key, numbers in NUMBERS.items() for number in numbers
    ]  # fmt: skip
    random.Random(30).shuffle(issues)
    states = [
        {"status": "open", "annotation_count": 0},
        {"status": "open", "annotation_count": 1},
        {"status": "disagreement", "annotation_count": 2, "disagreement_level": "type"},
        {"status": "final", "annotation_count": 2},
        {"status": "disagreement", "annotation_count": 2, "disagreement_level": "theme"},
    ]
    rows = {}
    for n, (key, number) in enumerate(issues):
        issue = make_issue(
            repositories[key],
            number,
            created_at=datetime(2023, 1, 1, tzinfo=UTC) + timedelta(days=37 * n),
            body="Training hangs at step 0." if n % 3 else "The loss is NaN.",
        )
        rows[(*key[:2], key[2][0], number)] = ProjectIssue.objects.create(
            project=project, issue=issue, position=n, **states[n % len(states)]
        )
    return rows


FILTERS = [
    {},
    {"status": "open"},
    {"status": "disagreement", "level": "theme"},
    {"created_from": datetime(2023, 6, 1).date(), "created_to": datetime(2025, 6, 1).date()},
    {"q": "hangs"},
]


def _pages(project, filters: issue_list.IssueFilters) -> list[list[int]]:
    """Every page of the list, as queue row ids, read as the page reads them."""
    first = issue_list.issue_page(project, filters, 1)
    return [
        [row.item.pk for row in issue_list.issue_page(project, filters, n).object_list]
        for n in first.paginator.page_range
    ]


@pytest.mark.parametrize("per_page", [1, 4, 7, 50])
@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("fields", FILTERS)
def test_every_page_is_the_one_querys_order(
    monkeypatch, project, numbered, fields, descending, per_page
):
    monkeypatch.setattr(issue_list, "PER_PAGE", per_page)
    filters = issue_list.IssueFilters(sort="number", descending=descending, **fields)
    expected = list(issue_list.issue_list(project, filters).values_list("pk", flat=True))
    assert expected, "every filter here keeps some rows"
    pages = _pages(project, filters)
    assert [pk for page in pages for pk in page] == expected
    assert pages == [expected[i : i + per_page] for i in range(0, len(expected), per_page)]
    assert issue_list.issue_page(project, filters).paginator.count == len(expected)


@pytest.mark.parametrize("descending", [False, True])
def test_every_slice_is_the_one_querys_slice(project, numbered, descending):
    filters = issue_list.IssueFilters(sort="number", descending=descending)
    expected = list(issue_list.issue_list(project, filters).values_list("pk", flat=True))
    rows = issue_list.ByRepository(issue_list._filtered(project, filters), descending)
    assert rows.count() == len(rows) == len(expected) == 28
    for start in range(len(expected) + 1):
        for stop in range(start, len(expected) + 3):
            assert [item.pk for item in rows[start:stop]] == expected[start:stop], (start, stop)


def test_the_order_by_hand(project, numbered):
    """The order itself, written out: repositories by owner then name (not by id), the two
    of one owner and name together with their numbers interleaved (a tie by the queue row's
    id), numbers shorter first; descending is the exact reverse."""
    filters = issue_list.IssueFilters(sort="number", descending=False)
    page = issue_list.issue_page(project, filters).object_list
    got = [(r.item.issue.repository.full_name, r.item.issue.number) for r in page]
    twin_10 = sorted(
        [numbered[("mid", "twin", "github", "10")], numbered[("mid", "twin", "gitee", "10")]],
        key=lambda item: item.pk,
    )
    twin_9 = sorted(
        [numbered[("mid", "twin", "github", "9")], numbered[("mid", "twin", "gitee", "9")]],
        key=lambda item: item.pk,
    )
    assert got == [
        ("alpha/bee", "9"), ("alpha/bee", "10"), ("alpha/bee", "100"),
        ("alpha/zoo", "Z"), ("alpha/zoo", "AB"), ("alpha/zoo", "I1"),
        ("alpha/zoo", "I8ZQ1A"), ("alpha/zoo", "IBD6YU"), ("alpha/zoo", "IBD6YV"),
        ("alpha/zoo", "ZZZZZZ"),
        ("mid/twin", "5"), ("mid/twin", "6"), ("mid/twin", "9"), ("mid/twin", "9"),
        ("mid/twin", "10"), ("mid/twin", "10"), ("mid/twin", "77"), ("mid/twin", "I2"),
        ("mid/twin", "100"), ("mid/twin", "IBD6YU"),
        ("zeta/engine", "1"), ("zeta/engine", "2"), ("zeta/engine", "9"),
        ("zeta/engine", "10"), ("zeta/engine", "11"), ("zeta/engine", "99"),
        ("zeta/engine", "100"), ("zeta/engine", "1000"),
    ]  # fmt: skip
    ids = [r.item.pk for r in page]
    assert ids[12:14] == [item.pk for item in twin_9]
    assert ids[14:16] == [item.pk for item in twin_10]
    backwards = issue_list.issue_page(project, issue_list.IssueFilters(sort="number")).object_list
    assert [r.item.pk for r in backwards] == ids[::-1]


def test_a_page_across_two_repositories_reads_each(monkeypatch, project, numbered):
    """Page 3 of 4 rows ascending holds alpha/zoo's last two issues and mid/twin's first two:
    one query of ids per repository group it falls in, none for the others, then one of the
    rows (the counts are read once, before)."""
    monkeypatch.setattr(issue_list, "PER_PAGE", 4)
    filters = issue_list.IssueFilters(sort="number", descending=False)
    rows = issue_list.ByRepository(issue_list._filtered(project, filters), False)
    assert [len(ids) for ids, _ in rows.groups] == [1, 1, 2, 1]  # the twins are one group
    assert [count for _, count in rows.groups] == [3, 7, 10, 8]
    with CaptureQueriesContext(connection) as queries:
        page = rows[8:12]
    assert len(queries) == 3, [q["sql"] for q in queries]  # ids, ids, their rows
    assert [(i.issue.repository.name, i.issue.number) for i in page] == [
        ("zoo", "IBD6YV"), ("zoo", "ZZZZZZ"), ("twin", "5"), ("twin", "6")
    ]  # fmt: skip


def test_the_repository_filter_reads_one_repository(project, numbered):
    twin = Repository.objects.get(owner="mid", name="twin", forge="gitee")
    filters = issue_list.IssueFilters(sort="number", descending=False, repository_id=twin.pk)
    page = issue_list.issue_page(project, filters)
    assert [r.item.issue.number for r in page.object_list] == ["6", "9", "10", "I2", "IBD6YU"]


def test_an_empty_list_has_one_empty_page(project, numbered):
    filters = issue_list.IssueFilters(sort="number", q="nothingmatchesthisword")
    page = issue_list.issue_page(project, filters, 3)
    assert page.number == 1 and page.paginator.count == 0 and list(page.object_list) == []


# --- the queue row's copy of its repository (labeling migration 0009) ------------------------


def _copies(project) -> dict[int, tuple[int | None, int]]:
    """Each queue row's stored repository beside its issue's."""
    return {
        pk: (stored, real)
        for pk, stored, real in ProjectIssue.objects.filter(project=project).values_list(
            "pk", "repository_id", "issue__repository_id"
        )
    }


def test_the_repository_copy_follows_every_write(project, numbered):
    """Written by the database whatever writes: create (above), bulk_create, COPY, a changed
    issue, a wrong value written on purpose, an issue moved to another repository."""
    assert all(stored == real for stored, real in _copies(project).values())
    zeta = Repository.objects.get(owner="zeta")
    bee = Repository.objects.get(owner="alpha", name="bee")
    bulk = ProjectIssue.objects.bulk_create(
        [ProjectIssue(project=project, issue=make_issue(zeta, 5000), position=900)]
    )[0]
    sql.copy_rows(
        ProjectIssue,
        ["project_id", "issue_id", "position"],
        [(project.pk, make_issue(bee, 5001).pk, 901)],
    )
    copied = ProjectIssue.objects.get(issue__number="5001")
    assert _copies(project)[bulk.pk] == (zeta.pk, zeta.pk)
    assert _copies(project)[copied.pk] == (bee.pk, bee.pk)
    # Pointed at another issue; a wrong copy written (and a save of an instance that never
    # read it, which writes NULL): the database puts back the issue's.
    ProjectIssue.objects.filter(pk=bulk.pk).update(issue=make_issue(bee, 5002))
    assert _copies(project)[bulk.pk] == (bee.pk, bee.pk)
    ProjectIssue.objects.filter(pk=copied.pk).update(repository=zeta)
    assert _copies(project)[copied.pk] == (bee.pk, bee.pk)
    fresh = ProjectIssue.objects.create(project=project, issue=make_issue(zeta, 5003))
    fresh.position = 902
    fresh.save()
    assert _copies(project)[fresh.pk] == (zeta.pk, zeta.pk)
    # An issue moved to another repository takes its queue rows' copies along.
    Issue.objects.filter(repository=zeta, number="1000").update(repository=bee)
    moved = numbered[("zeta", "engine", "github", "1000")].pk
    assert _copies(project)[moved] == (bee.pk, bee.pk)
    assert all(stored == real for stored, real in _copies(project).values())


def test_a_row_without_a_copy_sorts_in_one_query(monkeypatch, project, numbered):
    """A database whose rows have no copy (no triggers: SQLite, or a restore without them)
    gets the one query's pages, never a page cut by wrong counts."""
    monkeypatch.setattr(issue_list, "PER_PAGE", 4)
    with connection.cursor() as cursor:  # (undone with the test's transaction)
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # (DDL after rows written)
        cursor.execute("ALTER TABLE annotator_projectissue DISABLE TRIGGER USER")
        cursor.execute("UPDATE annotator_projectissue SET repository_id = NULL WHERE id IN "
                       "(SELECT id FROM annotator_projectissue ORDER BY id LIMIT 3)")  # fmt: skip
    filters = issue_list.IssueFilters(sort="number", descending=False)
    rows = issue_list.ByRepository(issue_list._filtered(project, filters), False)
    assert rows.groups is None
    expected = list(issue_list.issue_list(project, filters).values_list("pk", flat=True))
    assert [pk for page in _pages(project, filters) for pk in page] == expected


def _page_plans(project, descending: bool) -> dict[str, str]:
    """Page 2 by number: each query's plan, by its SQL."""
    filters = issue_list.IssueFilters(sort="number", descending=descending)
    with CaptureQueriesContext(connection) as queries:
        issue_list.issue_page(project, filters, 2)
    plans = {}
    with connection.cursor() as cursor:
        for query in queries:
            cursor.execute("EXPLAIN " + query["sql"])
            plans[query["sql"]] = "\n".join(row[0] for row in cursor.fetchall())
    return plans


SORTS = re.compile(r"(^|->  )Sort ", re.M)  # a sort of whole rows (not an incremental one)


def test_a_page_reads_the_repository_counts_and_the_number_index(project, numbered):
    """At 387,420 issues a page by number sorted the whole project (0.6-1.2 s). Now the counts
    come from the queue rows alone (their index (project, repository) at 10x, no join) and a
    page's ids from the issue index (repository, length(number), number, id), read in order
    and stopped, each way. The probe can fire: without the index the ids are sorted."""
    zeta = Repository.objects.get(owner="zeta")  # last by name, first descending
    ProjectIssue.objects.bulk_create(
        ProjectIssue(project=project, issue=make_issue(zeta, 10_000 + n), position=1000 + n)
        for n in range(3000)
    )
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # (DDL below, after the rows)
        cursor.execute("ANALYZE ingest_issue")
        cursor.execute("ANALYZE annotator_projectissue")
        cursor.execute("SET LOCAL max_parallel_workers_per_gather = 0")
    for descending in (False, True):
        plans = _page_plans(project, descending)
        (counts,) = [p for sql_, p in plans.items() if "COUNT(*)" in sql_]
        # (From its index alone once the table is vacuumed; in a test's transaction, no join.)
        assert "annotator_projectissue" in counts and "Join" not in counts, counts
        # Page 2 is zeta's alone either way.
        ids = [p for p in plans.values() if "ingest_issue_number_order" in p]
        assert len(ids) == 1 and not SORTS.search(ids[0]), plans
    with connection.cursor() as cursor:
        cursor.execute("DROP INDEX ingest_issue_number_order")  # undone with the test
    plans = _page_plans(project, False)
    assert any(SORTS.search(p) and "ingest_issue.number" in p for p in plans.values()), plans
