"""Beyond keywords: the classifier ranks the issues the keyword filter dropped, so that a lead
can add the likeliest relevant ones to the project's queue.

The dropped issues are those `dataset.recall.dropped_population` offers a draw: in the project's
scope, dropped by the filter (`Issue.filter_status`), not in the project yet. The classifier
(`raters.classifier.fit`, the same features and model as the classifier rater) is trained on the
project's final issues (`raters.runs.final_codes`, theme level) and each dropped issue is scored
by its probability of not being a false positive (`score_dropped`).

Fitting takes seconds to a minute, so it never runs in a request: a job (`RecallRanking`, the
task `dataset.tasks.run_ranking`) scores every dropped issue and stores the scores
(`RankedIssue`), once per version of the project's classifier rater. Training a classifier
rater queues it (`raters.runs.rater_trained`, received by `dataset.signals`); a lead may also
ask for one from the recall page, which is how a project with no trained classifier rater gets
a ranking (its `rater` empty). The page reads the latest ready ranking of the current (rater,
version) (`ranking_state`): the `TOP` best scored issues that are still dropped issues outside
the project. A dropped issue's score depends only on the training set and its own text, so
leaving out the issues that have joined the project since gives what ranking again would.

An issue a lead adds this way joins the queue as an ordinary issue, not as a recall probe: it was
chosen, not drawn at random, so it must not enter the recall estimate. It also leaves the dropped
population that later draws sample from (as any dropped issue in the project does), which the
recall page counts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import QuerySet
from django.utils.translation import gettext, gettext_noop

from annotator import outbox
from annotator.models import Project
from dataset.models import RankedIssue, RecallRanking
from dataset.recall import candidate_ids, dropped_population
from ingest.models import Issue
from labeling.models import MachineRater, ProjectIssue
from labeling.setup import place_in_queue
from lib import stored_messages
from lib.refusal import Refusal
from raters import classifier
from raters.runs import final_codes, issue_texts

# The page lists this many.
TOP = 25
# Scores are written this many rows per statement.
STORE_CHUNK = 5000

TOO_FEW_FINALS = gettext_noop(
    "the classifier needs at least %(needed)s final issues with two "
    "different labels to learn from (this project has %(finals)s)"
)

Progress = Callable[[str, int, int], None]


@dataclass
class Candidate:
    """A dropped issue and the classifier's probability that it is relevant."""

    issue_id: int
    repository: str
    title: str
    url: str
    relevance: float


def _too_few(finals: dict[int, str]) -> bool:
    return len(finals) < classifier.MIN_FINALS or len(set(finals.values())) < 2


def check_trainable(project: Project) -> None:
    """Refusal("rank") when the project's finals are too few to learn from (no fitting)."""
    finals = final_codes(project)
    if _too_few(finals):
        raise Refusal(
            "rank",
            gettext(TOO_FEW_FINALS) % {"needed": classifier.MIN_FINALS, "finals": len(finals)},
        )


def score_dropped(
    project: Project, progress: Progress | None = None
) -> tuple[int, list[tuple[int, float]]]:
    """Fit the classifier on the project's finals and score every dropped issue: the number of
    final issues trained on, and (issue id, relevance) pairs, likeliest first (ties by id).
    What the ranking job stores; Refusal when there is too little to learn from."""
    finals = final_codes(project)
    if _too_few(finals):
        raise Refusal(
            "rank",
            gettext(TOO_FEW_FINALS) % {"needed": classifier.MIN_FINALS, "finals": len(finals)},
        )
    return _score(project, finals, progress or (lambda step, done, total: None))


def _score(
    project: Project, finals: dict[int, str], progress: Progress
) -> tuple[int, list[tuple[int, float]]]:
    _, candidates = dropped_population(project)
    ids = sorted(candidate_ids(candidates))
    if not ids:
        return 0, []
    progress("training", 0, len(ids))
    final_texts = issue_texts(finals)
    trained = [i for i in finals if i in final_texts]
    model = classifier.fit([final_texts[i] for i in trained], [finals[i] for i in trained])
    # Texts read and scored a chunk at a time: a dropped issue's score is its own text's.
    scores: list[float] = []
    for start in range(0, len(ids), classifier.PREDICT_CHUNK):
        chunk = ids[start : start + classifier.PREDICT_CHUNK]
        texts = issue_texts(chunk)
        scores += model.relevance([texts.get(i, "") for i in chunk])
        progress("scoring", start + len(chunk), len(ids))
    ranked = sorted(zip(ids, scores, strict=True), key=lambda pair: (-pair[1], pair[0]))
    return len(trained), ranked


