"""The keyword filter's recall, measured on a sample of the issues it dropped.

A framework repository keeps only the issues its keyword set matches (`ingest.filtering`); the
issues it drops are stored (`Issue.filter_status == FILTERED_OUT`) so the relevant ones it lost
can be counted. A lead draws a seeded random sample of them into the project's queue as
**recall probes** (`draw_probes`): each becomes an ordinary `ProjectIssue` with a random public
id like every other, placed at random among the issues nobody was served yet
(`labeling.setup.place_in_queue`), and is labeled blind like any issue. Only `RecallProbe` rows
know which issues are probes.

Once probes are final, `recall_report` estimates, per repository and overall:

* the share p of relevant (LLM-related) issues among the dropped ones: a probe is relevant when
  its current final label (`Resolution`) is not a false positive. Per repository (a *stratum*
  h: its N_h dropped issues that are not in the project as ordinary issues, probes included),
  the point estimate x_h/n_h over its n_h final probes with the 95 % Wilson interval
  (statsmodels `proportion_confint(method="wilson")`);
* overall, the **stratified** share p = Σ N_h·p̂_h / Σ N_h, never the pooled x/n: probes of
  different repositories are labeled at different rates while labeling goes on, and the pooled
  share then weighs a repository by how far its labeling got instead of by its size (#21). Its
  interval combines the repositories' Wilson intervals by MOVER (the method of variance
  estimates recovery, Zou & Donner 2008; Zou, Huang & Zhang 2009, for a weighted sum of
  proportions): D̂ = Σ N_h·p̂_h, low = D̂ - √Σ (N_h·(p̂_h - l_h))², high = D̂ + √Σ (N_h·(u_h -
  p̂_h))², with (l_h, u_h) the Wilson interval of stratum h; with one stratum it is that
  stratum's Wilson interval. No finite-population correction: the interval is slightly wide
  where a large part of a repository's dropped issues is drawn. A repository with dropped
  issues but no final probe yet is unknown, p_h anywhere in [0, 1]: it adds 0 to the low and
  N_h to the high bound and leaves no point estimate (`estimate` None, `unknown_strata` names
  it) instead of vanishing from the estimate. `tests/dataset/test_recall.py` simulates the
  coverage (about 95 % on the example of #21);
* the relevant issues the filter dropped, D = Σ N_h·p_h, plus the **known losses** L: dropped
  issues the project holds as ordinary issues (a scope that takes dropped issues too) are
  labeled in full, so the relevant ones among them are counted, not estimated (scaled from the
  final ones while not all are final, as K; unknown in [0, M] while none is);
* the relevant issues it kept, K: the kept issues in the project that are final and not false
  positives, scaled to all kept issues when not all are final (K_h = M_h·R_h/F_h per
  repository). Overall, K and L are stratified like D: K = Σ K_h and L = Σ L_h, never the pooled
  M·R/F (which weighs a repository by how far its labeling got). A repository with kept issues
  of which none is final yet is unknown as D's unlabeled stratum is: K_h anywhere in [0, M_h],
  so the overall K has no point estimate and its bounds widen by M_h (`kept_relevant` None,
  `kept_relevant_bounds` (estimate, low, high));
* the recall K / (K + L + D). It falls as D or L grows and rises with K, so its interval is
  their intervals carried through: (K_low / (K_low + L_high + D_high), K_high / (K_high + L_low
  + D_low)). A repository's own K_h is taken as known (None while none of its kept issues is
  final).

The sample size for a target margin of error e comes from n0 = z²·p(1-p)/e² (p = 0.5 unless an
expected share is given, z = 1.96) with the finite-population correction n = n0 / (1 + (n0-1)/N),
rounded up. The sample is drawn stratified by repository in proportion to the dropped issues
not yet drawn (`labeling.setup.stratified_sample`, largest remainders).

Suggested keywords: words of the titles of relevant probes that are not in the repository's
keyword set and are no stop words, ranked by how many relevant probes the word would have caught
(matched as a keyword in title, body or labels, as the filter matches) and, against it, how many
probes labeled false positive it would have let in.
"""

