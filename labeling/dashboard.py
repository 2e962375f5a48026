"""The lead's dashboard of a project: who labels how much, where the issues stand, progress.

Three parts, each from a handful of aggregate queries (GROUP BY in the database, never a loop
over issues or annotations in Python), so the page costs the same for six issues and for the
study's 38,742 issues with 271,194 annotations (`bench/dashboard_bench.py`):

* per annotator (every member who labels): labels given (current labels, pilot apart), pace
  over the last 14 days, labels per day over the last 30 days (a sparkline), agreement with
  the final labels of their final issues (theme and type level, the rule of
  `labeling.final_agreement`), open reservations and the
  last time they did something;
* per repository: issues final by the type of their final label (and false positives), in the
  disagreement queue, open (no label yet) and in progress (some labels, not yet final or
  disputed) as the issue list counts them, with a totals row;
* per day since the first label: cumulative labels and cumulative final issues.

A label is counted on the day of its first revision (a revision is a change, not a new label),
so the cumulative labels end at the number of current labels. Days are in the site's time zone.
Leads only (`LEAD_ROLES`): the page names who chose what share of the final labels.

The figures that scan the whole project (the label groups, the issues per repository, the
finals per day, the disputed issues per type and per level: `Figures`, `compute_figures`) are
kept in a `DashboardSnapshot`; the rest (members, reservations, the taxonomy's types, names,
and every window relative to `now`) is read on each render and composed with them, so a render
from a snapshot shows what a fresh computation would have shown when the snapshot was made.
A snapshot younger than `REFRESH_SECONDS` (the page's poll) is used as it is; an older one is
shown, "as of" its time, while the one reader that claims it (a conditional UPDATE) queues its
refresh (`REFRESH_TASK`, through the outbox). With no snapshot yet, no broker (tasks eager), or
a refresh asked for `OVERDUE_INTERVALS` polls ago and never delivered (no worker, Redis away),
the render computes the figures itself and stores them: the page never waits on a worker.
At ten times the study a computation takes seconds, a render from a snapshot milliseconds
(bench/RESULTS.md, "Dashboard from a snapshot").
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import astuple, dataclass, field
from datetime import date, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.models import Count, FilteredRelation, Max, Q
from django.db.models.functions import TruncDate
from django.utils import timezone
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from annotator import outbox
from annotator.models import Membership, Project
from ingest.models import Repository
from labeling import final_agreement
from labeling.final_agreement import FinalAgreement
from labeling.issue_list import IN_PROGRESS, OPEN, status_filter
from labeling.models import (
    DISAGREEMENT_LEVEL_NAMES,
    Annotation,
    DashboardSnapshot,
    ProjectIssue,
    Reservation,
    Resolution,
)
from labeling.permissions import LABELER_ROLES
from lib import sql
from lib.svgchart import Frame
from taxonomy.models import TaxonomyNode

PACE_DAYS = 14
SPARK_DAYS = 30
# How often the page asks for fresh figures (htmx polling), in seconds; a snapshot of the
# figures younger than this is used as it is.
REFRESH_SECONDS = 30
# "Refresh now": figures older than this are refreshed at the lead's request (through the
# worker, like a poll's, never computed in the request); while newer ones are on their way the
# page asks again every `REFRESHING_POLL_SECONDS`.
ASKED_SECONDS = 5
REFRESHING_POLL_SECONDS = 2
# A refresh asked for this many polls ago and still not delivered is done by the next reader.
OVERDUE_INTERVALS = 2
# The task that refreshes a snapshot, by its Celery name (`labeling.tasks` calls this module,
# never the reverse).
REFRESH_TASK = "labeling.tasks.refresh_dashboard"
# The shape of `DashboardSnapshot.figures`: a snapshot of another shape (written by another
# release during an upgrade) is computed again, not read.
FIGURES_FORMAT = 1

# Sparkline and chart geometry (SVG user units; CSS scales the drawing).
SPARK_WIDTH, SPARK_HEIGHT = 120, 28
CHART = Frame(560, 220, margin_left=64, margin_right=12, margin_top=12, margin_bottom=36)


@dataclass
class AnnotatorRow:
    """One member who labels, with their figures."""

    user_id: int
    username: str
    pseudonym: str
    role: str
    labels: int = 0  # current labels on non-pilot issues
    pilot_labels: int = 0  # current labels on pilot issues
    recent: int = 0  # labels first given in the last PACE_DAYS days
    daily: list[int] = field(default_factory=list)  # labels per day, oldest first
    # Their current labels on final issues and how many agree with the final label.
    agreement: FinalAgreement = field(default_factory=FinalAgreement)
    open_reservations: int = 0
    last_active: datetime | None = None
    sparkline: str = ""  # the polyline's points

    @property
    def total(self) -> int:
        return self.labels + self.pilot_labels

    @property
    def pace(self) -> float:
        """Labels per day over the last PACE_DAYS days."""
        return round(self.recent / PACE_DAYS, 1)

    @property
    def compared(self) -> int:
        return self.agreement.compared

    @property
    def matched_theme(self) -> int:
        return self.agreement.matched_theme

    @property
    def matched_type(self) -> int:
        return self.agreement.matched_type

    @property
    def theme_share(self) -> int | None:
        """Percent of their labels on final issues that agree with the final label at theme
        level (`labeling.final_agreement`)."""
        return self.agreement.shares()["theme"]

    @property
    def type_share(self) -> int | None:
        return self.agreement.shares()["type"]


@dataclass
class RepositoryRow:
    """Where one repository's issues stand (the totals row has no repository id)."""

    repository_id: int | None
    name: str
    total: int = 0
    final_by_type: dict[str, int] = field(default_factory=dict)  # type code or "FP" -> issues
    final: int = 0
    disagreement: int = 0
    # The issue list's words (`labeling.issue_list.status_filter`): open = no label yet,
    # in progress = some labels but not yet compared; the two never overlap.
    open: int = 0
    in_progress: int = 0
    final_cells: list[int] = field(default_factory=list)  # final_by_type in column order

    def add(self, other: RepositoryRow) -> None:
        self.total += other.total
        self.final += other.final
        self.disagreement += other.disagreement
        self.open += other.open
        self.in_progress += other.in_progress
        for code, n in other.final_by_type.items():
            self.final_by_type[code] = self.final_by_type.get(code, 0) + n


