"""Scenario: Lena the lead and Rita the researcher look through every issue of the project.

Five issues in two repositories, K = 2, each in a different state: one nobody labeled, one Ada
alone labeled (in progress), one Ada and Otto disagree on (disagreement at the type), one both
labeled C.2 (final) and one both excluded (final, FP). Each filter, the search, each sort and
the pagination narrow or order them as written here by hand. Ada and Otto, annotators, and
Oscar, an outsider, get 404: the list shows statuses and final labels, which annotators must
not see before an issue is final.
"""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import urlencode

import pytest
from django.db import connection
from django.urls import reverse

from annotator.models import Membership, Project, Role
from ingest.models import Issue, Repository
from labeling import issue_list, resolution, submission
from labeling.models import Annotation, ProjectIssue, list_status_rank
from tests import embedded
from tests.conftest import STUDY_TAXONOMY_ID, make_issue
from tests.labeling.conftest import label_data, label_item

pytestmark = [pytest.mark.django_db, pytest.mark.one_path]

ROW = re.compile(r'<tr data-item="(\d+)"')
INDEX = "ingest_issue_search_document"
OLD_INDEX = "ingest_issue_search_english"  # the expression index of ingest migration 0006


def when(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


@pytest.fixture
def vllm(db):
    return Repository.objects.create(
        forge=Repository.Forge.GITHUB,
        api_url="https://api.github.com",
        owner="vllm-project",
        name="vllm",
        group="vLLM",
    )


@pytest.fixture
def study(project, repository, vllm, annotator, other_annotator):
    """The five issues, by name, as queue rows."""
    project.annotations_per_issue = 2
    project.save()
    specs = {
        # name: (repository, number, title, body, created)
        "untouched": (repository, 201, "Tokenizer question", "How do I load a tokenizer?",
                      "2023-03-01"),
        "progress": (repository, 202, "Resume fails", "The trainer crash happens on resume.",
                     "2023-06-01"),
        "fp": (repository, 1000, "Docs typo", "A typo in the README, nothing about models.",
               "2022-12-01"),
        "disputed": (vllm, 301, "NCCL timeout", "All-reduce hangs at step 0.", "2024-01-15"),
        "final": (vllm, 302, "Sampling params", "Temperature is ignored by the server.",
                  "2024-05-20"),
    }  # fmt: skip
    items = {}
    for position, (name, (repo, number, title, body, created)) in enumerate(specs.items()):
        issue = make_issue(repo, number, title=title, body=body, created_at=when(created))
        items[name] = ProjectIssue.objects.create(project=project, issue=issue, position=position)
    label_item(annotator, project, items["progress"], "A.1")
    label_item(annotator, project, items["disputed"], "A.1")
    label_item(other_annotator, project, items["disputed"], "C.1")
    for user in (annotator, other_annotator):
        label_item(user, project, items["final"], "C.2")
        label_item(user, project, items["fp"], "FP")
    # When each issue was last labeled (set by hand: the labels above all came just now).
    for name, last in [("progress", "2024-07-01"), ("disputed", "2024-08-01"),
                       ("final", "2024-06-01"), ("fp", "2024-05-01")]:  # fmt: skip
        Annotation.objects.filter(issue_id=items[name].issue_id).update(created_at=when(last))
        ProjectIssue.objects.filter(pk=items[name].pk).update(last_label_at=when(last))
    for item in items.values():
        item.refresh_from_db()
    assert [items[n].status for n in ("untouched", "progress", "disputed", "final", "fp")] == [
        "open",
        "open",
        "disagreement",
        "final",
        "final",
    ]
    return items


def listed(client, project, query: str = "", status: int = 200) -> list[int]:
    response = client.get(reverse("issue_list", args=[project.pk]) + query)
    assert response.status_code == status, response.content[:2000]
    return [int(pk) for pk in ROW.findall(response.content.decode())]


def names(study, ids: list[int]) -> list[str]:
    by_id = {item.pk: name for name, item in study.items()}
    return [by_id[i] for i in ids]


# --- who may look -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("persona", "expected"),
    [("lead", 200), ("researcher", 200), ("annotator", 404), ("outsider", 404)],
)
def test_leads_and_researchers_read_the_list_and_the_issue_annotators_do_not(
    request, client, project, study, persona, expected
):
    client.force_login(request.getfixturevalue(persona))
    item = study["disputed"]
    assert client.get(reverse("issue_list", args=[project.pk])).status_code == expected
    detail = reverse("issue_detail", args=[project.pk, item.pk])
    assert client.get(detail).status_code == expected


