"""Submitting a label: validation against the project's taxonomy, revisions, progress.

An annotation is never overwritten. Changing one's label writes a new revision and marks the
old one as not current; once K current annotations exist the issue is compared
(`annotator.resolution.evaluate`). Errors never mention other annotators' work: an annotator
is blind to it until the issue is final.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.core.cache import cache
from django.db import connection, transaction
from django.db.models import Count, Q

from annotator import resolution, sql
from annotator.issue_context import nodes_by_id
from annotator.models import (
    Annotation,
    FalsePositiveReason,
    Project,
    ProjectIssue,
    Resolution,
)
from annotator.queue import slot_state
from taxonomy.models import TaxonomyNode
from taxonomy.proposals import proposal_from_annotation

MAX_TEXT = 5000
PROGRESS_CACHE_SECONDS = 5


class LabelError(Exception):
    """Bad label input; `field` names the form field at fault."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class NotYours(Exception):
    """The user holds no reservation or annotation for the issue (shown as a 404)."""


@dataclass
class Label:
    is_false_positive: bool = False
    false_positive_reason: str = ""
    issue_type_id: int | None = None
    theme_id: int | None = None
    sub_theme_id: int | None = None
    summary: str = ""
    note: str = ""
    proposed_category: str = ""

    def same_as(self, annotation: Annotation) -> bool:
        return all(
            getattr(self, name) == getattr(annotation, name)
            for name in (
                "is_false_positive",
                "false_positive_reason",
                "issue_type_id",
                "theme_id",
                "sub_theme_id",
                "summary",
                "note",
                "proposed_category",
            )
        )


def _node(nodes: dict[int, dict], raw, level: int, field: str) -> dict | None:
    if raw in (None, ""):
        return None
    try:
        pk = int(raw)
    except (TypeError, ValueError):
        raise LabelError(field, f"not a valid choice: {raw!r}") from None
    node = nodes.get(pk)
    if node is None or node["level"] != level:
        raise LabelError(field, "not a choice of this project's taxonomy")
    return node


def _text(data, field: str) -> str:
    value = (data.get(field) or "").strip()
    if len(value) > MAX_TEXT:
        raise LabelError(field, f"at most {MAX_TEXT} characters")
    return value


def parse_label(project: Project, data) -> Label:
    """Validate form or API data into a label; raises LabelError naming the field."""
    label = Label(
        summary=_text(data, "summary"),
        note=_text(data, "note"),
        proposed_category=_text(data, "proposed_category"),
    )
    fp = data.get("is_false_positive")
    label.is_false_positive = fp in (True, "1", "true", "on", "yes")
    if label.is_false_positive:
        reason = data.get("false_positive_reason") or ""
        if reason not in FalsePositiveReason.values:
            raise LabelError("false_positive_reason", "choose one of the three reasons")
        label.false_positive_reason = reason
        return label
    # The version's nodes come from a short-lived cache, fetched once for the three fields.
    nodes = nodes_by_id(project.taxonomy_version_id)
    type_node = _node(nodes, data.get("issue_type"), TaxonomyNode.Level.TYPE, "issue_type")
    theme = _node(nodes, data.get("theme"), TaxonomyNode.Level.THEME, "theme")
    sub_theme = _node(nodes, data.get("sub_theme"), TaxonomyNode.Level.SUB_THEME, "sub_theme")
    if type_node is None:
        raise LabelError("issue_type", "choose a type, or mark the issue as not LLM-related")
    if theme is None:
        raise LabelError("theme", "choose a theme")
    if theme["parent"] != type_node["id"]:
        raise LabelError("theme", f"{theme['code']} is not a theme of {type_node['code']}")
    if sub_theme is not None and sub_theme["parent"] != theme["id"]:
        raise LabelError("sub_theme", f"{sub_theme['code']} is not a sub-theme of {theme['code']}")
    label.issue_type_id = type_node["id"]
    label.theme_id = theme["id"]
    label.sub_theme_id = sub_theme["id"] if sub_theme else None
    return label


_OWN_CURRENT_SQL = """
SELECT a.id FROM annotator_annotation a
WHERE a.project_id = %(project)s AND a.issue_id = %(issue)s AND a.annotator_id = %(user)s
  AND a.is_current
"""


