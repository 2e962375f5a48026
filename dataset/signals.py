"""A classifier rater trained (a new version) queues the classifier's ranking of its project's
dropped issues for that version (`dataset.beyond_keywords.start_ranking`), so the recall page
finds it ready instead of fitting in the request."""

from __future__ import annotations

from typing import Any

from dataset.beyond_keywords import start_ranking
from labeling.models import MachineRater
from raters.runs import rater_trained


def _after_training(sender: object, rater: MachineRater, **kwargs: Any) -> None:
    if rater.kind != MachineRater.Kind.CLASSIFIER:
        return
    start_ranking(rater.project, rater, rater.version)


def connect() -> None:
    rater_trained.connect(_after_training, dispatch_uid="dataset.signals.after_training")