def test_an_issue_of_another_project_is_not_found(client, project, study, lead, taxonomy_version):
    from annotator.models import Project

    elsewhere = Project.objects.create(name="Another study", taxonomy_version=taxonomy_version)
    Membership.objects.create(project=elsewhere, user=lead, role="lead", pseudonym="rater-1")
    client.force_login(lead)
    # Lena leads both, but the issue is not in the other project's queue.
    assert (
        client.get(reverse("issue_detail", args=[elsewhere.pk, study["final"].pk])).status_code
        == 404
    )
    assert (
        client.get(reverse("issue_detail", args=[project.pk, study["final"].pk])).status_code == 200
    )


def test_someone_not_logged_in_is_sent_to_log_in(client, project, study):
    response = client.get(reverse("issue_list", args=[project.pk]))
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


# --- what a row shows -------------------------------------------------------------------------


def test_each_row_shows_status_final_label_level_and_counts(client, project, study, lead):
    client.force_login(lead)
    page = client.get(reverse("issue_list", args=[project.pk])).content.decode()
    rows = {int(pk): row for pk, row in re.findall(r'<tr data-item="(\d+)"(.*?)</tr>', page, re.S)}
    assert 'data-status="open"' in rows[study["untouched"].pk]
    assert 'data-status="in_progress"' in rows[study["progress"].pk]
    assert "in progress" in rows[study["progress"].pk]
    assert "1/2" in rows[study["progress"].pk]
    disputed = rows[study["disputed"].pk]
    assert 'data-status="disagreement"' in disputed and ">type<" in disputed and "2/2" in disputed
    assert '<td class="final-code">C.2</td>' in rows[study["final"].pk]
    assert '<td class="final-code">FP</td>' in rows[study["fp"].pk]
    assert '<td class="final-code">—</td>' in disputed
    # Dates in the language's short format (English: ISO-like, config/formats/en).
    assert "2024-08-01" in disputed  # last label
    assert "2024-01-15" in disputed  # created
    assert "vllm-project/vllm" in disputed and "NCCL timeout" in disputed
    detail = reverse("issue_detail", args=[project.pk, study["disputed"].pk])
    assert f'href="{detail}"' not in disputed  # a lead's disagreement opens the resolve page


def _row_links(client, project, item) -> set[str]:
    page = client.get(reverse("issue_list", args=[project.pk])).content.decode()
    row = page.split(f'<tr data-item="{item.pk}"', 1)[1].split("</tr>", 1)[0]
    return set(re.findall(r'<a[^>]* href="([^"]+)"', row))


def test_a_leads_disagreement_opens_the_resolve_page_a_researchers_the_issue_page(
    client, project, study, lead, researcher
):
    disputed, final = study["disputed"], study["final"]
    resolve = reverse("resolve_issue", args=[project.pk, disputed.pk])
    detail = reverse("issue_detail", args=[project.pk, disputed.pk])
    client.force_login(lead)
    assert _row_links(client, project, disputed) == {resolve}
    # Other rows open the read-only page, for a lead too.
    assert _row_links(client, project, final) == {
        reverse("issue_detail", args=[project.pk, final.pk])
    }
    assert resolve in client.get(detail).content.decode()  # and it offers the resolve page
    client.force_login(researcher)
    assert _row_links(client, project, disputed) == {detail}
    assert resolve not in client.get(detail).content.decode()


def test_a_researcher_reads_the_labels_of_final_issues_only(
    client, project, study, lead, researcher, annotator
):
    """Researchers read final data (as through the API and the exports): an open or disputed
    issue's labels and summaries are the lead's to read until the issue is final."""
    disputed = reverse("issue_detail", args=[project.pk, study["disputed"].pk])
    final = reverse("issue_detail", args=[project.pk, study["final"].pk])
    client.force_login(researcher)
    page = client.get(disputed).content.decode()
    assert 'id="labels-withheld"' in page and 'id="label-table"' not in page
    assert "2 of 2 labels" in page
    assert 'id="label-table"' in client.get(final).content.decode()
    client.force_login(lead)
    page = client.get(disputed).content.decode()
    assert 'id="label-table"' in page and 'id="labels-withheld"' not in page


