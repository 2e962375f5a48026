"""The filter recall is stratified by repository (#21): Lena's probes of a small repository are
all labeled while those of a big one are labeled slowly, and the report must not weigh the
repositories by how far their labeling got.

The example of #21, built through the tool's own functions: 10,000 dropped issues at 2 %
relevant (big) and 1,000 at 50 % (small), 400 relevant issues kept, so the true recall is
400 / (400 + 200 + 500) = 0.364. All 35 probes of the small repository are labeled (17
relevant), 50 of the 350 of the big one (2 relevant). Expected values are worked here by hand
(the Wilson formula and the stratified sums written out), never read from `dataset.recall`.
"""

from __future__ import annotations

import math
import random

import pytest
from django.urls import reverse

from annotator.models import Project, Role
from dataset.models import RecallProbe
from dataset.recall import Stratum, draw_probes, recall_report, stratified_share
from ingest.models import Issue, KeywordSet, Repository
from labeling.models import ProjectIssue
from labeling.setup import Scope, apply_scope
from taxonomy.models import TaxonomyVersion
from tests.conftest import STUDY_TAXONOMY_ID, add_members
from tests.dataset.test_recall import finalize, hand_wilson

pytestmark = pytest.mark.django_db

TRUE_RECALL = 400 / (400 + 10_000 * 0.02 + 1_000 * 0.5)


def hand_stratified(strata: list[tuple[int, int, int]]) -> tuple[float, float, float]:
    """D = Σ N·x/n with MOVER bounds D ∓ √Σ (N·(p - Wilson bound))², written out."""
    estimate = sum(size * x / n for size, x, n in strata)
    below = math.sqrt(sum((size * (x / n - hand_wilson(x, n)[0])) ** 2 for size, x, n in strata))
    above = math.sqrt(sum((size * (hand_wilson(x, n)[1] - x / n)) ** 2 for size, x, n in strata))
    return estimate, estimate - below, estimate + above


def _repository(name: str) -> Repository:
    return Repository.objects.create(
        forge=Repository.Forge.GITHUB,
        api_url="https://api.github.com",
        owner="org",
        name=name,
        is_framework=True,
        keyword_set=KeywordSet.objects.create(name=f"{name} words", keywords=["llm"]),
    )


def _issues(repo: Repository, numbers: range, status: str) -> None:
    Issue.objects.bulk_create(
        Issue(
            repository=repo,
            number=str(n),
            url=f"{repo.web_url}/issues/{n}",
            title=f"Issue {n}",
            filter_status=status,
        )
        for n in numbers
    )


def test_dropped_issues_labeled_as_ordinary_issues_count_as_known_losses(project):
    """Ten of the big repository's dropped issues are in the scope itself (labeled in full);
    four of them are relevant: the recall counts those four as lost, not estimated."""
    repo = _repository("big")
    _issues(repo, range(1, 21), "kept")
    _issues(repo, range(1001, 1011), "filtered_out")
    _issues(repo, range(2001, 2101), "filtered_out")
    apply_scope(project, Scope(repository_ids=[repo.pk], filter_statuses=["kept"]), 0, seed=3)
    # The lead adds ten dropped issues to the queue as ordinary issues.
    ordinary = [str(n) for n in range(1001, 1011)]
    for issue in Issue.objects.filter(repository=repo, number__in=ordinary):
        ProjectIssue.objects.create(project=project, issue=issue, position=100 + issue.pk)
    finalize(
        project,
        ProjectIssue.objects.filter(project=project),
        relevant=[*range(1, 21), *range(1001, 1005)],
    )
    draw_probes(project, sample_size=20, seed=5)
    items = ProjectIssue.objects.filter(project=project, recall_probe__isnull=False)
    numbers = sorted(items.values_list("issue__number", flat=True), key=int)
    finalize(project, items, relevant=numbers[:5])

    report = recall_report(project)
    assert report["dropped_total"] == 100  # the ten in the queue are not sampled
    assert report["known_dropped"] == 10 and report["known_lost"] == (4, 4, 4)
    low, high = hand_wilson(5, 20)
    assert report["recall"] == pytest.approx(
        (20 / (20 + 4 + 100 * 5 / 20), 20 / (20 + 4 + 100 * high), 20 / (20 + 4 + 100 * low))
    )
    assert RecallProbe.objects.filter(project=project).count() == 20