def own_annotation(user, project_issue: ProjectIssue) -> Annotation | None:
    """The user's current annotation of the issue, with its nodes, or None."""
    # At most one row (constraint `one_current_annotation`). Most pages are a first look, so
    # the id is looked up by a prepared statement and the row loaded only when there is one.
    found = sql.first(
        _OWN_CURRENT_SQL,
        {"project": project_issue.project_id, "issue": project_issue.issue_id, "user": user.pk},
    )
    if found is None:
        return None
    return (
        Annotation.objects.select_related("issue_type", "theme", "sub_theme")
        .defer("issue_type__details", "theme__details", "sub_theme__details")
        .get(pk=found[0])
    )


_LOCK_ITEM_SQL = (
    f"SELECT {sql.columns(ProjectIssue, 'pi')} FROM annotator_projectissue pi"
    " WHERE pi.id = %(item)s AND pi.project_id = %(project)s"
)


def _lock_item(project: Project, item_id: int) -> ProjectIssue:
    """The project's issue, locked for this transaction (the lock the queue takes too)."""
    lock = " FOR UPDATE" if connection.vendor == "postgresql" else ""
    row = sql.first(_LOCK_ITEM_SQL + lock, {"item": item_id, "project": project.pk})
    if row is None:
        raise NotYours
    return sql.model_from_row(ProjectIssue, row)[0]


_DELETE_RESERVATION_SQL = (
    "DELETE FROM annotator_reservation WHERE project_issue_id = %(item)s"
    " AND annotator_id = %(user)s"
)
_SET_COUNT_SQL = "UPDATE annotator_projectissue SET annotation_count = %(n)s WHERE id = %(item)s"


def submit(user, project: Project, project_issue: ProjectIssue | int, label: Label) -> Annotation:
    """Record the user's label of an issue of the project: a first annotation or a revision.

    `project_issue` may be just its id: the row is read again under its lock. Raises NotYours
    when the issue was never handed to the user, LabelError when it can no longer take their
    label. Every volunteer calls this once per issue, so it is hand-written SQL (see
    annotator.sql): a lock, one look at the slots, and the writes.
    """
    item_id = getattr(project_issue, "pk", project_issue)
    with transaction.atomic():
        # Same lock as the queue takes, so the K-slot count below cannot race a reservation.
        pi = _lock_item(project, item_id)
        slots = slot_state(pi, user)
        # Loaded only for a revision: a first label needs nothing of it.
        current = (
            Annotation.objects.get(pk=slots.own_annotation_id) if slots.own_annotation_id else None
        )
        if pi.status == ProjectIssue.Status.FINAL:
            if current is None:
                raise NotYours
            raise LabelError("__all__", "This issue is final; its label can no longer change.")
        if current is None:
            if not slots.reservation:  # none, or handed back
                raise NotYours
            if slots.annotations + slots.reserved >= project.annotations_per_issue:
                raise LabelError(
                    "__all__", "Your reservation of this issue expired; it was handed back."
                )
        elif label.same_as(current):
            return current
        if current is not None:
            current.is_current = False
            current.save(update_fields=["is_current"])
        annotation = Annotation(
            project_id=pi.project_id,
            issue_id=pi.issue_id,
            annotator=user,
            revision=current.revision + 1 if current else 1,
            is_pilot=pi.is_pilot,
            is_false_positive=label.is_false_positive,
            false_positive_reason=label.false_positive_reason,
            issue_type_id=label.issue_type_id,
            theme_id=label.theme_id,
            sub_theme_id=label.sub_theme_id,
            summary=label.summary,
            note=label.note,
            proposed_category=label.proposed_category,
        )
        sql.insert(annotation)
        if slots.reservation is not None:
            sql.execute(_DELETE_RESERVATION_SQL, {"item": pi.pk, "user": user.pk})
        if current is None:
            # Exact: counted under the row lock just above, plus this new annotation.
            pi.annotation_count = slots.annotations + 1
            sql.execute(_SET_COUNT_SQL, {"n": pi.annotation_count, "item": pi.pk})
        resolution.evaluate(pi, project)
        previous_text = current.proposed_category if current else ""
        if annotation.proposed_category and annotation.proposed_category != previous_text:
            # The "propose a new category" box becomes a taxonomy proposal the others vote on
            # (once: a revision that keeps the same text does not propose it again).
            proposal_from_annotation(annotation)
    return annotation


def revisions(project: Project, issue_id: int, annotator=None):
    """Every revision of the issue's annotations, oldest first (for leads, or one's own)."""
    qs = Annotation.objects.filter(project=project, issue_id=issue_id).select_related(
        "annotator", "issue_type", "theme", "sub_theme"
    )
    if annotator is not None:
        qs = qs.filter(annotator=annotator)
    return qs.order_by("annotator__username", "revision")