# --- filters ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("", {"untouched", "progress", "fp", "disputed", "final"}),
        ("?status=open", {"untouched"}),
        ("?status=in_progress", {"progress"}),
        ("?status=disagreement", {"disputed"}),
        ("?status=final", {"final", "fp"}),
        ("?final_type=C", {"final"}),
        ("?final_type=FP", {"fp"}),
        ("?final_type=A", set()),
        ("?theme=C.2", {"final"}),
        ("?theme=C.1", set()),
        ("?level=type", {"disputed"}),
        ("?created_from=2024-01-01", {"disputed", "final"}),
        ("?created_to=2023-12-31", {"untouched", "progress", "fp"}),
        ("?created_from=2023-01-01&created_to=2023-12-31", {"untouched", "progress"}),
        ("?created_from=2024-01-15&created_to=2024-01-15", {"disputed"}),
        ("?status=final&created_from=2024-01-01", {"final"}),
    ],
)
def test_each_filter_narrows_the_list(client, project, study, researcher, query, expected):
    client.force_login(researcher)
    assert set(names(study, listed(client, project, query))) == expected


def test_the_repository_filter(client, project, study, researcher, repository, vllm):
    client.force_login(researcher)
    assert set(names(study, listed(client, project, f"?repository={vllm.pk}"))) == {
        "disputed",
        "final",
    }
    assert set(names(study, listed(client, project, f"?repository={repository.pk}"))) == {
        "untouched",
        "progress",
        "fp",
    }


# --- search -----------------------------------------------------------------------------------


def test_a_word_of_the_body_finds_its_issue(client, project, study, researcher):
    client.force_login(researcher)
    assert names(study, listed(client, project, "?q=tokenizer")) == ["untouched"]
    assert names(study, listed(client, project, "?q=Temperature")) == ["final"]
    assert names(study, listed(client, project, "?q=zebra")) == []


def test_the_search_stems_english_words(client, project, study, researcher):
    # The body says "crash"; the researcher types "crashes".
    client.force_login(researcher)
    assert names(study, listed(client, project, "?q=crashes")) == ["progress"]
    assert names(study, listed(client, project, "?q=hanging")) == ["disputed"]  # "hangs"


def test_the_search_reads_web_search_syntax_and_combines_with_filters(
    client, project, study, researcher
):
    client.force_login(researcher)
    assert names(study, listed(client, project, "?q=%22load+a+tokenizer%22")) == ["untouched"]
    assert set(names(study, listed(client, project, "?q=typo+or+timeout"))) == {"fp", "disputed"}
    assert names(study, listed(client, project, "?q=typo+or+timeout&status=final")) == ["fp"]
    # Text that is no query at all is no error: punctuation, stop words, an open quote.
    for odd in ('"', "&&|!", "the", "(", "-", "a:*", "'"):
        listed(client, project, "?" + urlencode({"q": odd}))


def test_without_full_text_search_the_same_syntax_finds_substrings(monkeypatch, project, study):
    """What SQLite (the embedded first look) runs, here on PostgreSQL: each term a substring
    of the title or body, ignoring case; phrases, -not and or read as by PostgreSQL."""
    everything = ProjectIssue.objects.filter(project=project)
    monkeypatch.setattr(issue_list, "connection", SimpleNamespace(vendor="sqlite"))

    def found(q: str) -> set[str]:
        query = issue_list.search(everything, q)
        assert "to_tsvector" not in str(query.query) and "@@" not in str(query.query)
        return set(names(study, [i.pk for i in query]))

    assert found("TOKENIZER") == {"untouched"}
    assert found("Sampling") == {"final"}  # a title
    assert found("crashes") == set()  # no stemming: "crashes" is not in "crash"
    assert found('"load a tokenizer"') == {"untouched"}
    assert found('"a tokenizer load"') == set()  # a phrase's words in its order
    assert found("typo or timeout") == {"fp", "disputed"}
    assert found("the -trainer") == {"fp", "final"}  # "the" is in the trainer's issue too
    assert found('"the README" or hangs -nccl') == {"fp"}  # NCCL is the hanging one's title


def test_the_full_text_search_reads_the_same_syntax(project, study):
    # The probe of the test above: on PostgreSQL the words are stemmed ("crashes" finds crash).
    everything = ProjectIssue.objects.filter(project=project)
    assert "@@" in str(issue_list.search(everything, "crashes").query)
    assert [i.pk for i in issue_list.search(everything, "crashes")] == [study["progress"].pk]
    assert {i.pk for i in issue_list.search(everything, "trainer or -tokenizer typo")} == {
        study["progress"].pk,
        study["fp"].pk,
    }