from __future__ import annotations

import math
import re
import secrets
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Count, Max
from django.utils.translation import gettext

from annotator.models import Project
from dataset.models import RecallProbe
from ingest.filtering import keyword_set_for
from ingest.keywords import compile_keywords, normalize
from ingest.models import Issue, Repository
from labeling.models import ProjectIssue, Resolution
from labeling.setup import Scope, issues_in_scope, place_in_queue, stratified_sample
from lib.inputlimits import integer_range
from lib.refusal import Refusal

# Two-sided 95 %: the normal quantile at 0.975.
Z_95 = 1.959963984540054
# A draw larger than this is a typo: the study's largest repository dropped ~20,000 issues.
MAX_SAMPLE = 20_000
MAX_SUGGESTED = 10
MAX_CANDIDATES = 200

STOP_WORDS = frozenset(
    (
        "a", "about", "above", "after", "again", "against", "all", "also", "am", "an", "and",
        "any", "are", "as", "at", "be", "because", "been", "before", "being", "below", "between",
        "both", "but", "by", "can", "cannot", "could", "did", "do", "does", "doing", "down",
        "during", "each", "few", "for", "from", "further", "had", "has", "have", "having", "he",
        "her", "here", "hers", "him", "his", "how", "i", "if", "in", "into", "is", "it", "its",
        "itself", "just", "me", "more", "most", "my", "no", "nor", "not", "now", "of", "off", "on",
        "once", "only", "or", "other", "our", "out", "over", "own", "same", "she", "should", "so",
        "some", "such", "than", "that", "the", "their", "them", "then", "there", "these", "they",
        "this", "those", "through", "to", "too", "under", "until", "up", "very", "was", "we",
        "were", "what", "when", "where", "which", "while", "who", "whom", "why", "will", "with",
        "would", "you", "your", "yours", "get", "gets", "got", "use", "used", "using", "whether",
        "via", "vs", "within", "without", "cant", "doesnt", "dont", "isnt", "wont", "error",
        "errors", "issue", "issues", "bug", "bugs", "question", "feature", "request", "support",
        "fix", "fails", "failed", "failing", "problem", "problems", "help", "how-to", "work",
        "works", "working", "not-working",
    )
)  # fmt: skip
_WORD = re.compile(r"[^\W\d_][\w.+-]*")


# (estimate, low, high); the estimate is None where a stratum is unknown (no final probe).
Interval = tuple[float | None, float, float]


@dataclass(frozen=True)
class Stratum:
    """One repository's dropped issues for the estimate: `size` N_h (those not in the project
    as ordinary issues, probes included), `labeled` n_h final probes, `relevant` x_h of them
    not false positives."""

    size: int
    labeled: int
    relevant: int


def sample_size_for(
    margin: float, population: int, expected_share: float = 0.5, z: float = Z_95
) -> int:
    """Probes needed for a margin of error `margin` (half the 95 % interval's width) on the
    share of relevant issues among `population` dropped issues: n0 = z²p(1-p)/e², then the
    finite-population correction n0 / (1 + (n0 - 1)/N), rounded up."""
    if not 0 < margin < 1:
        raise Refusal("margin", gettext("a share between 0 and 1, e.g. 0.05 for ±5 points"))
    if not 0 < expected_share < 1:
        raise Refusal("expected_share", gettext("a share between 0 and 1"))
    if population <= 0:
        return 0
    n0 = z * z * expected_share * (1 - expected_share) / (margin * margin)
    return min(population, math.ceil(n0 / (1 + (n0 - 1) / population)))


def wilson(count: int, n: int) -> tuple[float, float]:
    """The 95 % Wilson score interval of a proportion count/n."""
    from statsmodels.stats.proportion import proportion_confint

    low, high = proportion_confint(count, n, alpha=0.05, method="wilson")
    return float(low), float(high)