@dataclass
class Progress:
    labeled: int
    left: int
    total: int
    project_final: int
    compared: int = 0
    matched_type: int = 0
    matched_theme: int = 0
    matched_label: int = 0

    @property
    def percent(self) -> int:
        done = self.labeled + self.left
        return round(100 * self.labeled / done) if done else 100

    @property
    def project_percent(self) -> int:
        return round(100 * self.project_final / self.total) if self.total else 0


def _share(part: int, whole: int) -> int | None:
    return round(100 * part / whole) if whole else None


def project_counts(project: Project) -> dict[str, int]:
    """Issues in the project, final, and still needing annotations; cached for a few seconds,
    since every labeling page shows them and counting 40,000 rows each time adds up."""
    key = f"labeling-counts:{project.pk}:{project.annotations_per_issue}"
    counts = cache.get(key)
    if counts is None:
        counts = ProjectIssue.objects.filter(project=project).aggregate(
            total=Count("id"),
            final=Count("id", filter=Q(status=ProjectIssue.Status.FINAL)),
            needing=Count(
                "id",
                filter=Q(
                    status=ProjectIssue.Status.OPEN,
                    annotation_count__lt=project.annotations_per_issue,
                ),
            ),
        )
        cache.set(key, counts, PROGRESS_CACHE_SECONDS)
    return counts


# The user's current annotations, and how many of those issues still need annotations.
_MY_COUNTS_SQL = """
SELECT count(*),
       sum(CASE WHEN pi.status = 'open' AND pi.annotation_count < %(k)s THEN 1 ELSE 0 END)
FROM annotator_annotation a
JOIN annotator_projectissue pi ON pi.project_id = a.project_id AND pi.issue_id = a.issue_id
WHERE a.project_id = %(project)s AND a.annotator_id = %(user)s AND a.is_current
"""


def progress_of(user, project: Project, with_agreement: bool = False) -> Progress:
    """How many issues the user labeled, how many are left for them, and the project's state.

    "Left" counts open issues the user has not labeled that still need annotations; it is an
    upper bound, since others may fill them first.
    """
    counts = project_counts(project)
    # On every labeling page: one statement, driven from the user's annotations (few), not
    # from the project's issues (many).
    labeled, mine_needing = sql.first(
        _MY_COUNTS_SQL,
        {"project": project.pk, "user": user.pk, "k": project.annotations_per_issue},
    )
    labeled, mine_needing = labeled or 0, mine_needing or 0
    left = max(counts["needing"] - mine_needing, 0)
    progress = Progress(labeled, left, counts["total"], counts["final"])
    if with_agreement:
        finals = {
            r.issue_id: r
            for r in Resolution.objects.filter(
                project=project,
                is_current=True,
                issue_id__in=Annotation.objects.filter(
                    project=project, annotator=user, is_current=True
                ).values("issue_id"),
            )
        }
        for a in Annotation.objects.filter(
            project=project, annotator=user, is_current=True, issue_id__in=list(finals)
        ):
            final = finals[a.issue_id]
            progress.compared += 1
            progress.matched_type += (a.is_false_positive, a.issue_type_id) == (
                final.is_false_positive,
                final.issue_type_id,
            )
            progress.matched_theme += (a.is_false_positive, a.theme_id) == (
                final.is_false_positive,
                final.theme_id,
            )
            progress.matched_label += resolution.label_key(a) == resolution.label_key(final)
    return progress


def agreement_shares(progress: Progress) -> dict[str, int | None]:
    return {
        "type": _share(progress.matched_type, progress.compared),
        "theme": _share(progress.matched_theme, progress.compared),
        "label": _share(progress.matched_label, progress.compared),
    }


def my_annotations(user, project: Project):
    """The user's current annotations with, for final issues, the final label."""
    annotations = list(
        Annotation.objects.filter(project=project, annotator=user, is_current=True)
        .select_related("issue", "issue__repository", "issue_type", "theme", "sub_theme")
        .order_by("-created_at")
    )
    statuses = dict(
        ProjectIssue.objects.filter(
            project=project, issue_id__in=[a.issue_id for a in annotations]
        ).values_list("issue_id", "id")
    )
    final = {
        r.issue_id: r
        for r in Resolution.objects.filter(
            project=project, is_current=True, issue_id__in=[a.issue_id for a in annotations]
        ).select_related("issue_type", "theme", "sub_theme")
    }
    return [
        {
            "annotation": a,
            "project_issue_id": statuses.get(a.issue_id),
            "final": final.get(a.issue_id),
        }
        for a in annotations
    ]