# --- coverage, simulated ----------------------------------------------------------------------


def _coverage(estimator, draws: int = 2000) -> float:
    """Seeded draws of the example's labeled probes (35 of the small repository, 50 of the
    big one, without replacement): how often the interval holds the true share 700/11,000."""
    rng = random.Random(2121)
    small = [1] * 500 + [0] * 500
    big = [1] * 200 + [0] * 9_800
    truth = 700 / 11_000
    covered = 0
    for _ in range(draws):
        x_small = sum(rng.sample(small, 35))
        x_big = sum(rng.sample(big, 50))
        _, low, high = estimator(x_small, x_big)
        covered += low <= truth <= high
    return covered / draws


def test_the_stratified_interval_covers_the_truth_near_95_percent_of_seeded_draws():
    def stratified(x_small: int, x_big: int):
        return stratified_share([Stratum(1_000, 35, x_small), Stratum(10_000, 50, x_big)])

    assert 0.93 <= _coverage(stratified) <= 0.975


def test_the_coverage_check_can_fail_the_pooled_share_misses_often():
    def pooled(x_small: int, x_big: int):
        low, high = hand_wilson(x_small + x_big, 85)
        return None, low, high

    assert _coverage(pooled) < 0.5


# --- K and L per repository, never pooled ------------------------------------------------------


@pytest.fixture
def uneven_progress(project):
    """Lena's "done" repository is labeled in full, her "slow" one barely:

    - kept issues: done 100, all final, 50 relevant; slow 1,000, 10 final, 9 relevant;
    - dropped issues in the queue as ordinary issues: done 10, all final, 4 relevant; slow 100,
      20 final, 10 relevant;
    - 100 further dropped issues each, to sample from.
    """
    done, slow = _repository("done"), _repository("slow")
    _issues(done, range(1, 101), "kept")
    _issues(slow, range(1, 1001), "kept")
    _issues(done, range(1001, 1101), "filtered_out")
    _issues(slow, range(1001, 1101), "filtered_out")
    _issues(done, range(3001, 3011), "filtered_out")
    _issues(slow, range(3001, 3101), "filtered_out")
    apply_scope(
        project, Scope(repository_ids=[done.pk, slow.pk], filter_statuses=["kept"]), 0, seed=3
    )
    for issue in Issue.objects.filter(number__in=[str(n) for n in range(3001, 3101)]):
        ProjectIssue.objects.create(project=project, issue=issue, position=5000 + issue.pk)
    items = ProjectIssue.objects.filter(project=project)
    finalize(
        project,
        items.filter(issue__repository=done),
        relevant=[*range(1, 51), *range(3001, 3005)],
    )
    slow_kept = [str(n) for n in range(1, 11)]
    slow_known = [str(n) for n in range(3001, 3021)]
    finalize(
        project,
        items.filter(issue__repository=slow, issue__number__in=slow_kept + slow_known),
        relevant=[*range(1, 10), *range(3001, 3011)],
    )
    return project, done, slow


def _label_all_probes(project, repo, relevant: int) -> None:
    _label_probes(project, repo, labeled=10, relevant=relevant)


