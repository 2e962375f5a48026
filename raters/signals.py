"""Retraining on arrival: a new final label queues `raters.tasks.retrain_due` for its project
(by its name, `raters.runs.RETRAIN_TASK`: this module imports no tasks module, and so no
Celery, at start-up), but only where the project has a trained classifier (one indexed look-up
per final label)."""

from __future__ import annotations

from typing import Any

from django.db.models.signals import post_save

from annotator import outbox
from labeling.models import MachineRater, Resolution
from raters.runs import RETRAIN_TASK


def _after_resolution(
    sender: type[Resolution], instance: Resolution, created: bool, **kwargs: Any
) -> None:
    if not created or not instance.is_current or kwargs.get("raw"):
        return
    project_id = instance.project_id
    if not MachineRater.objects.filter(
        project_id=project_id, kind=MachineRater.Kind.CLASSIFIER, version__gt=0
    ).exists():
        return
    outbox.enqueue(RETRAIN_TASK, [project_id])


def connect() -> None:
    post_save.connect(
        _after_resolution, sender=Resolution, dispatch_uid="raters.signals.after_resolution"
    )
