"""Every issue of a project with where it stands: the issue list of leads and researchers.

`issue_list(project, filters)` is the one query (the page calls it, and an API could); its
filters arrive validated (`labeling.forms.IssueListForm`). `issue_page` cuts a page of it and
adds each row's final label code.

Where an issue stands, in the list's words: *open* (no label yet), *in progress* (some labels,
fewer than K), *disagreement* (waiting for a lead) or *final*. Only leads and researchers see
this list: it shows label counts and final labels, which annotators must not see before an
issue is final.

Search: the search box's syntax (words, "a phrase", -not, or) is read once, by
`lib.websearch`, for both databases. `read_search` refuses a search of more than
`MAX_SEARCH_WORDS` words, or one with nothing to find but -excluded words (it would read every
issue). On PostgreSQL it is a full-text search (English stemming: "crashes" finds "crash") of
the issue's stored document, `ingest_issue.search_document` (title and body, a generated column
with a GIN index: ingest migration 0007), under a statement timeout (`time_limit`,
`SEARCH_TIMEOUT_MS`); on SQLite (the embedded first look) the same terms as case-insensitive
substrings of the title or body (no stemming).

Speed (issue #30 item 5: a page within 300 ms for a project of 387,420 issues): a page must not
sort the whole project. Newest (or oldest) first sorts by the issue's date, then the issue's id
(unique in a project), which is the order of the issue indexes of ingest migration 0011: the
plan reads issues by date and stops at a page. By last label reads the stored
`ProjectIssue.last_label_at` through its index (labeling migration 0007), not the labels. By
number (the repository's owner and name, then the number) no index can serve, the names
being another table's: `ByRepository` counts the rows per repository from the queue rows' own
copy of it (labeling migration 0009) and reads a page from the issue index of the
repositories it falls in (ingest migration 0012). The final type and theme are one look-up of
the issue's one current final label.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from datetime import date
from functools import cached_property
from typing import Any

from django.conf import settings
from django.core.paginator import Page, Paginator
from django.db import OperationalError, connection, transaction
from django.db.models import (
    Count,
    Exists,
    Expression,
    F,
    OuterRef,
    Q,
    QuerySet,
)
from django.db.models.expressions import Col
from django.db.models.functions import Length
from django.utils.translation import gettext, pgettext_lazy
from django.utils.translation import gettext_lazy as _

from annotator.models import Project
from annotator.pseudonyms import pseudonyms
from ingest.models import Issue, Repository
from labeling.models import (
    DISAGREEMENT_LEVEL_NAMES,
    Annotation,
    ProjectIssue,
    Resolution,
    list_status_rank,
)
from labeling.resolution import current_annotations, resolution_history
from lib import websearch
from taxonomy.codes import FALSE_POSITIVE
from taxonomy.models import TaxonomyNode

PER_PAGE = 50
MAX_QUERY_LENGTH = 200

# The list's statuses, in the order "sort by status" follows (`models.list_status_rank`).
OPEN, IN_PROGRESS, DISAGREEMENT, FINAL = "open", "in_progress", "disagreement", "final"
STATUS_NAMES = {
    OPEN: pgettext_lazy("issue status", "open"),
    IN_PROGRESS: pgettext_lazy("issue status", "in progress"),
    DISAGREEMENT: pgettext_lazy("issue status", "disagreement"),
    FINAL: pgettext_lazy("issue status", "final"),
}
LEVEL_NAMES = DISAGREEMENT_LEVEL_NAMES
SORTS = {
    "created": pgettext_lazy("sort by", "created"),
    "number": pgettext_lazy("sort by", "number"),
    "status": pgettext_lazy("sort by", "status"),
    "last_label": pgettext_lazy("sort by", "last label"),
}

# The search: the text search configuration of the stored document (ingest migration 0007),
# its column, and the most words a search may name (each costs a look-up in the index and a
# test of every issue found).
SEARCH_CONFIG = "english"
SEARCH_DOCUMENT = "search_document"
MAX_SEARCH_WORDS = 12
QUERY_CANCELED = "57014"  # PostgreSQL's SQLSTATE for a statement cancelled (by its timeout)


@dataclass(frozen=True)
class IssueFilters:
    """Validated filters of the issue list (every field optional; "" / None for none)."""

    status: str = ""
    repository_id: int | None = None
    final_type: str = ""  # a type's code ("B"), or "FP" for a final false positive
    theme: str = ""  # a theme's code ("B.3")
    level: str = ""  # the first level of disagreement (`LEVEL_NAMES`)
    created_from: date | None = None
    created_to: date | None = None
    q: str = ""
    sort: str = "created"
    descending: bool = True


class SearchError(ValueError):
    """A search the list will not run, with the reason for the `q` field."""


class SearchRefused(SearchError):
    """Refused before it runs: too many words, or nothing to find but excluded words."""


class SearchTimedOut(SearchError):
    """Cancelled by the database after `SEARCH_TIMEOUT_MS`."""


TIMED_OUT = _("the search took too long: use fewer or rarer words")


def read_search(q: str) -> websearch.WebSearch:
    """`q` read as the search box's syntax, or `SearchRefused` when it would read issue by
    issue (nothing to find but -excluded words) or names more than `MAX_SEARCH_WORDS`."""
    parsed = websearch.parse(q)
    if parsed.words > MAX_SEARCH_WORDS:
        raise SearchRefused(
            gettext("at most %(most)s words (this search has %(count)s)")
            % {"most": MAX_SEARCH_WORDS, "count": parsed.words}
        )
    if parsed.only_excludes:
        raise SearchRefused(
            gettext(
                "a word to find is needed besides the -excluded ones"
                ' (on each side of an "or"): excluding alone would read every issue'
            )
        )
    return parsed


class StoredDocument(Expression):
    """The issue's stored search document, `ingest_issue.search_document` (a generated column
    of PostgreSQL, migration ingest 0007, not a model field: SQLite has none), reached through
    the relation `issue` of the queryset's model."""

    def __init__(self, issue: str) -> None:
        from django.contrib.postgres.search import SearchVectorField

        super().__init__(output_field=SearchVectorField())
        self.issue = issue

    def resolve_expression(self, *args: Any, **kwargs: Any) -> Any:
        # A column of the issue's table, joined as any field would be (not its id, which
        # Django reads from the foreign key without the join), then the document beside it:
        # a column Django knows, so the join and a subquery's renamed aliases stay right.
        title = F(f"{self.issue}__title").resolve_expression(*args, **kwargs)
        assert isinstance(title, Col), title
        return Col(title.alias, _DOCUMENT_COLUMN, self.output_field)