def _many_issues(repository, n: int = 3000, **fields) -> list[Issue]:
    """`n` issues of the repository (numbers from 10,000), each field of `fields` a function
    of the issue's index: enough that reading them all is the planner's costlier way."""
    return Issue.objects.bulk_create(
        Issue(
            repository=repository,
            number=str(10_000 + i),
            url=f"{repository.web_url}/issues/{10_000 + i}",
            title=f"Report {i}",
            **{name: value(i) for name, value in fields.items()},
        )
        for i in range(n)
    )


def _plan(project, q: str) -> str:
    return issue_list.issue_list(project, issue_list.IssueFilters(q=q)).explain()


def test_the_search_reads_the_stored_document_through_its_gin_index(project, study, vllm):
    """The document is a stored column with a GIN index: a rare word is found through the
    index, and no plan recomputes `to_tsvector` per issue (what made a common word, a phrase
    or an excluded word take 10 to 70 s at 40,000 issues, #20 F2). The probe can fire:
    without the index the same plan names no such index."""
    assert connection.vendor == "postgresql"
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s", [INDEX])
        (definition,) = cursor.fetchone()
        cursor.execute("SELECT count(*) FROM pg_indexes WHERE indexname = %s", [OLD_INDEX])
        assert cursor.fetchone() == (0,)  # the expression index is gone
    assert "gin" in definition and "search_document" in definition
    # Enough issues that reading them all through the project is the costlier way.
    issues = _many_issues(
        vllm, body=lambda n: "Throughput drops with long prompts on the scheduler."
    )
    ProjectIssue.objects.bulk_create(
        ProjectIssue(project=project, issue=issue, position=10 + n)
        for n, issue in enumerate(issues)
    )
    with connection.cursor() as cursor:
        # (Foreign keys are checked at commit; the index's DDL below wants them checked now.)
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute("ANALYZE ingest_issue")
        cursor.execute("ANALYZE annotator_projectissue")
        # New entries wait in the GIN index's pending list (which the planner prices as read
        # in full) until autovacuum moves them into the index; as it would by now:
        cursor.execute("SELECT gin_clean_pending_list(%s::regclass)", [INDEX])
    plan = _plan(project, "crashes")
    assert INDEX in plan, plan
    for q in ("crashes", "scheduler", '"long prompts"', "scheduler -crash"):
        assert "to_tsvector" not in _plan(project, q), q
    with connection.cursor() as cursor:
        cursor.execute(f"DROP INDEX {INDEX}")  # undone with the test
    assert INDEX not in _plan(project, "crashes")
    # And the plan's answer is the right one.
    found = issue_list.issue_list(project, issue_list.IssueFilters(q="crashes"))
    assert [i.pk for i in found] == [study["progress"].pk]


def test_the_stored_document_follows_every_write(project, study):
    """A generated column: an issue updated by plain SQL (as ingest's COPY path writes) is
    found by its new words and no longer by its old ones."""
    issue = study["untouched"].issue
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE ingest_issue SET body = 'Segfault in the detokenizer' WHERE id = %s",
            [issue.pk],
        )
    everything = ProjectIssue.objects.filter(project=project)
    assert [i.pk for i in issue_list.search(everything, "segfault")] == [study["untouched"].pk]
    assert not issue_list.search(everything, "tokenizer question -segfault").exists()


def test_the_migration_goes_back_to_the_expression_index_and_forth(project, study):
    migration = importlib.import_module("ingest.migrations.0007_issue_search_document")
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # (DDL after the fixture's rows)
    with connection.schema_editor() as editor:
        migration.drop_column(None, editor)

    def indexes() -> set[str]:
        with connection.cursor() as cursor:
            cursor.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'ingest_issue'")
            return {name for (name,) in cursor.fetchall()}

    assert OLD_INDEX in indexes() and INDEX not in indexes()
    with connection.schema_editor() as editor:
        migration.add_column(None, editor)
    assert INDEX in indexes() and OLD_INDEX not in indexes()
    everything = ProjectIssue.objects.filter(project=project)
    assert [i.pk for i in issue_list.search(everything, "crashes")] == [study["progress"].pk]


# --- search limits (#20 F2) -------------------------------------------------------------------


def errors_of(response) -> str:
    page = response.content.decode()
    return page.split('id="filter-errors"', 1)[1].split("</ul>", 1)[0]


