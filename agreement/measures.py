"""Inter-annotator agreement of a project, computed as the study did and explained beside it.

Fleiss' kappa follows the study's kappa script: issues are grouped by the type of their final
label, each issue's current annotations are counted per category (items x categories table) and
statsmodels' `fleiss_kappa` is applied to the table — per type and over all issues, at type,
theme and sub-theme level. Fleiss needs the same number of ratings on every issue, so issues
with another count are left out (and the report says how many and why); Krippendorff's alpha
(nominal), which handles missing ratings, is reported beside it on every rated issue.

Per annotator: Cohen's kappa with each other annotator on the issues both labeled, agreement
with the final label, and the pairs of themes annotators confuse most. A false positive counts
as its own category "FP" at every level.

Honesty about what a figure can say: within a group of issues chosen by their final label, the
agreement at that label's own level is degenerate (every issue of a type group has that final
type, every false positive is FP at every level), so it is left out with the reason instead of
being read as "poor"; and a figure computed on fewer than MIN_ISSUES issues (or pairs sharing
fewer) is flagged as too few to read.

`agreement_report()` is what the page, the API, the CSV export and the command call; it is
cached under a key that changes whenever an annotation or a final label changes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from itertools import chain
from typing import TYPE_CHECKING, Any

from django.core.cache import cache
from django.db.models import Count, Max, QuerySet
from django.db.models.functions import Coalesce
from django.utils import timezone
from django.utils.translation import gettext_noop

from annotator.models import Project
from annotator.pseudonyms import names_of, natural_order
from labeling.labels import NODE_FIELDS
from labeling.models import Annotation, Resolution
from taxonomy.lineage import Translator
from taxonomy.models import TaxonomyNode, TaxonomyVersion

# numpy, krippendorff and statsmodels (which pulls in SciPy and pandas) cost ~1.5 s to import.
# The URL conf imports this module through the agreement views, so at module level every
# management command and Celery worker would pay for them: they are imported in the functions
# that compute (a second import is a dictionary look-up). config.wsgi imports them at a web
# worker's boot instead.
if TYPE_CHECKING:
    import numpy as np

LEVELS = ("type", "theme", "sub_theme")
# The report's words are English in its data (the API, the CSV export, the release's datasheet
# and the command read them); each is marked with gettext_noop so that the page can say it in
# the reader's language by passing `gettext` as `translate` to the functions that word it.
LEVEL_NAMES = {
    "type": gettext_noop("type"),
    "theme": gettext_noop("theme"),
    "sub_theme": gettext_noop("sub-theme"),
}
FP = "FP"
ALL = "all"
ALL_ISSUES = gettext_noop("All issues")
FALSE_POSITIVE = gettext_noop("false positive")
CACHE_SECONDS = 24 * 3600
CACHE_VERSION = 3
LABEL_CHUNK = 20_000  # label rows fetched at a time (a server-side cursor on PostgreSQL)
# Below this many issues a kappa's sampling error is too large to read it on Landis & Koch's
# scale (a common rule of thumb for reporting kappa; the study's smallest group had 123).
MIN_ISSUES = 30
NOT_MEANINGFUL = gettext_noop("not meaningful")
NOT_AVAILABLE = gettext_noop("n/a")
NO_LABELS = gettext_noop("no labels at this level")
TOO_FEW = gettext_noop("too few issues to read (%(issues)s < %(min)s)")

# Landis & Koch (1977): the reading scale the study and most papers use for kappa.
LANDIS_KOCH = [
    (0.0, gettext_noop("poor")),
    (0.20, gettext_noop("slight")),
    (0.40, gettext_noop("fair")),
    (0.60, gettext_noop("moderate")),
    (0.80, gettext_noop("substantial")),
    (1.0001, gettext_noop("almost perfect")),
]

Translate = Callable[[str], str]


def english(message: str) -> str:
    """The data's wording: the message as written (`gettext` in its place translates it)."""
    return message


def reading(value: float | None, translate: Translate = english) -> str:
    """Landis & Koch's word for a kappa value."""
    if value is None:
        return translate(NOT_AVAILABLE)
    if value < 0:
        return translate("poor")
    for upper, word in LANDIS_KOCH[1:]:
        if value <= upper:
            return translate(word)
    return translate("almost perfect")


# --- Pure measures on plain arrays; tested against hand-computed cases. ---