def ranking_key(project: Project) -> tuple[MachineRater | None, int]:
    """Whose ranking the page shows: the project's classifier rater trained last and its
    version, or (None, 0) when no classifier rater is trained."""
    rater = (
        MachineRater.objects.filter(
            project=project, kind=MachineRater.Kind.CLASSIFIER, version__gt=0
        )
        .order_by("-trained_at", "-pk")
        .first()
    )
    return rater, rater.version if rater is not None else 0


def _of_key(project: Project, rater: MachineRater | None, version: int) -> QuerySet[RecallRanking]:
    """The project's rankings for (rater, version); rater None: those with no rater."""
    return RecallRanking.objects.filter(project=project, rater=rater, rater_version=version)


@transaction.atomic
def begin_ranking(
    project: Project, rater: MachineRater | None, version: int, user: User | None = None
) -> tuple[RecallRanking, bool]:
    """A new ranking of the project for (rater, version), and True; or the one of that key
    already queued or running, and False (two requests at once start one job between them:
    the project's row is locked while this decides)."""
    Project.objects.select_for_update().filter(pk=project.pk).first()
    busy = (
        _of_key(project, rater, version)
        .filter(status__in=[RecallRanking.Status.PENDING, RecallRanking.Status.RUNNING])
        .first()
    )
    if busy is not None:
        return busy, False
    ranking = RecallRanking.objects.create(
        project=project, rater=rater, rater_version=version, requested_by=user
    )
    return ranking, True


def run_ranking_job(ranking_id: int) -> RecallRanking:
    """Score the project's dropped issues and store the ranking; safe to run twice (a finished
    ranking is left as it is, and so is a failed one: a new one is asked for). Ranked by the
    delivery that claims it (`lib.jobs.Job.run_claimed`): raises `jobclaim.Busy` while
    another live process ranks it; one `running` under a worker that is gone (killed mid-fit;
    its task delivered again) is taken over and ranked again."""
    ranking = RecallRanking.objects.select_related("project__taxonomy_version").get(pk=ranking_id)
    return ranking.run_claimed(_rank)


def _rank(ranking: RecallRanking) -> RecallRanking:
    progress = ranking.report

    finals = final_codes(ranking.project)
    if _too_few(finals):
        error = stored_messages.dump(
            TOO_FEW_FINALS, needed=classifier.MIN_FINALS, finals=len(finals)
        )
        return _finish(ranking, RecallRanking.Status.FAILED, error=error)
    try:
        trained_on, ranked = _score(ranking.project, finals, progress)
        progress("storing", 0, 1)

        def store() -> None:
            # Stored with its `done`, only by the worker that still owns the ranking
            # (`Job.end`): one taken over meanwhile leaves the scores to the worker that took it
            # over. A ranking taken over from a worker that died may hold part of its scores.
            RankedIssue.objects.filter(ranking=ranking).delete()
            for start in range(0, len(ranked), STORE_CHUNK):
                RankedIssue.objects.bulk_create(
                    RankedIssue(ranking_id=ranking.pk, issue_id=i, relevance=score)
                    for i, score in ranked[start : start + STORE_CHUNK]
                )
            # The rater's earlier rankings are no longer current: their scores go.
            RecallRanking.objects.filter(
                project=ranking.project_id,
                rater=ranking.rater_id,
                status__in=[RecallRanking.Status.DONE, RecallRanking.Status.FAILED],
                created_at__lte=ranking.created_at,
            ).exclude(pk=ranking.pk).delete()

        return _finish(
            ranking,
            RecallRanking.Status.DONE,
            publish=store,
            trained_on=trained_on,
            scored=len(ranked),
        )
    except Exception as exc:
        _finish(
            ranking,
            RecallRanking.Status.FAILED,
            error=stored_messages.dump(gettext_noop("ranking failed: %(error)s"), error=str(exc)),
        )
        raise