@pytest.mark.parametrize(
    "q", ["-lorem", "-lorem -ipsum", '-"lorem ipsum"', "timeout or -lorem", "-lorem or timeout"]
)
def test_a_search_of_only_excluded_words_is_refused(client, project, study, researcher, q):
    client.force_login(researcher)
    response = client.get(reverse("issue_list", args=[project.pk]), {"q": q})
    assert response.status_code == 400
    assert "<li>q: a word to find is needed besides the -excluded ones" in errors_of(response)
    assert ROW.findall(response.content.decode()) == []


def test_a_word_to_find_with_excluded_ones_is_searched(client, project, study, researcher):
    # The probe of the refusal above: the same exclusions beside a word to find are a search.
    client.force_login(researcher)
    assert names(study, listed(client, project, "?q=timeout+-lorem")) == ["disputed"]
    assert names(study, listed(client, project, "?q=typo+-lorem+or+timeout+-lorem")) == [
        "disputed",
        "fp",
    ]


def test_a_search_of_more_than_twelve_words_is_refused(client, project, study, researcher):
    client.force_login(researcher)
    twelve = "timeout " + " ".join(f"-word{n}" for n in range(11))
    assert names(study, listed(client, project, "?" + urlencode({"q": twelve}))) == ["disputed"]
    for thirteen in (twelve + " -lorem", twelve.replace("-word0", '"all reduce"')):
        response = client.get(reverse("issue_list", args=[project.pk]), {"q": thirteen})
        assert response.status_code == 400
        assert "<li>q: at most 12 words (this search has 13)</li>" in errors_of(response)
        assert ROW.findall(response.content.decode()) == []


@pytest.fixture(scope="module")
def many_issues_id(request, module_db) -> int:
    """A project of 3,000 issues of long text: a search of them takes more than a millisecond.
    Built once for the module's two timeout tests, which only read it (in a repository and a
    project of their own, so the other tests' lists never show them)."""
    words = [
        "kernel",
        "launch",
        "fails",
        "on",
        "the",
        "device",
        "with",
        "an",
        "illegal",
        "memory",
        "access",
    ]

    def build() -> int:
        kernels = Repository.objects.create(
            forge=Repository.Forge.GITHUB,
            api_url="https://api.github.com",
            owner="vllm-kernels",
            name="kernel-reports",
            group="vLLM",
        )
        project = Project.objects.create(
            name="Kernel reports",
            taxonomy_version_id=request.config.stash[STUDY_TAXONOMY_ID],
        )
        issues = Issue.objects.bulk_create(
            Issue(
                repository=kernels,
                number=str(20_000 + n),
                url=f"{kernels.web_url}/issues/{20_000 + n}",
                title=f"Kernel report {n}",
                body=" ".join(words[(n + i) % len(words)] for i in range(400)),
            )
            for n in range(3000)
        )
        ProjectIssue.objects.bulk_create(
            ProjectIssue(project=project, issue=issue, position=100 + n)
            for n, issue in enumerate(issues)
        )
        return project.pk

    return module_db(build)


@pytest.fixture
def many_issues(many_issues_id, db, researcher) -> Project:
    """The module's project of 3,000 issues, with this test's Rita as a researcher in it."""
    project = Project.objects.get(pk=many_issues_id)
    Membership.objects.create(project=project, user=researcher, role=Role.RESEARCHER)
    return project


def test_a_search_out_of_time_says_so_and_holds_no_worker(
    client, researcher, many_issues, settings
):
    """The database cancels a search at SEARCH_TIMEOUT_MS: the page says so beside the search
    (a 400 naming q, no rows), not a 500, and the connection goes on as before."""
    project = many_issues
    client.force_login(researcher)
    url = reverse("issue_list", args=[project.pk])
    query = {"q": '"illegal memory" kernel or device'}
    settings.SEARCH_TIMEOUT_MS = 0  # the probe: without a limit the search answers
    found = client.get(url, query)
    assert found.status_code == 200
    assert "3000 issues match" in found.content.decode()
    settings.SEARCH_TIMEOUT_MS = 1
    response = client.get(url, query)
    assert response.status_code == 400
    assert "<li>q: the search took too long: use fewer or rarer words</li>" in errors_of(response)
    assert ROW.findall(response.content.decode()) == []
    assert 'value="&quot;illegal memory&quot; kernel or device"' in response.content.decode()
    with connection.cursor() as cursor:
        cursor.execute("SHOW statement_timeout")
        assert cursor.fetchone() == ("0",)  # the limit went with the search's savepoint
    settings.SEARCH_TIMEOUT_MS = 2000
    assert len(listed(client, project, "?" + urlencode(query))) == 50
    with connection.cursor() as cursor:
        cursor.execute("SHOW statement_timeout")
        # Set back after a search that answered too, though the test's transaction goes on.
        assert cursor.fetchone() == ("0",)