def fleiss(table: np.ndarray) -> float | None:
    """statsmodels' Fleiss' kappa, or None when undefined (one category only, < 2 raters)."""
    import numpy as np
    from statsmodels.stats.inter_rater import fleiss_kappa

    if table.shape[0] == 0 or table.sum(axis=1).min() < 2:
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        value = float(fleiss_kappa(table, method="fleiss"))
    return None if np.isnan(value) else value


def observed_agreement(table: np.ndarray) -> float | None:
    """Mean share of agreeing rater pairs per item (Fleiss' P-bar)."""
    import numpy as np

    n = table.sum(axis=1)
    keep = n >= 2
    if not keep.any():
        return None
    t, n = table[keep], n[keep]
    return float(((np.square(t).sum(axis=1) - n) / (n * (n - 1))).mean())


def kripp_alpha(data: np.ndarray) -> float | None:
    """Krippendorff's alpha (nominal) on a raters x items matrix, NaN for a missing rating."""
    import krippendorff
    import numpy as np

    if data.size == 0 or np.sum(~np.isnan(data).all(axis=0)) == 0:
        return None
    try:
        with np.errstate(divide="ignore", invalid="ignore"):
            value = float(krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"))
    except ValueError:  # a single value in the whole domain: alpha is undefined
        return None
    return None if np.isnan(value) else value


# Above this many cells (units x values x values) the krippendorff package's coincidence
# step (a dense N x V x V array, several copies) costs hundreds of MB on a full study.
PACKAGE_CELLS_LIMIT = 2_000_000


def kripp_alpha_from_counts(table: np.ndarray) -> float | None:
    """Krippendorff's alpha (nominal) from an items x categories count table.

    Equivalent to the raters x items form: nominal alpha depends only on the counts per item.
    Small tables go to the krippendorff package; large ones use the same formula in O(N x V)
    (`nominal_alpha_counts`, tested equal to the package).
    """
    import krippendorff
    import numpy as np

    table = table[table.sum(axis=1) >= 2]
    table = table[:, table.sum(axis=0) > 0]
    if table.shape[0] == 0 or table.shape[1] < 2:
        return None
    if table.shape[0] * table.shape[1] ** 2 > PACKAGE_CELLS_LIMIT:
        return nominal_alpha_counts(table)
    try:
        with np.errstate(divide="ignore", invalid="ignore"):
            value = float(krippendorff.alpha(value_counts=table, level_of_measurement="nominal"))
    except ValueError:
        return None
    return None if np.isnan(value) else value


def nominal_alpha_counts(table: np.ndarray) -> float | None:
    """Nominal alpha = 1 - (n - 1) * sum_{c!=k} o_ck / sum_{c!=k} n_c n_k (Krippendorff 2011).

    o_cc = sum_u n_uc (n_uc - 1) / (m_u - 1) over pairable units (m_u >= 2 ratings), n_c is
    the number of pairable values c, n their total; no N x V x V array is built.
    """
    import numpy as np

    table = table[table.sum(axis=1) >= 2].astype(np.float64)
    m = table.sum(axis=1)
    n_c = table.sum(axis=0)
    n = n_c.sum()
    if n <= 1:
        return None
    agree = (table * (table - 1) / (m - 1)[:, None]).sum()  # sum_c o_cc
    expected = n * n - np.square(n_c).sum()  # sum_{c!=k} n_c n_k
    if expected == 0:
        return None
    return float(1 - (n - 1) * (n - agree) / expected)


def cohen(a: np.ndarray, b: np.ndarray, categories: int) -> float | None:
    """Cohen's kappa of two raters' category indices on the same items."""
    import numpy as np

    n = len(a)
    if n == 0:
        return None
    matrix = np.bincount(a * categories + b, minlength=categories * categories).reshape(
        categories, categories
    )
    po = np.trace(matrix) / n
    pe = float((matrix.sum(axis=1) * matrix.sum(axis=0)).sum()) / (n * n)
    if pe >= 1:
        return None
    return float((po - pe) / (1 - pe))


# --- Loading a project's labels. ---


@dataclass
class Labels:
    """A project's current annotations as parallel arrays, one entry per annotation."""

    issue: np.ndarray  # index into issue_ids
    rater: np.ndarray  # index into raters
    cats: dict[str, np.ndarray]  # per level: index into categories[level], -1 when missing
    categories: dict[str, list[str]]
    issue_ids: list[int]
    raters: list[int]  # user ids
    final: dict[str, np.ndarray]  # per level: final category index per issue, -1 when none
    final_type: list[str | None]  # per issue: type code of the final label, FP, or None


def _codes(
    version: TaxonomyVersion,
) -> tuple[dict[int, str], dict[str, list[str]], dict[str, str]]:
    nodes = list(
        TaxonomyNode.objects.filter(version=version).values_list(
            "pk", "parent_id", "position", "code", "level", "name"
        )
    )
    by_pk = {n[0]: n for n in nodes}

    def tree_key(pk: int) -> tuple:
        # Positions along the path from the type: A.1 < A.2 < B.1, whatever the row order.
        _, parent, position, *_ = by_pk[pk]
        return (*tree_key(parent), position) if parent in by_pk else (position,)

    nodes.sort(key=lambda n: tree_key(n[0]))
    code_of = {pk: code for pk, _, _, code, _, _ in nodes}
    names = {code: name for _, _, _, code, _, name in nodes}
    per_level: dict[str, list[str]] = {level: [] for level in LEVELS}
    for _, _, _, code, depth, _ in nodes:
        per_level[LEVELS[depth - 1]].append(code)
    for level in LEVELS:
        per_level[level].append(FP)
    names[FP] = FALSE_POSITIVE
    return code_of, per_level, names


def _label_rows(queryset: QuerySet[Annotation] | QuerySet[Resolution], *first: str) -> np.ndarray:
    """Rows of (first..., is_false_positive, type, theme, sub-theme ids; 0 for none) as ints."""
    import numpy as np

    nodes = {f"_{name}": Coalesce(name, 0) for name in NODE_FIELDS}
    rows = queryset.order_by().annotate(**nodes).values_list(*first, "is_false_positive", *nodes)
    # Streamed into the array a chunk at a time: a list of every row as tuples first took
    # ~500 MB beside the array at ten times the study (2.7 million labels, issue #30).
    cells = chain.from_iterable(rows.iterator(chunk_size=LABEL_CHUNK))
    return np.fromiter(cells, dtype=np.int64).reshape(-1, len(first) + 4)


def load_labels(
    project: Project, version: TaxonomyVersion | None = None, pilot: bool = True
) -> tuple[Labels, dict[str, str]]:
    """Vectorised: a full study's 270,000 annotations load in well under a second.

    Labels are read under `version` (default: the project's pinned one) through the lineage
    (`taxonomy.lineage.Translator`, as the exports read them): a theme moved to another type
    counts under that type, a merged theme as its target. A project holds few distinct labels,
    so each distinct one is read once and the arrays are indexed by it. `pilot=False` leaves
    out the pilot's annotations (the label audit's choice; the report keeps them).
    """
    import numpy as np

    version = version or project.taxonomy_version
    _, categories, names = _codes(version)
    current = Annotation.objects.filter(project=project, is_current=True)
    if not pilot:
        current = current.filter(is_pilot=False)
    ann = _label_rows(current, "issue_id", "annotator_id")
    fin = _label_rows(Resolution.objects.filter(project=project, is_current=True), "issue_id")
    distinct, inverse = np.unique(
        np.concatenate([ann[:, 2:6], fin[:, 1:5]]).reshape(-1, 4), axis=0, return_inverse=True
    )
    inverse = inverse.reshape(-1)
    translator = Translator(version)
    translator.load(distinct[:, 1:].ravel().tolist())
    index = {level: {code: i for i, code in enumerate(categories[level])} for level in LEVELS}
    # Per distinct label: its category index at each level (-1: no node there), its type.
    per_label = {level: np.full(len(distinct), -1, dtype=np.int64) for level in LEVELS}
    label_type: list[str | None] = []
    for k, (fp, *ids) in enumerate(distinct.tolist()):
        label = translator.label_from_ids(bool(fp), *(pk or None for pk in ids))
        nodes = (label.issue_type, label.theme, label.sub_theme)
        for level, node in zip(LEVELS, nodes, strict=True):
            if fp:
                per_label[level][k] = len(categories[level]) - 1  # FP: the last category
            elif node is not None:
                per_label[level][k] = index[level].get(node.code, -1)
        label_type.append(FP if fp else (nodes[0].code if nodes[0] is not None else None))
    ann_label, fin_label = inverse[: len(ann)], inverse[len(ann) :]

    issue_ids = np.union1d(ann[:, 0], fin[:, 0])
    raters = np.unique(ann[:, 1])
    final = {level: np.full(len(issue_ids), -1, dtype=np.int64) for level in LEVELS}
    final_pos = np.searchsorted(issue_ids, fin[:, 0])
    for level in LEVELS:
        final[level][final_pos] = per_label[level][fin_label]
    final_type: list[str | None] = [None] * len(issue_ids)
    for pos, k in zip(final_pos.tolist(), fin_label.tolist(), strict=True):
        final_type[pos] = label_type[k]
    labels = Labels(
        issue=np.searchsorted(issue_ids, ann[:, 0]),
        rater=np.searchsorted(raters, ann[:, 1]),
        cats={level: per_label[level][ann_label] for level in LEVELS},
        categories=categories,
        issue_ids=issue_ids.tolist(),
        raters=raters.tolist(),
        final=final,
        final_type=final_type,
    )
    return labels, names


# --- The report. ---


def count_table(labels: Labels, level: str, issues: np.ndarray | None = None) -> np.ndarray:
    """Items x categories counts of current annotations at a level (all issues, or a subset)."""
    import numpy as np

    cats = labels.cats[level]
    keep = cats >= 0
    table = np.zeros((len(labels.issue_ids), len(labels.categories[level])), dtype=np.int64)
    np.add.at(table, (labels.issue[keep], cats[keep]), 1)
    return table if issues is None else table[issues]


def too_few_reading(issues: int, translate: Translate = english) -> str:
    return translate(TOO_FEW) % {"issues": issues, "min": MIN_ISSUES}


def excluded_reasons(without: int, other: int, raters: int, translate: Translate = english) -> str:
    """Why issues were left out of Fleiss: `without` labels at the level, `other` with a number
    of ratings other than the usual `raters`."""
    reasons = []
    if without:
        reasons.append(translate(gettext_noop("%(count)s without labels at this level")))
    if other:
        reasons.append(
            translate(
                gettext_noop(
                    "%(other)s with a number of ratings other than %(raters)s "
                    "(Fleiss needs the same number on every issue)"
                )
            )
        )
    values = {"count": without, "other": other, "raters": raters}
    return "; ".join(reason % values for reason in reasons)


def reading_of(stats: dict, translate: Translate = english) -> str:
    """The reading of one level's figures (`_level_stats`), worded by `translate`."""
    if stats["raters"] == 0:
        return translate(NOT_AVAILABLE)
    if stats["degenerate"]:
        return translate(NOT_MEANINGFUL)
    if stats["too_few"]:
        return too_few_reading(stats["issues"], translate)
    return reading(stats["kappa"], translate)


def excluded_reason_of(stats: dict, translate: Translate = english) -> str:
    """Why `stats`'s excluded issues were left out, worded by `translate`."""
    if stats["raters"] == 0:
        return translate(NO_LABELS)
    return excluded_reasons(
        stats.get("without_labels", 0), stats.get("other_ratings", 0), stats["raters"], translate
    )


def _level_stats(table: np.ndarray, degenerate: str = "") -> dict:
    """Fleiss, Krippendorff and observed agreement of one items x categories table.

    `degenerate`: why chance-corrected agreement means nothing here (the group was chosen by
    its final label at this level); kappa and alpha are then left out with that reason as the
    note, and the observed agreement kept.
    """
    counts = table.sum(axis=1)
    rated = counts[counts > 0]
    if rated.size == 0:
        return {
            "kappa": None,
            "alpha": None,
            "observed": None,
            "issues": 0,
            "raters": 0,
            "excluded": int(table.shape[0]),
            "excluded_reason": NO_LABELS,
            "without_labels": int(table.shape[0]),
            "other_ratings": 0,
            "reading": NOT_AVAILABLE,
            "degenerate": bool(degenerate),
            "too_few": False,
            "note": degenerate,
        }
    raters = Counter(rated.tolist()).most_common(1)[0][0]
    same = counts == raters
    excluded = int(table.shape[0] - same.sum())
    without = int((counts == 0).sum())
    other = int(((counts > 0) & ~same).sum())
    issues = int(same.sum())
    observed = observed_agreement(table[same])
    if degenerate:
        kappa = alpha = None
        word = NOT_MEANINGFUL
    else:
        kappa = fleiss(table[same]) if raters >= 2 else None
        alpha = kripp_alpha_from_counts(table)
        word = reading(kappa)
    too_few = kappa is not None and issues < MIN_ISSUES
    if too_few:
        word = too_few_reading(issues)
    return {
        "kappa": kappa,
        "alpha": alpha,
        "observed": observed,
        "issues": issues,
        "raters": int(raters),
        "excluded": excluded,
        "excluded_reason": excluded_reasons(without, other, int(raters)),
        "without_labels": without,
        "other_ratings": other,
        "reading": word,
        "degenerate": bool(degenerate),
        "too_few": too_few,
        "note": degenerate,
    }


def degenerate_reason(code: str, name: str, level: str, translate: Translate = english) -> str:
    """Why agreement at `level` within the group of final label `code` is degenerate, or ""."""
    if code == ALL:
        return ""
    if code == FP:
        return translate(
            gettext_noop(
                "every issue in this group is a false positive at every level, so "
                "chance-corrected agreement within it is degenerate; read the All issues rows"
            )
        )
    if level == "type":
        return translate(
            gettext_noop(
                "every issue in this group has the final type %(name)s (%(code)s), so "
                "type-level chance-corrected agreement within it is degenerate; read All "
                "issues, type level"
            )
        ) % {"name": name, "code": code}
    return ""


def compute(project: Project, version: TaxonomyVersion | None = None) -> dict:
    """The whole agreement report of a project as JSON-ready data (uncached)."""
    import numpy as np

    version = version or project.taxonomy_version
    labels, names = load_labels(project, version)
    pseudonym = names_of(project, labels.raters)
    tables = {level: count_table(labels, level) for level in LEVELS}

    # Groups: each type of final label (in taxonomy order), false positives, then all issues.
    final_type = np.array([t or "" for t in labels.final_type], dtype=object)
    groups: list[dict[str, Any]] = []
    for code in [*labels.categories["type"][:-1], FP, ALL]:
        members = (
            np.arange(len(labels.issue_ids)) if code == ALL else np.flatnonzero(final_type == code)
        )
        if code == FP and members.size == 0:
            continue
        groups.append(
            {
                "code": code,
                "name": ALL_ISSUES if code == ALL else names.get(code, code),
                "issues": int(members.size),
                "levels": {
                    level: _level_stats(
                        tables[level][members],
                        degenerate_reason(code, names.get(code, code), level),
                    )
                    for level in LEVELS
                },
            }
        )

    # Per annotator and pair, at theme level (the study's unit of labeling).
    theme = labels.categories["theme"]
    dense = np.full((len(labels.raters), len(labels.issue_ids)), -1, dtype=np.int64)
    cats = labels.cats["theme"]
    keep = cats >= 0
    dense[labels.rater[keep], labels.issue[keep]] = cats[keep]
    final_theme = labels.final["theme"]
    pairs = []
    cohen_of: dict[tuple[int, int], float | None] = {}
    shared_of: dict[tuple[int, int], int] = {}
    for i in range(len(labels.raters)):
        for j in range(i + 1, len(labels.raters)):
            both = (dense[i] >= 0) & (dense[j] >= 0)
            value = cohen(dense[i][both], dense[j][both], len(theme))
            cohen_of[(i, j)] = cohen_of[(j, i)] = value
            shared = int(both.sum())
            shared_of[(i, j)] = shared_of[(j, i)] = shared
            pairs.append(
                {
                    "a": pseudonym[i],
                    "b": pseudonym[j],
                    "shared": shared,
                    "kappa": value,
                    "too_few": value is not None and shared < MIN_ISSUES,
                }
            )
    annotators: list[dict[str, Any]] = []
    for i in range(len(labels.raters)):
        mine = dense[i] >= 0
        compared = mine & (final_theme >= 0)
        others = [
            v for j in range(len(labels.raters)) if j != i and (v := cohen_of[(i, j)]) is not None
        ]
        annotators.append(
            {
                "pseudonym": pseudonym[i],
                "labels": int(mine.sum()),
                "final_compared": int(compared.sum()),
                "final_agreement": (
                    float((dense[i][compared] == final_theme[compared]).mean())
                    if compared.any()
                    else None
                ),
                "mean_cohen": float(np.mean(others)) if others else None,
                "cohen": {
                    pseudonym[j]: cohen_of[(i, j)] for j in range(len(labels.raters)) if j != i
                },
                # Pairs whose Cohen's kappa rests on fewer than MIN_ISSUES shared issues.
                "cohen_too_few": [
                    pseudonym[j]
                    for j in range(len(labels.raters))
                    if j != i and cohen_of[(i, j)] is not None and shared_of[(i, j)] < MIN_ISSUES
                ],
            }
        )
    annotators.sort(key=lambda a: natural_order(a["pseudonym"]))

    # Theme confusions: rater pairs on one issue choosing themes x and y (x != y) is
    # sum over issues of count_x * count_y, i.e. the off-diagonal of T'T.
    t = tables["theme"]
    pair_counts = t.T @ t
    np.fill_diagonal(pair_counts, 0)
    used = np.flatnonzero(t.sum(axis=0) > 0)
    top: list[dict[str, Any]] = [
        {"a": theme[x], "b": theme[y], "count": int(pair_counts[x, y])}
        for x, y in zip(*np.triu_indices(len(theme), 1), strict=True)
        if pair_counts[x, y] > 0
    ]
    top.sort(key=lambda p: -p["count"])
    return {
        "project": project.name,
        "project_id": project.pk,
        "taxonomy_version": str(version),
        "taxonomy_version_id": version.pk,
        "computed_at": timezone.now().isoformat(),
        "annotations": len(labels.issue),
        "issues": len(labels.issue_ids),
        "levels": list(LEVELS),
        "min_issues": MIN_ISSUES,
        "groups": groups,
        "types": {
            g["name"]: {
                "code": g["code"],
                "issues": g["issues"],
                "kappa": g["levels"]["theme"]["kappa"],
                "alpha": g["levels"]["theme"]["alpha"],
                "reading": g["levels"]["theme"]["reading"],
            }
            for g in groups
        },
        "annotators": annotators,
        "pairs": pairs,
        "confusions": {
            "themes": [theme[i] for i in used],
            "names": [names.get(theme[i], theme[i]) for i in used],
            "matrix": pair_counts[np.ix_(used, used)].tolist(),
            "top": top[:15],
        },
    }


def cache_key(project: Project, version_id: int | None = None) -> str:
    """A key that changes with any new, revised or reopened label of the project."""
    ann = Annotation.objects.filter(project=project).aggregate(m=Max("id"), n=Count("id"))
    res = Resolution.objects.filter(project=project).aggregate(
        m=Max("id"), n=Count("id"), r=Max("reopened_at")
    )
    current = Resolution.objects.filter(project=project, is_current=True).count()
    reopened = res["r"].timestamp() if res["r"] else 0
    return (
        f"agreement:v{CACHE_VERSION}:{project.pk}:{version_id or project.taxonomy_version_id}:"
        f"{ann['m']}:{ann['n']}:{res['m']}:{res['n']}:{current}:{reopened}"
    )


def agreement_report(
    project: Project, use_cache: bool = True, version: TaxonomyVersion | None = None
) -> dict:
    """The cached report (see `compute`), under `version` or the project's pinned one."""
    if not use_cache:
        return compute(project, version)
    key = cache_key(project, version.pk if version else None)
    report = cache.get(key)
    if report is None:
        report = compute(project, version)
        cache.set(key, report, CACHE_SECONDS)
    return report


def report_rows(report: dict) -> list[dict]:
    """The agreement table as flat rows (type x level), for the CSV export and the page."""
    rows = []
    for group in report["groups"]:
        for level in report["levels"]:
            stats = group["levels"][level]
            rows.append(
                {
                    "type": group["name"],
                    "type_code": group["code"],
                    "level": LEVEL_NAMES[level],
                    "issues_in_group": group["issues"],
                    "issues_used": stats["issues"],
                    "excluded": stats["excluded"],
                    "excluded_reason": stats["excluded_reason"],
                    "raters": stats["raters"],
                    "fleiss_kappa": stats["kappa"],
                    "krippendorff_alpha": stats["alpha"],
                    "observed_agreement": stats["observed"],
                    "reading": stats["reading"],
                    "note": stats["note"],
                }
            )
    return rows