@dataclass
class Chart:
    """A cumulative series drawn as an SVG line chart with its axes' labels."""

    title: str
    points: str
    last: int
    y_ticks: list[tuple[str, str]]  # (y, label)
    x_ticks: list[tuple[str, str, str]]  # (x, label, text-anchor)
    width: int = CHART.width
    height: int = CHART.height
    left: int = CHART.left
    right: int = CHART.right
    top: int = CHART.top
    bottom: int = CHART.bottom


@dataclass
class Dashboard:
    project: Project
    annotators: list[AnnotatorRow]
    repositories: list[RepositoryRow]
    totals: RepositoryRow
    final_columns: list[tuple[str, str]]  # (code, heading) of the final-by-type columns
    # The pinned version's types with the disputed issues someone chose each for, for links
    # into the queue.
    types: list[tuple[TaxonomyNode, int]]
    levels: list[tuple[str, str, int]]  # (level, name, disputed issues first split there)
    charts: list[Chart]
    spark_max: int
    refresh_seconds: int
    now: datetime
    # When the project-wide figures were computed (the page's "as of"), and whether newer
    # ones were asked for (the snapshot was older than `REFRESH_SECONDS`).
    figures_at: datetime | None = None
    refreshing: bool = False

    @property
    def poll_seconds(self) -> int:
        """How soon the page asks again: sooner while newer figures are on their way."""
        return REFRESHING_POLL_SECONDS if self.refreshing else self.refresh_seconds