def test_the_search_function_raises_its_timeout_for_every_caller(many_issues, settings):
    project = many_issues
    settings.SEARCH_TIMEOUT_MS = 1
    filters = issue_list.IssueFilters(q="kernel or device")
    with pytest.raises(issue_list.SearchTimedOut, match="took too long"):
        issue_list.issue_page(project, filters)
    settings.SEARCH_TIMEOUT_MS = 0
    assert issue_list.issue_page(project, filters).paginator.count == 3000


# --- sort and pages ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("", ["final", "disputed", "progress", "untouched", "fp"]),  # newest created first
        ("?sort=created&order=asc", ["fp", "untouched", "progress", "disputed", "final"]),
        # 202 before 1000: numbers are text, but the shorter sorts first.
        ("?sort=number&order=asc", ["untouched", "progress", "fp", "disputed", "final"]),
        ("?sort=number&order=desc", ["final", "disputed", "fp", "progress", "untouched"]),
        # Status order open, in progress, disagreement, final; the two finals in queue order.
        ("?sort=status&order=asc", ["untouched", "progress", "disputed", "fp", "final"]),
        # The unlabeled issue last whichever the direction.
        ("?sort=last_label", ["disputed", "progress", "final", "fp", "untouched"]),
        ("?sort=last_label&order=asc", ["fp", "final", "progress", "disputed", "untouched"]),
    ],
)
def test_sorting(client, project, study, researcher, query, expected):
    client.force_login(researcher)
    assert names(study, listed(client, project, query)) == expected


def test_issues_of_one_date_by_their_issue_and_issues_without_a_date_last(
    client, project, study, researcher, repository
):
    """Two issues opened at the same moment: newest first puts the later-stored issue first,
    oldest first the other; an issue known only by its URL (no date) is last either way."""
    same = when("2024-05-20")  # the final issue's date too
    first = make_issue(repository, 401, created_at=same)
    undated = make_issue(repository, 402, created_at=None)
    second = make_issue(repository, 400, created_at=same)  # stored after 401: the larger id
    # Queued the other way round: the queue rows' ids do not decide.
    for n, issue in enumerate((second, undated, first)):
        ProjectIssue.objects.create(project=project, issue=issue, position=10 + n)
    by_issue = {item.issue_id: name for name, item in study.items()}
    by_issue.update({first.pk: "401", undated.pk: "402", second.pk: "400"})

    def order(query: str) -> list[str]:
        ids = listed(client, project, query)
        return [by_issue[ProjectIssue.objects.get(pk=pk).issue_id] for pk in ids]

    client.force_login(researcher)
    assert order("") == ["400", "401", "final", "disputed", "progress", "untouched", "fp", "402"]
    assert order("?sort=created&order=asc") == [
        "fp", "untouched", "progress", "disputed", "final", "401", "400", "402"
    ]  # fmt: skip


def _list_plan(project, **filters) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL max_parallel_workers_per_gather = 0")
    return issue_list.issue_list(project, issue_list.IssueFilters(**filters))[:50].explain()


def test_a_page_reads_the_issues_in_the_lists_order_and_stops(project, study, vllm):
    """At 387,420 issues sorting the whole project for a page took 0.6 s (newest first) and
    1.5 s (by last label). The list's orders are those of indexes: issues by date (ingest
    migration 0011), queue rows by last label (labeling migration 0007), so a page reads its
    50 rows from one and stops. The probe can fire: without the index the plan sorts."""
    issues = _many_issues(vllm, created_at=lambda n: when("2025-01-01") + timedelta(minutes=n))
    ProjectIssue.objects.bulk_create(
        ProjectIssue(
            project=project,
            issue=issue,
            position=10 + n,
            last_label_at=when("2025-06-01") + timedelta(minutes=n % 500),
        )
        for n, issue in enumerate(issues)
    )
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # (DDL below, after the rows)
        cursor.execute("ANALYZE ingest_issue")
        cursor.execute("ANALYZE annotator_projectissue")
    newest, oldest = _list_plan(project), _list_plan(project, descending=False)
    assert "ingest_issue_created_desc" in newest and "Sort" not in newest, newest
    assert "ingest_issue_created_asc" in oldest and "Sort" not in oldest, oldest
    by_label = _list_plan(project, sort="last_label")
    assert "projectissue_last_label" in by_label and "Sort" not in by_label, by_label
    # What the plans answer is the list's order.
    page = issue_list.issue_page(project, issue_list.IssueFilters())
    assert [row.item.issue_id for row in page.object_list][:3] == [i.pk for i in issues[::-1][:3]]
    with connection.cursor() as cursor:
        cursor.execute("DROP INDEX ingest_issue_created_desc")  # undone with the test
    assert "Sort" in _list_plan(project)


