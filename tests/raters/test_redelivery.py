"""A rater run's task delivered twice (the broker's visibility timeout passed during a long
run): the second delivery leaves a run that a live process runs alone and looks again later;
one whose process is gone it takes over and finishes."""

from __future__ import annotations

import os
import socket

import pytest
from celery.exceptions import Retry
from django.utils import timezone

from labeling.models import MachineLabel
from raters.models import RaterRun
from raters.runs import RaterSettings, add_rater, create_run
from raters.tasks import run_rater_task

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fit_once")]


def test_a_second_delivery_waits_for_a_live_run_and_takes_over_a_dead_ones(project, lead, finals):
    rater = add_rater(project, RaterSettings(name="tfidf", kind="classifier"), lead)
    run = create_run(rater)
    alive = f"{socket.gethostname()}:{os.getppid()}"  # another process, running
    RaterRun.objects.filter(pk=run.pk).update(
        status="running", worker=alive, heartbeat_at=timezone.now(), started_at=timezone.now()
    )
    with pytest.raises(Retry):  # told to look again in a minute
        run_rater_task.apply(args=[run.pk])
    assert RaterRun.objects.get(pk=run.pk).status == "running"
    assert not MachineLabel.objects.filter(run=run).exists()

    dead = f"{socket.gethostname()}:{2**22 + 1}"  # above Linux's highest pid
    RaterRun.objects.filter(pk=run.pk).update(worker=dead)
    assert run_rater_task.apply(args=[run.pk]).state == "SUCCESS"
    run.refresh_from_db()
    assert run.status == "done" and run.done == run.total == 70
    assert MachineLabel.objects.filter(run=run).count() == 70
