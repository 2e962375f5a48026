"""Project setup: scope, K and policy, the seeded stratified pilot, the queue order."""

from datetime import UTC, date, datetime

import pytest

from annotator.models import Project
from ingest.models import Issue, Repository
from labeling import setup
from labeling.models import ProjectIssue
from lib.refusal import Refusal
from tests.conftest import make_issue
from tests.labeling.conftest import label_item


@pytest.fixture
def two_repos(repository):
    gitee = Repository.objects.create(
        forge=Repository.Forge.GITEE, api_url="https://gitee.com/api/v5", owner="ascend",
        name="MindSpeed",
    )  # fmt: skip
    kept, out = Issue.FilterStatus.KEPT, Issue.FilterStatus.FILTERED_OUT
    for i in range(30):
        make_issue(repository, 1000 + i, created_at=datetime(2023, 1 + i % 12, 5, tzinfo=UTC),
                   filter_status=kept if i % 3 else out)  # fmt: skip
    for i in range(10):
        make_issue(gitee, f"I{i}X", created_at=datetime(2024, 2, 1, tzinfo=UTC))
    return repository, gitee


def test_scope_by_repository_filter_state_and_dates(project, two_repos):
    megatron, _gitee = two_repos
    scope = setup.Scope(repository_ids=[megatron.pk], filter_statuses=["kept"],
                        created_from=date(2023, 1, 1), created_to=date(2023, 6, 30))  # fmt: skip
    result = setup.apply_scope(project, scope, pilot_size=0, seed=1)
    # Megatron issues opened January to June 2023 that the keyword filter kept.
    assert result["added"] == ProjectIssue.objects.filter(project=project).count() == 12
    assert project.scope["repository_ids"] == [megatron.pk]


def test_issues_leaving_the_scope_are_removed_unless_labeled(project, two_repos, annotator):
    megatron, gitee = two_repos
    setup.apply_scope(project, setup.Scope(), pilot_size=0, seed=1)
    assert ProjectIssue.objects.filter(project=project).count() == 40
    labeled = ProjectIssue.objects.filter(project=project, issue__repository=gitee).first()
    label_item(annotator, project, labeled, "C.1")
    result = setup.apply_scope(project, setup.Scope(repository_ids=[megatron.pk]), 0, 1)
    assert result["removed"] == 9
    assert ProjectIssue.objects.filter(project=project, issue__repository=gitee).get() == labeled


def test_pilot_is_seeded_stratified_and_first(project, two_repos):
    setup.apply_scope(project, setup.Scope(), pilot_size=8, seed=42)
    ordered = list(ProjectIssue.objects.filter(project=project).order_by("position"))
    pilot = [pi for pi in ordered if pi.is_pilot]
    assert ordered[:8] == pilot
    by_repo = sorted(pi.issue.repository.name for pi in pilot)
    assert by_repo.count("MindSpeed") == 2 and by_repo.count("Megatron-LM") == 6
    first_order = [pi.issue_id for pi in ordered]
    setup.order_queue(project, pilot_size=8, seed=42)
    again = list(ProjectIssue.objects.filter(project=project).order_by("position"))
    assert [pi.issue_id for pi in again] == first_order
    setup.order_queue(project, pilot_size=8, seed=43)
    other = list(ProjectIssue.objects.filter(project=project).order_by("position"))
    assert [pi.issue_id for pi in other] != first_order


def test_stratified_sample_adds_up():
    sample = setup.stratified_sample({"a": list(range(10)), "b": list(range(10, 13))}, 5, seed=3)
    assert len(sample) == len(set(sample)) == 5
    assert setup.stratified_sample({"a": [1]}, 5, seed=3) == [1]


