"""Submitting a label: validation against the project's taxonomy, revisions, progress.

An annotation is never overwritten. Changing one's label writes a new revision and marks the
old one as not current; once K current annotations exist the issue is compared
(`labeling.resolution.evaluate`). Errors never mention other annotators' work: an annotator
is blind to it until the issue is final.

Labels lock when the K-th arrives: from then on no annotator's revision is taken, so nothing an
annotator does can re-run the comparison, move the issue out of the lead's queue or tell them
how the others labeled (trying values until the issue turns final would). What they would
change goes to the lead as a change request (`resolution.request_change`).

Under the adaptive stopping rule (`labeling.stopping`) a new label below K may decide the issue
early (`resolution.evaluate`); a revision below K is taken but never decides it, for the same
reason.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import User
from django.core.cache import cache
from django.db import connection, transaction
from django.db.models import Count, Q, QuerySet
from django.utils import timezone
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from annotator.models import Project
from labeling import pg_functions, resolution
from labeling.final_agreement import FinalAgreement, agreement_of
from labeling.issue_context import nodes_by_id
from labeling.labels import Label
from labeling.models import (
    Annotation,
    FalsePositiveReason,
    MachineLabel,
    MachineRater,
    ProjectIssue,
    Reservation,
    Resolution,
)
from labeling.proposals import proposal_from_annotation
from labeling.queue import _SLOTS_SQL, slot_state
from labeling.stopping import AdaptiveRule
from lib import metrics, sql
from lib.refusal import WHOLE, Refusal
from taxonomy.models import TaxonomyNode

# Table names from the models (`Meta.db_table`), never spelled out in the SQL below.
_ANNOTATION_TABLE = Annotation._meta.db_table
_PROJECTISSUE_TABLE = ProjectIssue._meta.db_table
_RESERVATION_TABLE = Reservation._meta.db_table

MAX_TEXT = 5000
PROGRESS_CACHE_SECONDS = 5


class NotYours(Exception):
    """The user holds no reservation or annotation for the issue (shown as a 404)."""


def _node(nodes: dict[int, dict], raw: Any, level: int, field: str) -> dict | None:
    # `raw` is what the form or the API's JSON held there: anything; int() sorts it out.
    if raw in (None, ""):
        return None
    try:
        pk = int(raw)
    except (TypeError, ValueError):
        raise Refusal(
            field, gettext("not a valid choice: %(value)s") % {"value": repr(raw)}
        ) from None
    node = nodes.get(pk)
    if node is None or node["level"] != level:
        raise Refusal(field, gettext("not a choice of this project's taxonomy"))
    return node


def _text(data: Mapping[str, Any], field: str) -> str:
    value = data.get(field) or ""
    if not isinstance(value, str):  # JSON from the API may hold anything
        raise Refusal(field, gettext("must be text"))
    value = value.strip()
    if "\x00" in value:  # the database cannot store it (a form or API caller may still send it)
        raise Refusal(field, gettext("contains a NUL character (\\x00), which cannot be stored"))
    if len(value) > MAX_TEXT:
        raise Refusal(field, gettext("at most %(most)s characters") % {"most": MAX_TEXT})
    return value


def parse_label(project: Project, data: Mapping[str, Any]) -> Label:
    """Validate form or API data into a label; raises Refusal naming the field."""
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
            raise Refusal("false_positive_reason", gettext("choose one of the three reasons"))
        label.false_positive_reason = reason
        return label
    # The version's nodes come from a short-lived cache, fetched once for the three fields.
    nodes = nodes_by_id(project.taxonomy_version_id)
    type_node = _node(nodes, data.get("issue_type"), TaxonomyNode.Level.TYPE, "issue_type")
    theme = _node(nodes, data.get("theme"), TaxonomyNode.Level.THEME, "theme")
    sub_theme = _node(nodes, data.get("sub_theme"), TaxonomyNode.Level.SUB_THEME, "sub_theme")
    if type_node is None:
        raise Refusal("issue_type", gettext("choose a type, or mark the issue as not LLM-related"))
    if theme is None:
        raise Refusal("theme", gettext("choose a theme"))
    if theme["parent"] != type_node["id"]:
        raise Refusal(
            "theme",
            gettext("%(theme)s is not a theme of %(type)s")
            % {"theme": theme["code"], "type": type_node["code"]},
        )
    if sub_theme is not None and sub_theme["parent"] != theme["id"]:
        raise Refusal(
            "sub_theme",
            gettext("%(sub_theme)s is not a sub-theme of %(theme)s")
            % {"sub_theme": sub_theme["code"], "theme": theme["code"]},
        )
    label.issue_type_id = type_node["id"]
    label.theme_id = theme["id"]
    label.sub_theme_id = sub_theme["id"] if sub_theme else None
    return label


_OWN_CURRENT_SQL = f"""
SELECT a.id FROM {_ANNOTATION_TABLE} a
WHERE a.project_id = %(project)s AND a.issue_id = %(issue)s AND a.annotator_id = %(user)s
  AND a.is_current