def _today(now: datetime) -> date:
    return timezone.localtime(now).date()


# The project's annotations grouped by annotator and day (of `created_at`, in the site's time
# zone: `{day}`), with the current ones on final issues compared with the final label
# (`final_agreement.SUMS`, the one rule, over its `FINALS`): one scan of the annotations (and a
# hash join with the final labels) for every per-annotator figure and the labels per day. Few
# groups (annotators x days), so little to hash.
_LABEL_GROUPS_SQL = f"""
SELECT a.annotator_id, {{day}} AS day,
  sum(CASE WHEN a.revision = 1 THEN 1 ELSE 0 END),
  sum(CASE WHEN a.is_current AND NOT a.is_pilot THEN 1 ELSE 0 END),
  sum(CASE WHEN a.is_current AND a.is_pilot THEN 1 ELSE 0 END),
  max(a.created_at),
  {final_agreement.SUMS}
FROM {Annotation._meta.db_table} a
LEFT JOIN {final_agreement.FINALS} r ON a.is_current AND r.issue_id = a.issue_id
WHERE a.project_id = %(project)s
GROUP BY 1, 2
"""  # noqa: S608 (assembled from the constants above; values are bound parameters)
_DAY = {
    "postgresql": "(a.created_at AT TIME ZONE %(tz)s)::date",
    # SQLite (the first look) keeps times as UTC text; it runs in UTC.
    "sqlite": "date(a.created_at)",
}


@dataclass(frozen=True)
class LabelGroup:
    """One annotator's annotations written on one day."""

    annotator_id: int
    day: date
    given: int  # first revisions: labels given that day (a later revision changes one)
    current: int  # of these annotations, the current ones on non-pilot issues
    current_pilot: int  # and on pilot issues
    last: datetime
    agreement: FinalAgreement  # of the current ones on final issues


def label_groups(project: Project) -> list[LabelGroup]:
    """The project's annotations in groups (`_LABEL_GROUPS_SQL`): every per-annotator count,
    the agreement with the finals and the labels-per-day series are sums of these (about a
    thousand groups for the study's 271,194 annotations)."""
    statement = _LABEL_GROUPS_SQL.replace("{day}", _DAY.get(connection.vendor, _DAY["sqlite"]))
    params = {"project": project.pk, "tz": timezone.get_current_timezone_name()}
    return [
        LabelGroup(
            user_id,
            date.fromisoformat(day) if isinstance(day, str) else day,
            given or 0,
            current or 0,
            pilot or 0,
            sql.aware_time(last) or timezone.now(),
            FinalAgreement.from_sums(*sums),
        )
        for user_id, day, given, current, pilot, last, *sums in sql.rows(statement, params)
    ]


