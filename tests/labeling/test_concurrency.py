"""Twenty annotators label 200 issues at once on real Postgres, K = 3.

Every issue must end with exactly three current annotations from three distinct annotators,
and every submission that reported success must be in the database.
"""

import random
import threading
from collections import Counter

import pytest
from django.db import connection
from django.db.models import Count

from annotator.models import Membership, Role
from ingest.models import Issue
from labeling import queue, submission
from labeling.models import Annotation, ProjectIssue
from tests.conftest import make_user
from tests.labeling.conftest import label_data

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow, pytest.mark.one_path]

THREADS = 20
ISSUES = 200
K = 3


# On PostgreSQL a reservation and a first label are one function call each; the K-th label
# and every other case go the Python way, which is also the whole path with the functions off.
@pytest.mark.parametrize("functions", [True, False], ids=["pg-functions", "python-only"])
def test_twenty_annotators_never_overfill_or_lose_an_issue(
    project, repository, settings, functions
):
    settings.DB_FUNCTIONS = functions
    project.annotations_per_issue = K
    project.save()
    issues = Issue.objects.bulk_create(
        [
            Issue(repository=repository, number=str(n), url=f"{repository.web_url}/issues/{n}")
            for n in range(ISSUES)
        ]
    )
    ProjectIssue.objects.bulk_create(
        [ProjectIssue(project=project, issue=issue, position=n) for n, issue in enumerate(issues)]
    )
    users = [make_user(f"volunteer-{n}") for n in range(THREADS)]
    Membership.objects.bulk_create(
        [Membership(project=project, user=u, role=Role.ANNOTATOR) for u in users]
    )
    codes = ["C.1", "C.2", "A.1", "B.3"]
    labels = [submission.parse_label(project, label_data(project, c)) for c in codes]
    submitted: Counter = Counter()
    errors: list[BaseException] = []
    start = threading.Barrier(THREADS)

    def work(user, seed: int) -> None:
        rng = random.Random(seed)
        try:
            start.wait()
            while True:
                item = queue.next_issue_for(user, project)
                if item is None:
                    break
                if rng.random() < 0.05:
                    queue.skip(user, item)
                    continue
                submission.submit(user, project, item, rng.choice(labels))
                submitted[user.pk] += 1
        except BaseException as exc:
            errors.append(exc)
        finally:
            # Each thread had its own connection; close it so the test database can be dropped.
            connection.close()

    threads = [threading.Thread(target=work, args=(u, n)) for n, u in enumerate(users)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=240)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    assert errors == []

    per_issue = (
        Annotation.objects.filter(project=project, is_current=True)
        .values("issue_id")
        .annotate(n=Count("id"), distinct=Count("annotator", distinct=True))
    )
    assert len(per_issue) == ISSUES
    assert {(row["n"], row["distinct"]) for row in per_issue} == {(K, K)}
    assert sum(submitted.values()) == Annotation.objects.count() == ISSUES * K
    assert not ProjectIssue.objects.filter(project=project, status="open").exists()
    assert set(
        ProjectIssue.objects.filter(project=project).values_list("annotation_count", flat=True)
    ) == {K}