"""


def own_annotation(user: User, project_issue: ProjectIssue) -> Annotation | None:
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


_ITEM_SQL = (
    f"SELECT {sql.columns(ProjectIssue, 'pi')} FROM {_PROJECTISSUE_TABLE} pi"
    " WHERE pi.{column} = %(item)s AND pi.project_id = %(project)s"
)
_LOCK_ITEM_SQL = _ITEM_SQL.replace("{column}", "id")
# By the public id the labeling page's URL names the item by (`ProjectIssue.public_id`), so a
# submission from that page needs no look-up of the row id first.
_LOCK_PUBLIC_ITEM_SQL = _ITEM_SQL.replace("{column}", "public_id")


def _lock_item(project: Project, item_id: int, public: bool = False) -> ProjectIssue:
    """The project's issue by row id (or by public id, `public`), locked for this transaction
    (the lock the queue takes too)."""
    lock = " FOR UPDATE" if connection.vendor == "postgresql" else ""
    statement = _LOCK_PUBLIC_ITEM_SQL if public else _LOCK_ITEM_SQL
    row = sql.first(statement + lock, {"item": item_id, "project": project.pk})
    if row is None:
        raise NotYours
    return sql.model_from_row(ProjectIssue, row)[0]


_DELETE_RESERVATION_SQL = (
    f"DELETE FROM {_RESERVATION_TABLE} WHERE project_issue_id = %(item)s"
    " AND annotator_id = %(user)s"
)
# When the item's newest current label came (`ProjectIssue.last_label_at`), read under its row
# lock after the label is stored: exact whatever wrote the labels before.
_LAST_LABEL_SQL = (
    f"(SELECT max(a.created_at) FROM {_ANNOTATION_TABLE} a"
    " WHERE a.project_id = pi.project_id AND a.issue_id = pi.issue_id AND a.is_current)"
)
# After a first label: the count and the last label's time (the Python path and the PL/pgSQL
# function run this one text).
_SET_COUNT_SQL = (
    f"UPDATE {_PROJECTISSUE_TABLE} AS pi SET annotation_count = %(n)s,"
    f" last_label_at = {_LAST_LABEL_SQL} WHERE pi.id = %(item)s"
)
# After a revision: the count stays, the last label's time moves on.
_SET_LAST_LABEL_SQL = (
    f"UPDATE {_PROJECTISSUE_TABLE} AS pi SET last_label_at = {_LAST_LABEL_SQL}"
    " WHERE pi.id = %(item)s"
)


def _new_annotation(
    pi: ProjectIssue, user: User, label: Label, current: Annotation | None
) -> Annotation:
    return Annotation(
        project_id=pi.project_id,
        issue_id=pi.issue_id,
        annotator=user,
        revision=current.revision + 1 if current else 1,
        is_pilot=pi.is_pilot,
        **label.fields(),
        **label.notes(),
    )


# Columns of a first annotation that come from the locked issue row, not from the caller.
_FROM_ISSUE_ROW = {
    "project_id": "arg_project",
    "issue_id": "arg_issue",
    "is_pilot": "locked.is_pilot",
}


@functools.cache
def _passed_fields() -> tuple:
    return tuple(f for f in sql.insert_fields(Annotation) if f.column not in _FROM_ISSUE_ROW)


# The adaptive stopping rule (labeling.stopping.early_decision) in SQL, for the one-call path:
# whether the issue's current labels plus the one being sent (%(col_...)s) decide it. Labels
# are counted by deciding key — (type, theme), or the exclusion — and the issue is decided when
# the leader is %(lead)s votes ahead of the runner-up (a tie for first place never is) and, for
# an exclusion, holds every one of the %(n)s labels.
_EARLY_DECISION_SQL = f"""
SELECT coalesce(max(v.votes) FILTER (WHERE v.rank = 1), 0)
         - coalesce(max(v.votes) FILTER (WHERE v.rank = 2), 0) >= %(lead)s
       AND (NOT coalesce(bool_or(v.fp) FILTER (WHERE v.rank = 1), false)
            OR max(v.votes) FILTER (WHERE v.rank = 1) = %(n)s)
