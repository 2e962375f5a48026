"""Beyond keywords: the classifier ranks the issues the keyword filter dropped, so that a lead
can add the likeliest relevant ones to the project's queue.

The dropped issues are those `dataset.recall.dropped_population` offers a draw: in the project's
scope, dropped by the filter (`Issue.filter_status`), not in the project yet. The classifier
(`raters.classifier.fit`, the same features and model as the classifier rater) is trained on the
project's final issues (`raters.runs.final_codes`, theme level) and each dropped issue is scored
by its probability of not being a false positive. Nothing is stored: the ranking is computed when
a lead asks for it.

An issue a lead adds this way joins the queue as an ordinary issue, not as a recall probe: it was
chosen, not drawn at random, so it must not enter the recall estimate. It also leaves the dropped
population that later draws sample from (as any dropped issue in the project does), which the
recall page counts.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.utils.translation import gettext

from annotator.models import Project
from dataset.recall import dropped_population
from ingest.models import Issue
from labeling.models import ProjectIssue
from labeling.setup import place_in_queue
from lib.refusal import Refusal
from raters import classifier
from raters.runs import final_codes, issue_texts

# The page lists this many; a larger list is what the command line is for.
TOP = 25


@dataclass
class Candidate:
    """A dropped issue and the classifier's probability that it is relevant."""

    issue_id: int
    repository: str
    title: str
    url: str
    relevance: float


def rank_dropped(project: Project, top: int = TOP) -> list[Candidate]:
    """The `top` dropped issues most likely relevant, likeliest first (ties by issue id)."""
    finals = final_codes(project)
    if len(finals) < classifier.MIN_FINALS or len(set(finals.values())) < 2:
        raise Refusal(
            "rank",
            gettext(
                "the classifier needs at least %(needed)s final issues with two "
                "different labels to learn from (this project has %(finals)s)"
            )
            % {"needed": classifier.MIN_FINALS, "finals": len(finals)},
        )
    _, candidates = dropped_population(project)
    ids = sorted(i for group in candidates.values() for i in group)
    if not ids:
        return []
    texts = issue_texts(set(ids) | set(finals))
    trained = [i for i in finals if i in texts]
    model = classifier.fit([texts[i] for i in trained], [finals[i] for i in trained])
    scores = model.relevance([texts.get(i, "") for i in ids])
    best = sorted(zip(ids, scores, strict=True), key=lambda pair: (-pair[1], pair[0]))[:top]
    issues = Issue.objects.select_related("repository").in_bulk([i for i, _ in best])
    return [
        Candidate(
            issue_id=i,
            repository=issues[i].repository.full_name,
            title=issues[i].title,
            url=issues[i].url,
            relevance=score,
        )
        for i, score in best
    ]


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
