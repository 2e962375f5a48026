"""The policy simulator: what the adaptive stopping rule would have cost and decided on a
project's existing labels.

Each issue's current non-pilot labels are replayed in random rater orders (`orders` of them,
from `seed`; each issue gets its own random order in each replay, as volunteers pick issues up in
no fixed order). Under the adaptive rule (`labeling.stopping.AdaptiveRule(min, lead, k)`) an
issue takes labels in that order until `labeling.stopping.early_decision` decides it, or until
it has K = `k` labels, where a fixed rule decides (`panel_decision`: unanimity; else a strict
plurality holding at least `threshold` of the K votes; a false-positive exclusion only when
unanimous; else the issue needs the lead). A fixed panel of n raters is the first n labels of
the same orders, decided by `panel_decision`.

`panel_decision` is the study's majority vote at the deciding level, not the project's own rule
at K: `labeling.resolution.evaluate` compares full labels (sub-theme included) and applies the
project's policy and threshold, so on a project whose labels often differ only in the sub-theme,
or that lets the lead decide every disagreement, the simulator's "needs lead" is lower and its
"same final" higher than the app would give. `threshold` (the command's `--threshold`) brings
the majority's bar up to a project's; 1 is unanimity only.

Labels are compared at the deciding level, `labeling.stopping.deciding_key`: (type, theme), or
FP. "Same final" is the share of (issue, order) replays whose automatic outcome equals the key
of the project's current final label; an outcome that needs the lead (no automatic final) does
not count as the same and is reported on its own as `needs_lead`. Issues without a current
final count in labels per issue and kappa but not in those two shares.

Why it is fast and still the one rule: the outcome of a replay depends only on the pattern of
its labels (which positions repeat an earlier label, and which one is the exclusion), not on the
themes themselves. The labels are encoded as small integers with numpy, each replay is reduced to
that pattern, and `early_decision` / `panel_decision` are called once per distinct pattern (a
few hundred for seven raters) instead of once per prefix of the study's 775,000 replays
(38,742 issues x 20 orders). `tests/agreement/test_simulation.py` checks the two agree.

Fleiss' kappa of the labels a policy collects is computed on the theme-level (deciding-key)
count table; an adaptive policy collects different numbers of labels per issue, so kappa is
Fleiss' with per-issue rater counts (`kappa_unequal`: observed agreement
`agreement.measures.observed_agreement` against chance from the pooled category shares), which
equals `agreement.measures.fleiss` when every issue has the same count. `simulate` computes the
same figure without building the table (per-issue pair counts come with the pattern; category
totals per group by one bincount), and averages it over the orders.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from django.utils.translation import gettext

from agreement.measures import _label_rows, fleiss, observed_agreement
from annotator.models import Project
from labeling.models import Annotation, MachineLabel, MachineRater, Resolution
from labeling.stopping import FP, AdaptiveRule, deciding_key, early_decision
from lib.refusal import Refusal
from lib.svgchart import Frame
from taxonomy.models import TaxonomyNode

if TYPE_CHECKING:
    import numpy as np

# A pattern is one int64: K (K - 1) / 2 bits of equal pairs and the exclusion's position; K up
# to 10 fits.
MAX_K = 10
MAX_ORDERS = 200
NEEDS_LEAD = -1
NO_FINAL = "—"
ALL = "all"


def panel_decision(
    keys: Sequence[Hashable], threshold: float = 0.0, exclusion: Hashable = FP
) -> Hashable | None:
    """The automatic final of a full panel with these labels, or None when it needs the lead.

    As `labeling.resolution.evaluate` at K: unanimity finalizes; otherwise a strict plurality
    (no tie for first) holding at least `threshold` of the votes, never the exclusion (it needs
    every vote). `threshold` 0 is the plain majority rule (a strict plurality).
    """
    if not keys:
        return None
    ranked = Counter(keys).most_common()
    leader, votes = ranked[0]
    if len(ranked) == 1:
        return leader
    if ranked[1][1] == votes or leader == exclusion or votes / len(keys) < threshold:
        return None
    return leader


@dataclass
class Replays:
    """A project's labels, encoded: one row per issue, keys as small integers."""

    keys: np.ndarray  # issues x m labels, key code, -1 padding (fewer labels than the widest)
    counts: np.ndarray  # labels per issue
    final: np.ndarray  # key code of the current final, -1 when none
    issue_type: list[str]  # per issue: the final's type code, "FP", or NO_FINAL
    key_values: list[Hashable]  # code -> deciding key
    fp_code: int  # code of the exclusion key (may be unused)
    type_names: dict[str, str]
    left_out: int = 0  # issues with fewer than K labels (set by `simulate`)
    issue_ids: Any = None  # per row: the issue's id (np.ndarray), for `simulate_machine`