def share_interval(relevant: int, labeled: int) -> Interval | None:
    """(estimate, low, high) of one stratum's share of relevant issues: x/n and Wilson's."""
    if labeled <= 0:
        return None
    low, high = wilson(relevant, labeled)
    return (relevant / labeled, low, high)


def dropped_relevant(strata: Iterable[Stratum]) -> Interval | None:
    """(estimate, low, high) of D = Σ N_h·p_h, the relevant issues among the dropped ones:
    the strata's Wilson intervals combined by MOVER; a stratum without a final probe adds
    [0, N_h] and takes the point estimate away. None while no probe is final."""
    strata = [s for s in strata if s.size > 0]
    if not any(s.labeled for s in strata):
        return None
    estimate = below = above = unknown = 0.0
    for s in strata:
        if s.labeled == 0:
            unknown += s.size
            continue
        p = s.relevant / s.labeled
        low, high = wilson(s.relevant, s.labeled)
        estimate += s.size * p
        below += (s.size * (p - low)) ** 2
        above += (s.size * (high - p)) ** 2
    return (
        None if unknown else estimate,
        estimate - math.sqrt(below),
        estimate + math.sqrt(above) + unknown,
    )


def stratified_share(strata: Iterable[Stratum]) -> Interval | None:
    """(estimate, low, high) of the share of relevant issues among all strata's dropped
    issues: `dropped_relevant` over Σ N_h (the stratified estimate, never the pooled x/n)."""
    strata = list(strata)
    lost = dropped_relevant(strata)
    if lost is None:
        return None
    total = sum(s.size for s in strata)
    estimate, low, high = lost
    return (None if estimate is None else estimate / total, low / total, high / total)


def add_intervals(a: Interval, b: Interval) -> Interval:
    """The sum of two counts' intervals (bounds add; an unknown estimate stays unknown)."""
    estimate = None if a[0] is None or b[0] is None else a[0] + b[0]
    return (estimate, a[1] + b[1], a[2] + b[2])


def recall_from_losses(kept_relevant: float | None, lost: Interval | None) -> Interval | None:
    """(estimate, low, high) of K / (K + lost), `lost` the relevant issues the filter dropped
    (estimated and known): the recall falls as losses grow, so the bounds swap."""
    if kept_relevant is None or lost is None:
        return None
    estimate, low, high = lost

    def r(d: float) -> float:
        total = kept_relevant + d
        # Nothing relevant kept nor lost: the filter missed nothing there.
        return 1.0 if total == 0 else kept_relevant / total

    return (None if estimate is None else r(estimate), r(high), r(low))


def recall_from_intervals(kept: Interval | None, lost: Interval | None) -> Interval | None:
    """(estimate, low, high) of K / (K + lost) with K an interval too: the recall rises with K
    and falls with the losses, so the low bound takes K's low and the losses' high bound."""
    if kept is None or lost is None:
        return None

    def r(k: float, d: float) -> float:
        # Nothing relevant kept nor lost: the filter missed nothing there.
        return 1.0 if k + d == 0 else k / (k + d)

    estimate = None if kept[0] is None or lost[0] is None else r(kept[0], lost[0])
    return (estimate, r(kept[1], lost[2]), r(kept[2], lost[1]))


def recall_interval(
    kept_relevant: float | None, dropped: int, share: Interval | None
) -> Interval | None:
    """(estimate, low, high) of K / (K + N·p) for one stratum's share interval of p."""
    if share is None:
        return None
    estimate, low, high = share
    lost = (None if estimate is None else dropped * estimate, dropped * low, dropped * high)
    return recall_from_losses(kept_relevant, lost)


def format_interval(value: Interval | None) -> str:
    """An interval as the command and the datasheet print it; '?' for an unknown estimate."""
    if not value:
        return "-"
    estimate, low, high = value
    shown = "?" if estimate is None else f"{estimate:.3f}"
    return f"{shown} (95 % CI {low:.3f}-{high:.3f})"


# --- the population and the draw ---------------------------------------------------------


