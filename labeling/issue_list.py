"""Every issue of a project with where it stands: the issue list of leads and researchers.

`issue_list(project, filters)` is the one query (the page calls it, and an API could); its
filters arrive validated (`labeling.forms.IssueListForm`). `issue_page` cuts a page of it and
adds each row's final label code.

Where an issue stands, in the list's words: *open* (no label yet), *in progress* (some labels,
fewer than K), *disagreement* (waiting for a lead) or *final*. Only leads and researchers see
this list: it shows label counts and final labels, which annotators must not see before an
issue is final.

Search: on PostgreSQL a full-text search (English stemming: "crashes" finds "crash") over the
title and body, on exactly the expression of the GIN index of
`ingest/migrations/0006_issue_search_index.py`, so the planner can use it (and, inside
`index_search`, must); on SQLite (the embedded first look) a case-insensitive substring match
on either.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date
from typing import Any

from django.core.paginator import Page, Paginator
from django.db import connection, transaction
from django.db.models import (
    Case,
    Exists,
    F,
    Func,
    IntegerField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Value,
    When,
)
from django.db.models.functions import Length

from annotator.models import Project
from annotator.pseudonyms import pseudonyms
from labeling.models import DISAGREEMENT_LEVEL_NAMES, Annotation, ProjectIssue, Resolution
from labeling.resolution import current_annotations, resolution_history
from taxonomy.codes import FALSE_POSITIVE

PER_PAGE = 50
MAX_QUERY_LENGTH = 200

# The list's statuses, in the order "sort by status" follows.
OPEN, IN_PROGRESS, DISAGREEMENT, FINAL = "open", "in_progress", "disagreement", "final"
STATUS_NAMES = {
    OPEN: "open",
    IN_PROGRESS: "in progress",
    DISAGREEMENT: "disagreement",
    FINAL: "final",
}
_STATUS_RANK = {name: rank for rank, name in enumerate(STATUS_NAMES)}
LEVEL_NAMES = DISAGREEMENT_LEVEL_NAMES
SORTS = {
    "created": "created",
    "number": "number",
    "status": "status",
    "last_label": "last label",
}

# The search document: the same text as the index's expression in ingest migration 0006 (the
# planner matches an expression index only on an identical expression).
SEARCH_CONFIG = "english"


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


class SearchDocument(Func):
    """`to_tsvector('english', coalesce(title,'') || ' ' || coalesce(body,''))` of an issue:
    spelled out so that it is the index's expression token for token (Django's SearchVector
    adds casts the index does not have)."""

    arity = 2
    template = f"to_tsvector('{SEARCH_CONFIG}'::regconfig, COALESCE(%(expressions)s, ''))"
    arg_joiner = ", '') || ' ' || COALESCE("

    def __init__(self, title: Any, body: Any) -> None:
        from django.contrib.postgres.search import SearchVectorField

        super().__init__(title, body, output_field=SearchVectorField())


def search(queryset: QuerySet[ProjectIssue], q: str) -> QuerySet[ProjectIssue]:
    """Project issues whose issue's title or body matches `q` (the database's way)."""
    if not q:
        return queryset
    if connection.vendor == "postgresql":
        return _full_text(queryset, q)
    return substring_search(queryset, q)


def _full_text(queryset: QuerySet[ProjectIssue], q: str) -> QuerySet[ProjectIssue]:
    from django.contrib.postgres.search import SearchQuery

    # websearch syntax never fails to parse ("quoted phrases", or, -not): any text is a query.
    query = SearchQuery(q, search_type="websearch", config=SEARCH_CONFIG)
    return queryset.alias(document=SearchDocument("issue__title", "issue__body")).filter(
        document=query
    )


# Planner settings for a search's queries: no plain scan of a table, sequential or by an
# index, so the issues are found through the GIN index (bitmap scans remain).
_INDEX_SEARCH_SETTINGS = ("enable_seqscan", "enable_indexscan")


@contextmanager
def index_search(active: bool = True) -> Iterator[None]:
    """Evaluate a search's queries in here (PostgreSQL): the planner is steered to the GIN index.

    Why: PostgreSQL costs `to_tsvector` at a few microseconds a row, while on issue text it
    takes a few hundred. For a common word it then prefers computing it for every issue of the
    project (a sequential scan, or a full scan of any other index of the table: 8 to 17 s at
    40,000 issues) to reading the index, which answers without recomputing anything (0.2 s).
    Without plain scans, what is left for the issues is the index or a lookup per project row,
    which the planner costs per row. The settings are `SET LOCAL` in a transaction (or
    savepoint) of their own: set back at the end of the block, undone with it if it fails.
    """
    if not active or connection.vendor != "postgresql":
        yield
        return
    with transaction.atomic():
        with connection.cursor() as cursor:
            for name in _INDEX_SEARCH_SETTINGS:
                cursor.execute(f"SET LOCAL {name} = off")
        yield
        with connection.cursor() as cursor:
            for name in _INDEX_SEARCH_SETTINGS:
                cursor.execute(f"SET LOCAL {name} TO DEFAULT")


def substring_search(queryset: QuerySet[ProjectIssue], q: str) -> QuerySet[ProjectIssue]:
    """The fallback without full-text search (SQLite): `q` anywhere in the title or body."""
    return queryset.filter(Q(issue__title__icontains=q) | Q(issue__body__icontains=q))


def _final(project: Project, **label: Any) -> Exists:
    """The issue has a current final label in the project with these fields."""
    return Exists(
        Resolution.objects.filter(
            project_id=project.pk, issue_id=OuterRef("issue_id"), is_current=True, **label
        )
    )


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
    """The project's issues under the filters, sorted, each with `list_status` (a key of
    `STATUS_NAMES`) and `last_label_at` (the newest current label's time, or None)."""
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
    if filters.final_type == FALSE_POSITIVE:
        qs = qs.filter(_final(project, is_false_positive=True))
    elif filters.final_type:
        # By code, not node id: a final label decided under an earlier taxonomy version counts.
        qs = qs.filter(
            _final(project, is_false_positive=False, issue_type__code=filters.final_type)
        )
    if filters.theme:
        qs = qs.filter(_final(project, is_false_positive=False, theme__code=filters.theme))
    if filters.level:
        qs = qs.filter(disagreement_level=filters.level)
    if filters.created_from:
        qs = qs.filter(issue__created_at__date__gte=filters.created_from)
    if filters.created_to:
        qs = qs.filter(issue__created_at__date__lte=filters.created_to)
    qs = search(qs, filters.q)
    # The rank is only sorted on; the last label's time is shown too.
    qs = qs.alias(
        status_rank=Case(
            When(status=ProjectIssue.Status.FINAL, then=Value(_STATUS_RANK[FINAL])),
            When(status=ProjectIssue.Status.DISAGREEMENT, then=Value(_STATUS_RANK[DISAGREEMENT])),
            When(annotation_count__gt=0, then=Value(_STATUS_RANK[IN_PROGRESS])),
            default=Value(_STATUS_RANK[OPEN]),
            output_field=IntegerField(),
        )
    ).annotate(
        last_label_at=Subquery(
            Annotation.objects.filter(
                project_id=project.pk, issue_id=OuterRef("issue_id"), is_current=True
            )
            .order_by("-created_at")
            .values("created_at")[:1]
        ),
    )
    return qs.order_by(*_ordering(filters.sort, filters.descending))


def _ordering(sort: str, descending: bool) -> list[Any]:
    def by(name: str) -> Any:
        # Issues without a date (known only by URL, or never labeled) go last either way.
        return F(name).desc(nulls_last=True) if descending else F(name).asc(nulls_last=True)

    if sort == "number":
        # Numbers are text (Gitee's look like IBD6YU): shorter first sorts 9 before 10.
        keys = [
            by("issue__repository__owner"),
            by("issue__repository__name"),
            Length("issue__number").desc() if descending else Length("issue__number").asc(),
            by("issue__number"),
        ]
    elif sort == "status":
        keys = [by("status_rank"), F("position").asc()]
    elif sort == "last_label":
        keys = [by("last_label_at")]
    elif sort == "created":
        keys = [by("issue__created_at")]
    else:
        raise ValueError(f"sort: not one of {', '.join(SORTS)}")
    return [*keys, F("pk").desc() if descending else F("pk").asc()]


@dataclass(frozen=True)
class IssueRow:
    """A row of the list: the queue row (with its issue and repository) and what it shows."""

    item: ProjectIssue
    status: str  # a key of STATUS_NAMES
    final_code: str  # "B.3.ii", "FP", or "" when not final
    level: str  # where the labels first differ, in words, or ""

    @property
    def status_name(self) -> str:
        return STATUS_NAMES[self.status]


def issue_page(project: Project, filters: IssueFilters, number: Any = 1) -> Page[Any]:
    """One page (`PER_PAGE` rows) of `issue_list` as `IssueRow`s; `number` as given in the URL
    (a page out of range or not a number gives the nearest page)."""
    with index_search(bool(filters.q)):
        # (Page[Any]: its rows become IssueRows below.)
        page: Page[Any] = Paginator(issue_list(project, filters), PER_PAGE).get_page(number)
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
        return STATUS_NAMES[self.status]


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
        return names.get(user_id) or "former member"

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