def test_kept_and_known_losses_are_summed_per_repository_not_pooled(uneven_progress):
    project, done, slow = uneven_progress
    draw = draw_probes(project, sample_size=20, seed=5)
    assert draw.by_repository == {"org/done": 10, "org/slow": 10}
    _label_all_probes(project, done, relevant=2)
    _label_all_probes(project, slow, relevant=3)

    report = recall_report(project)
    # K = 100·50/100 + 1,000·9/10 = 50 + 900; the pooled 1,100·59/110 would say 590.
    assert report["kept_relevant"] == pytest.approx(950)
    assert report["kept_relevant_bounds"] == pytest.approx((950, 950, 950))
    # L = 10·4/10 + 100·10/20 = 4 + 50; the pooled 110·14/30 would say 51.3.
    assert report["known_dropped"] == 110
    assert report["known_lost"] == pytest.approx((54, 54, 54))
    lost, lost_low, lost_high = hand_stratified([(100, 2, 10), (100, 3, 10)])
    assert lost == pytest.approx(20 + 30)
    assert report["recall"] == pytest.approx(
        (950 / (950 + 54 + lost), 950 / (950 + 54 + lost_high), 950 / (950 + 54 + lost_low))
    )
    rows = {r["repository"]: r for r in report["by_repository"]}
    assert rows["org/slow"]["kept_relevant"] == pytest.approx(900)
    assert rows["org/done"]["known_lost"] == pytest.approx((4, 4, 4))


def test_a_repository_with_no_final_kept_issue_widens_k_as_an_unlabeled_stratum(project):
    """As above with the slow repository's kept issues all still open: its K is anywhere in
    [0, 1,000], so the overall K and recall have bounds but no point estimate."""
    done, slow = _repository("done"), _repository("slow")
    _issues(done, range(1, 101), "kept")
    _issues(slow, range(1, 1001), "kept")
    _issues(done, range(1001, 1101), "filtered_out")
    _issues(slow, range(1001, 1101), "filtered_out")
    apply_scope(
        project, Scope(repository_ids=[done.pk, slow.pk], filter_statuses=["kept"]), 0, seed=3
    )
    finalize(
        project,
        ProjectIssue.objects.filter(project=project, issue__repository=done),
        relevant=range(1, 51),
    )
    draw_probes(project, sample_size=20, seed=5)
    _label_all_probes(project, done, relevant=2)
    _label_all_probes(project, slow, relevant=3)

    report = recall_report(project)
    assert report["kept_relevant"] is None
    assert report["kept_relevant_bounds"] == pytest.approx((None, 50, 50 + 1_000))
    _, lost_low, lost_high = hand_stratified([(100, 2, 10), (100, 3, 10)])
    assert report["recall"][0] is None
    assert report["recall"][1:] == pytest.approx(
        (50 / (50 + lost_high), 1_050 / (1_050 + lost_low))
    )


def _label_probes(project, repo, labeled: int, relevant: int) -> None:
    """The first `labeled` probes of a repository (by id) final, `relevant` of them relevant."""
    items = ProjectIssue.objects.filter(
        project=project, recall_probe__isnull=False, issue__repository=repo
    ).order_by("pk")
    chosen = list(items.values_list("pk", flat=True)[:labeled])
    numbers = list(items.filter(pk__in=chosen).values_list("issue__number", flat=True))
    finalize(project, items.filter(pk__in=chosen), relevant=numbers[:relevant])


# --- the example of #21, built once for the module --------------------------------------------
# Its 11,400 issues, their scope and final labels, the draw and the small repository's labels
# are the same for both tests that read them (module_db, tests/conftest.py): after every other
# test of the module, which builds repositories of the same names in an empty database.


@pytest.fixture(scope="module")
def drawn_example_id(module_db, request) -> tuple[int, int, int, dict]:
    """Lena's project over a big and a small repository, 400 relevant kept issues, final; the
    example's 385 probes drawn (seed 21) and the small repository's 35 labeled (17 relevant).
    The project id, the two repositories' ids and the draw's allocation."""

    def build() -> tuple[int, int, int, dict]:
        version = TaxonomyVersion.objects.get(pk=request.config.stash[STUDY_TAXONOMY_ID])
        project = Project.objects.create(name="LLM issues pilot", taxonomy_version=version)
        big, small = _repository("big"), _repository("small")
        _issues(big, range(1, 201), "kept")
        _issues(small, range(1, 201), "kept")
        _issues(big, range(1001, 11_001), "filtered_out")
        _issues(small, range(1001, 2001), "filtered_out")
        apply_scope(
            project, Scope(repository_ids=[big.pk, small.pk], filter_statuses=["kept"]), 0, seed=3
        )
        finalize(project, ProjectIssue.objects.filter(project=project), relevant=range(1, 201))
        draw = draw_probes(project, sample_size=385, seed=21)
        _label_probes(project, small, 35, 17)
        return project.pk, big.pk, small.pk, dict(draw.by_repository)

    return module_db(build)