def project_scope(project: Project) -> Scope:
    """The scope the setup page applied last (repositories, date window), as a `Scope`.

    A project without a stored list of repositories uses the repositories of its issues."""
    stored = project.scope or {}
    repo_ids = [int(r) for r in stored.get("repository_ids") or []]
    if not repo_ids:
        repo_ids = sorted(
            set(
                ProjectIssue.objects.filter(project=project, recall_probe__isnull=True)
                .values_list("issue__repository_id", flat=True)
                .distinct()
            )
        )

    def day(value: Any) -> date | None:
        return date.fromisoformat(value) if value else None

    return Scope(
        repository_ids=repo_ids,
        created_from=day(stored.get("created_from")),
        created_to=day(stored.get("created_to")),
    )


# Per repository id: the dropped issues the scope holds, and the ids of those a draw may take.
Population = tuple[dict[int, int], dict[int, list[int]]]


def dropped_population(project: Project) -> Population:
    """Per repository: how many dropped issues the scope holds (N, probes included), and the
    ids of those not in the project yet (what a draw may take).

    Dropped issues already in the project as ordinary issues (a scope that takes dropped issues
    too) are labeled in full: they are neither population nor candidates. A page that needs it
    twice (the report and the ranking) computes it once and passes it on."""
    scope = project_scope(project)
    if not scope.repository_ids:
        return {}, {}
    scope.filter_statuses = [Issue.FilterStatus.FILTERED_OUT]
    in_project = dict(
        ProjectIssue.objects.filter(project=project).values_list("issue_id", "recall_probe")
    )
    sizes: dict[int, int] = defaultdict(int)
    candidates: dict[int, list[int]] = defaultdict(list)
    for issue_id, repo_id in issues_in_scope(scope).values_list("id", "repository_id"):
        if issue_id not in in_project:
            sizes[repo_id] += 1
            candidates[repo_id].append(issue_id)
        elif in_project[issue_id] is not None:
            sizes[repo_id] += 1
    return dict(sizes), dict(candidates)


def candidate_ids(candidates: dict[int, list[int]]) -> list[int]:
    """The ids of `dropped_population`'s candidates, every repository's."""
    return [i for group in candidates.values() for i in group]


@dataclass
class Draw:
    """What one draw added: its number, seed, size and probes per repository."""

    number: int
    seed: int
    size: int
    margin: float | None
    by_repository: dict[str, int]


def _seed(seed: int | None) -> int:
    low, high = integer_range(RecallProbe, "seed")
    if seed is None:
        return secrets.randbelow(high + 1)
    if not max(low, 0) <= seed <= high:
        raise Refusal(
            "seed",
            gettext("a whole number from %(low)s to %(high)s") % {"low": max(low, 0), "high": high},
        )
    return seed