def test_configure_validates(project, items, annotator, other_annotator):
    setup.configure(project, 5, Project.Policy.MAJORITY, 0.8)
    project.refresh_from_db()
    assert (project.annotations_per_issue, project.resolution_policy) == (5, "majority")
    for bad in [(0, "majority", 0.8), (3, "nope", 0.8), (3, "majority", 0.5)]:
        with pytest.raises(Refusal):
            setup.configure(project, *bad)
    label_item(annotator, project, items[0], "C.1")
    label_item(other_annotator, project, items[0], "C.1")
    with pytest.raises(Refusal, match="annotations_per_issue"):
        setup.configure(project, 1, "lead_decides", 0.8)


def test_lowering_k_to_what_an_issue_has_compares_it_at_once(
    project, items, annotator, other_annotator
):
    """K 3 → 2 with an issue holding two agreeing labels: no third slot will ever open, so the
    issue is compared now (final), not left open waiting for a label nobody can give."""
    setup.configure(project, 3, Project.Policy.MAJORITY, 0.8)
    label_item(annotator, project, items[0], "C.1")
    label_item(other_annotator, project, items[0], "C.1")
    label_item(annotator, project, items[1], "C.1")
    items[0].refresh_from_db()
    assert items[0].status == ProjectIssue.Status.OPEN
    setup.configure(project, 2, Project.Policy.MAJORITY, 0.8)
    items[0].refresh_from_db()
    items[1].refresh_from_db()
    assert items[0].status == ProjectIssue.Status.FINAL
    assert items[1].status == ProjectIssue.Status.OPEN  # one label of two: still open


def test_choosing_the_adaptive_rule_decides_issues_already_past_its_minimum(
    project, items, annotator, other_annotator
):
    setup.configure(project, 5, Project.Policy.MAJORITY, 0.8)
    label_item(annotator, project, items[0], "C.1")
    label_item(other_annotator, project, items[0], "C.1")
    label_item(annotator, project, items[1], "C.1")
    label_item(other_annotator, project, items[1], "C.2")
    setup.configure(
        project, 5, Project.Policy.MAJORITY, 0.8, stopping_rule="adaptive", min_labels=2,
        lead_margin=2,
    )  # fmt: skip
    items[0].refresh_from_db()
    items[1].refresh_from_db()
    assert items[0].status == ProjectIssue.Status.FINAL  # 2 - 0
    assert items[1].status == ProjectIssue.Status.OPEN  # 1 - 1: one more label


def test_the_setup_pages_scope_action_applies_the_scope_and_says_what_it_did(project, two_repos):
    megatron, _gitee = two_repos
    change = setup.ScopeChange(setup.Scope(repository_ids=[megatron.pk]), pilot_size=3, seed=5)
    done = setup.apply_setup_action(project, change)
    assert done.message == "Scope applied: 30 added, 0 removed, 30 in scope."
    assert done.warning == ""
    assert ProjectIssue.objects.filter(project=project, is_pilot=True).count() == 3


def test_a_scope_action_with_no_repository_to_choose_is_refused_naming_repositories(project):
    with pytest.raises(Refusal, match=r"^repositories: you may manage none of them\.$"):
        setup.apply_setup_action(project, setup.ScopeChange(None, pilot_size=0, seed=0))
    assert not ProjectIssue.objects.filter(project=project).exists()


def test_the_settings_action_configures_and_warns_of_a_minimum_at_k(project):
    adaptive = {"stopping_rule": "adaptive", "lead_margin": 2}
    below = setup.SettingsChange(5, Project.Policy.MAJORITY, 0.8, {**adaptive, "min_labels": 4})
    done = setup.apply_setup_action(project, below)
    assert (done.message, done.warning) == ("Settings saved.", "")
    at_k = setup.SettingsChange(5, Project.Policy.MAJORITY, 0.8, {**adaptive, "min_labels": 5})
    done = setup.apply_setup_action(project, at_k)
    assert "behaves like the fixed rule" in done.warning
    project.refresh_from_db()
    assert (project.annotations_per_issue, project.min_labels) == (5, 5)
    with pytest.raises(Refusal, match=r"^majority_threshold: "):
        setup.apply_setup_action(project, setup.SettingsChange(5, "majority", 0.4))
