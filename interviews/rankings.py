"""Participants' rankings of the themes of one issue type, aggregated per group.

For a type with n themes, a ranking lists k ≤ n themes in order (k = 3 for a top three, k = n
for a full order). Aggregation, per theme over the group's participants who ranked this type:

* mean rank — a listed theme counts its position; an unlisted theme counts the mean of the
  positions left over, (k + 1 + n) / 2, as if the rest were tied (so top-three and full orders
  can be averaged together);
* Borda count — a theme at position r earns n - r points; an unlisted theme earns 0.

Beside them: how often the theme occurs among the project's final labels (current
`Resolution`s, false positives excluded), read under the project's current taxonomy version,
so a researcher sees where priorities and issue data disagree.
"""

from __future__ import annotations

import io
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import TypedDict

from django.db import transaction
from django.utils.translation import gettext, gettext_noop

from annotator.models import Project
from interviews.codebook import (
    cells_problem,
    check_lengths,
    experience_group,
    kind_cell,
    kind_problem,
    parse_kind,
    read_records,
)
from interviews.models import Participant, RankedTheme, Ranking
from labeling.models import Resolution
from lib import csvsafe
from taxonomy.lineage import Translator
from taxonomy.models import TaxonomyNode

GROUPS: dict[str, tuple[str, dict]] = {
    "all": (gettext_noop("all participants"), {}),
    "users": (gettext_noop("users"), {"kind": Participant.Kind.USER}),
    "developers": (gettext_noop("developers"), {"kind": Participant.Kind.DEVELOPER}),
    "beginners": (gettext_noop("beginners"), {"experience": Participant.Experience.BEGINNER}),
    "experienced": (
        gettext_noop("experienced"),
        {"experience": Participant.Experience.EXPERIENCED},
    ),
}


# How many leading themes count as "top" when priorities and label frequencies are compared.
TOP = 3


class RankingError(ValueError):
    pass


def record_ranking(participant: Participant, issue_type: TaxonomyNode, codes: list[str]) -> Ranking:
    """Store (replacing any earlier) a participant's order of `issue_type`'s themes."""
    if issue_type.level != TaxonomyNode.Level.TYPE:
        raise RankingError(
            "issue_type: " + gettext("%(code)s is not an issue type") % {"code": issue_type.code}
        )
    themes = {n.code: n for n in issue_type.children.all()}
    codes = [c.strip() for c in codes if c.strip()]
    if not codes:
        raise RankingError("themes: " + gettext("list at least one theme"))
    for c in codes:
        if c not in themes:
            raise RankingError(
                "themes: "
                + gettext("%(code)s is not a theme of %(type)s")
                % {"code": repr(c), "type": f"{issue_type.code} {issue_type.name}"}
            )
    duplicates = [c for c, n in Counter(codes).items() if n > 1]
    if duplicates:
        raise RankingError(
            "themes: " + gettext("%(code)s is listed twice") % {"code": duplicates[0]}
        )
    with transaction.atomic():
        Ranking.objects.filter(participant=participant, issue_type__code=issue_type.code).delete()
        ranking = Ranking.objects.create(participant=participant, issue_type=issue_type)
        RankedTheme.objects.bulk_create(
            RankedTheme(ranking=ranking, theme=themes[c], rank=i) for i, c in enumerate(codes, 1)
        )
    return ranking


@dataclass
class ThemeRow:
    theme: TaxonomyNode
    frequency: int = 0
    share: float = 0.0
    frequency_rank: int = 0
    # group key → {"mean_rank", "borda", "listed", "priority_rank"}
    groups: dict[str, dict] = field(default_factory=dict)


@dataclass
class TypeAggregate:
    issue_type: TaxonomyNode
    rows: list[ThemeRow]
    participants: dict[str, int]  # group key → participants who ranked this type
    total_labels: int

    @property
    def group_heads(self) -> list[tuple[str, str, int]]:
        """(key, label, participants) per group, in the order of the rows' group cells; the
        label in the reader's language."""
        return [(key, gettext(label), self.participants[key]) for key, (label, _) in GROUPS.items()]


def _competition_ranks(values: dict[int, float], *, descending: bool) -> dict[int, int]:
    """1, 2, 2, 4 … (ties share the better rank)."""
    ordered = sorted(values.values(), reverse=descending)
    return {key: ordered.index(v) + 1 for key, v in values.items()}


class ThemeTotals(TypedDict):
    mean_rank: float | None
    borda: int
    listed: int


def aggregate_rankings(rankings: list[list[int]], theme_ids: list[int]) -> dict[int, ThemeTotals]:
    """Mean rank and Borda points per theme from orders of theme ids (pure; see module doc)."""
    n = len(theme_ids)
    totals = {t: {"rank_sum": 0.0, "borda": 0, "listed": 0} for t in theme_ids}
    for order in rankings:
        k = len(order)
        tied = (k + 1 + n) / 2
        for t in theme_ids:
            if t in order:
                r = order.index(t) + 1
                totals[t]["rank_sum"] += r
                totals[t]["borda"] += n - r
                totals[t]["listed"] += 1
            else:
                totals[t]["rank_sum"] += tied
    count = len(rankings)
    return {
        t: {
            "mean_rank": (v["rank_sum"] / count) if count else None,
            "borda": int(v["borda"]),
            "listed": int(v["listed"]),
        }
        for t, v in totals.items()
    }


