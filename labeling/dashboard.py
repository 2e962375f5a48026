"""The lead's dashboard of a project: who labels how much, where the issues stand, progress.

Three parts, each from a handful of aggregate queries (GROUP BY in the database, never a loop
over issues or annotations in Python), so the page costs the same for six issues and for the
study's 38,742 issues with 271,194 annotations (`bench/dashboard_bench.py`):

* per annotator (every member who labels): labels given (current labels, pilot apart), pace
  over the last 14 days, labels per day over the last 30 days (a sparkline), agreement with
  the final labels of their final issues (theme and type level), open reservations and the
  last time they did something;
* per repository: issues final by the type of their final label (and false positives), in the
  disagreement queue, open and in progress (some labels, fewer than K), with a totals row;
* per day since the first label: cumulative labels and cumulative final issues.

A label is counted on the day of its first revision (a revision is a change, not a new label),
so the cumulative labels end at the number of current labels. Days are in the site's time zone.
Leads only (`LEAD_ROLES`): the page names who chose what share of the final labels.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from django.db.models import Count, Max, Q
from django.db.models.functions import TruncDate
from django.utils import timezone

from annotator.models import Membership, Project
from ingest.models import Repository
from labeling.models import (
    DISAGREEMENT_LEVEL_NAMES,
    Annotation,
    ProjectIssue,
    Reservation,
    Resolution,
)
from labeling.permissions import LABELER_ROLES
from lib import sql
from taxonomy.models import TaxonomyNode

PACE_DAYS = 14
SPARK_DAYS = 30
# How often the page asks for fresh figures (htmx polling), in seconds.
REFRESH_SECONDS = 30

# Sparkline and chart geometry (SVG user units; CSS scales the drawing).
SPARK_WIDTH, SPARK_HEIGHT = 120, 28
CHART_WIDTH, CHART_HEIGHT = 560, 220
CHART_LEFT, CHART_RIGHT, CHART_TOP, CHART_BOTTOM = 64, 12, 12, 36


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
    compared: int = 0  # current labels on final issues
    matched_theme: int = 0
    matched_type: int = 0
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
    def theme_share(self) -> int | None:
        """Percent of their labels on final issues whose theme (or FP) is the final's."""
        return _percent(self.matched_theme, self.compared)

    @property
    def type_share(self) -> int | None:
        return _percent(self.matched_type, self.compared)


@dataclass
class RepositoryRow:
    """Where one repository's issues stand (the totals row has no repository id)."""

    repository_id: int | None
    name: str
    total: int = 0
    final_by_type: dict[str, int] = field(default_factory=dict)  # type code or "FP" -> issues
    final: int = 0
    disagreement: int = 0
    open: int = 0
    in_progress: int = 0  # open, with at least one label and fewer than K
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
    width: int = CHART_WIDTH
    height: int = CHART_HEIGHT
    left: int = CHART_LEFT
    right: int = CHART_WIDTH - CHART_RIGHT
    top: int = CHART_TOP
    bottom: int = CHART_HEIGHT - CHART_BOTTOM


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


def _percent(part: int, whole: int) -> int | None:
    return round(100 * part / whole) if whole else None


def _today(now: datetime) -> date:
    return timezone.localtime(now).date()


def _day_start(day: date) -> datetime:
    """The first instant of `day` in the site's time zone (what TruncDate groups by)."""
    return timezone.make_aware(datetime.combine(day, datetime.min.time()))


# Each annotator's current labels on final issues, and how many of them the final label
# shares: the theme level counts a false positive as matching a false positive, else type and
# theme equal (a final without a theme matches a label without one); the type level likewise.
_AGREEMENT_SQL = """
SELECT a.annotator_id, count(*),
  sum(CASE WHEN a.is_false_positive = r.is_false_positive AND (r.is_false_positive OR (
        (a.issue_type_id = r.issue_type_id OR (a.issue_type_id IS NULL AND r.issue_type_id IS NULL))
        AND (a.theme_id = r.theme_id OR (a.theme_id IS NULL AND r.theme_id IS NULL))))
      THEN 1 ELSE 0 END),
  sum(CASE WHEN a.is_false_positive = r.is_false_positive AND (r.is_false_positive OR
        a.issue_type_id = r.issue_type_id OR (a.issue_type_id IS NULL AND r.issue_type_id IS NULL))
      THEN 1 ELSE 0 END)
FROM annotator_annotation a
JOIN annotator_projectissue pi
  ON pi.project_id = a.project_id AND pi.issue_id = a.issue_id AND pi.status = 'final'
JOIN annotator_resolution r
  ON r.project_id = a.project_id AND r.issue_id = a.issue_id AND r.is_current
WHERE a.project_id = %(project)s AND a.is_current
GROUP BY a.annotator_id
"""


