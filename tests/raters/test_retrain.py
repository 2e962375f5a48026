"""Retraining when enough new final labels have arrived: a final label queues the task (only in
a project with a trained classifier); the task reruns the classifiers that are due, called
directly and on a real Celery worker."""

from __future__ import annotations

import pytest
from django.db import IntegrityError

from labeling.models import MachineLabel, MachineRater, Resolution
from raters.models import RaterRun
from raters.runs import RaterBusy, begin_run, create_run, run_rater
from raters.tasks import retrain_due
from tests.raters.conftest import add_finals

pytestmark = pytest.mark.usefixtures("fit_once")


def _trained(project, retrain_after: int = 10) -> MachineRater:
    rater = MachineRater.objects.create(
        project=project, name="tfidf", kind="classifier", retrain_after=retrain_after
    )
    run_rater(create_run(rater, "all").pk)
    rater.refresh_from_db()
    assert (rater.version, rater.trained_on) == (1, 60)
    return rater


@pytest.mark.django_db
def test_enough_new_finals_queue_a_retraining_that_reruns_the_classifier(
    project, repository, finals, django_capture_on_commit_callbacks
):
    rater = _trained(project)
    with django_capture_on_commit_callbacks() as queued:
        add_finals(project, repository, 10, start=5000, seed=7)
    assert len(queued) == 10  # one per new final label; the task decides whether it is due

    assert len(retrain_due(project.pk)) == 1
    rater.refresh_from_db()
    assert (rater.version, rater.trained_on) == (2, 70)
    current = MachineLabel.objects.filter(rater=rater, is_current=True)
    assert current.count() == 80 and {m.model_version for m in current} == {"v2"}
    # Safe to run twice: nothing is due any more.
    assert retrain_due(project.pk) == []
    assert RaterRun.objects.count() == 2


@pytest.mark.django_db
def test_fewer_new_finals_than_the_threshold_retrain_nothing(project, repository, finals):
    rater = _trained(project)
    add_finals(project, repository, 9, start=5000, seed=7)
    assert retrain_due(project.pk) == []
    rater.refresh_from_db()
    assert rater.version == 1


@pytest.mark.django_db
def test_a_project_without_a_trained_classifier_queues_nothing(
    project, repository, django_capture_on_commit_callbacks
):
    MachineRater.objects.create(project=project, name="never-run", kind="classifier")
    with django_capture_on_commit_callbacks() as queued:
        add_finals(project, repository, 3)
    assert Resolution.objects.count() == 3 and queued == []


@pytest.mark.slow
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_retraining_runs_on_a_real_worker(project, repository, finals, start_worker):
    from tests.ingest.test_worker import wait_for

    rater = _trained(project)
    start_worker()
    add_finals(project, repository, 10, start=5000, seed=7)  # autocommit: queued at once

    def retrained() -> bool:
        return RaterRun.objects.filter(rater=rater, status="done").count() == 2

    wait_for(retrained, 120, "the worker's retraining run")
    rater.refresh_from_db()
    assert (rater.version, rater.trained_on) == (2, 70)
    assert (
        MachineLabel.objects.filter(rater=rater, is_current=True, model_version="v2").count() == 80
    )


@pytest.mark.django_db
def test_finals_without_a_code_do_not_make_the_classifier_due(project, repository, finals):
    """The lead resolves issues with no label code: the classifier cannot train on them, so
    they do not count toward `retrain_after` (as `trained_on` does not count them)."""
    rater = _trained(project)
    for issue in add_finals(project, repository, 0, start=6000, open_issues=10):
        Resolution.objects.create(project=project, issue=issue, method="lead")
    assert Resolution.objects.filter(project=project, is_current=True).count() == 70
    assert retrain_due(project.pk) == []

    add_finals(project, repository, 10, start=5000, seed=7)
    assert len(retrain_due(project.pk)) == 1
    rater.refresh_from_db()
    assert (rater.version, rater.trained_on) == (2, 70)


@pytest.mark.django_db
@pytest.mark.parametrize("status", ["pending", "running"])
def test_a_retraining_is_not_started_while_a_run_of_the_rater_is_queued_or_running(
    project, repository, finals, status
):
    rater = _trained(project)
    busy = RaterRun.objects.create(rater=rater, status=status)
    add_finals(project, repository, 10, start=5000, seed=7)

    assert retrain_due(project.pk) == []
    assert RaterRun.objects.filter(rater=rater).count() == 2  # the first run and `busy`
    with pytest.raises(RaterBusy, match=f"run {busy.pk} of tfidf is"):
        begin_run(rater)
    busy.status = "failed"
    busy.save()
    assert len(retrain_due(project.pk)) == 1


@pytest.mark.django_db
def test_a_run_whose_labels_cannot_be_stored_ends_failed_not_running(
    project, repository, finals, monkeypatch
):
    """Two overlapping runs: the second's insert hits `one_current_machine_label` (simulated:
    the insert raises the error the database would)."""
    rater = _trained(project)

    def collide(*args, **kwargs):
        raise IntegrityError('duplicate key value violates "one_current_machine_label"')

    monkeypatch.setattr(MachineLabel.objects, "bulk_create", collide)
    run = run_rater(create_run(rater, "all").pk)
    assert run.status == "failed"
    assert "one_current_machine_label" in run.error
    assert run.finished_at is not None
    rater.refresh_from_db()
    assert rater.version == 1  # not counted as a training


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_two_retrainings_at_once_start_one_run(project, monkeypatch):
    """Two workers handle two close final labels at the same moment: the lock on the rater's
    row lets one of them record a run; the other sees it and starts nothing."""
    import threading
    import time

    from django.db import connection

    from raters import runs

    rater = MachineRater.objects.create(project=project, name="tfidf", kind="classifier")
    slow_create = runs.create_run

    def create_slowly(*args, **kwargs):
        time.sleep(0.5)  # wide enough for the other worker to check in between, unlocked
        return slow_create(*args, **kwargs)

    monkeypatch.setattr(runs, "create_run", create_slowly)
    outcomes: list[str] = []
    start = threading.Barrier(2)

    def worker() -> None:
        try:
            start.wait()
            runs.begin_run(rater)
            outcomes.append("started")
        except runs.RaterBusy:
            outcomes.append("busy")
        finally:
            connection.close()

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert sorted(outcomes) == ["busy", "started"]
    assert RaterRun.objects.filter(rater=rater).count() == 1
