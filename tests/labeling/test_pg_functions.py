"""The queue's reservation and a first label as one PL/pgSQL call each (labeling.pg_functions).

Scenarios: Ada and Otto label a pilot project with K = 3. What the one-call path stores must be
what the Python path stores; every case it does not take (a revision, the K-th label, an error)
must still be decided by the Python path; and a database without the functions must still work.
Which path ran is read from PostgreSQL's own per-transaction function statistics.
"""

from __future__ import annotations

import pytest
from django.db import connection

from labeling import pg_functions, queue, submission
from labeling.models import Annotation, ProjectIssue, Reservation
from tests.conftest import make_issue
from tests.labeling.conftest import label_data

pytestmark = pytest.mark.one_path  # each test chooses its path itself


@pytest.fixture
def items(project, repository):
    project.annotations_per_issue = 3
    project.save()
    return [
        ProjectIssue.objects.create(
            project=project, issue=make_issue(repository, n), position=n, is_pilot=n == 0
        )
        for n in range(3)
    ]


def _calls_so_far(function: pg_functions.Function) -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT coalesce(sum(calls), 0) FROM pg_stat_xact_user_functions WHERE funcname = %s",
            [function.name],
        )
        return cursor.fetchone()[0]


@pytest.fixture
def calls(db):
    """How often a function ran during this test (PostgreSQL's statistics of the transaction,
    which may be shared with the tests before: counted from what it held at the start)."""
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL track_functions = 'pl'")
    functions = (queue._reserve_next_function(), submission._submit_first_function())
    before = {function.name: _calls_so_far(function) for function in functions}
    return lambda function: _calls_so_far(function) - before[function.name]


@pytest.fixture
def forget_installed():
    """`usable` remembers what pg_proc held; a test that drops a function must not leave
    that memory to the next test."""
    pg_functions._present.clear()
    yield
    pg_functions._present.clear()


def _label(project, code: str, **extra) -> submission.Label:
    return submission.parse_label(project, label_data(project, code, **extra))


def test_migrate_installs_each_function_under_the_hash_of_its_text(db):
    with connection.cursor() as cursor:
        cursor.execute("SELECT proname FROM pg_proc WHERE proname LIKE 'annotator%%'")
        installed = {row[0] for row in cursor.fetchall()}
    expected = {queue._reserve_next_function().name, submission._submit_first_function().name}
    assert expected <= installed
    for builder in (queue._reserve_next_function, submission._submit_first_function):
        assert pg_functions.usable(builder) is builder()


def test_a_changed_body_gets_another_name():
    one = pg_functions.Function("annotator_x", (("a", "integer"),), "integer", "BEGIN END")
    other = pg_functions.Function("annotator_x", (("a", "integer"),), "integer", "BEGIN  END")
    assert one.name != other.name and one.name.startswith("annotator_x_")


def test_parameters_become_plpgsql_arguments():
    statement = "SELECT 1 WHERE a = %(user)s AND b = %(user)s AND c = %(k)s"
    assert pg_functions.plpgsql(statement) == (
        "SELECT 1 WHERE a = arg_user AND b = arg_user AND c = arg_k"
    )


def test_the_queue_reserves_in_one_call(project, items, annotator, calls):
    got = queue.next_issue_id_for(annotator, project)
    assert got == items[0].pk
    assert calls(queue._reserve_next_function()) == 1
    reservation = Reservation.objects.get(annotator=annotator)
    assert reservation.project_issue_id == items[0].pk and reservation.skipped_at is None
    # Asking again returns the held issue and takes no second slot.
    assert queue.next_issue_id_for(annotator, project) == items[0].pk
    assert Reservation.objects.filter(annotator=annotator).count() == 1