@transaction.atomic
def draw_probes(
    project: Project,
    sample_size: int | None = None,
    margin: float | None = None,
    seed: int | None = None,
    drawn_by: User | None = None,
    expected_share: float = 0.5,
) -> Draw:
    """Draw recall probes from the dropped issues into the project's queue.

    Give `sample_size` (that many new probes) or `margin` (enough probes, counting earlier
    draws, for that margin of error on the overall share; see `sample_size_for`). The draw is
    stratified by repository in proportion to the issues not drawn yet, reproducible from its
    seed (a random one is chosen and stored when none is given). The probes join the queue as
    ordinary issues at random places among those nobody was served yet (`place_in_queue`,
    seeded by the draw's seed); what was served keeps its place, the pilot too.
    """
    if (sample_size is None) == (margin is None):
        raise Refusal("sample_size", gettext("give either a sample size or a margin of error"))
    seed = _seed(seed)
    # One draw at a time per project: the row lock orders concurrent draws.
    Project.objects.select_for_update().filter(pk=project.pk).first()
    sizes, candidates = dropped_population(project)
    available = sum(len(v) for v in candidates.values())
    if sample_size is not None:
        if not 1 <= sample_size <= MAX_SAMPLE:
            raise Refusal(
                "sample_size",
                gettext("a whole number from %(low)s to %(high)s") % {"low": 1, "high": MAX_SAMPLE},
            )
        wanted = sample_size
    else:
        assert margin is not None
        drawn = RecallProbe.objects.filter(project=project).count()
        wanted = sample_size_for(margin, sum(sizes.values()), expected_share) - drawn
        if wanted <= 0:
            raise Refusal(
                "margin",
                gettext("the %(drawn)s probes drawn already reach this margin of error")
                % {"drawn": drawn},
            )
    if available == 0:
        raise Refusal(
            "sample_size",
            gettext(
                "no dropped issue left to draw: the project's repositories have no issue the "
                "keyword filter dropped that is not in the project already"
            ),
        )
    chosen = stratified_sample(candidates, min(wanted, available), seed)
    number = (RecallProbe.objects.filter(project=project).aggregate(m=Max("draw"))["m"] or 0) + 1
    repo_of = {i: repo for repo, ids in candidates.items() for i in ids}
    items = ProjectIssue.objects.bulk_create(
        [ProjectIssue(project=project, issue_id=i) for i in chosen], batch_size=2000
    )
    RecallProbe.objects.bulk_create(
        [
            RecallProbe(
                project=project,
                project_issue=item,
                issue_id=item.issue_id,
                draw=number,
                seed=seed,
                margin=margin,
                stratum_size=sizes[repo_of[item.issue_id]],
                drawn_by=drawn_by,
            )
            for item in items
        ],
        batch_size=2000,
    )
    # Only the probes move: they take random places among the issues nobody was served yet.
    place_in_queue(project, [item.pk for item in items], seed)
    names = dict(
        (r.pk, r.full_name) for r in Repository.objects.filter(pk__in=set(repo_of.values()))
    )
    per_repo = Counter(names[repo_of[i]] for i in chosen)
    return Draw(number, seed, len(chosen), margin, dict(sorted(per_repo.items())))


# --- the estimate -----------------------------------------------------------------------


def title_words(title: str) -> set[str]:
    """The distinct words of a title that could be keywords: casefolded, no stop words."""
    words = set()
    for raw in _WORD.findall(title.casefold()):
        word = raw.rstrip(".-+")
        if len(word) >= 2 and word not in STOP_WORDS:
            words.add(word)
    return words


def keyword_candidates(
    relevant: list[tuple[str, str, str]],
    others: list[tuple[str, str, str]],
    keywords: Iterable[str],
    limit: int = MAX_SUGGESTED,
) -> list[dict[str, Any]]:
    """Words of the relevant probes' titles that would have caught them, best first.

    `relevant` and `others` are (title, body, labels) of the probes labeled relevant and false
    positive. A word counts for a probe when it matches as a keyword would (token boundaries,
    in title, body or labels); words already in the keyword set, stop words and words that
    catch more false positives than relevant probes are left out."""
    taken = {normalize(k) for k in keywords}
    df = Counter(w for title, _, _ in relevant for w in title_words(title))
    rows: list[dict[str, Any]] = []
    # The most frequent words only: each is matched against every probe.
    for word, _ in df.most_common(MAX_CANDIDATES):
        if word in taken:
            continue
        matcher = compile_keywords([word])
        caught = sum(bool(matcher.matches(*texts)) for texts in relevant)
        noise = sum(bool(matcher.matches(*texts)) for texts in others)
        if caught and caught >= noise:
            rows.append({"word": word, "missed_caught": caught, "false_positives": noise})
    rows.sort(key=lambda r: (-r["missed_caught"], r["false_positives"], r["word"]))
    return rows[:limit]


