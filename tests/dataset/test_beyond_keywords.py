"""Beyond keywords: Lena (the lead) asks the classifier which issues the keyword filter dropped
look relevant, and adds the likeliest one to the queue from the recall page.

The classifier is fitted by a job (`RecallRanking`), once per version of the project's
classifier rater or when Lena asks; the page only reads what the job stored."""

from __future__ import annotations

import itertools
import random
import re

import pytest
from django.utils import translation

from annotator import outbox
from annotator.models import Membership, Project, QueuedTask, Role
from dataset import beyond_keywords, recall, recall_views
from dataset.beyond_keywords import (
    TOP,
    add_dropped_issue,
    begin_ranking,
    ranking_key,
    ranking_state,
    run_ranking_job,
    score_dropped,
)
from dataset.models import RankedIssue, RecallProbe, RecallRanking
from dataset.recall import dropped_population
from dataset.tasks import run_ranking
from ingest.models import Issue, Repository
from labeling.models import MachineRater, ProjectIssue, Resolution
from lib.refusal import Refusal
from raters import classifier
from raters.runs import create_run, run_rater
from taxonomy.models import TaxonomyVersion
from tests.conftest import STUDY_TAXONOMY_ID, add_members, make_issue, make_user
from tests.raters.conftest import add_finals, text_of


def test_too_few_final_issues_is_a_message_not_a_ranking(
    client, taxonomy_version, repository, lead
):
    # First, with a project of its own: before the module's shared rows (below).
    project = Project.objects.create(name="LLM issues pilot", taxonomy_version=taxonomy_version)
    add_members(project, (lead, Role.LEAD))
    with pytest.raises(Refusal, match="at least 20 final issues"):
        score_dropped(project)
    # Asked for on the page: the refusal beside the button, and no job queued.
    client.force_login(lead)
    answer = client.post(f"/projects/{project.pk}/recall/rank/")
    assert answer.status_code == 400
    assert b'id="rank-error"' in answer.content and b"at least 20 final issues" in answer.content
    assert not RecallRanking.objects.filter(project=project).exists()
    # A job that finds too few (the finals changed after it was queued) fails with the reason,
    # stored to be read in each reader's language.
    ranking, _ = begin_ranking(project, None, 0)
    assert run_ranking_job(ranking.pk).status == RecallRanking.Status.FAILED
    ranking.refresh_from_db()
    assert "at least 20 final issues" in ranking.error_shown
    with translation.override("zh-hans"):
        assert "20" in ranking.error_shown and "at least" not in ranking.error_shown


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


@pytest.fixture
def no_fit_here(monkeypatch):
    """`raters.classifier.fit` fails the test while on (`.on`); off, it fits for real."""
    real = classifier.fit

    class Spy:
        on = True
        calls = 0

        def __call__(self, texts, targets):
            self.calls += 1
            if self.on:
                raise AssertionError("the classifier was fitted where it must not be")
            return real(texts, targets)

    spy = Spy()
    monkeypatch.setattr(classifier, "fit", spy)
    return spy


def expected_ranking(project: Project) -> list[tuple[int, float]]:
    """What the page computed in the request before the job: the classifier fitted on the
    project's current final labels (theme level; these finals are all themes or FP) over each
    issue's title and body, and every dropped issue outside the project scored by 1 - P(FP),
    likeliest first. Read here from the rows, not through the code under test."""
    finals: dict[int, str] = {}
    for row in Resolution.objects.filter(project=project, is_current=True).select_related(
        "issue_type", "theme", "sub_theme"
    ):
        finals[row.issue_id] = "FP" if row.theme is None else row.theme.code
    texts = {i.pk: f"{i.title}\n{i.body}" for i in Issue.objects.all()}
    in_project = set(
        ProjectIssue.objects.filter(project=project).values_list("issue_id", flat=True)
    )
    dropped = sorted(
        i.pk
        for i in Issue.objects.filter(
            filter_status=Issue.FilterStatus.FILTERED_OUT, repository__name="Megatron-LM-shared"
        )
        if i.pk not in in_project
    )
    model = classifier.fit([texts[i] for i in finals], list(finals.values()))
    scores = model.relevance([texts[i] for i in dropped])
    return sorted(zip(dropped, scores, strict=True), key=lambda pair: (-pair[1], pair[0]))


def stored(ranking: RecallRanking) -> list[tuple[int, float]]:
    rows = RankedIssue.objects.filter(ranking=ranking).order_by("-relevance", "issue_id")
    return list(rows.values_list("issue_id", "relevance"))


def shown(page) -> list[int]:
    """The issue ids the page's ranking offers to add, in its order."""
    return [int(i) for i in re.findall(rb'name="issue" value="(\d+)"', page.content)]