def _finish(
    ranking: RecallRanking,
    status: str,
    publish: Callable[[], object] | None = None,
    **fields: Any,
) -> RecallRanking:
    """The ranking's end (`Job.end`), read again from its row; a failed one keeps the progress
    it was read with."""
    if status != RecallRanking.Status.DONE:
        fields.setdefault("progress", ranking.progress)
    ranking.end(status, publish=publish, **fields)
    ranking.refresh_from_db()
    return ranking


@dataclass
class RankingState:
    """What the recall page shows of the ranking: whose it is (the classifier rater and version,
    or none), the latest job of that key, its latest ready ranking and the best candidates."""

    rater: MachineRater | None
    version: int
    job: RecallRanking | None = None
    ready: RecallRanking | None = None
    candidates: list[Candidate] = field(default_factory=list)

    @property
    def working(self) -> bool:
        return self.job is not None and self.job.status in (
            RecallRanking.Status.PENDING,
            RecallRanking.Status.RUNNING,
        )


def ranking_state(
    project: Project, top: int = TOP, dropped: Sequence[int] | None = None
) -> RankingState:
    """The stored ranking of the project's current classifier rater version (no fitting): the
    `top` scored issues still dropped and outside the project, likeliest first. `dropped`: the
    current candidates' ids, when the caller has them (`dataset.recall.candidate_ids`)."""
    rater, version = ranking_key(project)
    rankings = _of_key(project, rater, version).order_by("-created_at", "-pk")
    state = RankingState(rater=rater, version=version, job=rankings.first())
    state.ready = rankings.filter(status=RecallRanking.Status.DONE).first()
    if state.ready is None:
        return state
    if dropped is None:
        dropped = candidate_ids(dropped_population(project)[1])
    still = set(dropped)
    best: list[tuple[int, float]] = []
    scores = RankedIssue.objects.filter(ranking=state.ready).order_by("-relevance", "issue_id")
    batch, start = max(4 * top, 100), 0
    while len(best) < top:
        rows = list(scores.values_list("issue_id", "relevance")[start : start + batch])
        best += [(i, score) for i, score in rows if i in still][: top - len(best)]
        if len(rows) < batch:
            break
        start += batch
    issues = Issue.objects.select_related("repository").in_bulk([i for i, _ in best])
    state.candidates = [
        Candidate(
            issue_id=i,
            repository=issues[i].repository.full_name,
            title=issues[i].title,
            url=issues[i].url,
            relevance=score,
        )
        for i, score in best
    ]
    return state


@transaction.atomic
def add_dropped_issue(project: Project, issue_id: int) -> ProjectIssue:
    """Add one dropped issue of the project's scope to its queue, at a random place among the
    items nobody has been served yet (`place_in_queue`, as recall probes): the pilot, served
    positions and annotators' frontiers stay as they are."""
    # One change of the queue at a time per project, as a draw takes it.
    Project.objects.select_for_update().filter(pk=project.pk).first()
    _, candidates = dropped_population(project)
    if not any(issue_id in group for group in candidates.values()):
        raise Refusal(
            "issue",
            gettext("not a dropped issue of this project's scope that is not in its queue"),
        )
    item = ProjectIssue.objects.create(project=project, issue_id=issue_id)
    project.refresh_from_db(fields=["queue_seed"])
    # Seeded by the project's shuffle and the issue, so the same add places it the same way.
    place_in_queue(project, [item.pk], (project.queue_seed or 0) * 1_000_003 + issue_id)
    return item


# -- asking for a ranking --------------------------------------------------------------------

# The ranking's task is named by its Celery name (`RecallRanking.TASK`): dataset.tasks calls
# this module, never the reverse.


def start_ranking(
    project: Project, rater: MachineRater | None, version: int, user: User | None = None
) -> RecallRanking:
    """Record a ranking of the project for (rater, version) and queue it once the transaction
    commits; one of that key already queued or running is returned instead, not started twice."""
    with transaction.atomic():
        ranking, created = begin_ranking(project, rater, version, user)
        if created:
            outbox.enqueue(ranking.TASK, ranking.task_args())
    return ranking