def test_pages_of_fifty_keep_the_filters_and_the_sort(client, project, study, lead, vllm):
    for n in range(60):
        issue = make_issue(vllm, 5000 + n, created_at=when("2025-01-01"))
        ProjectIssue.objects.create(project=project, issue=issue, position=100 + n)
    client.force_login(lead)
    url = reverse("issue_list", args=[project.pk])
    query = f"?repository={vllm.pk}&status=open&sort=number&order=asc"
    first = client.get(url + query).content.decode()
    rows = ROW.findall(first)
    assert len(rows) == 50
    assert "62 issues match" not in first and "60 issues match" in first
    next_link = re.search(r'<a href="\?([^"]+)" rel="next">', first).group(1).replace("&amp;", "&")
    assert set(next_link.split("&")) == {
        f"repository={vllm.pk}",
        "status=open",
        "sort=number",
        "order=asc",
        "page=2",
    }
    second = client.get(url + "?" + next_link).content.decode()
    rest = ROW.findall(second)
    assert len(rest) == 10 and not set(rest) & set(rows)
    numbers = [ProjectIssue.objects.get(pk=int(pk)).issue.number for pk in rows + rest]
    assert numbers == [str(5000 + n) for n in range(60)]
    # A page that is not a number, or past the end, is the nearest page, not an error.
    assert len(listed(client, project, query + "&page=x")) == 50
    assert len(listed(client, project, query + "&page=999")) == 10


# --- bad input --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("?status=closed", "status"),
        ("?repository=999999", "repository"),
        ("?repository=1" + "0" * 30, "repository"),
        ("?final_type=Z", "final_type"),
        ("?final_type=%C2%B2", "final_type"),
        ("?theme=C.999", "theme"),
        ("?level=everything", "level"),
        ("?created_from=2024-13-45", "created_from"),
        ("?created_to=yesterday", "created_to"),
        ("?created_from=2024-02-01&created_to=2024-01-01", "created_to"),
        ("?sort=title%3Bdrop+table", "sort"),
        ("?order=sideways", "order"),
        ("?q=" + "x" * 201, "q"),
    ],
)
def test_a_bad_filter_is_a_400_naming_the_field(client, project, study, researcher, query, field):
    client.force_login(researcher)
    response = client.get(reverse("issue_list", args=[project.pk]) + query)
    assert response.status_code == 400
    page = response.content.decode()
    errors = page.split('id="filter-errors"', 1)[1].split("</ul>", 1)[0]
    assert f"<li>{field}: " in errors
    # No rows: an unfiltered list must not pass for the filtered one.
    assert ROW.findall(page) == []


def test_a_good_query_is_not_refused(client, project, study, researcher):
    # The probe above can tell: the same fields with good values answer 200.
    client.force_login(researcher)
    listed(client, project, "?status=final&final_type=C&theme=C.2&level=type&order=asc")


# --- hostile text -----------------------------------------------------------------------------

HOSTILE = '<script>alert("t")</script><img src=x onerror=alert(1)>'


def test_hostile_titles_and_bodies_are_escaped(client, project, study, lead, repository):
    issue = make_issue(repository, 666, title=HOSTILE, body=HOSTILE + "\n\ncrash")
    item = ProjectIssue.objects.create(project=project, issue=issue, position=50)
    client.force_login(lead)
    page = client.get(reverse("issue_list", args=[project.pk])).content.decode()
    assert "&lt;script&gt;alert" in page  # the title, as text
    assert "<script>alert" not in page and "<img src=x" not in page
    page = client.get(reverse("issue_list", args=[project.pk]), {"q": HOSTILE}).content.decode()
    assert "&lt;script&gt;alert" in page  # the search box's value, as text
    assert "<script>alert" not in page and "<img src=x" not in page
    detail = client.get(reverse("issue_detail", args=[project.pk, item.pk])).content.decode()
    assert 'id="issue-title">&lt;script&gt;alert' in detail
    body = detail.split('id="issue-body"', 1)[1].split("</div>", 1)[0]
    assert "crash" in body  # the body is there, its script and handler are not
    assert "<script" not in body and "onerror" not in body and "alert" not in body
    assert "<script>alert" not in detail and "<img src=x" not in detail