def load(project: Project) -> Replays:
    """The project's current non-pilot annotations and current finals, encoded."""
    import numpy as np

    # Rows of (issue, annotator, false positive, type, theme, sub-theme), ids 0 for none.
    ann = _label_rows(
        Annotation.objects.filter(project=project, is_current=True, is_pilot=False),
        "issue_id",
        "annotator_id",
    )
    if len(ann) == 0:
        empty = np.zeros(0, dtype=np.int64)
        return Replays(
            np.zeros((0, 0), dtype=np.int64), empty, empty, [], [FP], 0, {}, issue_ids=empty
        )
    ann = ann[np.lexsort((ann[:, 1], ann[:, 0]))]  # by issue, then annotator
    fin = _label_rows(Resolution.objects.filter(project=project, is_current=True), "issue_id")

    @dataclass
    class _Row:
        is_false_positive: bool
        issue_type_id: int | None
        theme_id: int | None

    # Few distinct labels: each goes through `deciding_key` once; code 0 is the exclusion.
    labels = np.concatenate([ann[:, 2:5], fin[:, 1:4]]).reshape(-1, 3)
    # One integer per label (np.unique by rows is slow on 270,000 rows): fp, type, theme.
    base = int(labels.max()) + 1 if len(labels) else 1
    packed, inverse = np.unique(
        (labels[:, 0] * base + labels[:, 1]) * base + labels[:, 2], return_inverse=True
    )
    inverse = inverse.reshape(-1)
    distinct = np.stack([packed // (base * base), packed // base % base, packed % base], axis=1)
    key_values: list[Hashable] = [FP]
    key_code: dict[Hashable, int] = {FP: 0}
    code_of = np.zeros(len(distinct), dtype=np.int64)
    for d, (fp, type_id, theme_id) in enumerate(distinct.tolist()):
        key = deciding_key(_Row(bool(fp), type_id or None, theme_id or None))
        code_of[d] = key_code.setdefault(key, len(key_values))
        if code_of[d] == len(key_values):
            key_values.append(key)
    ann_code, fin_code = code_of[inverse[: len(ann)]], code_of[inverse[len(ann) :]]

    issue_ids, issue_of, counts = np.unique(ann[:, 0], return_inverse=True, return_counts=True)
    issue_of = issue_of.reshape(-1)
    width = int(counts.max()) if len(counts) else 0
    keys = np.full((len(issue_ids), width), -1, dtype=np.int64)
    # Rows come sorted by issue: a label's column is its rank within its issue.
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    column = np.arange(len(ann)) - np.repeat(starts, counts)
    keys[issue_of, column] = ann_code

    final = np.full(len(issue_ids), -1, dtype=np.int64)
    position = np.searchsorted(issue_ids, fin[:, 0])
    known = np.isin(fin[:, 0], issue_ids)  # a final of an issue without labels: not replayed
    final[position[known]] = fin_code[known]
    final_type_id = dict(zip(position[known].tolist(), fin[known, 2].tolist(), strict=True))
    final_fp = set(position[known & (fin[:, 1] == 1)].tolist())
    type_nodes = dict(
        TaxonomyNode.objects.filter(pk__in={t for t in final_type_id.values() if t}).values_list(
            "pk", "code"
        )
    )
    names = dict(
        TaxonomyNode.objects.filter(pk__in=type_nodes).values_list("code", "name"),
    )
    names["FP"] = "false positive"
    issue_type = [NO_FINAL] * len(issue_ids)
    for i, type_id in final_type_id.items():
        issue_type[i] = "FP" if i in final_fp else type_nodes.get(type_id or 0, NO_FINAL)
    return Replays(
        keys=keys,
        counts=counts,
        final=final,
        issue_type=issue_type,
        key_values=key_values,
        fp_code=0,
        type_names=names,
        issue_ids=issue_ids,
    )


def rater_orders(counts: np.ndarray, width: int, orders: int, seed: int) -> np.ndarray:
    """orders x issues x width: in each replay, each issue's labels in a random order (column
    indices; an issue's padding columns come last). Deterministic for a seed."""
    import numpy as np

    rng = np.random.default_rng(seed)
    out = np.empty((orders, len(counts), width), dtype=np.int8 if width < 128 else np.int64)
    if (counts == width).all():
        # Every issue has the full panel (the usual case): shuffle each row in place.
        columns = np.broadcast_to(np.arange(width, dtype=out.dtype), (len(counts), width))
        for o in range(orders):
            out[o] = rng.permuted(columns, axis=1)
        return out
    pad = np.arange(width)[None, :] >= counts[:, None]
    for o in range(orders):
        draw = rng.random((len(counts), width))
        draw[pad] = 2.0  # padding after every real label
        out[o] = np.argsort(draw, axis=1, kind="stable")
    return out


def human_orders(replays: Replays, k: int, orders: int, seed: int) -> np.ndarray:
    """orders x issues x k: the human labels' order in each replay of each issue with at least
    K labels (`rater_orders`, first K positions). Both `simulate` and `simulate_machine` replay
    these, so the same seed gives the same human orders with and without a machine rater."""
    keep = replays.counts >= k
    return rater_orders(replays.counts[keep], replays.keys.shape[1], orders, seed)[:, :, :k]


def patterns(seq: np.ndarray, fp_code: int) -> np.ndarray:
    """Each row's pattern as one integer: which earlier positions each label repeats (a bit per
    pair of positions i < j, set when the labels are equal) and the first position of the
    exclusion (K when absent). Decisions depend on nothing else."""
    import numpy as np

    rows, k = seq.shape
    code = np.zeros(rows, dtype=np.int64)
    bit = 0
    for j in range(1, k):
        for i in range(j):
            code |= (seq[:, i] == seq[:, j]).astype(np.int64) << bit
            bit += 1
    is_fp = seq == fp_code
    first_fp = np.where(is_fp.any(axis=1), is_fp.argmax(axis=1), k).astype(np.int64)
    return code | (first_fp << bit)


def _decode(pattern: int, k: int) -> tuple[list[int], int]:
    """A pattern's labels renumbered by first appearance (0, 1, ...), and the exclusion's
    number (K when absent)."""
    digits: list[int] = []
    bit = 0
    for j in range(k):
        digit = None
        for i in range(j):
            if digit is None and pattern >> bit & 1:
                digit = digits[i]
            bit += 1
        digits.append(len(set(digits)) if digit is None else digit)
    first_fp = pattern >> bit
    return digits, digits[first_fp] if first_fp < k else k


@dataclass(frozen=True)
class PatternOutcome:
    """What the rules decide on one pattern: labels taken and the winner's first position."""

    labels: int
    winner: int  # position in the sequence of the winning label's first occurrence, or -1
    panels: tuple[int, ...]  # per panel size n = 1..K: winner position, or -1
    pairs: tuple[int, ...]  # per prefix n = 0..K: sum over labels of (count among first n)^2


def decide_pattern(
    pattern: int, k: int, rule: AdaptiveRule | None, threshold: float
) -> PatternOutcome:
    """The rules on one pattern: `early_decision` on each prefix below K, then the fixed rule."""
    digits, fp = _decode(pattern, k)
    exclusion: Hashable = fp if fp < k else "no exclusion"
    labels, winner = k, None
    if rule is not None:
        for n in range(1, k):
            decided = early_decision(digits[:n], rule, exclusion=exclusion)
            if decided is not None:
                labels, winner = n, decided
                break
    # Where each label first appears: the caller reads the real key there.
    first: dict[Hashable, int] = {}
    for position, digit in enumerate(digits):
        first.setdefault(digit, position)
    panels = tuple(
        -1 if (w := panel_decision(digits[:n], threshold, exclusion)) is None else first[w]
        for n in range(1, k + 1)
    )
    pairs = tuple(sum(c * c for c in Counter(digits[:n]).values()) for n in range(k + 1))
    if winner is None:
        return PatternOutcome(labels, panels[k - 1], panels, pairs)
    return PatternOutcome(labels, first[winner], panels, pairs)


def kappa_unequal(table: np.ndarray) -> float | None:
    """Fleiss' kappa with per-issue rater counts (issues with fewer than 2 labels left out):
    mean observed agreement against chance from the pooled shares; `fleiss` when all equal."""
    import numpy as np

    table = table[table.sum(axis=1) >= 2]
    if table.shape[0] == 0:
        return None
    n = table.sum(axis=1)
    if (n == n[0]).all():
        return fleiss(table)
    observed = observed_agreement(table)
    shares = table.sum(axis=0) / table.sum()
    chance = float(np.square(shares).sum())
    if observed is None or chance >= 1:
        return None
    return (observed - chance) / (1 - chance)


def fleiss_from_pairs(pairs: np.ndarray, n: np.ndarray, totals: np.ndarray) -> float | None:
    """`kappa_unequal` without the issues x categories table: per issue, `pairs` is
    sum_j n_ij^2 and `n` its label count; `totals` the labels per category over the issues
    with n >= 2 (the pooled shares). Issues with fewer than 2 labels are left out."""
    keep = n >= 2
    if not keep.any():
        return None
    pairs, n = pairs[keep], n[keep]
    return _kappa(float(((pairs - n) / (n * (n - 1))).mean()), totals)


def _kappa(observed: float, totals: np.ndarray) -> float | None:
    """Chance-corrected agreement: observed against the pooled category shares."""
    import numpy as np

    if totals.sum() == 0:
        return None
    chance = float(np.square(totals / totals.sum()).sum())
    if chance >= 1:
        return None
    return (observed - chance) / (1 - chance)


def _summary(
    hist: np.ndarray, same: float, needs: float, judged: float, kappas: list[float | None]
) -> dict[str, Any]:
    """Figures of a group's replays: `hist[n]` replays took n labels; of `judged` replays of
    issues with a final, `same` reached it and `needs` were left for the lead."""
    import numpy as np

    total = hist.sum()
    rated = [k for k in kappas if k is not None]
    return {
        "labels_per_issue": {
            "mean": round(float((np.arange(len(hist)) * hist).sum() / total), 4) if total else None,
            "distribution": {
                str(int(n)): round(float(hist[n] / total), 4) for n in np.flatnonzero(hist)
            },
        },
        "same_final": round(float(same / judged), 4) if judged else None,
        "needs_lead": round(float(needs / judged), 4) if judged else None,
        "kappa": round(float(np.mean(rated)), 4) if rated else None,
    }


def simulate(
    replays: Replays,
    *,
    min_labels: int = 2,
    leads: Sequence[int] = (2,),
    k: int | None = None,
    orders: int = 20,
    seed: int = 1,
    threshold: float = 0.0,
) -> dict[str, Any]:
    """Replay the labels under the adaptive rule for each lead in `leads` (same orders for all)
    and for fixed panels of 2..K. Returns {"k", "issues", "left_out", "fixed",
    "policies": {lead: figures}, "by_type": {type: {"policies", "fixed"}}}; `run` reshapes it."""
    import numpy as np

    width = replays.keys.shape[1]
    if width == 0:
        raise Refusal("project", gettext("no labels to replay yet"))
    k = k or width
    if k > width:
        raise Refusal(
            "max", gettext("at most %(width)s, the most labels any issue has") % {"width": width}
        )
    for name, value, low, high in (
        ("min", min_labels, 1, k),
        ("max", k, 2, MAX_K),
        ("orders", orders, 1, MAX_ORDERS),
    ):
        if not low <= value <= high:
            raise Refusal(
                name,
                gettext("must be between %(low)s and %(high)s (got %(value)s)")
                % {"low": low, "high": high, "value": value},
            )
    if any(lead < 1 for lead in leads):
        raise Refusal("lead", gettext("must be at least 1"))
    if not 0 <= threshold <= 1:
        raise Refusal("threshold", gettext("must be between 0 and 1"))
    keep = replays.counts >= k
    keys, final = replays.keys[keep], replays.final[keep]
    if len(replays.key_values) < 2**15:
        keys = keys.astype(np.int16)  # narrower arrays: the per-order work is memory-bound
    types = [t for t, kept in zip(replays.issue_type, keep.tolist(), strict=True) if kept]
    issues = int(keep.sum())
    cats = len(replays.key_values)
    order = human_orders(replays, k, orders, seed)
    rules = {lead: AdaptiveRule(min_labels=min_labels, lead=lead, k=k) for lead in leads}
    memo: dict[tuple[int | None, int], PatternOutcome] = {}
    sizes = list(range(2, k + 1))
    taken = {lead: np.zeros((orders, issues), dtype=np.int64) for lead in leads}
    outcome = {lead: np.zeros((orders, issues), dtype=np.int64) for lead in leads}
    panel = {n: np.zeros((orders, issues), dtype=np.int64) for n in sizes}
    rows = np.arange(issues)
    type_array = np.array(types, dtype=object)
    groups: dict[str, np.ndarray] = {ALL: rows}
    for code in sorted(set(types) - {NO_FINAL}):
        groups[code] = np.flatnonzero(type_array == code)
    # Each issue's group as a number (the last for issues without a final), to count the
    # categories of every group in one bincount.
    bucket = np.full(issues, len(groups) - 1, dtype=np.int64)
    for b, code in enumerate(list(groups)[1:]):
        bucket[groups[code]] = b
    n_buckets = len(groups)
    # Which (labels taken t, position j) cells count: j < t, and t >= 2 (kappa needs pairs).
    taken_mask = (np.arange(k)[None, :] < np.arange(k + 1)[:, None]) & (np.arange(k + 1) >= 2)[
        :, None
    ]
    names: list[int | str] = [*leads, *(f"n{n}" for n in sizes)]
    kappas: dict[int | str, dict[str, list[float | None]]] = {
        name: {g: [] for g in groups} for name in names
    }
    for o in range(orders):
        seq = np.take_along_axis(keys, order[o], axis=1)
        found, inverse = np.unique(patterns(seq, replays.fp_code), return_inverse=True)
        inverse = inverse.reshape(-1)
        for lead_or_none in [*leads, None]:
            rule = rules.get(lead_or_none) if lead_or_none is not None else None
            for p in found.tolist():
                if (lead_or_none, p) not in memo:
                    memo[(lead_or_none, p)] = decide_pattern(p, k, rule, threshold)
        fixed = [memo[(None, p)] for p in found.tolist()]
        pair_table = np.array([x.pairs for x in fixed], dtype=np.int64)[inverse]
        collected: dict[int | str, np.ndarray] = {}
        for lead in leads:
            per = [memo[(lead, p)] for p in found.tolist()]
            n_taken = np.array([x.labels for x in per], dtype=np.int64)[inverse]
            winner = np.array([x.winner for x in per], dtype=np.int64)[inverse]
            taken[lead][o] = n_taken
            outcome[lead][o] = np.where(winner >= 0, seq[rows, np.maximum(winner, 0)], NEEDS_LEAD)
            collected[lead] = n_taken
        for n in sizes:
            winner = np.array([x.panels[n - 1] for x in fixed], dtype=np.int64)[inverse]
            panel[n][o] = np.where(winner >= 0, seq[rows, np.maximum(winner, 0)], NEEDS_LEAD)
            collected[f"n{n}"] = np.full(issues, n)
        # Kappa of each setting in each group, without a table per issue: per-issue agreement
        # from the pattern's pair counts, category totals per (position, group) by bincount.
        cell = bucket[:, None] * cats + seq  # issues x K: group and category of each label
        span = n_buckets * cats
        per_position = np.bincount(
            (np.arange(k)[None, :] * span + cell).ravel(), minlength=k * span
        ).reshape(k, n_buckets, cats)
        first_n = per_position.cumsum(axis=0)  # [n - 1]: totals of the first n labels
        for setting, upto in collected.items():
            if isinstance(setting, str):  # a fixed panel: the first n labels of every issue
                totals = first_n[upto[0] - 1]
            else:
                cells = np.bincount(
                    ((upto[:, None] * k + np.arange(k)[None, :]) * span + cell).ravel(),
                    minlength=(k + 1) * k * span,
                ).reshape(k + 1, k, n_buckets, cats)
                totals = (cells * taken_mask[:, :, None, None]).sum(axis=(0, 1))
            pairs = pair_table[rows, upto].astype(np.float64)
            valid = upto >= 2
            agree = np.where(valid, (pairs - upto) / np.maximum(upto * (upto - 1), 1), 0.0)
            sums = np.bincount(bucket, weights=agree, minlength=n_buckets)
            counts = np.bincount(bucket, weights=valid, minlength=n_buckets)
            kappas[setting][ALL].append(
                _kappa(sums.sum() / counts.sum(), totals.sum(axis=0)) if counts.sum() else None
            )
            for b, g in enumerate(list(groups)[1:]):
                kappas[setting][g].append(
                    _kappa(sums[b] / counts[b], totals[b]) if counts[b] else None
                )

    # Per group (bucket): labels taken, and replays reaching the final or left for the lead.
    has_final = final >= 0
    judged = np.bincount(bucket, weights=has_final, minlength=n_buckets) * orders
    sizes_of = np.bincount(bucket, minlength=n_buckets) * orders

    def per_bucket(result: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        same = np.where(has_final, (result == final[None, :]).sum(axis=0), 0)
        needs = np.where(has_final, (result == NEEDS_LEAD).sum(axis=0), 0)
        return (
            np.bincount(bucket, weights=same, minlength=n_buckets),
            np.bincount(bucket, weights=needs, minlength=n_buckets),
        )

    stats: dict[int | str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    for lead in leads:
        hist = np.bincount(
            (bucket[None, :] * (k + 1) + taken[lead]).ravel(), minlength=n_buckets * (k + 1)
        ).reshape(n_buckets, k + 1)
        stats[lead] = (hist, *per_bucket(outcome[lead]))
    for n in sizes:
        hist = np.zeros((n_buckets, k + 1), dtype=np.int64)
        hist[:, n] = sizes_of
        stats[f"n{n}"] = (hist, *per_bucket(panel[n]))

    def summary(setting: int | str, g: str) -> dict[str, Any]:
        hist, same, needs = stats[setting]
        if g == ALL:
            return _summary(
                hist.sum(axis=0), same.sum(), needs.sum(), judged.sum(), kappas[setting][g]
            )
        b = list(groups).index(g) - 1
        return _summary(hist[b], same[b], needs[b], judged[b], kappas[setting][g])

    def figures(g: str) -> dict[str, Any]:
        return {
            "policies": {lead: summary(lead, g) for lead in leads},
            "fixed": {n: summary(f"n{n}", g) for n in sizes},
        }

    by_type = {
        code: {
            "name": replays.type_names.get(code, code),
            "issues": len(groups[code]),
            **figures(code),
        }
        for code in groups
        if code != ALL
    }
    return {
        "k": k,
        "issues": issues,
        "with_final": int((final >= 0).sum()),
        "left_out": int((~keep).sum()),
        **figures(ALL),
        "by_type": by_type,
    }


def _flatten(figures: dict[str, Any], lead: int) -> dict[str, Any]:
    """One policy's figures with the fixed panels beside it (the command's JSON shape)."""
    policy = figures["policies"][lead]
    return {
        **policy,
        "fixed": {
            str(n): {
                "labels_per_issue": n,
                "same_final": f["same_final"],
                "needs_lead": f["needs_lead"],
                "kappa": f["kappa"],
            }
            for n, f in figures["fixed"].items()
        },
    }


def run(
    project: Project,
    *,
    min_labels: int = 2,
    lead: int = 2,
    k: int | None = None,
    orders: int = 20,
    seed: int = 1,
    threshold: float = 0.0,
) -> dict[str, Any]:
    """The command's report for one policy: top-level keys `labels_per_issue`, `same_final`,
    `needs_lead`, `kappa`, `fixed` (per panel size), `by_type` (the same per type of final)."""
    result = simulate(
        load(project),
        min_labels=min_labels,
        leads=[lead],
        k=k,
        orders=orders,
        seed=seed,
        threshold=threshold,
    )
    return {
        "project": project.name,
        "policy": {
            "min": min_labels,
            "lead": lead,
            "max": result["k"],
            "orders": orders,
            "seed": seed,
            "threshold": threshold,
        },
        "issues": result["issues"],
        "with_final": result["with_final"],
        "left_out": result["left_out"],
        **_flatten(result, lead),
        "by_type": {
            code: {"name": t["name"], "issues": t["issues"], **_flatten(t, lead)}
            for code, t in result["by_type"].items()
        },
    }


def _percents(figures: dict[str, Any]) -> dict[str, float | None]:
    return {
        f"{name}_percent": None if figures[name] is None else round(100 * figures[name], 1)
        for name in ("same_final", "needs_lead")
    }


def point_name(point: dict[str, Any]) -> str:
    """A point's setting as the page names it: "lead 2" or "fixed 3", in the reader's language."""
    if point["series"] == "fixed":
        return gettext("fixed %(size)s") % {"size": point["setting"]}
    return gettext("lead %(lead)s") % {"lead": point["setting"]}


def _named(result: dict[str, Any]) -> dict[str, Any]:
    """`result` with each point named in the active language (the cached figures have none)."""
    return {**result, "points": [{**p, "name": point_name(p)} for p in result["points"]]}


def tradeoff(project: Project, **params: Any) -> dict[str, Any]:
    """The page's data: one point (labels per issue, same-final share) per lead and per fixed
    panel size, on the same replays, plus the rows of its table (`_tradeoff`, points named)."""
    return _named(_tradeoff(project, **params))


def _tradeoff(
    project: Project,
    *,
    min_labels: int = 2,
    leads: Sequence[int] = (1, 2, 3),
    k: int | None = None,
    orders: int = 20,
    seed: int = 1,
    threshold: float = 0.0,
) -> dict[str, Any]:
    """The page's data: one point (labels per issue, same-final share) per lead and per fixed
    panel size, on the same replays, plus the rows of its table."""
    leads = sorted(set(leads))
    result = simulate(
        load(project),
        min_labels=min_labels,
        leads=leads,
        k=k,
        orders=orders,
        seed=seed,
        threshold=threshold,
    )
    points = [
        {
            "series": "adaptive",
            "setting": lead,
            "labels": p["labels_per_issue"]["mean"],
            "same_final": p["same_final"],
            "needs_lead": p["needs_lead"],
            "kappa": p["kappa"],
            **_percents(p),
        }
        for lead, p in result["policies"].items()
    ] + [
        {
            "series": "fixed",
            "setting": n,
            "labels": n,
            "same_final": f["same_final"],
            "needs_lead": f["needs_lead"],
            "kappa": f["kappa"],
            **_percents(f),
        }
        for n, f in result["fixed"].items()
    ]
    return {
        "issues": result["issues"],
        "with_final": result["with_final"],
        "left_out": result["left_out"],
        "k": result["k"],
        "points": points,
    }


def cached_tradeoff(project: Project, **params: Any) -> dict[str, Any]:
    """`tradeoff`, cached under the agreement report's key (it changes with any label or final
    of the project) and the parameters: the page asks the same question repeatedly."""
    from django.core.cache import cache

    from agreement.measures import cache_key

    shown = ",".join(f"{name}={params[name]}" for name in sorted(params))
    digest = hashlib.sha256(f"{cache_key(project)}|{shown}".encode()).hexdigest()
    key = f"simulate:v2:{project.pk}:{digest}"
    result = cache.get(key)
    if result is None:
        result = _tradeoff(project, **params)
        cache.set(key, result, 3600)
    return _named(result)


# The chart, drawn server-side as SVG (`lib.svgchart`); its colours are CSS classes in
# static/css/simulator.css.
FRAME = Frame(640, 360, margin_left=60, margin_right=20, margin_top=20, margin_bottom=48)


def chart(result: dict[str, Any]) -> dict[str, Any]:
    """Coordinates of the trade-off chart: labels per issue (x) against same-final share (y)."""
    points = [p for p in result["points"] if p["same_final"] is not None]
    k = result["k"]
    low = min((p["same_final"] for p in points), default=0.0)
    # The y axis starts at the tenth below the lowest point (never above 90 %).
    y_min = min(0.9, max(0.0, math.floor(low * 10) / 10))

    def x(value: float) -> float:  # labels per issue, 1 to K
        return FRAME.x((value - 1) / max(k - 1, 1))

    def y(value: float) -> float:  # same-final share, y_min to 1
        return FRAME.y((value - y_min) / (1 - y_min))

    drawn = [
        {
            **p,
            "x": x(p["labels"]),
            "y": y(p["same_final"]),
            # Neighbouring lead values often sit close: their names alternate above and below.
            "label_y": y(p["same_final"]) + (-9 if i % 2 == 0 else 18),
            "rect_x": x(p["labels"]) - 4,
            "rect_y": y(p["same_final"]) - 4,
            "percent": round(100 * p["same_final"], 1),
        }
        for i, p in enumerate(points)
    ]
    steps = round((1 - y_min) / 0.1)
    return {
        **FRAME.axes(),
        "x_ticks": [{"value": v, "x": x(v)} for v in range(1, k + 1)],
        "y_ticks": [
            {"value": round(100 * (y_min + i * 0.1)), "y": y(y_min + i * 0.1)}
            for i in range(steps + 1)
        ],
        "points": drawn,
        "fixed_line": " ".join(f"{p['x']},{p['y']}" for p in drawn if p["series"] == "fixed"),
    }


# --- An enlisted machine rater -------------------------------------------------------------


@dataclass
class _Key:
    """The label fields `deciding_key` reads, from a `values_list` row."""

    is_false_positive: bool
    issue_type_id: int | None
    theme_id: int | None


def machine_votes(project: Project, rater_name: str, confidence: float | None) -> dict[int, Any]:
    """issue id -> deciding key of the named machine rater's current valid label on it, for the
    labels whose confidence reaches `confidence` (default: the rater's own threshold): the
    labels that would vote (`MachineLabel.objects.counting`), as if the rater were enlisted."""
    rater = MachineRater.objects.filter(project=project, name=rater_name).first()
    if rater is None:
        raise Refusal(
            "machine-rater",
            gettext("no machine rater named %(name)s here") % {"name": repr(rater_name)},
        )
    threshold = rater.confidence_threshold if confidence is None else confidence
    if threshold is None:
        raise Refusal("confidence", gettext("give a threshold (the rater has none of its own set)"))
    if not 0.0 <= threshold <= 1.0:
        raise Refusal("confidence", gettext("must be between 0 and 1"))
    rows = (
        MachineLabel.objects.filter(rater=rater)
        .counting(threshold)
        .values_list("issue_id", "is_false_positive", "issue_type_id", "theme_id")
    )
    return {issue: deciding_key(_Key(fp, t, h)) for issue, fp, t, h in rows}


def _replay(
    seq: Sequence[Hashable],
    rule: AdaptiveRule,
    threshold: float,
    machine: Hashable | None,
    exclusion: Hashable = FP,
) -> tuple[int, Hashable | None]:
    """(human labels taken, automatic final or None) for one order of an issue's labels: the
    adaptive rule (with the machine's vote, if any) on each prefix below K, then the fixed
    panel at K."""
    for n in range(1, rule.k):
        decided = early_decision(seq[:n], rule, exclusion, machine=machine)
        if decided is not None:
            return n, decided
    return rule.k, panel_decision(seq[: rule.k], threshold, exclusion)


def simulate_machine(
    project: Project,
    machine: dict[int, Any],
    *,
    min_labels: int = 2,
    lead: int = 2,
    k: int | None = None,
    orders: int = 20,
    seed: int = 1,
    threshold: float = 0.0,
) -> dict[str, Any]:
    """Replay the project's labels under the adaptive rule with an enlisted machine rater's
    votes (`machine`: issue id -> deciding key, as `machine_votes` gives) and without them, on
    the same orders: human labels per issue and the same-final share of each.

    Issues with fewer than K current non-pilot human labels are left out. The replays are
    `human_orders` (seeded), the very orders `simulate` replays for the same seed, so the
    human-only figures are `simulate_policy`'s without `--machine-rater`. A replay's outcome
    depends only on which labels repeat, so it is computed once per pattern.

    The means hide the issues a confident machine vote that disagrees makes dearer: per issue,
    its human labels summed over the orders with the machine and without are compared, and
    `costs_more` / `costs_fewer` count the issues that take more / fewer with it."""
    import numpy as np

    replays = load(project)
    # K by default: the widest panel, as `simulate`.
    k = k or replays.keys.shape[1]
    if not 2 <= k <= MAX_K:
        raise Refusal("max", gettext("K must be between 2 and %(max)s") % {"max": MAX_K})
    if not 1 <= orders <= MAX_ORDERS:
        raise Refusal("orders", gettext("must be between 1 and %(max)s") % {"max": MAX_ORDERS})
    if min_labels < 1 or lead < 1:
        raise Refusal("min / lead", gettext("must be at least 1"))
    rule = AdaptiveRule(min_labels=min_labels, lead=lead, k=k)
    cache: dict[tuple, tuple[int, Hashable | None]] = {}

    def outcome(seq: list[Hashable], vote: Hashable | None) -> tuple[int, Hashable | None]:
        # The pattern: each label as the index of its first appearance (the machine's first),
        # the exclusion as -1; the decided key is mapped back from its index.
        distinct: list[Hashable] = []
        for key in ([vote] if vote is not None else []) + seq:
            if key not in distinct:
                distinct.append(key)
        code = tuple(-1 if key == FP else distinct.index(key) for key in seq)
        vote_code = None if vote is None else (-1 if vote == FP else distinct.index(vote))
        pattern = (code, vote_code)
        if pattern not in cache:
            cache[pattern] = _replay(code, rule, threshold, vote_code, exclusion=-1)
        n, decided_code = cache[pattern]
        if decided_code is None:
            return n, None
        return n, FP if decided_code == -1 else distinct[cast(int, decided_code)]

    kept = np.flatnonzero(replays.counts >= k)
    order = human_orders(replays, k, orders, seed)
    key_values = replays.key_values
    issue_ids = [int(i) for i in replays.issue_ids[kept]]
    finals = [key_values[f] if f >= 0 else None for f in replays.final[kept].tolist()]
    votes = [machine.get(issue) for issue in issue_ids]
    rows = replays.keys[kept].tolist()
    # Per issue, human labels summed over the orders: [with the machine, humans only].
    per_issue = [[0] * len(kept), [0] * len(kept)]
    totals = {"machine": [0, 0, 0], "human_only": [0, 0, 0]}  # same, lead, with a final
    for o in range(orders):
        for i, positions in enumerate(order[o].tolist()):
            seq = [key_values[rows[i][p]] for p in positions]
            final = finals[i]
            for column, (name, vote) in enumerate((("machine", votes[i]), ("human_only", None))):
                n, decided = outcome(seq, vote)
                per_issue[column][i] += n
                if final is not None:
                    row = totals[name]
                    row[2] += 1
                    row[0] += decided == final
                    row[1] += decided is None
    replayed = len(kept) * orders

    def figures(column: int, row: list[int]) -> dict[str, float | None]:
        return {
            "labels_per_issue": sum(per_issue[column]) / replayed if replayed else None,
            "same_final": row[0] / row[2] if row[2] else None,
            "needs_lead": row[1] / row[2] if row[2] else None,
        }

    with_machine = figures(0, totals["machine"])
    return {
        "project": project.name,
        "policy": {
            "min": min_labels,
            "lead": lead,
            "max": k,
            "orders": orders,
            "seed": seed,
            "threshold": threshold,
        },
        "issues": len(kept),
        "left_out": len(replays.counts) - len(kept),
        "with_final": sum(1 for f in finals if f is not None),
        "machine_votes": sum(1 for v in votes if v is not None),
        "human_labels_per_issue": with_machine["labels_per_issue"],
        "same_final": with_machine["same_final"],
        "needs_lead": with_machine["needs_lead"],
        "costs_more": sum(a > b for a, b in zip(*per_issue, strict=True)),
        "costs_fewer": sum(a < b for a, b in zip(*per_issue, strict=True)),
        "human_only": figures(1, totals["human_only"]),
    }


def machine_tradeoff(
    project: Project,
    rater_name: str,
    confidence: float | None,
    *,
    leads: Sequence[int],
    **params: Any,
) -> dict[str, Any]:
    """The page's table for an enlisted machine rater: per lead value, `simulate_machine`'s
    human labels per issue and same-final share with the rater and without it."""
    votes = machine_votes(project, rater_name, confidence)
    rows = []
    for lead in leads:
        report = simulate_machine(project, votes, lead=lead, **params)
        rows.append({"lead": lead, **report})
    return {"rater": rater_name, "confidence": confidence, "rows": rows}