def annotator_rows(
    project: Project, now: datetime | None = None, groups: list[LabelGroup] | None = None
) -> list[AnnotatorRow]:
    """Every member who labels (annotators, leads, admins), by pseudonym, with their figures.

    Three queries: members; the label groups (`label_groups`, unless given: counts, days,
    agreement with the finals); reservations.
    """
    now = now or timezone.now()
    today = _today(now)
    spark_from = today - timedelta(days=SPARK_DAYS - 1)
    pace_from = today - timedelta(days=PACE_DAYS - 1)
    rows = {
        m.user_id: AnnotatorRow(m.user_id, m.user.username, m.pseudonym, m.role)
        for m in Membership.objects.filter(project=project, role__in=LABELER_ROLES)
        .select_related("user")
        .order_by("pseudonym", "user__username")
    }
    if not rows:
        return []
    per_day: dict[int, dict[date, int]] = defaultdict(lambda: defaultdict(int))
    for g in label_groups(project) if groups is None else groups:
        row = rows.get(g.annotator_id)
        if row is None:  # no longer a member who labels
            continue
        row.labels += g.current
        row.pilot_labels += g.current_pilot
        row.agreement.add(g.agreement)
        per_day[g.annotator_id][g.day] += g.given
        if g.day >= pace_from:
            row.recent += g.given
        if row.last_active is None or g.last > row.last_active:
            row.last_active = g.last
    days = [spark_from + timedelta(days=i) for i in range(SPARK_DAYS)]
    for user_id, row in rows.items():
        row.daily = [per_day[user_id].get(day, 0) for day in days]
    # A reservation is activity too: asking for an issue, or handing one back.
    for r in (
        Reservation.objects.filter(project_issue__project=project, annotator_id__in=list(rows))
        .values("annotator_id")
        .annotate(
            open=Count(
                "id",
                filter=Q(
                    skipped_at__isnull=True,
                    expires_at__gt=now,
                    project_issue__status=ProjectIssue.Status.OPEN,
                ),
            ),
            asked=Max("created_at"),
            skipped=Max("skipped_at"),
        )
    ):
        row = rows[r["annotator_id"]]
        row.open_reservations = r["open"]
        times = [t for t in (row.last_active, r["asked"], r["skipped"]) if t is not None]
        row.last_active = max(times) if times else None
    result = list(rows.values())
    spark_max = max((max(r.daily) for r in result), default=0)
    for row in result:
        row.sparkline = sparkline_points(row.daily, spark_max)
    return result


def sparkline_points(values: list[int], top: int) -> str:
    """The polyline points of a sparkline of `values` on a 0..`top` scale (shared by every
    annotator's line, so the lines compare)."""
    if not values:
        return ""
    step = SPARK_WIDTH / max(len(values) - 1, 1)
    scale = (SPARK_HEIGHT - 2) / top if top else 0
    return " ".join(
        f"{i * step:.1f},{SPARK_HEIGHT - 1 - v * scale:.1f}" for i, v in enumerate(values)
    )


@dataclass(frozen=True)
class RepositoryGroup:
    """The project's issues of one repository and status, the final ones also of one final
    label type (or false positive)."""

    repository_id: int
    status: str
    false_positive: bool | None  # the current final label's, None without one
    type_id: int | None
    issues: int
    unlabeled: int  # of these, open with no label yet (`issue_list`'s "open")
    started: int  # and open with some labels ("in progress")


def repository_groups(project: Project) -> list[RepositoryGroup]:
    """One grouped query: each issue with its current final label (if any), by repository,
    status and the final label's type."""
    return [
        RepositoryGroup(
            g["issue__repository_id"],
            g["status"],
            g["final__is_false_positive"],
            g["final__issue_type_id"],
            g["n"],
            g["unlabeled"],
            g["started"],
        )
        for g in ProjectIssue.objects.filter(project=project)
        .annotate(
            final=FilteredRelation(
                "issue__resolutions",
                condition=Q(
                    issue__resolutions__project=project, issue__resolutions__is_current=True
                ),
            )
        )
        .values(
            "issue__repository_id", "status", "final__is_false_positive", "final__issue_type_id"
        )
        .annotate(
            n=Count("id"),
            unlabeled=Count("id", filter=status_filter(OPEN)),
            started=Count("id", filter=status_filter(IN_PROGRESS)),
        )
        .order_by()
    ]