# --- the issue page ---------------------------------------------------------------------------


def test_the_issue_page_shows_labels_by_pseudonym_the_final_label_and_its_history(
    client, project, study, lead, researcher, annotator, other_annotator
):
    item = study["final"]
    pseudonyms = dict(Membership.objects.filter(project=project).values_list("user", "pseudonym"))
    resolution.reopen(item, lead, "second look")
    item.refresh_from_db()
    resolution.resolve(
        item, lead, submission.parse_label(project, label_data(project, "B.1")), "lead_decision"
    )
    client.force_login(researcher)
    page = client.get(reverse("issue_detail", args=[project.pk, item.pk])).content.decode()
    labels = page.split('id="label-table"', 1)[1].split("</table>", 1)[0]
    assert pseudonyms[annotator.pk] in labels and pseudonyms[other_annotator.pk] in labels
    assert labels.count("C.2") == 2
    # People by pseudonym only: no user names on a researcher's page.
    for user in (annotator, other_annotator, lead):
        assert user.username not in page
    assert "<strong>B.1</strong>" in page.split('id="final-label"', 1)[1].split("</p>", 1)[0]
    history = page.split('id="resolution-history"', 1)[1].split("</ul>", 1)[0]
    entries = re.findall(r"<li>(.*?)</li>", history, re.S)
    assert len(entries) == 2
    assert entries[0].startswith("B.1") and "current" in entries[0]
    assert pseudonyms[lead.pk] in entries[0]
    assert entries[1].startswith("C.2") and "reopened" in entries[1]
    assert 'id="issue-title">Sampling params<' in page
    assert "Temperature is ignored by the server." in page


def test_the_issue_page_of_an_issue_nobody_labeled(client, project, study, lead):
    client.force_login(lead)
    page = client.get(reverse("issue_detail", args=[project.pk, study["untouched"].pk]))
    text = page.content.decode()
    assert page.status_code == 200
    assert "No labels yet." in text and "Not final yet." in text
    assert 'id="resolution-history"' not in text


@pytest.mark.slow
def test_the_list_and_its_search_work_on_the_embedded_sqlite_database(tmp_path, tmp_path_factory):
    """The first look's database: migrations 0006 and 0007 pass over it (when the run's shared
    copy is made, `tests.embedded.prepared`), the search reads phrases, -not and or as
    substrings."""
    embedded.prepared(tmp_path, embedded.shared_tmp(tmp_path_factory))
    script = Path(__file__).with_name("issue_list_sqlite.py")
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    assert "search and filters work on SQLite" in done.stdout


# Every state a queue row can be in (status, labels so far), and the list's status of it.
ROW_STATES = [
    (ProjectIssue.Status.OPEN, 0, issue_list.OPEN),
    (ProjectIssue.Status.OPEN, 2, issue_list.IN_PROGRESS),
    (ProjectIssue.Status.DISAGREEMENT, 3, issue_list.DISAGREEMENT),
    (ProjectIssue.Status.FINAL, 3, issue_list.FINAL),
]


def test_the_list_status_is_one_rule_in_its_three_spellings(project, vllm):
    """A row's list status is read three ways: the filter (`status_filter`), the row's own
    (`list_status`) and the rank "sort by status" and its indexes use
    (`models.list_status_rank`). For every state they agree: the filter finds the row, the
    row names that status, and its rank is the status's place in `STATUS_NAMES`."""
    rows = {}
    for n, (status, labels, expected) in enumerate(ROW_STATES):
        rows[expected] = ProjectIssue.objects.create(
            project=project,
            issue=make_issue(vllm, 900 + n),
            position=n,
            status=status,
            annotation_count=labels,
        )
    order = list(issue_list.STATUS_NAMES)
    assert sorted(order) == sorted(rows)  # the probe: every status has its row
    ranked = ProjectIssue.objects.filter(project=project).alias(rank=list_status_rank())
    for expected, row in rows.items():
        found = ProjectIssue.objects.filter(project=project).filter(
            issue_list.status_filter(expected)
        )
        assert list(found) == [row], expected
        assert issue_list.list_status(row) == expected
        assert ranked.filter(pk=row.pk, rank=order.index(expected)).exists(), expected