def _document_column() -> Any:
    from django.contrib.postgres.search import SearchVectorField

    # A field of the issue's table that the model does not declare (it is not on SQLite).
    column = SearchVectorField()
    column.set_attributes_from_name(SEARCH_DOCUMENT)
    column.model = Issue
    return column


_DOCUMENT_COLUMN = _document_column()


def search(queryset: QuerySet[ProjectIssue], q: str) -> QuerySet[ProjectIssue]:
    """Project issues whose issue's title or body matches `q` (the database's way); raises
    `SearchRefused` for a search `read_search` refuses."""
    if not q:
        return queryset
    parsed = read_search(q)
    if connection.vendor == "postgresql":
        return _full_text(queryset, parsed)
    return queryset.filter(websearch.to_q(parsed, ["issue__title", "issue__body"]))


def _full_text(
    queryset: QuerySet[ProjectIssue], parsed: websearch.WebSearch
) -> QuerySet[ProjectIssue]:
    from django.contrib.postgres.search import SearchQuery

    # PostgreSQL reads the search as written out again from what `read_search` read.
    query = SearchQuery(parsed.websearch_text(), search_type="websearch", config=SEARCH_CONFIG)
    return queryset.alias(document=StoredDocument("issue")).filter(document=query)


@contextmanager
def time_limit() -> Iterator[Callable[[], None]]:
    """Run a search's queries in here: on PostgreSQL each runs under a statement timeout, and
    together they get `settings.SEARCH_TIMEOUT_MS` (call the yielded `renew()` before the next
    query: it gives that query what time is left). Out of time, the database cancels the query
    and this raises `SearchTimedOut`. The timeout is set locally in a transaction (or
    savepoint) of its own and set back at its end (a released savepoint would keep it for the
    rest of an enclosing transaction). 0 disables the limit."""
    limit_ms = settings.SEARCH_TIMEOUT_MS
    if limit_ms <= 0 or connection.vendor != "postgresql":
        yield lambda: None
        return
    deadline = time.monotonic() + limit_ms / 1000

    def set_timeout(value: str) -> None:
        with connection.cursor() as cursor:
            cursor.execute("SELECT set_config('statement_timeout', %s, true)", [value])

    def renew() -> None:
        set_timeout(str(max(1, round((deadline - time.monotonic()) * 1000))))

    try:
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SELECT current_setting('statement_timeout')")
                (before,) = cursor.fetchone() or ("0",)
            renew()
            yield renew
            set_timeout(before)
    except OperationalError as error:
        # psycopg's QueryCanceled, whose SQLSTATE says why: a timeout (or a cancelled query).
        if getattr(error.__cause__, "sqlstate", None) == QUERY_CANCELED:
            raise SearchTimedOut(str(TIMED_OUT)) from error
        raise