def aggregate(project: Project, issue_type: TaxonomyNode) -> TypeAggregate:
    """Every group's mean rank and Borda count for the themes of one type, with frequencies."""
    version = project.taxonomy_version
    translate = Translator(version)
    themes = list(issue_type.children.order_by("position"))
    theme_ids = [t.pk for t in themes]
    rows = {t.pk: ThemeRow(t) for t in themes}

    rankings = (
        Ranking.objects.filter(participant__project=project)
        .select_related("participant", "issue_type")
        .prefetch_related("items__theme")
    )
    orders: dict[int, tuple[Participant, list[int]]] = {}
    for ranking in rankings:
        if translate.node(ranking.issue_type) != issue_type:
            continue
        order = []
        for item in ranking.items.all():
            mapped = translate.node(item.theme)
            if mapped is not None and mapped.pk in rows and mapped.pk not in order:
                order.append(mapped.pk)
        orders[ranking.pk] = (ranking.participant, order)

    participants = {}
    for key, (_, filters) in GROUPS.items():
        group_orders = [
            order
            for participant, order in orders.values()
            if all(getattr(participant, f) == v for f, v in filters.items())
        ]
        participants[key] = len(group_orders)
        result = aggregate_rankings(group_orders, theme_ids)
        borda_rank = _competition_ranks({t: r["borda"] for t, r in result.items()}, descending=True)
        for t, r in result.items():
            rows[t].groups[key] = {**r, "priority_rank": borda_rank[t] if group_orders else None}

    counts: Counter[int] = Counter()
    resolutions = Resolution.objects.filter(
        project=project, is_current=True, is_false_positive=False
    ).select_related("issue_type", "theme", "sub_theme")
    for resolution in resolutions:
        label = translate.label(resolution)
        if label.theme is not None and label.theme.pk in rows:
            counts[label.theme.pk] += 1
    total = sum(counts.values())
    frequency_rank = _competition_ranks({t: counts[t] for t in theme_ids}, descending=True)
    for t, row in rows.items():
        row.frequency = counts[t]
        row.share = counts[t] / total if total else 0.0
        row.frequency_rank = frequency_rank[t]
        frequent = total > 0 and counts[t] > 0 and frequency_rank[t] <= TOP
        for cell in row.groups.values():
            # A top priority that is rare among labels, or a frequent theme nobody puts first.
            ranked = cell["priority_rank"] is not None
            top = ranked and cell["borda"] > 0 and cell["priority_rank"] <= TOP
            cell["disagrees"] = ranked and total > 0 and top != frequent
    return TypeAggregate(issue_type, [rows[t] for t in theme_ids], participants, total)


def aggregate_all(project: Project) -> list[TypeAggregate]:
    return [aggregate(project, t) for t in project.taxonomy_version.types().order_by("position")]


RANKING_COLUMNS = ["Participant", "Type", "Experience Level", "Issue Type", "Ranked Themes"]


class RankingFileError(RankingError):
    def __init__(self, line: int | None, column: str | None, message: str) -> None:
        where = ", ".join(
            p
            for p in (line and gettext("line %(line)s") % {"line": line}, column and repr(column))
            if p
        )
        super().__init__(f"{where}: {message}" if where else message)


def import_rankings_csv(project: Project, text: str) -> int:
    """Rankings as `Participant,Type,Experience Level,Issue Type,Ranked Themes` rows.

    Ranked themes are codes, highest priority first, separated by `>` (or `;`, `,`). A new
    participant is created from Type and Experience Level. One transaction: a bad row stores
    nothing and the error names its line and column.
    """
    records = read_records(text, RankingFileError)
    header = [h.strip() for h in next(records, (1, []))[1]]
    missing = [c for c in RANKING_COLUMNS if c not in header]
    if missing:
        raise RankingFileError(1, missing[0], gettext("missing column"))
    col = {name: header.index(name) for name in RANKING_COLUMNS}
    types = {t.code: t for t in project.taxonomy_version.types()}
    count = 0
    with transaction.atomic():
        for line, cells in records:
            if not any(c.strip() for c in cells):
                continue
            if len(cells) < len(header):
                raise RankingFileError(line, None, cells_problem(len(header), len(cells)))
            values = {c: cells[col[c]].strip() for c in RANKING_COLUMNS}
            check_lengths(line, values, RankingFileError)
            code, kind_text, experience, type_code, ranked = values.values()
            participant = Participant.objects.filter(project=project, code=code).first()
            if participant is None:
                kind = parse_kind(kind_text)
                if not code or kind is None:
                    raise RankingFileError(line, "Type", kind_problem(kind_text))
                participant = Participant.objects.create(
                    project=project,
                    code=code,
                    kind=kind,
                    experience_text=experience,
                    experience=experience_group(experience),
                )
            if type_code not in types:
                raise RankingFileError(
                    line,
                    "Issue Type",
                    gettext("no issue type %(code)s") % {"code": repr(type_code)},
                )
            try:
                record_ranking(participant, types[type_code], re.split(r"[>;,]", ranked))
            except RankingError as exc:
                raise RankingFileError(line, "Ranked Themes", str(exc).split(": ", 1)[-1]) from None
            count += 1
    return count


def export_rankings_csv(project: Project) -> str:
    """The rankings as CSV; every cell spreadsheet-safe (`lib.csvsafe`)."""
    out = io.StringIO()
    writer = csvsafe.writer(out)
    writer.writerow(RANKING_COLUMNS)
    rankings = (
        Ranking.objects.filter(participant__project=project)
        .select_related("participant", "issue_type")
        .prefetch_related("items__theme")
        .order_by("participant__code", "issue_type__code")
    )
    for r in rankings:
        p = r.participant
        writer.writerow(
            [
                p.code,
                kind_cell(p.kind),
                p.experience_text,
                r.issue_type.code,
                " > ".join(item.theme.code for item in r.items.all()),
            ]
        )
    return out.getvalue()