@pytest.fixture
def drawn_example(drawn_example_id, db, lead, researcher):
    project_id, big_id, small_id, by_repository = drawn_example_id
    project = Project.objects.get(pk=project_id)
    add_members(project, (lead, Role.LEAD), (researcher, Role.RESEARCHER))
    return (
        project,
        Repository.objects.get(pk=big_id),
        Repository.objects.get(pk=small_id),
        by_repository,
    )


def test_the_example_of_21_the_stratified_interval_covers_the_true_recall(drawn_example):
    project, big, _small, by_repository = drawn_example  # the small repository's 35 labeled
    # Proportional allocation: 385 * 10,000 / 11,000 = 350 and 35.
    assert by_repository == {"org/big": 350, "org/small": 35}
    _label_probes(project, big, 50, 2)

    report = recall_report(project)
    assert report["labeled"] == 85 and report["llm_related"] == 19
    assert report["kept_relevant"] == 400
    # What the pooled x/n said: 19/85 over all 11,000 dropped, recall 0.140 [0.101, 0.197],
    # an interval that misses the truth (the bug).
    pooled_low, pooled_high = hand_wilson(19, 85)
    pooled = (400 / (400 + 11_000 * pooled_high), 400 / (400 + 11_000 * pooled_low))
    assert round(400 / (400 + 11_000 * 19 / 85), 3) == 0.140
    assert (round(pooled[0], 3), round(pooled[1], 3)) == (0.101, 0.197)
    assert not pooled[0] <= TRUE_RECALL <= pooled[1]

    lost, lost_low, lost_high = hand_stratified([(10_000, 2, 50), (1_000, 17, 35)])
    assert lost == pytest.approx(10_000 * 2 / 50 + 1_000 * 17 / 35)  # 885.7
    estimate, low, high = report["recall"]
    assert estimate == pytest.approx(400 / (400 + lost))
    assert round(estimate, 3) == 0.311
    assert (low, high) == pytest.approx((400 / (400 + lost_high), 400 / (400 + lost_low)))
    assert low <= TRUE_RECALL <= high
    assert report["share"] == pytest.approx((lost / 11_000, lost_low / 11_000, lost_high / 11_000))
    # Each stratum is shown beside the overall figure with its own Wilson interval.
    rows = {r["repository"]: r for r in report["by_repository"]}
    assert rows["org/small"]["share"] == pytest.approx((17 / 35, *hand_wilson(17, 35)))
    assert rows["org/big"]["share"] == pytest.approx((2 / 50, *hand_wilson(2, 50)))
    assert rows["org/big"]["dropped"] == 10_000 and rows["org/small"]["dropped"] == 1_000


def test_a_repository_without_a_final_probe_widens_the_interval(drawn_example, client, lead):
    project, _big, _small, _ = drawn_example  # the big repository: nothing final yet

    report = recall_report(project)
    assert report["unknown_strata"] == ["org/big"]
    # The small repository alone: D in [1,000·l, 1,000·u], and the big one anywhere in
    # [0, 10,000]: no point estimate, the bounds still there.
    low, high = hand_wilson(17, 35)
    assert report["dropped_relevant"] == pytest.approx((None, 1_000 * low, 1_000 * high + 10_000))
    assert report["recall"][0] is None
    assert report["recall"][1:] == pytest.approx(
        (400 / (400 + 1_000 * high + 10_000), 400 / (400 + 1_000 * low))
    )
    client.force_login(lead)
    page = client.get(reverse("filter_recall", args=[project.pk])).content.decode()
    assert 'id="recall-unknown"' in page and "org/big" in page
    assert "<strong>?</strong>" in page