def _final(project: Project, final_type: str, theme: str) -> Exists | None:
    """The issue's current final label in the project is of this type (a code, or
    `FALSE_POSITIVE`) and theme (a code), either "" for any; None when both are. An issue has
    one current final label (constraint `one_current_resolution`): both are tested on that
    row, in one look-up."""
    label = Q()
    if final_type == FALSE_POSITIVE:
        label &= Q(is_false_positive=True)
    elif final_type:
        label &= Q(is_false_positive=False, issue_type_id__in=_nodes(final_type))
    if theme:
        label &= Q(is_false_positive=False, theme_id__in=_nodes(theme))
    if not label:
        return None
    return Exists(
        Resolution.objects.filter(
            label, project_id=project.pk, issue_id=OuterRef("issue_id"), is_current=True
        )
    )


def _nodes(code: str) -> list[int]:
    """The taxonomy nodes of this code in every version: a final label decided under an
    earlier taxonomy version counts. As ids in the query, so the planner reads how many final
    labels have them from the column's statistics (joined by code, it took a theme of 26,490
    issues for 39 and sorted them all for a page, 0.7 s at ten times the study)."""
    return list(TaxonomyNode.objects.filter(code=code).values_list("pk", flat=True))


def status_filter(status: str) -> Q:
    """The list's status as a condition on the queue row."""
    if status == OPEN:
        return Q(status=ProjectIssue.Status.OPEN, annotation_count=0)
    if status == IN_PROGRESS:
        return Q(status=ProjectIssue.Status.OPEN, annotation_count__gt=0)
    if status == DISAGREEMENT:
        return Q(status=ProjectIssue.Status.DISAGREEMENT)
    if status == FINAL:
        return Q(status=ProjectIssue.Status.FINAL)
    raise ValueError(f"status: not one of {', '.join(STATUS_NAMES)}")


def issue_list(project: Project, filters: IssueFilters) -> QuerySet[ProjectIssue]:
    """The project's issues under the filters, sorted (each row's `last_label_at`, the newest
    current label's time, is stored on it: `ProjectIssue.last_label_at`)."""
    return _filtered(project, filters).order_by(*_ordering(filters.sort, filters.descending))


def _filtered(project: Project, filters: IssueFilters) -> QuerySet[ProjectIssue]:
    """`issue_list` before its order."""
    qs = (
        ProjectIssue.objects.filter(project=project)
        .select_related("issue__repository")
        # The list shows neither the text nor the forge payload: rows to sort stay narrow.
        .defer("issue__body", "issue__raw")
    )
    if filters.status:
        qs = qs.filter(status_filter(filters.status))
    if filters.repository_id is not None:
        qs = qs.filter(issue__repository_id=filters.repository_id)
    final = _final(project, filters.final_type, filters.theme)
    if final is not None:
        qs = qs.filter(final)
    if filters.level:
        qs = qs.filter(disagreement_level=filters.level)
    if filters.created_from:
        qs = qs.filter(issue__created_at__date__gte=filters.created_from)
    if filters.created_to:
        qs = qs.filter(issue__created_at__date__lte=filters.created_to)
    qs = search(qs, filters.q)
    # The rank is only sorted on (the expression of the indexes that serve the sort).
    return qs.alias(status_rank=list_status_rank())


def _ordering(sort: str, descending: bool) -> list[Any]:
    def by(name: str) -> Any:
        # Issues without a date (known only by URL, or never labeled) go last either way.
        return F(name).desc(nulls_last=True) if descending else F(name).asc(nulls_last=True)

    def then(name: str) -> Any:
        return _each_way(F(name), descending)

    if sort == "number":
        repository, within = _number_order(descending)
        return [*repository, *within]
    if sort == "status":
        # (Never NULL: ordered without NULLS LAST, as its indexes are.)
        keys = [then("status_rank"), F("position").asc()]
    elif sort == "last_label":
        keys = [by("last_label_at")]
    elif sort == "created":
        # Issues of one date by their issue's id, a key of the issue's table too: the order of
        # the issue index (created_at, id) (ingest migration 0011), read from the newest (or
        # oldest) until a page is full, each issue's queue row found by (project, issue).
        return [by("issue__created_at"), then("issue_id")]
    else:
        raise ValueError(f"sort: not one of {', '.join(SORTS)}")
    return [*keys, then("pk")]


