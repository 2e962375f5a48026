"""Project setup for leads: which issues are in scope, K, the resolution policy, the stopping
rule (fixed K or adaptive, `labeling.stopping`), the pilot; the setup page's two actions
(`apply_setup_action`: a `ScopeChange` or a `SettingsChange`); and a new project made in one
step with its members and scope (`create_project`). Input that cannot apply raises
`lib.refusal.Refusal` naming its field, which the page puts beside that field.

The pilot is a seeded random sample stratified by repository; it comes first in the queue and
its annotations carry `is_pilot`, so agreement figures can leave them out. The rest of the
queue is a seeded shuffle, so repositories interleave and the order can be reproduced.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, time
from typing import Any

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.db.models import Count, Exists, Max, OuterRef, Q, QuerySet
from django.utils import timezone
from django.utils.translation import gettext

from annotator.models import Membership, Project, Role
from annotator.permissions import may_add_existing_accounts
from ingest.models import Issue, Repository
from labeling import resolution
from labeling.models import Annotation, ProjectIssue, QueueFrontier, Reservation
from labeling.stopping import AdaptiveRule
from lib.inputlimits import integer_range
from lib.refusal import Refusal

# K: more labels per issue than any study asks of its volunteers is a typo, not a design.
MAX_ANNOTATIONS_PER_ISSUE = 50


@dataclass
class Scope:
    repository_ids: list[int] = field(default_factory=list)
    filter_statuses: list[str] = field(default_factory=list)
    created_from: date | None = None
    created_to: date | None = None

    def as_json(self) -> dict:
        return {
            "repository_ids": self.repository_ids,
            "filter_statuses": self.filter_statuses,
            "created_from": self.created_from.isoformat() if self.created_from else None,
            "created_to": self.created_to.isoformat() if self.created_to else None,
        }


def issues_in_scope(scope: Scope) -> QuerySet[Issue]:
    qs = Issue.objects.all()
    if scope.repository_ids:
        qs = qs.filter(repository_id__in=scope.repository_ids)
    if scope.filter_statuses:
        qs = qs.filter(filter_status__in=scope.filter_statuses)
    tz = timezone.get_current_timezone()
    if scope.created_from:
        qs = qs.filter(created_at__gte=datetime.combine(scope.created_from, time.min, tz))
    if scope.created_to:
        qs = qs.filter(created_at__lte=datetime.combine(scope.created_to, time.max, tz))
    return qs


def scope_counts(scope: Scope) -> list[tuple[Repository, int]]:
    """How many issues the scope selects, per repository (by owner and name); the chosen
    repositories are listed even when they hold none."""
    counts = dict(
        issues_in_scope(scope)
        .order_by()
        .values("repository_id")
        .annotate(n=Count("id"))
        .values_list("repository_id", "n")
    )
    repositories = Repository.objects.filter(pk__in={*counts, *scope.repository_ids})
    return [(r, counts.get(r.pk, 0)) for r in repositories.order_by("owner", "name")]


def configure(
    project: Project,
    k: int,
    policy: str,
    threshold: float,
    *,
    stopping_rule: str | None = None,
    min_labels: int | None = None,
    lead_margin: int | None = None,
    needs_more_first: bool | None = None,
    translated_descriptions: bool | None = None,
) -> Project:
    """Set K, the resolution policy, the stopping rule (fixed K, or adaptive with its
    minimum, lead and queue order) and whether taxonomy descriptions are shown in the reader's
    language (None keeps a setting as it is). K may not drop below what an issue already has.

    Issues decided early stay final; open issues the new settings make due (K lowered to what
    they have, the adaptive minimum reached) are compared at once (`settle_open_issues`), the
    others when their next label arrives.
    """
    if not 1 <= k <= MAX_ANNOTATIONS_PER_ISSUE:
        raise Refusal(
            "annotations_per_issue",
            gettext("between 1 and %(most)s") % {"most": MAX_ANNOTATIONS_PER_ISSUE},
        )
    if policy not in Project.Policy.values:
        raise Refusal(
            "resolution_policy", gettext("unknown policy %(policy)s") % {"policy": repr(policy)}
        )
    # Above one half, so two labels can never both hold a majority.
    if not 0.5 < threshold <= 1:
        raise Refusal("majority_threshold", gettext("a share above 0.5 and at most 1"))
    stopping_rule = project.stopping_rule if stopping_rule is None else stopping_rule
    if stopping_rule not in Project.StoppingRule.values:
        raise Refusal(
            "stopping_rule", gettext("unknown rule %(rule)s") % {"rule": repr(stopping_rule)}
        )
    min_labels = project.min_labels if min_labels is None else min_labels
    lead_margin = project.lead_margin if lead_margin is None else lead_margin
    if stopping_rule == Project.StoppingRule.ADAPTIVE:
        # Checked only for the rule that uses them (a K lowered under the fixed rule keeps the
        # adaptive settings it would not allow; they are checked when the rule is chosen).
        if not 1 <= min_labels <= k:
            raise Refusal("min_labels", gettext("between 1 and K (%(k)s)") % {"k": k})
        # A lead above K could never be reached before K: every issue would take K labels.
        if not 1 <= lead_margin <= k:
            raise Refusal("lead_margin", gettext("between 1 and K (%(k)s)") % {"k": k})
    most = (
        ProjectIssue.objects.filter(project=project).aggregate(m=Max("annotation_count"))["m"] or 0
    )
    if k < most:
        raise Refusal(
            "annotations_per_issue",
            gettext("an issue already has %(count)s annotations") % {"count": most},
        )
    project.annotations_per_issue = k
    project.resolution_policy = policy
    project.majority_threshold = threshold
    project.stopping_rule = stopping_rule
    project.min_labels = min_labels
    project.lead_margin = lead_margin
    if needs_more_first is not None:
        project.needs_more_first = needs_more_first
    if translated_descriptions is not None:
        project.translated_descriptions = translated_descriptions
    project.save(
        update_fields=[
            "annotations_per_issue",
            "resolution_policy",
            "majority_threshold",
            "stopping_rule",
            "min_labels",
            "lead_margin",
            "needs_more_first",
            "translated_descriptions",
        ]
    )
    settle_open_issues(project)
    return project


def stopping_warning(project: Project) -> str:
    """What a lead should know of settings that are accepted but do less than they seem to
    ("" when nothing): the adaptive rule with its minimum at K decides nothing early, so it
    behaves like the fixed rule."""
    if (
        project.stopping_rule == Project.StoppingRule.ADAPTIVE
        and project.min_labels >= project.annotations_per_issue
    ):
        return gettext(
            "The adaptive rule's minimum equals K (%(k)s): every issue gets K labels before "
            "anything is decided, so it behaves like the fixed rule. Lower the minimum to let "
            "issues be decided early."
        ) % {"k": project.annotations_per_issue}
    return ""


def settle_open_issues(project: Project) -> int:
    """Compare the open issues the settings now say are due: K lowered to what an issue has, or
    the adaptive rule chosen for issues past its minimum. Without this they would wait for a
    label nobody can give (no slot is free at K). Returns how many were looked at."""
    rule = AdaptiveRule.of(project)
    due = min(rule.min_labels if rule else project.annotations_per_issue,
              project.annotations_per_issue)  # fmt: skip
    ids = list(
        ProjectIssue.objects.filter(
            project=project, status=ProjectIssue.Status.OPEN, annotation_count__gte=due
        ).values_list("pk", flat=True)
    )
    for pk in ids:
        with transaction.atomic():
            # The lock a submission takes: a label arriving now waits, then sees the outcome.
            item = ProjectIssue.objects.select_for_update().get(pk=pk)
            if item.status == ProjectIssue.Status.OPEN:
                resolution.evaluate(item, project)
    return len(ids)


def stratified_sample(items_by_stratum: Mapping[Any, list[int]], n: int, seed: int) -> list[int]:
    """A seeded sample of n ids, spread over strata in proportion to their size.

    Largest-remainder allocation, so the shares add up to n exactly.
    """
    total = sum(len(v) for v in items_by_stratum.values())
    n = min(n, total)
    if n <= 0:
        return []
    rng = random.Random(seed)
    strata = sorted(items_by_stratum, key=str)
    exact = {s: n * len(items_by_stratum[s]) / total for s in strata}
    quota = {s: int(exact[s]) for s in strata}
    for s in sorted(strata, key=lambda s: exact[s] - quota[s], reverse=True)[
        : n - sum(quota.values())
    ]:
        quota[s] += 1
    sample = []
    for s in strata:
        sample += rng.sample(sorted(items_by_stratum[s]), quota[s])
    return sample


def _check_queue_args(pilot_size: int, seed: int) -> None:
    """Both are stored on the project: each must fit its column (the seed's is `queue_seed`)."""
    for name, value, column in (
        ("pilot_size", pilot_size, "pilot_size"),
        ("seed", seed, "queue_seed"),
    ):
        low, high = integer_range(Project, column)
        if not low <= value <= high:
            raise Refusal(
                name,
                gettext("a whole number from %(low)s to %(high)s") % {"low": low, "high": high},
            )


@transaction.atomic
def apply_scope(project: Project, scope: Scope, pilot_size: int, seed: int) -> dict[str, int]:
    """Put the scope's issues in the project, draw the pilot, and order the queue.

    Issues that leave the scope are removed only if nobody has labeled them yet.
    """
    _check_queue_args(pilot_size, seed)
    wanted = dict(issues_in_scope(scope).values_list("id", "repository_id"))
    existing = dict(ProjectIssue.objects.filter(project=project).values_list("issue_id", "id"))
    labeled = set(Annotation.objects.filter(project=project).values_list("issue_id", flat=True))
    # A recall probe (dataset.recall) is a dropped issue outside the scope on purpose: it stays.
    probes = set(
        ProjectIssue.objects.filter(project=project, recall_probe__isnull=False).values_list(
            "issue_id", flat=True
        )
    )
    keep = labeled | probes
    removable = [i for i in existing if i not in wanted and i not in keep]
    ProjectIssue.objects.filter(project=project, issue_id__in=removable).delete()
    added = [i for i in wanted if i not in existing]
    ProjectIssue.objects.bulk_create(
        [ProjectIssue(project=project, issue_id=i) for i in added], batch_size=2000
    )
    order_queue(project, pilot_size, seed)
    project.scope = scope.as_json()
    project.save(update_fields=["scope"])
    return {"added": len(added), "removed": len(removable), "total": len(existing) + len(added)}


@dataclass(frozen=True)
class ScopeChange:
    """The setup page's scope action, validated (`labeling.forms.ScopeForm`): the scope to
    apply (None: the lead may choose no repository), the pilot's size and the seed."""

    scope: Scope | None
    pilot_size: int
    seed: int


@dataclass(frozen=True)
class SettingsChange:
    """The setup page's settings action, validated (`labeling.forms.SettingsForm`): K, the
    policy and its threshold, and `configure`'s other settings (None keeps one as it is)."""

    k: int
    policy: str
    threshold: float
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SetupDone:
    """What to tell the lead of an action carried out: `message`, and a `warning` ("" for
    none) of settings that do less than they seem to (`stopping_warning`)."""

    message: str
    warning: str = ""


def apply_setup_action(project: Project, action: ScopeChange | SettingsChange) -> SetupDone:
    """Carry out a lead's action on the setup page (the scope, or the settings); returns what
    to tell the lead. Raises `Refusal`, naming the field, when it does not apply."""
    if isinstance(action, ScopeChange):
        if action.scope is None:
            raise Refusal("repositories", gettext("you may manage none of them."))
        result = apply_scope(project, action.scope, pilot_size=action.pilot_size, seed=action.seed)
        return SetupDone(
            gettext("Scope applied: %(added)s added, %(removed)s removed, %(total)s in scope.")
            % result
        )
    configure(project, action.k, action.policy, action.threshold, **action.options)
    return SetupDone(gettext("Settings saved."), stopping_warning(project))


@transaction.atomic
def order_queue(project: Project, pilot_size: int, seed: int) -> None:
    """Draw the pilot (stratified by repository) and give every issue its queue position."""
    _check_queue_args(pilot_size, seed)
    rows = list(
        ProjectIssue.objects.filter(project=project).values_list(
            "id", "issue__repository_id", "recall_probe"
        )
    )
    by_repo: dict[int, list[int]] = defaultdict(list)
    for pk, repo, probe in rows:
        # Recall probes (dataset.recall) go among the rest, never into the pilot: the pilot
        # stays the same draw when probes are added, and probes stay where ordinary issues are.
        if probe is None:
            by_repo[repo].append(pk)
    pilot = stratified_sample(by_repo, pilot_size, seed)
    pilot_set = set(pilot)
    rest = sorted(pk for pk, _, _ in rows if pk not in pilot_set)
    random.Random(seed + 1).shuffle(rest)
    rng = random.Random(seed)
    rng.shuffle(pilot)
    position = {pk: i for i, pk in enumerate(pilot + rest)}
    objs = [
        ProjectIssue(id=pk, position=position[pk], is_pilot=pk in pilot_set) for pk, _, _ in rows
    ]
    ProjectIssue.objects.bulk_update(objs, ["position", "is_pilot"], batch_size=2000)
    # Frontiers are positions in the old order: everyone starts looking from the front again.
    QueueFrontier.objects.filter(project=project).delete()
    project.pilot_size = len(pilot)
    project.queue_seed = seed
    project.save(update_fields=["pilot_size", "queue_seed"])


@transaction.atomic
def place_in_queue(project: Project, item_ids: list[int], seed: int) -> None:
    """Give new queue items (recall probes) random places in the part of the queue nobody has
    been served yet, leaving every served position as it was.

    The part not yet served is everything after the last item that is in the pilot, labeled,
    decided or ever reserved. The new items take a seeded random choice of its slots (every
    arrangement of old and new items equally likely, the old ones keeping their order), so
    their positions have the distribution of the old unserved items' positions. Frontiers
    (`QueueFrontier`) lie at or before that boundary, so they stay valid.
    """
    new = set(item_ids)
    if not new:
        return
    # The last position someone has been handed: in the pilot, labeled, decided or reserved
    # (even if handed back).
    boundary = _served(project).aggregate(last=Max("position"))["last"]
    boundary = -1 if boundary is None else boundary
    tail = list(
        ProjectIssue.objects.filter(project=project, position__gt=boundary)
        .exclude(pk__in=new)
        .order_by("position", "pk")
        .values_list("pk", flat=True)
    )
    rng = random.Random(seed)
    slots = len(tail) + len(new)
    probe_slots = set(rng.sample(range(slots), len(new)))
    newcomers = sorted(new)
    rng.shuffle(newcomers)
    old_items, new_items = iter(tail), iter(newcomers)
    order = [next(new_items) if i in probe_slots else next(old_items) for i in range(slots)]
    ProjectIssue.objects.bulk_update(
        [ProjectIssue(id=pk, position=boundary + 1 + i) for i, pk in enumerate(order)],
        ["position"],
        batch_size=2000,
    )


def _served(project: Project) -> QuerySet[ProjectIssue]:
    """The items someone has been handed: in the pilot, labeled, decided or ever reserved."""
    return ProjectIssue.objects.filter(project=project).filter(
        Q(is_pilot=True)
        | ~Q(status=ProjectIssue.Status.OPEN)
        | Q(annotation_count__gt=0)
        | Exists(Reservation.objects.filter(project_issue=OuterRef("pk")))
    )


@transaction.atomic
def bring_to_front(project: Project, item_ids: list[int], seed: int) -> int:
    """Put queue items (an active sample's draw) first in the part of the queue nobody has
    been served yet, in a seeded random order, the other unserved items after them in their
    old order; every served position stays as it was (as `place_in_queue`). Returns how many
    items moved; a chosen item already served keeps its place. Frontiers lie at or before the
    boundary, so they stay valid."""
    chosen = set(item_ids)
    boundary = _served(project).aggregate(last=Max("position"))["last"]
    boundary = -1 if boundary is None else boundary
    tail = list(
        ProjectIssue.objects.filter(project=project, position__gt=boundary)
        .order_by("position", "pk")
        .values_list("pk", flat=True)
    )
    front = sorted(pk for pk in tail if pk in chosen)
    random.Random(seed).shuffle(front)
    order = front + [pk for pk in tail if pk not in chosen]
    ProjectIssue.objects.bulk_update(
        [ProjectIssue(id=pk, position=boundary + 1 + i) for i, pk in enumerate(order)],
        ["position"],
        batch_size=2000,
    )
    return len(front)


@transaction.atomic
def create_project(
    creator: User,
    *,
    name: str,
    taxonomy_version_id: int,
    k: int,
    policy: str,
    threshold: float,
    scope: Scope | None,
    description: str = "",
    pilot_size: int = 0,
    seed: int = 0,
    members: list[tuple[Any, str]] | None = None,
    stopping: dict[str, Any] | None = None,
) -> Project:
    """A new project with its creator as lead, its members, K and policy, and its scope.
    `stopping` holds `configure`'s stopping-rule settings (left out: the fixed rule).

    Only an admin may list `members` (existing accounts join without being asked:
    `annotator.permissions.may_add_existing_accounts`); other creators invite them later.
    All or nothing: a refused member, setting or scope leaves no project behind. `scope` None
    starts the project with an empty queue (a creator who may choose no repository yet).
    Members get their pseudonyms from `Membership.save`.
    """
    try:
        with transaction.atomic():
            project = Project.objects.create(
                name=name,
                description=description,
                taxonomy_version_id=taxonomy_version_id,
                created_by=creator,
            )
    except IntegrityError:
        raise Refusal(
            "name", gettext("a project named %(name)s already exists") % {"name": repr(name)}
        ) from None
    Membership.objects.create(project=project, user=creator, role=Role.LEAD)
    if members and not may_add_existing_accounts(creator):
        raise Refusal(
            "members",
            gettext(
                "only an admin adds existing accounts to a project; invite members from the "
                "project's page once it exists"
            ),
        )
    seen = {creator.pk}
    for user, role in members or []:
        if role not in Role.values:
            raise Refusal("members", gettext("unknown role %(role)s") % {"role": repr(role)})
        if user.pk in seen:
            raise Refusal(
                "members", gettext("%(username)s is listed twice") % {"username": user.username}
            )
        seen.add(user.pk)
        Membership.objects.create(project=project, user=user, role=role)
    configure(project, k, policy, threshold, **(stopping or {}))
    if scope is not None:
        apply_scope(project, scope, pilot_size, seed)
    return project