def _ordinary_counts(
    project: Project, repo_ids: list[int], filter_status: str
) -> dict[int, dict[str, int]]:
    """Per repository: the project's ordinary issues (not probes) of one filter status, how
    many are final, and how many of those are relevant (final label not a false positive)."""
    counts: dict[int, dict[str, int]] = defaultdict(lambda: {"kept": 0, "final": 0, "rel": 0})
    ordinary = ProjectIssue.objects.filter(
        project=project,
        recall_probe__isnull=True,
        issue__repository_id__in=repo_ids,
        issue__filter_status=filter_status,
    )
    for repo_id in ordinary.values_list("issue__repository_id", flat=True):
        counts[repo_id]["kept"] += 1
    finals = Resolution.objects.filter(
        project=project, is_current=True, issue_id__in=ordinary.values("issue_id")
    )
    for repo_id, fp in finals.values_list("issue__repository_id", "is_false_positive"):
        counts[repo_id]["final"] += 1
        counts[repo_id]["rel"] += not fp
    return counts


def _scaled(c: dict[str, int]) -> float | None:
    """K: relevant kept issues, scaled from the final ones to all kept ones."""
    if c["final"] == 0:
        return None
    return c["rel"] if c["final"] == c["kept"] else c["kept"] * c["rel"] / c["final"]


def _known_losses(c: dict[str, int]) -> Interval:
    """L: relevant ones among the dropped issues the project holds as ordinary issues, scaled
    as K; all of them unknown ([0, M]) while none is final."""
    if c["kept"] == 0:
        return (0.0, 0.0, 0.0)
    scaled = _scaled(c)
    if scaled is None:
        return (None, 0.0, float(c["kept"]))
    return (scaled, scaled, scaled)


def _stratified_kept(counts: Iterable[dict[str, int]]) -> Interval | None:
    """K over all repositories: Σ K_h, each scaled in its own repository (never the pooled
    M·R/F); a repository with kept issues but none final adds [0, M_h] and takes the point
    estimate away, as D's unlabeled stratum. None while no kept issue is final anywhere."""
    counts = [c for c in counts if c["kept"]]
    if not any(c["final"] for c in counts):
        return None
    estimate = 0.0
    unknown = 0
    for c in counts:
        scaled = _scaled(c)
        if scaled is None:
            unknown += c["kept"]
        else:
            estimate += scaled
    return (None if unknown else estimate, estimate, estimate + unknown)


def _stratified_losses(counts: Iterable[dict[str, int]]) -> Interval:
    """L over all repositories: Σ L_h, each repository's known losses scaled in itself."""
    total: Interval = (0.0, 0.0, 0.0)
    for c in counts:
        total = add_intervals(total, _known_losses(c))
    return total