def _number_order(
    descending: bool, repository: str = "issue__repository__"
) -> tuple[list[Any], list[Any]]:
    """The order "by number", in two parts: the repository's (owner, then name; its fields
    reached through `repository`, "" from the repository itself) and, among the issues of
    repositories of one owner and name, the issue's number, then the queue row's id. Numbers
    are text (Gitee's look like IBD6YU): shorter first sorts 9 before 10."""
    keys = [F(f"{repository}owner"), F(f"{repository}name")]
    within = [Length("issue__number"), F("issue__number"), F("pk")]
    return (
        [_each_way(key, descending) for key in keys],
        [_each_way(key, descending) for key in within],
    )


def _each_way(expression: Any, descending: bool) -> Any:
    """The expression ordered descending or ascending (NULLs where PostgreSQL puts them: none
    of these keys is NULL, and the indexes that serve them say nothing of NULLs either)."""
    return expression.desc() if descending else expression.asc()


class ByRepository:
    """`issue_list` sorted by number as the Paginator reads it (`count()` and slices), cut
    repository by repository so that no page sorts the whole project.

    No index orders issues by their repository's name (a column of another table): sorted in
    one query, every page sorted all the project's rows (0.57-1.2 s for 387,420 issues,
    bench/RESULTS.md). Here the rows under the filters are counted per repository, from the
    queue row's copy of its issue's repository (`ProjectIssue.repository`, kept by the
    database: labeling migration 0009), and the repositories put in the list's order (the
    first part of `_number_order`); a slice then reads only the repositories it falls in, each
    in the rest of that order, which the issue index (repository, length(number), number, id)
    of ingest migration 0012 serves, from whichever end of the repository is nearer.
    Repositories of one owner and name (on two forges) are read together, so their issues
    interleave by number exactly as in the one query. Where a row has no copy (SQLite, or a
    database without the triggers) it is the one query."""

    def __init__(
        self,
        rows: QuerySet[ProjectIssue],
        descending: bool,
        renew: Callable[[], None] = lambda: None,
    ) -> None:
        self.rows = rows  # filtered, in no order
        self.descending = descending
        self.renew = renew  # called before each query (a search's time limit)

    @cached_property
    def groups(self) -> list[tuple[list[int], int]] | None:
        """(repository ids of one owner and name, how many rows they hold), in the list's
        order; None when a row has no repository copy."""
        self.renew()
        counts = dict(
            self.rows.order_by()
            .values("repository_id")
            # count(*): the index (project, repository) alone answers it, not count(id).
            .annotate(rows=Count("*"))
            .values_list("repository_id", "rows")
        )
        if None in counts:
            return None
        repository_order, _ = _number_order(self.descending, repository="")
        groups: list[tuple[list[int], int]] = []
        last: tuple[str, str] | None = None
        for repository_id, owner, name in (
            Repository.objects.filter(pk__in=counts)
            .order_by(*repository_order, "pk")
            .values_list("pk", "owner", "name")
        ):
            if (owner, name) != last:
                groups.append(([], 0))
                last = (owner, name)
            ids, rows = groups[-1]
            groups[-1] = ([*ids, repository_id], rows + counts[repository_id])
        return groups

    @cached_property
    def one_query(self) -> QuerySet[ProjectIssue]:
        return self.rows.order_by(*_ordering("number", self.descending))

    def count(self) -> int:
        if self.groups is None:
            return self.one_query.count()
        return sum(rows for _, rows in self.groups)

    def __len__(self) -> int:
        return self.count()

    def __getitem__(self, cut: slice) -> list[ProjectIssue]:
        if not isinstance(cut, slice) or cut.step is not None:
            raise TypeError("a page is a slice without a step")
        if self.groups is None:
            self.renew()
            return list(self.one_query[cut])
        start, stop = cut.start or 0, self.count() if cut.stop is None else cut.stop
        ids: list[int] = []
        before = 0  # rows in the repositories before this one
        for repository_ids, rows in self.groups:
            if before >= stop:
                break
            first, end = max(start - before, 0), min(stop - before, rows)
            if first < end:
                self.renew()
                ids += self._ids(repository_ids, rows, first, end)
            before += rows
        # The ids first, then their rows (in one query): ordered by what the issue index
        # holds, the ids are read from it alone, which the planner sees (sorting whole rows
        # for a deep page, it read every queue row of the project instead, 0.9 s).
        self.renew()
        found = self.rows.order_by().in_bulk(ids)
        return [found[pk] for pk in ids if pk in found]  # (one removed meanwhile is left out)

    def _ids(self, repository_ids: list[int], rows: int, first: int, end: int) -> list[int]:
        """Ids of rows `first` to `end` of these repositories' `rows`: read from the end,
        backwards, when that is nearer (every index entry before a page's first is read)."""
        these = self.rows.filter(issue__repository_id__in=repository_ids)
        if first <= rows - end:
            order = _number_order(self.descending)[1]
            return list(these.order_by(*order).values_list("pk", flat=True)[first:end])
        backwards = _number_order(not self.descending)[1]
        ids = these.order_by(*backwards).values_list("pk", flat=True)[rows - end : rows - first]
        return list(ids)[::-1]


