"""Comparing an issue's K annotations, finalizing it, the lead's resolution and reopening.

The K current annotations are compared level by level — false positive, type, theme,
sub-theme. Full agreement finalizes the issue (`unanimous`). Otherwise it goes to the
disagreement queue, unless the project's majority policy finalizes it (`majority`). A
false-positive exclusion never wins a majority: as in the study, it needs all K votes.

Under the adaptive stopping rule (`labeling.stopping`) an issue is also looked at after each
label below K, and finalized there when the rule decides it: `unanimous` when every label taken
says the same, else `majority`; the final label's sub-theme is `early_sub_theme`'s choice. Not
decided, it stays open for one more label.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable
from dataclasses import dataclass, field

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Count, Exists, OuterRef, Q, QuerySet
from django.utils import timezone
from django.utils.translation import gettext

from annotator.models import Project
from labeling.labels import FP, Label, LabelKey, label_key
from labeling.models import (
    DISAGREEMENT_LEVEL_NAMES,
    Annotation,
    DiscussionMessage,
    MachineLabel,
    ProjectIssue,
    Resolution,
)
from labeling.stopping import AdaptiveRule, deciding_key, early_decision
from lib import sql
from lib.refusal import WHOLE, Refusal

# Table names from the models (`Meta.db_table`), never spelled out in the SQL below.
_ANNOTATION_TABLE = Annotation._meta.db_table
_PROJECTISSUE_TABLE = ProjectIssue._meta.db_table

LEVELS = ("false_positive", "type", "theme", "sub_theme")
LEVEL_NAMES = DISAGREEMENT_LEVEL_NAMES
# The methods a lead records, each with its key on the resolve page (`static/js/labeling.js`
# reads the key from the option). There is no default: a lead says which happened.
LEAD_METHODS = (Resolution.Method.CONSENSUS, Resolution.Method.LEAD_DECISION)
LEAD_METHOD_KEYS = {Resolution.Method.CONSENSUS: "c", Resolution.Method.LEAD_DECISION: "d"}


def has_discussion(project_issue: ProjectIssue) -> bool:
    """Whether anyone wrote in the issue's discussion (a lead's message or an annotator's change
    request): what "consensus after discussion" claims happened."""
    return DiscussionMessage.objects.filter(project_issue_id=project_issue.pk).exists()


def method_refusal(method: str, project_issue: ProjectIssue | None = None) -> str:
    """Why a lead may not record a final label with `method` ("" when they may): the one rule,
    used by the resolve page's form (without an issue: the choice alone), by `resolve` (with the
    issue) and so by every path that records a lead's final label.

    No method is not a method: nothing stands in for the lead's word. "Consensus after
    discussion" needs a discussion: on an issue without a single message it would claim one
    that never took place (issue #28: a default of "consensus" wrote 14 such finals)."""
    if not method:
        return gettext("choose how the final label was decided; there is no default")
    if method not in LEAD_METHODS:
        return gettext("must be one of %(choices)s") % {"choices": ", ".join(LEAD_METHODS)}
    if (
        method == Resolution.Method.CONSENSUS
        and project_issue is not None
        and not has_discussion(project_issue)
    ):
        return gettext(
            "“%(consensus)s” needs a discussion, and this issue has no message: post what was"
            " agreed first, or choose “%(decision)s”"
        ) % {
            "consensus": Resolution.Method.CONSENSUS.label,
            "decision": Resolution.Method.LEAD_DECISION.label,
        }
    return ""


def level_value(label: Label | Annotation | Resolution, level: str) -> bool | int | None:
    if level == "false_positive":
        return label.is_false_positive
    if label.is_false_positive:
        return None
    return {"type": label.issue_type_id, "theme": label.theme_id, "sub_theme": label.sub_theme_id}[
        level
    ]


@dataclass
class Comparison:
    k: int
    votes: dict[str, Counter] = field(default_factory=dict)
    labels: Counter = field(default_factory=Counter)

    @property
    def first_disagreement(self) -> str:
        """The first level at which the annotations differ, or "" if they all agree."""
        for level in LEVELS:
            if len(self.votes[level]) > 1:
                return level
        return ""

    @property
    def top(self) -> tuple[LabelKey | None, int]:
        if not self.labels:
            return None, 0
        (key, count), *rest = self.labels.most_common()
        # A tie for first place has no winner.
        if rest and rest[0][1] == count:
            return None, count
        return key, count

    @property
    def split(self) -> float:
        """0 when all agree; grows as the votes spread over more labels."""
        if not self.labels:
            return 0.0
        return round(1 - self.labels.most_common(1)[0][1] / max(self.k, 1), 4)


def compare(annotations: list[Annotation], k: int | None = None) -> Comparison:
    comparison = Comparison(k=k or len(annotations))
    for level in LEVELS:
        comparison.votes[level] = Counter(level_value(a, level) for a in annotations)
    comparison.labels = Counter(label_key(a) for a in annotations)
    return comparison


def current_annotations(project_issue: ProjectIssue) -> list[Annotation]:
    return list(
        Annotation.objects.filter(
            project_id=project_issue.project_id, issue_id=project_issue.issue_id, is_current=True
        )
        .select_related("annotator", "issue_type", "theme", "sub_theme")
        .order_by("created_at", "id")
    )


def current_resolution(project_issue: ProjectIssue) -> Resolution | None:
    return Resolution.objects.filter(
        project_id=project_issue.project_id, issue_id=project_issue.issue_id, is_current=True
    ).first()


def _finalize(
    project_issue: ProjectIssue,
    annotations: list[Annotation],
    key: LabelKey,
    method: str,
) -> Resolution:
    winners = [a for a in annotations if label_key(a) == key]
    reasons = Counter(a.false_positive_reason for a in winners if a.false_positive_reason)
    label = Label.from_annotation(winners[0], with_notes=False)
    label.false_positive_reason = reasons.most_common(1)[0][0] if reasons else ""
    resolution = Resolution(
        project_id=project_issue.project_id,
        issue_id=project_issue.issue_id,
        method=method,
        based_on=[a.pk for a in annotations],
        **label.fields(),
    )
    # One in K submissions ends here: hand-written statements, as the rest of `submit`.
    sql.insert(resolution)
    project_issue.status = ProjectIssue.Status.FINAL
    _save_comparison(project_issue)
    return resolution


_SAVE_COMPARISON_SQL = (
    f"UPDATE {_PROJECTISSUE_TABLE} SET status = %(status)s,"
    " disagreement_level = %(level)s, split = %(split)s WHERE id = %(item)s"
)


def _save_comparison(project_issue: ProjectIssue) -> None:
    """Store the issue's status and the comparison's outcome (what `save(update_fields=...)`
    would, in one prepared statement)."""
    sql.execute(
        _SAVE_COMPARISON_SQL,
        {
            "status": project_issue.status,
            "level": project_issue.disagreement_level,
            "split": project_issue.split,
            "item": project_issue.pk,
        },
    )


_CURRENT_LABELS_SQL = (
    f"SELECT {sql.columns(Annotation, 'a')} FROM {_ANNOTATION_TABLE} a"
    " WHERE a.project_id = %(project)s AND a.issue_id = %(issue)s AND a.is_current"
    " ORDER BY a.created_at, a.id"
)


def _current_labels(project_issue: ProjectIssue) -> list[Annotation]:
    """The issue's current annotations, oldest first, without related rows."""
    found = sql.rows(
        _CURRENT_LABELS_SQL,
        {"project": project_issue.project_id, "issue": project_issue.issue_id},
    )
    return [sql.model_from_row(Annotation, row)[0] for row in found]


def early_sub_theme(winners: list[Annotation]) -> int | None:
    """The sub-theme of an early decision: the most common one among the labels with the
    winning deciding key (no sub-theme counts as a choice too), a tie going to the one chosen
    earliest. `winners` are oldest first."""
    counts = Counter(a.sub_theme_id for a in winners)
    first_seen: dict[int | None, int] = {}
    for index, a in enumerate(winners):
        first_seen.setdefault(a.sub_theme_id, index)
    return max(counts, key=lambda sub: (counts[sub], -first_seen[sub]))


def enlisted_machine_vote(project_issue: ProjectIssue) -> Hashable | None:
    """The deciding key of an enlisted machine rater's label on the issue, when it reaches that
    rater's confidence threshold (a rater without a threshold never votes), else None.

    With several enlisted raters, the most confident label: one vote whatever their number.
    Which labels vote is `MachineLabel.objects.enlisted_votes`. The submission function
    declines every label of an issue with such a vote (`submission._ENLISTED_MACHINE_SQL`),
    so this path alone counts it."""
    row = (
        MachineLabel.objects.enlisted_votes(project_issue.project_id)
        .filter(issue_id=project_issue.issue_id)
        .order_by("-confidence", "rater_id")
        .values_list("is_false_positive", "issue_type_id", "theme_id")
        .first()
    )
    if row is None:
        return None
    return FP if row[0] else (row[1], row[2])


def _decide_early(project_issue: ProjectIssue, rule: AdaptiveRule, n: int) -> Resolution | None:
    """Under the adaptive rule with n < K labels: finalize the issue if the rule decides it
    (an enlisted machine rater's vote counted as `labeling.stopping` says)."""
    if n + 1 < rule.min_labels:
        return None  # even with a machine's vote: no need to read anything
    machine = enlisted_machine_vote(project_issue)
    if n + (machine is not None) < rule.min_labels:
        return None
    annotations = _current_labels(project_issue)
    decided = early_decision([deciding_key(a) for a in annotations], rule, machine=machine)
    if decided is None:
        return None  # open for one more label; nothing about the comparison is stored yet
    winners = [a for a in annotations if deciding_key(a) == decided]
    sub_theme = early_sub_theme(winners)
    chosen = next(a for a in winners if a.sub_theme_id == sub_theme)
    comparison = compare(annotations)
    project_issue.disagreement_level = comparison.first_disagreement
    project_issue.split = comparison.split
    method = (
        Resolution.Method.MAJORITY if comparison.first_disagreement else Resolution.Method.UNANIMOUS
    )
    return _finalize(project_issue, annotations, label_key(chosen), method)


def evaluate(project_issue: ProjectIssue, project: Project | None = None) -> Resolution | None:
    """Compare the issue's current annotations once K exist; finalize or queue it. Under the
    adaptive rule, below K: finalize it if the rule decides it, else leave it open.

    Call inside a transaction holding the issue's row lock, after a new (first) label. Returns
    the new resolution, if any.
    """
    project = project or project_issue.project
    k = project.annotations_per_issue
    if project_issue.status == ProjectIssue.Status.FINAL:
        return None
    if project_issue.annotation_count < k:
        rule = AdaptiveRule.of(project)
        if rule is None or project_issue.status != ProjectIssue.Status.OPEN:
            return None
        return _decide_early(project_issue, rule, project_issue.annotation_count)
    # Only the label ids are compared: no need for the annotators' and nodes' rows here.
    annotations = _current_labels(project_issue)
    if len(annotations) < k:
        return None
    comparison = compare(annotations, k)
    project_issue.disagreement_level = comparison.first_disagreement
    project_issue.split = comparison.split
    if not comparison.first_disagreement:
        return _finalize(project_issue, annotations, label_key(annotations[0]), "unanimous")
    key, count = comparison.top
    if (
        project.resolution_policy == Project.Policy.MAJORITY
        and key is not None
        and key != FP  # exclusion needs unanimity
        and count / k >= project.majority_threshold
    ):
        return _finalize(project_issue, annotations, key, Resolution.Method.MAJORITY)
    project_issue.status = ProjectIssue.Status.DISAGREEMENT
    _save_comparison(project_issue)
    return None


def resolve(
    project_issue: ProjectIssue,
    lead: User,
    label: Label,
    method: str,
    note: str = "",
) -> Resolution:
    """A lead's final label for an issue (one of the annotators' labels or a new one), recorded
    with the method the lead chose (`method_refusal` says which they may)."""
    refusal = method_refusal(method)
    if refusal:
        raise Refusal("method", refusal)
    with transaction.atomic():
        pi = ProjectIssue.objects.select_for_update().get(pk=project_issue.pk)
        if pi.status == ProjectIssue.Status.FINAL or current_resolution(pi) is not None:
            raise Refusal(WHOLE, gettext("The issue is already final; reopen it first."))
        # The discussion is read under the issue's lock, with its status.
        refusal = method_refusal(method, pi)
        if refusal:
            raise Refusal("method", refusal)
        based_on = list(
            Annotation.objects.filter(
                project_id=pi.project_id, issue_id=pi.issue_id, is_current=True
            ).values_list("pk", flat=True)
        )
        resolution = Resolution.objects.create(
            based_on=based_on,
            project_id=pi.project_id,
            issue_id=pi.issue_id,
            method=method,
            decided_by=lead,
            note=note,
            # A `Label`, or an annotation chosen as the final label: its label proper only.
            **Label.from_annotation(label, with_notes=False).fields(),
        )
        pi.status = ProjectIssue.Status.FINAL
        pi.save(update_fields=["status"])
    return resolution


@dataclass(frozen=True)
class LeadAction:
    """What a lead does on the resolve page, validated (`labeling.forms.LeadActionForm`):
    "message" (`text` is the body), "reopen" (`text` is the note) or "resolve" (`method`,
    `text` as the note, and either `annotation_id`, an annotation to adopt, or `label`)."""

    kind: str
    text: str = ""
    method: str = ""
    annotation_id: int | None = None
    label: Label | None = None


def adopted_label(project_issue: ProjectIssue, annotation_id: int) -> Label:
    """The label proper of one of the issue's current annotations, for a lead to adopt."""
    chosen = Annotation.objects.filter(
        pk=annotation_id,
        project_id=project_issue.project_id,
        issue_id=project_issue.issue_id,
        is_current=True,
    ).first()
    if chosen is None:
        raise Refusal("source", gettext("not an annotation of this issue"))
    return Label.from_annotation(chosen, with_notes=False)


def apply_lead_action(project_issue: ProjectIssue, lead: User, action: LeadAction) -> str:
    """Carry out a lead's action on an issue; returns what to tell the lead ("" for nothing).
    Raises `Refusal` when it does not apply to the issue as it stands (naming the input at
    fault, or `WHOLE`: the issue's state)."""
    if action.kind == "message":
        add_message(project_issue, lead, action.text)
        return ""
    if action.kind == "reopen":
        reopen(project_issue, lead, action.text)
        return gettext("Reopened; the old final label is kept in the history.")
    if action.kind == "resolve":
        if action.annotation_id is not None:
            label = adopted_label(project_issue, action.annotation_id)
        elif action.label is not None:
            label = action.label
        else:
            raise Refusal("source", gettext("choose an annotation or a new label"))
        resolve(project_issue, lead, label, action.method, action.text)
        return gettext("Final label recorded for %(issue)s.") % {"issue": project_issue.issue}
    raise Refusal("action", gettext("unknown action"))


def reopen(project_issue: ProjectIssue, lead: User, note: str = "") -> Resolution:
    """Take back a final label: it stays as history and the issue returns to the lead queue."""
    with transaction.atomic():
        pi = ProjectIssue.objects.select_for_update().get(pk=project_issue.pk)
        resolution = current_resolution(pi)
        if resolution is None:
            raise Refusal(WHOLE, gettext("The issue has no final label to reopen."))
        resolution.is_current = False
        resolution.reopened_by = lead
        resolution.reopened_at = timezone.now()
        if note:
            resolution.note = f"{resolution.note}\n[reopened] {note}".strip()
        resolution.save(update_fields=["is_current", "reopened_by", "reopened_at", "note"])
        comparison = compare(current_annotations(pi), pi.project.annotations_per_issue)
        pi.status = ProjectIssue.Status.DISAGREEMENT
        pi.disagreement_level = comparison.first_disagreement
        pi.split = comparison.split
        _save_comparison(pi)
    return resolution


def machine_opinions(project_issue: ProjectIssue) -> list:
    """The machine raters' current labels of the issue: the lead's second opinion, shown on the
    resolve page after the humans' labels and nowhere an annotator looks."""
    return list(
        MachineLabel.objects.filter(
            issue_id=project_issue.issue_id,
            rater__project_id=project_issue.project_id,
            is_current=True,
        )
        .select_related("rater", "issue_type", "theme", "sub_theme")
        .order_by("rater__name")
    )


def resolution_history(project_issue: ProjectIssue) -> QuerySet[Resolution]:
    return Resolution.objects.filter(
        project_id=project_issue.project_id, issue_id=project_issue.issue_id
    ).select_related("decided_by", "reopened_by", "issue_type", "theme", "sub_theme")


MAX_MESSAGE = 5000


def _message_body(body: str) -> str:
    body = (body or "").strip()
    if not body:
        raise Refusal("message", gettext("write something first."))
    if len(body) > MAX_MESSAGE:
        raise Refusal("message", gettext("at most %(most)s characters") % {"most": MAX_MESSAGE})
    return body


def add_message(project_issue: ProjectIssue, author: User, body: str) -> DiscussionMessage:
    return DiscussionMessage.objects.create(
        project_issue=project_issue, author=author, body=_message_body(body)
    )


def request_change(project_issue: ProjectIssue, annotator: User, body: str) -> DiscussionMessage:
    """An annotator's request to change their locked label, for the lead's eyes.

    Only an annotator with a current label of the issue may ask. The request changes nothing of
    the issue: its status, annotations and final label stay as they are until a lead acts.
    """
    has_label = Annotation.objects.filter(
        project_id=project_issue.project_id,
        issue_id=project_issue.issue_id,
        annotator=annotator,
        is_current=True,
    ).exists()
    if not has_label:
        raise Refusal("message", gettext("only an annotator of this issue may ask for a change"))
    return DiscussionMessage.objects.create(
        project_issue=project_issue,
        author=annotator,
        body=_message_body(body),
        is_change_request=True,
    )


def own_messages(project_issue: ProjectIssue, user: User) -> QuerySet[DiscussionMessage]:
    """What an annotator may read of an issue's discussion: their own messages only."""
    return project_issue.discussion.filter(author=user)


def late_change_requests(project: Project) -> QuerySet[DiscussionMessage]:
    """Change requests a lead has not acted on: on issues still waiting for a final label, or
    made after the issue's current final label was decided."""
    newer_than_final = Exists(
        Resolution.objects.filter(
            project_id=project.pk,
            issue_id=OuterRef("project_issue__issue_id"),
            is_current=True,
            decided_at__lt=OuterRef("created_at"),
        )
    )
    return (
        DiscussionMessage.objects.filter(project_issue__project=project, is_change_request=True)
        .filter(~Q(project_issue__status=ProjectIssue.Status.FINAL) | newer_than_final)
        .select_related("author", "project_issue__issue")
        .order_by("created_at", "id")
    )


def disagreement_queue(
    project: Project,
    repository_id: int | None = None,
    type_id: int | None = None,
    level: str = "",
    sort: str = "split",
) -> QuerySet[ProjectIssue]:
    """Issues waiting for a lead, filtered; most split first unless sorted by queue order."""
    qs = ProjectIssue.objects.filter(
        project=project, status=ProjectIssue.Status.DISAGREEMENT
    ).select_related("issue", "issue__repository")
    if repository_id:
        qs = qs.filter(issue__repository_id=repository_id)
    if type_id:
        # Issues where at least one annotator chose the type.
        qs = qs.filter(
            Exists(
                Annotation.objects.filter(
                    project_id=project.pk,
                    issue_id=OuterRef("issue_id"),
                    is_current=True,
                    issue_type_id=type_id,
                )
            )
        )
    if level:
        qs = qs.filter(disagreement_level=level)
    qs = qs.annotate(
        change_requests=Count("discussion", filter=Q(discussion__is_change_request=True))
    )
    if sort == "position":
        return qs.order_by("position", "id")
    return qs.order_by("-split", "position", "id")