FROM (SELECT k.fp, count(*) AS votes, row_number() OVER (ORDER BY count(*) DESC) AS rank
      FROM (SELECT a.is_false_positive AS fp,
                   CASE WHEN a.is_false_positive THEN NULL ELSE a.issue_type_id END AS type_id,
                   CASE WHEN a.is_false_positive THEN NULL ELSE a.theme_id END AS theme_id
            FROM {_ANNOTATION_TABLE} a
            WHERE a.project_id = %(project)s AND a.issue_id = %(issue)s AND a.is_current
            UNION ALL
            SELECT %(col_is_false_positive)s,
                   CASE WHEN %(col_is_false_positive)s THEN NULL ELSE %(col_issue_type_id)s END,
                   CASE WHEN %(col_is_false_positive)s THEN NULL ELSE %(col_theme_id)s END) k
      GROUP BY k.fp, k.type_id, k.theme_id) v
"""


def _machine_vote_sql() -> str:
    """An enlisted machine rater's vote on the issue, in SQL: `MachineLabel.objects.enlisted_votes`
    (the rule's one statement) read for one issue. The one-call path declines every label of
    such an issue under the adaptive rule, so the machine's vote is counted by the Python path
    only (`resolution.enlisted_machine_vote`). Tables and columns come from the models;
    `tests/labeling/test_paths_equal.py` holds this equal to the queryset."""
    label, rater = MachineLabel, MachineRater

    def m(name: str) -> str:
        return f"m.{sql.column(label, name)}"

    def r(name: str) -> str:
        return f"r.{sql.column(rater, name)}"

    return f"""
SELECT EXISTS (
  SELECT 1 FROM {label._meta.db_table} m
    JOIN {rater._meta.db_table} r ON {r("id")} = {m("rater")}
  WHERE {m("issue")} = %(issue)s AND {r("project")} = %(project)s AND {r("enlisted")}
    AND {m("is_current")} AND {m("valid")} AND {m("confidence")} >= {r("confidence_threshold")})
"""


_ENLISTED_MACHINE_SQL = _machine_vote_sql()


@pg_functions.register
def _submit_first_function() -> pg_functions.Function:
    """The common submission, a user's first label of an issue that stays below K labels, as
    one PL/pgSQL call: `submit`'s lock, look at the slots and writes, the same statements.
    Under the adaptive rule, a label that decides the issue is declined too (as the K-th
    label is): the rule is checked here in SQL (`_EARLY_DECISION_SQL`), and the finalizing is
    the Python path's `resolution.evaluate`. Returns no row for every other case, and `submit`
    takes its Python path, which decides it under the same lock."""
    columns = [f.column for f in sql.insert_fields(Annotation)]
    values = [_FROM_ISSUE_ROW.get(column, f"arg_col_{column}") for column in columns]
    names = ", ".join(f'"{column}"' for column in columns)
    passed = tuple((f"col_{f.column}", f.db_type(connection)) for f in _passed_fields())
    return pg_functions.Function(
        "annotator_submit_first",
        arguments=(
            ("project", "bigint"),
            ("item", "bigint"),
            ("public", "boolean"),
            ("user", "integer"),
            ("now", "timestamptz"),
            ("k", "integer"),
            ("adaptive", "boolean"),
            ("min_labels", "integer"),
            ("lead", "integer"),
            *passed,
        ),
        returns="TABLE(out_id bigint, out_issue_id bigint, out_is_pilot boolean)",
        body=f"""
DECLARE
  locked record;
  slots record;
  arg_issue bigint;
  arg_n integer;
  new_id bigint;
  decided boolean;
BEGIN
  -- arg_item names the item by its public id with arg_public, else by its row id.
  IF arg_public THEN
    SELECT * INTO locked FROM ({pg_functions.plpgsql(_LOCK_PUBLIC_ITEM_SQL)} FOR UPDATE) pi;
  ELSE
    SELECT * INTO locked FROM ({pg_functions.plpgsql(_LOCK_ITEM_SQL)} FOR UPDATE) pi;
  END IF;
  IF NOT FOUND OR locked.status <> '{ProjectIssue.Status.OPEN.value}' THEN
    RETURN;
  END IF;
  arg_item := locked.id;
  arg_issue := locked.issue_id;
  SELECT * INTO slots
    FROM ({pg_functions.plpgsql(_SLOTS_SQL)}) s(own, reservation, annotations, reserved);
  -- A revision, no active reservation, no free slot, or the K-th label (compared at once):
  -- the Python path.
  IF slots.own IS NOT NULL OR slots.reservation IS NOT TRUE
     OR slots.annotations + slots.reserved >= arg_k OR slots.annotations + 1 >= arg_k THEN
    RETURN;
  END IF;
  arg_n := slots.annotations + 1;
  -- Adaptive rule with an enlisted machine's vote on the issue: the Python path.
  IF arg_adaptive AND ({pg_functions.plpgsql(_ENLISTED_MACHINE_SQL).strip()}) THEN
    RETURN;
  END IF;
  -- Adaptive rule: a label that decides the issue is finalized by the Python path.
  IF arg_adaptive AND arg_n >= arg_min_labels THEN
    decided := ({pg_functions.plpgsql(_EARLY_DECISION_SQL).strip()});
    IF decided THEN
      RETURN;
    END IF;
  END IF;
  INSERT INTO {_ANNOTATION_TABLE} ({names}) VALUES ({", ".join(values)}) RETURNING id INTO new_id;
  {pg_functions.plpgsql(_DELETE_RESERVATION_SQL)};
  {pg_functions.plpgsql(_SET_COUNT_SQL)};
  RETURN QUERY SELECT new_id, locked.issue_id, locked.is_pilot;
END""",
    )


def _submit_first(
    user: User, project: Project, item_id: int, label: Label, public: bool = False
) -> Annotation | None:
    """The stored annotation if the one-call path took the submission, else None. `item_id`
    is the item's public id with `public`."""
    if label.proposed_category:
        return None  # a proposal also becomes a taxonomy proposal: the Python path
    function = pg_functions.usable(_submit_first_function)
    if function is None:
        return None
    # The issue and pilot flag come from the locked row inside the function (_FROM_ISSUE_ROW).
    annotation = Annotation(
        project_id=project.pk, annotator=user, revision=1, **label.fields(), **label.notes()
    )
    passed = _passed_fields()
    rule = AdaptiveRule.of(project)
    params = {
        "project": project.pk,
        "item": item_id,
        "public": public,
        "user": user.pk,
        "now": timezone.now(),
        "k": project.annotations_per_issue,
        "adaptive": rule is not None,
        "min_labels": rule.min_labels if rule else 0,
        "lead": rule.lead if rule else 0,
        **{
            f"col_{f.column}": value
            for f, value in zip(passed, sql.db_values(annotation, passed), strict=True)
        },
    }
    try:
        row = pg_functions.first(function, params)
    except pg_functions.Missing:
        return None
    if row is None:
        return None
    pk, annotation.issue_id, annotation.is_pilot = row
    sql.mark_stored(annotation, pk)
    return annotation


def submit(
    user: User,
    project: Project,
    project_issue: ProjectIssue | int,
    label: Label,
    *,
    public: bool = False,
) -> Annotation:
    """Record the user's label of an issue of the project: a first annotation or a revision.

    `project_issue` may be just its id: the row is read again under its lock; with `public`,
    the id is its public id (the labeling page's URL names it so). Raises NotYours
    when the issue was never handed to the user, Refusal when it can no longer take their
    label. Every volunteer calls this once per issue, so it is hand-written SQL (see
    lib.sql): a lock, one look at the slots, and the writes; on PostgreSQL the common
    case is one call of `_submit_first_function`.
    """
    if isinstance(project_issue, ProjectIssue):
        item_id, public = project_issue.pk, False
    else:
        item_id = project_issue
    if item_id is None or not sql.is_row_id(item_id):
        raise NotYours
    annotation = _submit_first(user, project, item_id, label, public)
    if annotation is not None:
        _count(project.pk, "first")
        return annotation
    with transaction.atomic():
        # Same lock as the queue takes, so the K-slot count below cannot race a reservation.
        pi = _lock_item(project, item_id, public)
        slots = slot_state(pi, user)
        # Loaded only for a revision: a first label needs nothing of it.
        current = (
            Annotation.objects.get(pk=slots.own_annotation_id) if slots.own_annotation_id else None
        )
        if pi.status == ProjectIssue.Status.FINAL and current is None:
            raise NotYours
        if current is not None and label.same_as(current):
            return current  # nothing changes (a double submit): the same answer in any state
        if current is not None and is_locked(pi, project):
            raise Refusal(WHOLE, str(LOCKED_MESSAGE))
        if current is None:
            if not slots.reservation:  # none, or handed back
                raise NotYours
            if slots.annotations + slots.reserved >= project.annotations_per_issue:
                raise Refusal(
                    WHOLE,
                    gettext("Your reservation of this issue expired; it was handed back."),
                )
        if current is not None:
            current.is_current = False
            current.save(update_fields=["is_current"])
        annotation = _new_annotation(pi, user, label, current)
        sql.insert(annotation)
        _count(project.pk, "revision" if current is not None else "first")
        if slots.reservation is not None:
            sql.execute(_DELETE_RESERVATION_SQL, {"item": pi.pk, "user": user.pk})
        if current is None:
            # Exact: counted under the row lock just above, plus this new annotation.
            pi.annotation_count = slots.annotations + 1
            sql.execute(_SET_COUNT_SQL, {"n": pi.annotation_count, "item": pi.pk})
            # Only a first label can be the K-th (revisions stop at the lock above), or
            # decide the issue early under the adaptive rule: a revision never does, so no
            # one can find out the others' labels by revising until the issue turns final.
            resolution.evaluate(pi, project)
        else:
            sql.execute(_SET_LAST_LABEL_SQL, {"item": pi.pk})
        previous_text = current.proposed_category if current else ""
        if annotation.proposed_category and annotation.proposed_category != previous_text:
            # The "propose a new category" box becomes a taxonomy proposal the others vote on
            # (once: a revision that keeps the same text does not propose it again).
            proposal_from_annotation(annotation)
    return annotation


# Items per statement of `refresh_last_label` (SQLite allows 999 parameters before 3.32).
_REFRESH_CHUNK = 500


def refresh_last_label(item_ids: Iterable[int]) -> None:
    """Set each queue item's `last_label_at` from its current labels again, by the rule a
    revision runs (`_LAST_LABEL_SQL`), `_REFRESH_CHUNK` items per statement: for labels whose
    dates were changed outside a submission (the demo spreads its history's labels over days,
    `manage.py date_last_labels` after an upgrade)."""
    ids = list(item_ids)
    for start in range(0, len(ids), _REFRESH_CHUNK):
        params = {f"item{n}": item for n, item in enumerate(ids[start : start + _REFRESH_CHUNK])}
        sql.execute(
            f"UPDATE {_PROJECTISSUE_TABLE} AS pi SET last_label_at = {_LAST_LABEL_SQL}"
            f" WHERE pi.id IN ({', '.join(f'%({name})s' for name in params)})",
            params,
        )


def _count(project_id: int, kind: str) -> None:
    """Count a stored label (lib.metrics) once its transaction commits: at once outside one
    (the one-call path), else when the outermost atomic block does, never if it rolls back."""
    transaction.on_commit(functools.partial(metrics.label_submitted, project_id, kind))


LOCKED_MESSAGE = _(
    "Your label is locked: this issue has all its labels and waits for its final label. "
    "Ask the lead for a change instead."
)


def is_locked(project_issue: ProjectIssue, project: Project) -> bool:
    """True once the issue has its K labels (or is final): no annotator may revise theirs.

    Under the adaptive rule, already once it has `min_labels`: from then on the rule has looked
    at it, and an issue still open tells its annotators that the labels differ; a revision then
    would be a way to follow the others."""
    if project_issue.status != ProjectIssue.Status.OPEN:
        return True
    rule = AdaptiveRule.of(project)
    enough = rule.min_labels if rule else project.annotations_per_issue
    return project_issue.annotation_count >= min(enough, project.annotations_per_issue)


def revisions(
    project: Project, issue_id: int, annotator: User | None = None
) -> QuerySet[Annotation]:
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
    # Issues that have all their labels, final or waiting for the lead: an annotator is never
    # told how many are final, which would tell the K-th annotator whether the labels agreed
    # (issue #20, F5; docs/DATASET.md, "Revisions, the label lock and blindness").
    project_done: int
    # With agreement: their labels on final issues and how many agree with the final label.
    agreement: FinalAgreement = field(default_factory=FinalAgreement)

    @property
    def compared(self) -> int:
        return self.agreement.compared

    @property
    def matched_label(self) -> int:
        return self.agreement.matched_label

    @property
    def percent(self) -> int:
        done = self.labeled + self.left
        return round(100 * self.labeled / done) if done else 100

    @property
    def project_percent(self) -> int:
        return round(100 * self.project_done / self.total) if self.total else 0


def project_counts(project: Project) -> dict[str, int]:
    """Issues in the project, final, done (final or disputed: all labels in), and still needing
    annotations; cached for a few seconds, since every labeling page shows them and counting
    40,000 rows each time adds up."""
    key = f"labeling-counts:{project.pk}:{project.annotations_per_issue}"
    counts = cache.get(key)
    if counts is None:
        counts = ProjectIssue.objects.filter(project=project).aggregate(
            total=Count("id"),
            final=Count("id", filter=Q(status=ProjectIssue.Status.FINAL)),
            done=Count("id", filter=~Q(status=ProjectIssue.Status.OPEN)),
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
_MY_COUNTS_SQL = f"""
SELECT count(*),
       sum(CASE WHEN pi.status = 'open' AND pi.annotation_count < %(k)s THEN 1 ELSE 0 END)
FROM {_ANNOTATION_TABLE} a
JOIN {_PROJECTISSUE_TABLE} pi ON pi.project_id = a.project_id AND pi.issue_id = a.issue_id
WHERE a.project_id = %(project)s AND a.annotator_id = %(user)s AND a.is_current
"""


def progress_of(user: User, project: Project, with_agreement: bool = False) -> Progress:
    """How many issues the user labeled, how many are left for them, and the project's state.

    "Left" counts open issues the user has not labeled that still need annotations; it is an
    upper bound, since others may fill them first.
    """
    counts = project_counts(project)
    # On every labeling page: one statement, driven from the user's annotations (few), not
    # from the project's issues (many).
    labeled, mine_needing = sql.first_row(
        _MY_COUNTS_SQL,
        {"project": project.pk, "user": user.pk, "k": project.annotations_per_issue},
    )
    labeled, mine_needing = labeled or 0, mine_needing or 0
    left = max(counts["needing"] - mine_needing, 0)
    progress = Progress(labeled, left, counts["total"], counts["done"])
    if with_agreement:
        progress.agreement = agreement_of(project, user.pk)
    return progress


def agreement_shares(progress: Progress) -> dict[str, int | None]:
    """Percent of the user's labels on final issues agreeing with the final label at type,
    theme and label level (`labeling.final_agreement`, as on the lead's dashboard)."""
    return progress.agreement.shares()


def previous_item_id(user: User, project: Project, item_id: int | None) -> int | None:
    """The project issue this user labeled just before `item_id`, by when they first labeled
    each (their latest one if they have not labeled `item_id`): "previous issue" on the
    labeling page steps back through one's own labels, never anyone else's."""
    firsts = Annotation.objects.filter(project=project, annotator=user, revision=1)
    issue_id = (
        ProjectIssue.objects.filter(project=project, pk=item_id)
        .values_list("issue_id", flat=True)
        .first()
        if item_id
        else None
    )
    if issue_id is not None:
        here = firsts.filter(issue_id=issue_id).values_list("created_at", "pk").first()
        if here is not None:
            at, pk = here
            firsts = firsts.filter(Q(created_at__lt=at) | Q(created_at=at, pk__lt=pk))
        firsts = firsts.exclude(issue_id=issue_id)
    previous = firsts.order_by("-created_at", "-pk").values_list("issue_id", flat=True).first()
    if previous is None:
        return None
    return (
        ProjectIssue.objects.filter(project=project, issue_id=previous)
        .values_list("pk", flat=True)
        .first()
    )


def my_annotations(user: User, project: Project) -> list[dict[str, Any]]:
    """The user's current annotations with, for final issues, the final label."""
    annotations = list(
        Annotation.objects.filter(project=project, annotator=user, is_current=True)
        .select_related("issue", "issue__repository", "issue_type", "theme", "sub_theme")
        .order_by("-created_at")
    )
    # Public ids: the labeling page's URLs name items by them (see `ProjectIssue.public_id`).
    public_ids = dict(
        ProjectIssue.objects.filter(
            project=project, issue_id__in=[a.issue_id for a in annotations]
        ).values_list("issue_id", "public_id")
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
            "public_id": public_ids.get(a.issue_id),
            "final": final.get(a.issue_id),
        }
        for a in annotations
    ]