@dataclass(frozen=True)
class IssueRow:
    """A row of the list: the queue row (with its issue and repository) and what it shows."""

    item: ProjectIssue
    status: str  # a key of STATUS_NAMES
    final_code: str  # "B.3.ii", "FP", or "" when not final
    level: str  # where the labels first differ, in words, or ""

    @property
    def status_name(self) -> str:
        return str(STATUS_NAMES[self.status])


def issue_page(project: Project, filters: IssueFilters, number: Any = 1) -> Page[Any]:
    """One page (`PER_PAGE` rows) of `issue_list` as `IssueRow`s; `number` as given in the URL
    (a page out of range or not a number gives the nearest page)."""
    with time_limit() if filters.q else nullcontext(lambda: None) as renew:
        rows: Any = (
            ByRepository(_filtered(project, filters), filters.descending, renew)
            if filters.sort == "number"
            else issue_list(project, filters)
        )
        # (Page[Any]: its rows become IssueRows below.)
        page: Page[Any] = Paginator(rows, PER_PAGE).get_page(number)
        renew()
        items: list[ProjectIssue] = list(page.object_list)
    finals = {
        r.issue_id: r.label_code
        for r in Resolution.objects.filter(
            project_id=project.pk, issue_id__in=[i.issue_id for i in items], is_current=True
        ).select_related("issue_type", "theme", "sub_theme")
    }
    page.object_list = [
        IssueRow(
            item=item,
            status=list_status(item),
            final_code=finals.get(item.issue_id, ""),
            level=item.level_name,
        )
        for item in items
    ]
    return page


def list_status(item: ProjectIssue) -> str:
    """The list's status of one queue row (as `issue_list` computes it in SQL)."""
    if item.status == ProjectIssue.Status.FINAL:
        return FINAL
    if item.status == ProjectIssue.Status.DISAGREEMENT:
        return DISAGREEMENT
    return IN_PROGRESS if item.annotation_count > 0 else OPEN


@dataclass(frozen=True)
class IssueRecord:
    """What the read-only issue page shows besides the issue: its status, the current labels
    by pseudonym, the final label and every final label it had (newest first)."""

    status: str
    level: str
    labels: list[tuple[str, Annotation]]  # (pseudonym, current annotation), oldest first
    final: Resolution | None
    # (final label, pseudonym of who decided it, of who reopened it), newest first.
    history: list[tuple[Resolution, str, str]]

    @property
    def status_name(self) -> str:
        return str(STATUS_NAMES[self.status])


def project_issue(project: Project, item_id: int) -> ProjectIssue | None:
    """The project's queue row `item_id` with its issue and repository, or None."""
    return (
        ProjectIssue.objects.filter(project=project, pk=item_id)
        .select_related("issue__repository")
        .first()
    )


def issue_record(item: ProjectIssue, with_open_labels: bool) -> IssueRecord:
    """The labels and final labels of one issue of the list, people named by pseudonym.

    The annotators' labels of an issue that is not final only `with_open_labels` (for leads):
    researchers read final data, as through the API and the exports."""
    names = pseudonyms(item.project_id)

    def name(user_id: int | None) -> str:
        if user_id is None:
            return ""
        # A person no longer a member keeps no name here.
        return names.get(user_id) or gettext("former member")

    history = [
        (r, name(r.decided_by_id), name(r.reopened_by_id))
        for r in resolution_history(item).order_by("-decided_at", "-pk")
    ]
    return IssueRecord(
        status=list_status(item),
        level=item.level_name,
        labels=[(name(a.annotator_id), a) for a in current_annotations(item)]
        if with_open_labels or item.status == ProjectIssue.Status.FINAL
        else [],
        final=next((r for r, _, _ in history if r.is_current), None),
        history=history,
    )