def annotator_rows(project: Project, now: datetime | None = None) -> list[AnnotatorRow]:
    """Every member who labels (annotators, leads, admins), by pseudonym, with their figures.

    Five grouped queries: members; label counts and last label; labels per day over the last
    SPARK_DAYS days; agreement with the finals; reservations.
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
    mine = Annotation.objects.filter(project=project, annotator_id__in=list(rows))
    counts = mine.values("annotator_id").annotate(
        labels=Count("id", filter=Q(is_current=True, is_pilot=False)),
        pilot=Count("id", filter=Q(is_current=True, is_pilot=True)),
        recent=Count("id", filter=Q(revision=1, created_at__gte=_day_start(pace_from))),
        last=Max("created_at"),
    )
    for c in counts:
        row = rows[c["annotator_id"]]
        row.labels, row.pilot_labels, row.recent = c["labels"], c["pilot"], c["recent"]
        row.last_active = c["last"]
    per_day: dict[int, dict[date, int]] = defaultdict(dict)
    for d in (
        mine.filter(revision=1, created_at__gte=_day_start(spark_from))
        .annotate(day=TruncDate("created_at"))
        .values("annotator_id", "day")
        .annotate(n=Count("id"))
    ):
        per_day[d["annotator_id"]][d["day"]] = d["n"]
    days = [spark_from + timedelta(days=i) for i in range(SPARK_DAYS)]
    for user_id, row in rows.items():
        row.daily = [per_day[user_id].get(day, 0) for day in days]
    for user_id, compared, theme, type_ in sql.rows(_AGREEMENT_SQL, {"project": project.pk}):
        if user_id in rows:
            row = rows[user_id]
            row.compared, row.matched_theme, row.matched_type = compared, theme or 0, type_ or 0
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


def repository_rows(
    project: Project, type_codes: list[str] | None = None
) -> tuple[list[RepositoryRow], RepositoryRow, list[str]]:
    """Per repository: issues by status (final ones by their final label's type), in progress;
    the totals row; the columns of final types: `type_codes` (the pinned taxonomy's), any
    other type a final label has (from another taxonomy version), then "FP"."""
    k = project.annotations_per_issue
    by_repo: dict[int, RepositoryRow] = {}

    def repo_row(repository_id: int) -> RepositoryRow:
        return by_repo.setdefault(repository_id, RepositoryRow(repository_id, ""))

    for c in (
        ProjectIssue.objects.filter(project=project)
        .values("issue__repository_id", "status")
        .annotate(
            n=Count("id"),
            started=Count("id", filter=Q(annotation_count__gt=0, annotation_count__lt=k)),
        )
    ):
        row = repo_row(c["issue__repository_id"])
        row.total += c["n"]
        if c["status"] == ProjectIssue.Status.FINAL:
            row.final += c["n"]
        elif c["status"] == ProjectIssue.Status.DISAGREEMENT:
            row.disagreement += c["n"]
        else:
            row.open += c["n"]
            row.in_progress += c["started"]
    finals = list(
        Resolution.objects.filter(
            project=project,
            is_current=True,
            issue__project_issues__project=project,
            issue__project_issues__status=ProjectIssue.Status.FINAL,
        )
        .values("issue__repository_id", "is_false_positive", "issue_type_id")
        .annotate(n=Count("id"))
    )
    code_of = dict(
        TaxonomyNode.objects.filter(
            pk__in={f["issue_type_id"] for f in finals if f["issue_type_id"]}
        ).values_list("pk", "code")
    )
    for f in finals:
        code = "FP" if f["is_false_positive"] else code_of.get(f["issue_type_id"], "?")
        row = repo_row(f["issue__repository_id"])
        row.final_by_type[code] = row.final_by_type.get(code, 0) + f["n"]
    names = {r.pk: r.full_name for r in Repository.objects.filter(pk__in=list(by_repo))}
    rows = sorted(by_repo.values(), key=lambda r: names.get(r.repository_id or 0, "").lower())
    totals = RepositoryRow(None, "Total")
    for row in rows:
        row.name = names.get(row.repository_id or 0, "")
        totals.add(row)
    codes = list(type_codes or [])
    codes += sorted(c for c in totals.final_by_type if c not in codes and c != "FP")
    codes.append("FP")
    for row in [*rows, totals]:
        row.final_cells = [row.final_by_type.get(c, 0) for c in codes]
    return rows, totals, codes


def disagreement_levels(project: Project) -> list[tuple[str, str, int]]:
    """Disputed issues by the level where their labels first differ (then reopened ones)."""
    counts = {
        c["disagreement_level"]: c["n"]
        for c in ProjectIssue.objects.filter(
            project=project, status=ProjectIssue.Status.DISAGREEMENT
        )
        .values("disagreement_level")
        .annotate(n=Count("id"))
    }
    names = DISAGREEMENT_LEVEL_NAMES
    levels = [(level, name, counts.get(level, 0)) for level, name in names.items()]
    if counts.get(""):
        levels.append(("", "reopened by a lead", counts[""]))
    return levels


def disputed_by_type(project: Project) -> dict[int, int]:
    """Disputed issues per type some annotator chose (the queue's "type voted" filter)."""
    return {
        c["issue_type_id"]: c["n"]
        for c in Annotation.objects.filter(
            project=project,
            is_current=True,
            issue_type__isnull=False,
            issue__project_issues__project=project,
            issue__project_issues__status=ProjectIssue.Status.DISAGREEMENT,
        )
        .values("issue_type_id")
        .annotate(n=Count("issue_id", distinct=True))
    }


def progress_series(project: Project, now: datetime | None = None) -> list[tuple[date, int, int]]:
    """(day, labels given so far, issues final so far) for every day from the first label or
    final label to today; a label counts on the day of its first revision."""
    now = now or timezone.now()
    labels = dict(
        Annotation.objects.filter(project=project, revision=1)
        .annotate(day=TruncDate("created_at"))
        .values("day")
        .annotate(n=Count("id"))
        .values_list("day", "n")
    )
    finals = dict(
        Resolution.objects.filter(
            project=project,
            is_current=True,
            issue__project_issues__project=project,
            issue__project_issues__status=ProjectIssue.Status.FINAL,
        )
        .annotate(day=TruncDate("decided_at"))
        .values("day")
        .annotate(n=Count("id"))
        .values_list("day", "n")
    )
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


def _nice_top(value: int) -> int:
    """A round number at or above `value` topping a y axis (1, 2 or 5 times a power of 10)."""
    if value <= 0:
        return 1
    magnitude = 1
    while magnitude * 10 <= value:
        magnitude *= 10
    for step in (1, 2, 5, 10):
        if step * magnitude >= value:
            return step * magnitude
    return 10 * magnitude


def line_chart(title: str, days: list[date], values: list[int]) -> Chart:
    """An SVG line chart of a cumulative series: the polyline's points and the axes' ticks."""
    left, right = CHART_LEFT, CHART_WIDTH - CHART_RIGHT
    top, bottom = CHART_TOP, CHART_HEIGHT - CHART_BOTTOM
    y_max = _nice_top(max(values, default=0))
    span = max(len(days) - 1, 1)

    def x(i: int) -> float:
        return left + (right - left) * i / span

    def y(v: float) -> float:
        return bottom - (bottom - top) * v / y_max

    points = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(values))
    if len(values) == 1:  # one day: a flat segment, so the line shows
        points += f" {right:.1f},{y(values[0]):.1f}"
    # Positions as text: the template must not localise a coordinate's decimal point.
    y_ticks = [(f"{y(y_max * f):.1f}", f"{round(y_max * f):,}") for f in (0, 0.5, 1)]
    x_ticks: list[tuple[str, str, str]] = []
    if days:
        picks = sorted({0, len(days) // 2, len(days) - 1})
        anchors = {0: "start", len(days) - 1: "end"}
        x_ticks = [
            (f"{x(i):.1f}", days[i].isoformat(), anchors.get(i, "middle"))
            for i in (picks if len(days) > 1 else [0])
        ]
    return Chart(title, points, values[-1] if values else 0, y_ticks, x_ticks)


def progress_charts(project: Project, now: datetime | None = None) -> list[Chart]:
    series = progress_series(project, now)
    days = [d for d, _, _ in series]
    return [
        line_chart("Labels given (cumulative)", days, [n for _, n, _ in series]),
        line_chart("Final issues (cumulative)", days, [n for _, _, n in series]),
    ]


TYPE_HEADINGS = {"FP": "not LLM-related"}


def dashboard(project: Project, now: datetime | None = None) -> Dashboard:
    """Everything the lead's dashboard shows, at `now` (default: the present)."""
    now = now or timezone.now()
    annotators = annotator_rows(project, now)
    types = list(
        TaxonomyNode.objects.filter(
            version_id=project.taxonomy_version_id, level=TaxonomyNode.Level.TYPE
        ).order_by("code")
    )
    repositories, totals, codes = repository_rows(project, [t.code for t in types])
    names = {t.code: t.name for t in types}
    voted = disputed_by_type(project)
    return Dashboard(
        project=project,
        annotators=annotators,
        repositories=repositories,
        totals=totals,
        final_columns=[(c, TYPE_HEADINGS.get(c) or names.get(c) or c) for c in codes],
        types=[(t, voted.get(t.pk, 0)) for t in types],
        levels=disagreement_levels(project),
        charts=progress_charts(project, now),
        spark_max=max((max(r.daily) for r in annotators if r.daily), default=0),
        refresh_seconds=REFRESH_SECONDS,
        now=now,
    )