def repository_rows(
    project: Project,
    type_codes: list[str] | None = None,
    groups: list[RepositoryGroup] | None = None,
) -> tuple[list[RepositoryRow], RepositoryRow, list[str]]:
    """Per repository: issues by status (final ones by their final label's type), in progress;
    the totals row; the columns of final types: `type_codes` (the pinned taxonomy's), any
    other type a final label has (from another taxonomy version), then "FP". From `groups`
    (`repository_groups`, queried unless given); the types' codes and the repositories'
    names are read here."""
    by_repo: dict[int, RepositoryRow] = {}

    def repo_row(repository_id: int) -> RepositoryRow:
        return by_repo.setdefault(repository_id, RepositoryRow(repository_id, ""))

    groups = repository_groups(project) if groups is None else groups
    code_of = dict(
        TaxonomyNode.objects.filter(pk__in={g.type_id for g in groups if g.type_id}).values_list(
            "pk", "code"
        )
    )
    for g in groups:
        row = repo_row(g.repository_id)
        row.total += g.issues
        if g.status == ProjectIssue.Status.FINAL:
            row.final += g.issues
            # "?": final, no final label
            code = "FP" if g.false_positive else code_of.get(g.type_id or 0, "?")
            row.final_by_type[code] = row.final_by_type.get(code, 0) + g.issues
        elif g.status == ProjectIssue.Status.DISAGREEMENT:
            row.disagreement += g.issues
        else:
            row.open += g.unlabeled
            row.in_progress += g.started
    names = {r.pk: r.full_name for r in Repository.objects.filter(pk__in=list(by_repo))}
    rows = sorted(by_repo.values(), key=lambda r: names.get(r.repository_id or 0, "").lower())
    totals = RepositoryRow(None, gettext("Total"))
    for row in rows:
        row.name = names.get(row.repository_id or 0, "")
        totals.add(row)
    codes = list(type_codes or [])
    codes += sorted(c for c in totals.final_by_type if c not in codes and c != "FP")
    codes.append("FP")
    for row in [*rows, totals]:
        row.final_cells = [row.final_by_type.get(c, 0) for c in codes]
    return rows, totals, codes


def level_counts(project: Project) -> dict[str, int]:
    """Disputed issues by the level where their labels first differ ("" where they agree)."""
    return {
        c["disagreement_level"]: c["n"]
        for c in ProjectIssue.objects.filter(
            project=project, status=ProjectIssue.Status.DISAGREEMENT
        )
        .values("disagreement_level")
        .annotate(n=Count("id"))
        .order_by()
    }


def disagreement_levels(
    project: Project, counts: dict[str, int] | None = None
) -> list[tuple[str, str, int]]:
    """Disputed issues by the level where their labels first differ (then reopened ones),
    named by `ProjectIssue.name_of_level`; from `counts` (`level_counts`, queried unless
    given)."""
    disputed = ProjectIssue.Status.DISAGREEMENT
    counts = level_counts(project) if counts is None else counts
    levels = [*DISAGREEMENT_LEVEL_NAMES, *([""] if counts.get("") else [])]
    return [
        (level, ProjectIssue.name_of_level(level, disputed), counts.get(level, 0))
        for level in levels
    ]


def disputed_by_type(project: Project) -> dict[int, int]:
    """Disputed issues per type some annotator chose (the queue's "type voted" filter)."""
    disputed = ProjectIssue.objects.filter(
        project=project, status=ProjectIssue.Status.DISAGREEMENT
    ).values("issue_id")
    return {
        c["issue_type_id"]: c["n"]
        # A semi-join on the disputed issues' ids (not through the issue table).
        for c in Annotation.objects.filter(
            project=project, is_current=True, issue_type__isnull=False, issue_id__in=disputed
        )
        .values("issue_type_id")
        .annotate(n=Count("issue_id", distinct=True))
        .order_by()
    }


def finals_per_day(project: Project) -> dict[date, int]:
    """Current final labels by the day they were decided (in the site's time zone)."""
    return {
        _as_date(day): n
        for day, n in Resolution.objects.filter(project=project, is_current=True)
        .annotate(day=TruncDate("decided_at"))
        .values("day")
        .annotate(n=Count("id"))
        .values_list("day", "n")
        .order_by()
    }


def _as_date(value: date | str) -> date:
    return date.fromisoformat(value) if isinstance(value, str) else value