def recall_report(project: Project, population: Population | None = None) -> dict[str, Any]:
    """Everything the recall page shows: the draws, and the estimates overall and per
    repository (see the module's docstring). Shares and recalls are (estimate, low, high)
    tuples, or None while nothing is labeled; the overall estimate is None (bounds kept) while
    a repository with dropped issues has no final probe (`unknown_strata`), or one with kept
    issues has no final one (K, L and D are summed per repository, never pooled).
    `population`: the project's `dropped_population`, when the caller has it."""
    sizes, candidates = population if population is not None else dropped_population(project)
    probes = list(RecallProbe.objects.filter(project=project).select_related("issue__repository"))
    finals = dict(
        Resolution.objects.filter(
            project=project, is_current=True, issue_id__in=[p.issue_id for p in probes]
        ).values_list("issue_id", "is_false_positive")
    )
    ordinary_dropped = dict(
        ProjectIssue.objects.filter(
            project=project,
            recall_probe__isnull=True,
            issue__filter_status=Issue.FilterStatus.FILTERED_OUT,
        )
        .values("issue__repository_id")
        .annotate(n=Count("pk"))
        .values_list("issue__repository_id", "n")
    )
    repo_ids = sorted(set(sizes) | {p.issue.repository_id for p in probes} | set(ordinary_dropped))
    repos = {
        r.pk: r for r in Repository.objects.filter(pk__in=repo_ids).select_related("keyword_set")
    }
    kept = _ordinary_counts(project, repo_ids, Issue.FilterStatus.KEPT)
    known = _ordinary_counts(project, repo_ids, Issue.FilterStatus.FILTERED_OUT)
    by_repo_probes: dict[int, list[RecallProbe]] = defaultdict(list)
    for p in probes:
        by_repo_probes[p.issue.repository_id].append(p)

    def texts(p: RecallProbe) -> tuple[str, str, str]:
        return p.issue.title, p.issue.body, " ".join(p.issue.labels or [])

    rows = []
    strata: list[Stratum] = []
    suggestions: dict[str, dict[str, Any]] = {}
    for repo_id in sorted(repo_ids, key=lambda r: repos[r].full_name):
        repo = repos[repo_id]
        mine = by_repo_probes[repo_id]
        labeled = [p for p in mine if p.issue_id in finals]
        relevant = [p for p in labeled if not finals[p.issue_id]]
        stratum = Stratum(sizes.get(repo_id, 0), len(labeled), len(relevant))
        strata.append(stratum)
        k = _scaled(kept[repo_id])
        known_lost = _known_losses(known[repo_id])
        lost = dropped_relevant([stratum]) if stratum.size else (0.0, 0.0, 0.0)
        rows.append(
            {
                "repository": repo.full_name,
                "dropped": stratum.size,
                "kept": kept[repo_id]["kept"],
                "kept_relevant": k,
                "known_dropped": known[repo_id]["kept"],
                "known_lost": known_lost,
                "sample_size": len(mine),
                "labeled": stratum.labeled,
                "llm_related": stratum.relevant,
                "share": share_interval(stratum.relevant, stratum.labeled),
                "recall": recall_from_losses(
                    k, None if lost is None else add_intervals(lost, known_lost)
                ),
            }
        )
        keyword_set = keyword_set_for(repo)
        for row in keyword_candidates(
            [texts(p) for p in relevant],
            [texts(p) for p in labeled if finals[p.issue_id]],
            keyword_set.keywords if keyword_set else [],
        ):
            merged = suggestions.setdefault(
                row["word"],
                {"word": row["word"], "missed_caught": 0, "false_positives": 0, "repositories": []},
            )
            merged["missed_caught"] += row["missed_caught"]
            merged["false_positives"] += row["false_positives"]
            merged["repositories"].append(repo.full_name)
    kept_bounds = _stratified_kept(kept.values())
    known_lost = _stratified_losses(known.values())
    lost = dropped_relevant(strata)
    keyword_rows = sorted(
        suggestions.values(), key=lambda r: (-r["missed_caught"], r["false_positives"], r["word"])
    )[:MAX_SUGGESTED]
    draws = [
        {
            "draw": d["draw"],
            "seed": d["seed"],
            "margin": d["margin"],
            "size": d["n"],
            "drawn_at": d["drawn_at"],
        }
        for d in RecallProbe.objects.filter(project=project)
        .values("draw", "seed", "margin")
        .annotate(n=Count("pk"), drawn_at=Max("drawn_at"))
        .order_by("draw")
    ]
    return {
        "method": "stratified",
        "sample_size": len(probes),
        "dropped_total": sum(sizes.values()),
        "not_drawn": sum(len(v) for v in candidates.values()),
        "labeled": sum(r["labeled"] for r in rows),
        "llm_related": sum(r["llm_related"] for r in rows),
        "kept_relevant": None if kept_bounds is None else kept_bounds[0],
        "kept_relevant_bounds": kept_bounds,
        "known_dropped": sum(r["known_dropped"] for r in rows),
        "known_lost": known_lost,
        "dropped_relevant": lost,
        "share": stratified_share(strata),
        "recall": recall_from_intervals(
            kept_bounds, None if lost is None else add_intervals(lost, known_lost)
        ),
        "unknown_strata": [r["repository"] for r in rows if r["dropped"] and not r["labeled"]],
        "by_repository": rows,
        "suggested_keywords": [r["word"] for r in keyword_rows],
        "keyword_candidates": keyword_rows,
        "draws": draws,
    }


def recall_summary(project: Project) -> dict[str, Any] | None:
    """The measured recall for the datasheet, or None while no probe is labeled."""
    if not RecallProbe.objects.filter(project=project).exists():
        return None
    report = recall_report(project)
    return report if report["labeled"] else None