def test_a_first_label_is_one_call_and_stores_what_the_python_path_stores(
    project, items, annotator, other_annotator, calls, settings
):
    label = _label(project, "C.1", summary="NCCL timeout at step 0", note="see log")
    ada_item = queue.next_issue_for(annotator, project)
    ada = submission.submit(annotator, project, ada_item.pk, label)
    assert calls(submission._submit_first_function()) == 1

    settings.DB_FUNCTIONS = False
    otto_item = queue.next_issue_for(other_annotator, project)
    assert otto_item.pk == ada_item.pk  # the pilot issue first, for both
    otto = submission.submit(other_annotator, project, otto_item.pk, label)
    assert calls(submission._submit_first_function()) == 1  # not called again

    stored_ada, stored_otto = Annotation.objects.get(pk=ada.pk), Annotation.objects.get(pk=otto.pk)
    differ = {"id", "annotator", "created_at"}
    for field in Annotation._meta.concrete_fields:
        if field.name not in differ:
            assert getattr(stored_ada, field.attname) == getattr(stored_otto, field.attname), (
                field.name
            )
        # The returned instance is the stored row.
        assert getattr(ada, field.attname) == getattr(stored_ada, field.attname), field.name
    assert stored_ada.is_pilot and stored_ada.revision == 1 and stored_ada.is_current
    assert not Reservation.objects.filter(project_issue=ada_item).exists()
    assert ProjectIssue.objects.get(pk=ada_item.pk).annotation_count == 2


def test_the_kth_label_and_a_revision_are_decided_by_the_python_path(
    project, items, annotator, other_annotator, lead, calls
):
    project.annotations_per_issue = 2
    project.save()
    item = queue.next_issue_for(annotator, project)
    first = submission.submit(annotator, project, item.pk, _label(project, "C.1"))
    # A revision: the function declines (the user already labeled it), Python writes revision 2.
    revised = submission.submit(annotator, project, item.pk, _label(project, "C.2"))
    assert revised.revision == 2 and revised.pk != first.pk
    assert not Annotation.objects.get(pk=first.pk).is_current
    # The K-th label: compared at once, in the same transaction as the insert.
    assert queue.next_issue_for(other_annotator, project).pk == item.pk
    submission.submit(other_annotator, project, item.pk, _label(project, "C.2"))
    item.refresh_from_db()
    assert item.status == ProjectIssue.Status.FINAL and item.annotation_count == 2
    assert calls(submission._submit_first_function()) == 3  # asked each time, took the first


def test_errors_are_the_python_paths_whichever_path_runs(project, items, annotator, calls):
    label = _label(project, "C.1")
    # Never handed out: NotYours (a 404), as without the functions.
    with pytest.raises(submission.NotYours):
        submission.submit(annotator, project, items[2].pk, label)
    # Not an issue of this project at all, or no possible row id.
    with pytest.raises(submission.NotYours):
        submission.submit(annotator, project, 2**63, label)
    assert calls(submission._submit_first_function()) == 1
    assert not Annotation.objects.exists()


def test_without_the_functions_installed_the_python_path_runs(
    project, items, annotator, forget_installed
):
    with connection.cursor() as cursor:
        # Inside the test's transaction: rolled back with it.
        for function in (queue._reserve_next_function(), submission._submit_first_function()):
            cursor.execute(f"DROP FUNCTION {function.name}")
    assert pg_functions.usable(submission._submit_first_function) is None
    item = queue.next_issue_for(annotator, project)
    assert item.pk == items[0].pk
    annotation = submission.submit(annotator, project, item.pk, _label(project, "A.1"))
    assert Annotation.objects.get(pk=annotation.pk).issue_id == item.issue_id


@pytest.mark.django_db(transaction=True)
def test_a_function_that_disappears_under_running_code_falls_back(project, items, annotator):
    # A database recreated or restored while the workers run: `usable` found it before.
    function = submission._submit_first_function()
    assert pg_functions.usable(submission._submit_first_function) is function
    try:
        with connection.cursor() as cursor:
            cursor.execute(f"DROP FUNCTION {function.name}")
        item = queue.next_issue_for(annotator, project)
        annotation = submission.submit(annotator, project, item.pk, _label(project, "A.1"))
        assert Annotation.objects.get(pk=annotation.pk).issue_id == item.issue_id
        # Looked again, and remembered.
        assert pg_functions.usable(submission._submit_first_function) is None
    finally:
        pg_functions.install()
        pg_functions._present.clear()