def progress_series(
    project: Project,
    now: datetime | None = None,
    groups: list[LabelGroup] | None = None,
    finals: dict[date, int] | None = None,
) -> list[tuple[date, int, int]]:
    """(day, labels given so far, issues final so far) for every day from the first label or
    final label to today; a label counts on the day of its first revision, a final issue on
    the day of its current final label (reopening an issue retires its final label). From
    `groups` and `finals` (`label_groups`, `finals_per_day`), queried unless given."""
    now = now or timezone.now()
    labels: dict[date, int] = defaultdict(int)
    for g in label_groups(project) if groups is None else groups:
        labels[g.day] += g.given
    finals = finals_per_day(project) if finals is None else finals
    if not labels and not finals:
        return []
    first = min([*labels, *finals])
    last = max(_today(now), *labels, *finals)
    series, total_labels, total_finals = [], 0, 0
    for i in range((last - first).days + 1):
        day = first + timedelta(days=i)
        total_labels += labels.get(day, 0)
        total_finals += finals.get(day, 0)
        series.append((day, total_labels, total_finals))
    return series


def _nice_top(value: int) -> float:
    """A round number at or above `value` to top a y axis: 1, 1.5, 2, 2.5, 3, 4, 5, 6 or 8
    times a power of 10 (so the top is never far above the line)."""
    if value <= 1:
        return 1
    magnitude = 1
    while magnitude * 10 < value:
        magnitude *= 10
    for step in (1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10):
        if step * magnitude >= value:
            return step * magnitude
    return 10 * magnitude


def _tick_label(value: float) -> str:
    return f"{value:,.0f}" if value == int(value) else f"{value:,.1f}"