def rank_now(project: Project) -> RecallRanking:
    """The job of the page's current key, queued and run as a worker would."""
    ranking, _ = begin_ranking(project, *ranking_key(project))
    return run_ranking_job(ranking.pk)


def test_the_stored_ranking_is_what_the_request_used_to_compute(project, dropped):
    relevant, irrelevant = dropped
    ranking = rank_now(project)
    assert ranking.status == RecallRanking.Status.DONE
    expected = expected_ranking(project)
    assert [i for i, _ in stored(ranking)] == [i for i, _ in expected]
    assert [s for _, s in stored(ranking)] == pytest.approx([s for _, s in expected], abs=1e-12)
    assert (ranking.trained_on, ranking.scored) == (60, 8)
    # And the page's view of it: relevant ones first, likeliest first.
    candidates = ranking_state(project).candidates
    assert {c.issue_id for c in candidates} == set(relevant + irrelevant)
    assert {c.issue_id for c in candidates[:4]} == set(relevant)
    assert all(a.relevance >= b.relevance for a, b in itertools.pairwise(candidates))
    assert candidates[0].relevance > 0.5 > candidates[-1].relevance


def test_the_page_never_fits_the_classifier_in_the_request(
    client, project, lead, dropped, no_fit_here, monkeypatch, django_capture_on_commit_callbacks
):
    relevant, _ = dropped
    # The probe fires: the job's computation fits.
    with pytest.raises(AssertionError, match="fitted where it must not be"):
        score_dropped(project)
    assert no_fit_here.calls == 1

    client.force_login(lead)
    page = client.get(f"/projects/{project.pk}/recall/")
    assert page.status_code == 200
    assert b'id="ranking-none"' in page.content and b'id="rank-dropped"' in page.content
    assert b'id="ranking-table"' not in page.content

    # Lena asks: the job is queued, and the page says it is ranking (and polls) meanwhile.
    monkeypatch.setattr(outbox, "publish", lambda row_id: outbox.run_here(row_id))
    with django_capture_on_commit_callbacks() as queued:
        answer = client.post(f"/projects/{project.pk}/recall/rank/")
    assert answer.status_code == 302 and answer["Location"].endswith("#recall-ranking")
    job = RecallRanking.objects.get(project=project)
    assert (job.status, job.rater, job.requested_by) == ("pending", None, lead)
    assert QueuedTask.objects.filter(task=run_ranking.name, args=[job.pk]).exists()
    for path in ("", "ranking/"):
        page = client.get(f"/projects/{project.pk}/recall/{path}")
        assert b'id="ranking-progress"' in page.content
        assert f'hx-get="/projects/{project.pk}/recall/ranking/"'.encode() in page.content
        assert b'id="ranking-table"' not in page.content
        assert b'id="rank-dropped"' not in page.content
    # Asking again while it is queued starts nothing more.
    client.post(f"/projects/{project.pk}/recall/rank/")
    assert RecallRanking.objects.filter(project=project).count() == 1

    # A worker runs the task (the fit allowed there only).
    no_fit_here.on = False
    for callback in queued:
        callback()
    no_fit_here.on = True
    job.refresh_from_db()
    assert job.status == RecallRanking.Status.DONE and no_fit_here.calls == 2

    for path in ("", "ranking/"):
        page = client.get(f"/projects/{project.pk}/recall/{path}")
        assert b'id="ranking-table"' in page.content and b"hx-get" not in page.content
        assert shown(page) == [i for i, _ in stored(job)]
    # Adding one, and a refused add, read the stored ranking too.
    answer = client.post(f"/projects/{project.pk}/recall/add/", {"issue": relevant[1]})
    assert answer.status_code == 302
    page = client.get(answer["Location"])
    assert relevant[1] not in shown(page) and len(shown(page)) == 7
    answer = client.post(f"/projects/{project.pk}/recall/add/", {"issue": relevant[1]})
    assert answer.status_code == 400 and b'id="ranking-table"' in answer.content
    assert no_fit_here.calls == 2


def test_an_added_issue_joins_the_queue_as_an_ordinary_issue_and_leaves_the_ranking(
    project, dropped
):
    relevant, _ = dropped
    rank_now(project)
    item = add_dropped_issue(project, relevant[0])
    assert ProjectIssue.objects.get(pk=item.pk).position is not None
    assert not RecallProbe.objects.filter(project=project).exists()  # chosen, not drawn
    left = [(c.issue_id, c.relevance) for c in ranking_state(project).candidates]
    assert relevant[0] not in {i for i, _ in left}
    # The stored ranking without it is what ranking again would give.
    again = expected_ranking(project)
    assert [i for i, _ in left] == [i for i, _ in again]
    assert [s for _, s in left] == pytest.approx([s for _, s in again], abs=1e-12)
    with pytest.raises(Refusal, match="issue"):
        add_dropped_issue(project, relevant[0])  # already in the queue


