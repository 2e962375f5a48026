"""Table I: issues per year, final types and false-positive rate per repository group."""

from datetime import UTC, datetime

import pytest

from agreement.table_one import table_one
from ingest.models import Repository
from labeling.models import ProjectIssue, Resolution
from tests.conftest import make_issue


def _final(project, issue, version, code=None, false_positive=False):
    node = version.nodes.get(code=code) if code else None
    return Resolution.objects.create(
        project=project,
        issue=issue,
        method=Resolution.Method.UNANIMOUS,
        is_false_positive=false_positive,
        issue_type=node.issue_type if node else None,
        theme=node,
    )


@pytest.mark.django_db
def test_counts_years_types_and_false_positive_rate(project, repository, taxonomy_version):
    gitee = Repository.objects.create(
        forge="gitee",
        api_url="https://gitee.com/api/v5",
        owner="ascend",
        name="MindSpeed",
        group="MindSpeed",
    )
    spec = [  # repository, created year, final code or FP
        (repository, 2023, "C.5"),
        (repository, 2024, "C.1"),
        (repository, 2024, "A.3"),
        (repository, 2025, "FP"),
        (repository, 2025, None),
        (gitee, 2024, "B.2"),
    ]
    for n, (repo, year, code) in enumerate(spec):
        issue = make_issue(repo, f"X{n}", created_at=datetime(year, 3, 1, tzinfo=UTC))
        ProjectIssue.objects.create(project=project, issue=issue, position=n)
        if code == "FP":
            _final(project, issue, taxonomy_version, false_positive=True)
        elif code:
            _final(project, issue, taxonomy_version, code)
    rows, total = table_one(project)
    megatron, mindspeed = rows
    assert megatron.name == "Megatron"
    # The unlabeled 2025 issue still counts in its year; the false positive does not.
    assert megatron.years == {2023: 1, 2024: 2, 2025: 1}
    assert megatron.types == {"A": 1, "C": 2, "B": 0}
    assert megatron.false_positive_rate == pytest.approx(1 / 4)
    assert mindspeed.types == {"A": 0, "C": 0, "B": 1}
    assert mindspeed.false_positive_rate == 0
    assert total.years == {2023: 1, 2024: 3, 2025: 1}
    assert total.average_rate == pytest.approx((0.25 + 0) / 2)