def line_chart(title: str, days: list[date], values: list[int]) -> Chart:
    """An SVG line chart of a cumulative series: the polyline's points and the axes' ticks."""
    y_max = _nice_top(max(values, default=0))
    span = max(len(days) - 1, 1)

    def x(i: int) -> float:
        return CHART.x(i / span)

    def y(v: float) -> float:
        return CHART.y(v / y_max)

    points = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(values))
    if len(values) == 1:  # one day: a flat segment, so the line shows
        points += f" {CHART.x(1):.1f},{y(values[0]):.1f}"
    # Positions as text: the template must not localise a coordinate's decimal point.
    y_ticks = [(f"{y(y_max * f):.1f}", _tick_label(y_max * f)) for f in (0, 0.5, 1)]
    x_ticks: list[tuple[str, str, str]] = []
    if days:
        picks = sorted({0, len(days) // 2, len(days) - 1})
        anchors = {0: "start", len(days) - 1: "end"}
        x_ticks = [
            (f"{x(i):.1f}", days[i].isoformat(), anchors.get(i, "middle"))
            for i in (picks if len(days) > 1 else [0])
        ]
    return Chart(title, points, values[-1] if values else 0, y_ticks, x_ticks)


def progress_charts(
    project: Project,
    now: datetime | None = None,
    groups: list[LabelGroup] | None = None,
    finals: dict[date, int] | None = None,
) -> list[Chart]:
    series = progress_series(project, now, groups, finals)
    days = [d for d, _, _ in series]
    return [
        line_chart(gettext("Labels given (cumulative)"), days, [n for _, n, _ in series]),
        line_chart(gettext("Final issues (cumulative)"), days, [n for _, _, n in series]),
    ]


TYPE_HEADINGS = {"FP": _("not LLM-related")}


# --- The snapshot: the project-wide figures, computed at most once per poll ---------------


@dataclass
class Figures:
    """What a render would otherwise scan the whole project for: the label groups, the issues
    by repository, status and final type, the finals per day, the disputed issues per type
    someone chose and per level. Numbers, ids and days only (JSON in `DashboardSnapshot`):
    names, words and windows relative to `now` are the render's."""

    computed_at: datetime
    label_groups: list[LabelGroup]
    repository_groups: list[RepositoryGroup]
    finals_per_day: dict[date, int]
    disputed_by_type: dict[int, int]
    level_counts: dict[str, int]

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FIGURES_FORMAT,
            "label_groups": [
                [
                    g.annotator_id,
                    g.day.isoformat(),
                    g.given,
                    g.current,
                    g.current_pilot,
                    g.last.isoformat(),
                    g.agreement.compared,
                    g.agreement.matched_type,
                    g.agreement.matched_theme,
                    g.agreement.matched_label,
                ]
                for g in self.label_groups
            ],
            "repository_groups": [list(astuple(g)) for g in self.repository_groups],
            "finals_per_day": [[day.isoformat(), n] for day, n in self.finals_per_day.items()],
            "disputed_by_type": [[t, n] for t, n in self.disputed_by_type.items()],
            "level_counts": [[level, n] for level, n in self.level_counts.items()],
        }

    @classmethod
    def from_json(cls, data: Any, computed_at: datetime) -> Figures | None:
        """The figures stored by `to_json`; None for a snapshot of another format."""
        if not isinstance(data, dict) or data.get("format") != FIGURES_FORMAT:
            return None
        return cls(
            computed_at=computed_at,
            label_groups=[
                LabelGroup(
                    user_id,
                    date.fromisoformat(day),
                    given,
                    current,
                    pilot,
                    datetime.fromisoformat(last),
                    FinalAgreement.from_sums(*sums),
                )
                for user_id, day, given, current, pilot, last, *sums in data["label_groups"]
            ],
            repository_groups=[RepositoryGroup(*g) for g in data["repository_groups"]],
            finals_per_day={date.fromisoformat(d): n for d, n in data["finals_per_day"]},
            disputed_by_type={t: n for t, n in data["disputed_by_type"]},
            level_counts={level: n for level, n in data["level_counts"]},
        )


def compute_figures(project: Project) -> Figures:
    """The project-wide figures as they stand (five grouped queries; the expensive part of the
    dashboard: one scan of the annotations joined with the finals)."""
    started = timezone.now()  # what was committed by now is in them
    return Figures(
        computed_at=started,
        label_groups=label_groups(project),
        repository_groups=repository_groups(project),
        finals_per_day=finals_per_day(project),
        disputed_by_type=disputed_by_type(project),
        level_counts=level_counts(project),
    )


def refresh_snapshot(project: Project) -> Figures:
    """Compute the project's figures and store them as its snapshot (clearing the request for
    a refresh); a snapshot stored meanwhile by a computation that started later is kept (but
    not one stamped more than a poll ahead: a clock that was wrong would pin it)."""
    figures = compute_figures(project)
    data = figures.to_json()
    at = figures.computed_at
    stored = DashboardSnapshot.objects.filter(
        Q(computed_at__lt=at) | Q(computed_at__gt=at + timedelta(seconds=REFRESH_SECONDS)),
        project=project,
    ).update(computed_at=at, figures=data, refresh_requested_at=None)
    if not stored:  # none yet (or a newer one: then the insert does nothing)
        DashboardSnapshot.objects.bulk_create(
            [DashboardSnapshot(project=project, computed_at=at, figures=data)],
            ignore_conflicts=True,
        )
    return figures


def _is_fresh(computed_at: datetime, clock: datetime, seconds: float = REFRESH_SECONDS) -> bool:
    """Younger than one poll, or `seconds` (a snapshot from a clock far ahead is not fresh
    either)."""
    window = timedelta(seconds=seconds)
    ahead = timedelta(seconds=REFRESH_SECONDS)
    return -ahead < clock - computed_at < window


def snapshot_figures(project: Project, *, asked: bool = False) -> tuple[Figures, bool]:
    """The figures a render shows, and whether newer ones are on their way; `asked`: the lead
    pressed "Refresh now", and figures older than `ASKED_SECONDS` count as stale.

    The snapshot when it is fresh. A stale one is shown while a refresh is asked for: the
    reader whose conditional UPDATE claims it (no request pending) queues the task; the
    others find the request pending and ask for nothing. Computed here (and stored) when there
    is no snapshot (or one of another format), no broker (tasks run eagerly: the first
    look), or a refresh was asked for `OVERDUE_INTERVALS` polls ago and never delivered
    (no worker, or Redis away): that reader claims the overdue request the same way, so one
    reader computes.
    """
    clock = timezone.now()
    snapshot = DashboardSnapshot.objects.filter(pk=project.pk).first()
    figures = Figures.from_json(snapshot.figures, snapshot.computed_at) if snapshot else None
    if snapshot is None or figures is None:
        return refresh_snapshot(project), False
    younger_than = ASKED_SECONDS if asked else REFRESH_SECONDS
    if _is_fresh(snapshot.computed_at, clock, younger_than):
        return figures, False
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return refresh_snapshot(project), False
    requested = snapshot.refresh_requested_at
    overdue = timedelta(seconds=OVERDUE_INTERVALS * REFRESH_SECONDS)
    if requested is not None and -overdue < clock - requested < overdue:
        return figures, True  # another reader asked: on its way
    claimed = DashboardSnapshot.objects.filter(
        pk=project.pk, computed_at=snapshot.computed_at, refresh_requested_at=requested
    ).update(refresh_requested_at=clock)
    if not claimed:  # another reader claimed it first, or a refresh stored newer figures
        return figures, True
    if requested is None:
        outbox.enqueue(REFRESH_TASK, [project.pk, younger_than])
        return figures, True
    return refresh_snapshot(project), False  # asked long ago, never delivered


def refresh_if_stale(project_id: int, younger_than: float = REFRESH_SECONDS) -> bool:
    """The refresh task's work: compute and store the project's snapshot unless it is fresh,
    i.e. younger than `younger_than` seconds (a duplicate delivery, or one that comes after a
    reader computed it), or the project is gone. True if it computed."""
    project = Project.objects.filter(pk=project_id).first()
    if project is None:
        return False
    computed_at = (
        DashboardSnapshot.objects.filter(pk=project_id)
        .values_list("computed_at", flat=True)
        .first()
    )
    if computed_at is not None and _is_fresh(computed_at, timezone.now(), younger_than):
        return False
    refresh_snapshot(project)
    return True


def dashboard(
    project: Project, now: datetime | None = None, *, fresh: bool = False, asked: bool = False
) -> Dashboard:
    """Everything the lead's dashboard shows, at `now` (default: the present): the project-wide
    figures from the snapshot (`snapshot_figures`, `asked` by the lead's "Refresh now"; with
    `fresh`, computed and stored now), composed with what is read on every render."""
    now = now or timezone.now()
    if fresh:
        figures, refreshing = refresh_snapshot(project), False
    else:
        figures, refreshing = snapshot_figures(project, asked=asked)
    annotators = annotator_rows(project, now, figures.label_groups)
    types = list(
        TaxonomyNode.objects.filter(
            version_id=project.taxonomy_version_id, level=TaxonomyNode.Level.TYPE
        ).order_by("code")
    )
    repositories, totals, codes = repository_rows(
        project, [t.code for t in types], figures.repository_groups
    )
    names = {t.code: t.name for t in types}
    voted = figures.disputed_by_type
    return Dashboard(
        project=project,
        annotators=annotators,
        repositories=repositories,
        totals=totals,
        final_columns=[(c, str(TYPE_HEADINGS.get(c) or names.get(c) or c)) for c in codes],
        types=[(t, voted.get(t.pk, 0)) for t in types],
        levels=disagreement_levels(project, figures.level_counts),
        charts=progress_charts(project, now, figures.label_groups, figures.finals_per_day),
        spark_max=max((max(r.daily) for r in annotators if r.daily), default=0),
        refresh_seconds=REFRESH_SECONDS,
        now=now,
        figures_at=figures.computed_at,
        refreshing=refreshing,
    )