def test_the_page_reads_the_dropped_issues_once_for_the_report_and_the_ranking(
    client, project, lead, dropped, monkeypatch
):
    """Lena's recall page shows the report and the stored ranking, both of the same dropped
    issues: they are read once per load and shared, not once for each."""
    rank_now(project)
    reads: list[int] = []

    def counted(of: Project):
        reads.append(of.pk)
        return dropped_population(of)

    for module in (recall, beyond_keywords, recall_views):  # wherever a caller has it from
        monkeypatch.setattr(module, "dropped_population", counted, raising=False)
    client.force_login(lead)
    # The probe: the ranking's card alone reads them, through the counter.
    card = client.get(f"/projects/{project.pk}/recall/ranking/")
    assert b'id="ranking-table"' in card.content and reads == [project.pk]
    reads.clear()
    page = client.get(f"/projects/{project.pk}/recall/")
    assert page.status_code == 200 and b'id="ranking-table"' in page.content
    assert shown(page) == shown(card)
    assert reads == [project.pk]


def test_a_retrained_raters_page_shows_the_new_versions_ranking_after_its_job(
    client, project, lead, dropped, monkeypatch
):
    """Training the classifier rater queues the ranking of its version; trained again (new
    final labels), the page shows the new version's ranking once its job ran, never the old
    one as current."""
    client.force_login(lead)
    rater = MachineRater.objects.create(project=project, name="tfidf", kind="classifier")
    run_rater(create_run(rater, "all").pk)
    first = RecallRanking.objects.get(project=project)
    assert (first.rater, first.rater_version, first.status) == (rater, 1, "pending")
    row = QueuedTask.objects.get(task=run_ranking.name, args=[first.pk])
    page = client.get(f"/projects/{project.pk}/recall/")
    assert b'id="ranking-progress"' in page.content and b"version 1" in page.content
    outbox.run_here(row.pk)  # as a worker would
    first.refresh_from_db()
    page = client.get(f"/projects/{project.pk}/recall/")
    assert first.status == "done" and shown(page) == [i for i, _ in stored(first)]
    first_scores = [s for _, s in stored(first)]

    # Twenty new final labels, written with each label's words mixed: the rater trained again.
    repository = Repository.objects.get(name="Megatron-LM-shared")
    add_finals(project, repository, 20, start=7000, seed=11, noise=0.6)
    run_rater(create_run(rater, "all").pk)
    rater.refresh_from_db()
    assert rater.version == 2
    second = RecallRanking.objects.get(project=project, rater_version=2)
    page = client.get(f"/projects/{project.pk}/recall/")
    assert b'id="ranking-progress"' in page.content and b"version 2" in page.content
    assert b'id="ranking-table"' not in page.content  # v1's is not shown as current
    outbox.run_here(QueuedTask.objects.get(task=run_ranking.name, args=[second.pk]).pk)
    second.refresh_from_db()
    assert (second.status, second.trained_on) == ("done", 80)

    page = client.get(f"/projects/{project.pk}/recall/")
    expected = expected_ranking(project)
    assert shown(page) == [i for i, _ in expected][:TOP]
    assert [s for _, s in stored(second)] == pytest.approx([s for _, s in expected], abs=1e-12)
    assert [s for _, s in stored(second)] != pytest.approx(first_scores)  # new finals, new scores
    assert not RecallRanking.objects.filter(pk=first.pk).exists()  # its scores went with it


@pytest.mark.parametrize("value", ["", "abc", "-1", "99999999"])
def test_a_bad_issue_is_a_400_naming_the_field(client, project, lead, dropped, value):
    client.force_login(lead)
    answer = client.post(f"/projects/{project.pk}/recall/add/", {"issue": value})
    assert answer.status_code == 400
    assert b'id="add-errors"' in answer.content


@pytest.mark.parametrize("persona", ["researcher", "annotator", "outsider"])
def test_only_leads_may_rank_or_add(client, project, dropped, persona, request):
    relevant, _ = dropped
    rank_now(project)
    client.force_login(request.getfixturevalue(persona))
    answer = client.post(f"/projects/{project.pk}/recall/add/", {"issue": relevant[0]})
    assert answer.status_code == 404
    assert not ProjectIssue.objects.filter(project=project, issue_id=relevant[0]).exists()
    assert client.post(f"/projects/{project.pk}/recall/rank/").status_code == 404
    assert client.get(f"/projects/{project.pk}/recall/ranking/").status_code == 404
    assert RecallRanking.objects.filter(project=project).count() == 1
    page = client.get(f"/projects/{project.pk}/recall/")
    assert b'id="ranking-table"' not in page.content and b'id="recall-ranking"' not in page.content


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
