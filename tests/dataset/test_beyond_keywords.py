"""Beyond keywords: Lena (the lead) asks the classifier which issues the keyword filter dropped
look relevant, and adds the likeliest one to the queue from the recall page."""

from __future__ import annotations

import itertools
import random

import pytest

from annotator.models import Membership, Project, Role
from dataset.beyond_keywords import add_dropped_issue, rank_dropped
from dataset.models import RecallProbe
from ingest.models import Repository
from labeling.models import ProjectIssue
from lib.refusal import Refusal
from taxonomy.models import TaxonomyVersion
from tests.conftest import STUDY_TAXONOMY_ID, add_members, make_issue, make_user
from tests.raters.conftest import add_finals, text_of


def test_too_few_final_issues_is_a_message_not_a_ranking(taxonomy_version, repository):
    # First, with a project of its own: before the module's shared rows (below).
    project = Project.objects.create(name="LLM issues pilot", taxonomy_version=taxonomy_version)
    with pytest.raises(Refusal, match="at least 20 final issues"):
        rank_dropped(project)


@pytest.fixture(scope="module")
def dropped_ids(module_db, request) -> tuple[int, list[int], list[int]]:
    """60 final issues to learn from, and 8 dropped issues: 4 written like the relevant labels
    (out-of-memory and NCCL hangs), 4 like the false positives (small image models). Built once
    for the module (module_db, tests/conftest.py) by two annotators of its own; the project id
    and the dropped issues' ids, relevant and not."""

    def build() -> tuple[int, list[int], list[int]]:
        version = TaxonomyVersion.objects.get(pk=request.config.stash[STUDY_TAXONOMY_ID])
        project = Project.objects.create(name="LLM issues pilot", taxonomy_version=version)
        repository = Repository.objects.create(
            forge=Repository.Forge.GITHUB, api_url="https://api.github.com", owner="NVIDIA",
            name="Megatron-LM-shared",
        )  # fmt: skip
        labelers = (make_user("amy-labeler"), make_user("abe-labeler"))
        for user in labelers:
            Membership.objects.create(project=project, user=user, role=Role.ANNOTATOR)
        add_finals(project, repository, 60, annotators=labelers, noise=0.0)
        rng = random.Random(5)
        relevant, irrelevant = [], []
        for n in range(8):
            code = ("C.1", "C.2", "FP", "FP")[n % 4]
            issue = make_issue(
                repository, 5000 + n, title=f"Dropped {n}", body=text_of(code, rng),
                filter_status="filtered_out",
            )  # fmt: skip
            (irrelevant if code == "FP" else relevant).append(issue.pk)
        return project.pk, relevant, irrelevant

    return module_db(build)


@pytest.fixture
def project(dropped_ids, db, lead, annotator, other_annotator, researcher) -> Project:
    """The shared project, with this test's personas as its members (as tests/conftest.py's)."""
    project = Project.objects.get(pk=dropped_ids[0])
    add_members(
        project,
        (lead, Role.LEAD),
        (annotator, Role.ANNOTATOR),
        (other_annotator, Role.ANNOTATOR),
        (researcher, Role.RESEARCHER),
    )
    return project


@pytest.fixture
def dropped(dropped_ids) -> tuple[list[int], list[int]]:
    return dropped_ids[1], dropped_ids[2]


def test_the_relevant_dropped_issues_rank_above_the_false_positives(project, dropped):
    relevant, irrelevant = dropped
    ranking = rank_dropped(project)
    assert {c.issue_id for c in ranking} == set(relevant + irrelevant)
    assert {c.issue_id for c in ranking[:4]} == set(relevant)
    assert all(a.relevance >= b.relevance for a, b in itertools.pairwise(ranking))
    assert ranking[0].relevance > 0.5 > ranking[-1].relevance


def test_an_added_issue_joins_the_queue_as_an_ordinary_issue_and_leaves_the_ranking(
    project, dropped
):
    relevant, _ = dropped
    item = add_dropped_issue(project, relevant[0])
    assert ProjectIssue.objects.get(pk=item.pk).position is not None
    assert not RecallProbe.objects.filter(project=project).exists()  # chosen, not drawn
    assert relevant[0] not in {c.issue_id for c in rank_dropped(project)}
    with pytest.raises(Refusal, match="issue"):
        add_dropped_issue(project, relevant[0])  # already in the queue


def test_lena_ranks_and_adds_from_the_recall_page(client, project, lead, dropped):
    relevant, _ = dropped
    client.force_login(lead)
    page = client.get(f"/projects/{project.pk}/recall/")
    assert b'id="rank-dropped"' in page.content and b'id="ranking-table"' not in page.content
    page = client.get(f"/projects/{project.pk}/recall/?rank=1")
    assert b'id="ranking-table"' in page.content
    assert page.content.count(b'class="add-dropped"') == 8
    answer = client.post(f"/projects/{project.pk}/recall/add/", {"issue": relevant[1]})
    assert answer.status_code == 302
    assert ProjectIssue.objects.filter(project=project, issue_id=relevant[1]).exists()


@pytest.mark.parametrize("value", ["", "abc", "-1", "99999999"])
def test_a_bad_issue_is_a_400_naming_the_field(client, project, lead, dropped, value):
    client.force_login(lead)
    answer = client.post(f"/projects/{project.pk}/recall/add/", {"issue": value})
    assert answer.status_code == 400
    assert b'id="add-errors"' in answer.content


@pytest.mark.parametrize("persona", ["researcher", "annotator", "outsider"])
def test_only_leads_may_rank_or_add(client, project, dropped, persona, request):
    relevant, _ = dropped
    client.force_login(request.getfixturevalue(persona))
    answer = client.post(f"/projects/{project.pk}/recall/add/", {"issue": relevant[0]})
    assert answer.status_code == 404
    assert not ProjectIssue.objects.filter(project=project, issue_id=relevant[0]).exists()
    page = client.get(f"/projects/{project.pk}/recall/?rank=1")
    assert b'id="ranking-table"' not in page.content


def test_adding_an_issue_midway_moves_no_served_item_and_keeps_the_pilot(project, dropped):
    """Lena adds a ranked issue after labeling began: the pilot and every position already
    served stay as they were (a redraw of the queue would move labeled issues in and out of
    the pilot); the new issue comes after them."""
    relevant, _ = dropped
    items = list(ProjectIssue.objects.filter(project=project).order_by("position"))
    for item in items[:5]:
        item.is_pilot = True
        item.save(update_fields=["is_pilot"])
    project.pilot_size = 5
    project.save(update_fields=["pilot_size"])
    before = {i.pk: (i.position, i.is_pilot) for i in items}
    added = add_dropped_issue(project, relevant[1])
    after = {
        i.pk: (i.position, i.is_pilot)
        for i in ProjectIssue.objects.filter(project=project).exclude(pk=added.pk)
    }
    assert after == before
    added.refresh_from_db()
    assert added.position > max(position for position, _ in before.values())
    assert not added.is_pilot
