"""Estimates with machine help on a project (`raters.estimates`, `manage.py estimate`): Lena's
project labels its queue front to back; the human sample is the longest prefix of the queue in
which every issue is final, a disputed issue holds it back until Lena resolves it, and the
estimates are `agreement.estimates` on the codes this test wrote."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from agreement.estimates import estimate_shares
from ingest.models import Issue, Repository
from labeling import resolution, submission
from labeling.models import MachineLabel, MachineRater, ProjectIssue, Resolution
from lib.refusal import Refusal
from raters.estimates import estimate
from tests.builders import final_issue, label_data, label_item
from tests.raters.conftest import label_fields

pytestmark = pytest.mark.django_db

# The queue, front to back: what the humans finally say and what the machine says.
HUMAN = ["C.1", "C.1", "A.1", "FP", "C.2", "C.1", "B.1", "A.1"]
MACHINE = ["C.1", "C.2", "A.1", "FP", "C.2", "C.1", "A.1", "A.1", "C.1", "C.1", "FP", "B.1"]


@pytest.fixture
def queue(project, repository):
    project.annotations_per_issue = 2
    project.save(update_fields=["annotations_per_issue"])
    other = Repository.objects.create(
        forge=Repository.Forge.GITHUB, api_url="https://api.github.com", owner="o", name="r"
    )
    issues = Issue.objects.bulk_create(
        Issue(
            repository=repository if k % 2 == 0 else other,
            number=str(k),
            url=f"https://github.com/x/y/issues/{k}",
            title=f"Issue {k}",
        )
        for k in range(len(MACHINE))
    )
    items = ProjectIssue.objects.bulk_create(
        ProjectIssue(project=project, issue=issue, position=k) for k, issue in enumerate(issues)
    )
    rater = MachineRater.objects.create(project=project, name="clf", kind="external")
    MachineLabel.objects.bulk_create(
        MachineLabel(rater=rater, issue=issue, **label_fields(project, code))
        for issue, code in zip(issues, MACHINE, strict=True)
    )
    return items, rater


def test_a_disputed_issue_holds_the_sample_back_until_it_is_resolved(
    project, queue, annotator, other_annotator, lead
):
    items, rater = queue
    for item, code in zip(items[:2], HUMAN[:2], strict=True):
        final_issue(project, item, code, code)
    # The third issue is in dispute; the fourth and fifth are final behind it.
    label_item(annotator, project, items[2], "A.1")
    label_item(other_annotator, project, items[2], "B.1")
    for item, code in zip(items[3:5], HUMAN[3:5], strict=True):
        final_issue(project, item, code, code)
    items[2].refresh_from_db()
    assert items[2].status == ProjectIssue.Status.DISAGREEMENT

    held = estimate(project, rater).as_json()
    assert held["n_human"] == 2 and held["sample"]["held_back"] == 1

    label = submission.parse_label(project, label_data(project, HUMAN[2]))
    resolution.resolve(items[2], lead, label, Resolution.Method.LEAD_DECISION)
    released = estimate(project, rater).as_json()
    assert released["n_human"] == 5 and released["sample"]["held_back"] == 0
    assert released["n_total"] == len(MACHINE)


def test_the_estimates_are_ppi_on_the_sample_and_the_machine_labels(project, queue):
    items, rater = queue
    for item, code in zip(items[: len(HUMAN)], HUMAN, strict=True):
        final_issue(project, item, code, code)
    report = estimate(project, rater, level="type").as_json()
    type_of = {"C.1": "C", "C.2": "C", "A.1": "A", "B.1": "B", "FP": "FP"}
    n = len(HUMAN)
    expected = estimate_shares(
        report_codes := [row["code"] for row in report["estimates"]],
        [type_of[c] for c in HUMAN],
        [type_of[c] for c in MACHINE[:n]],
        [type_of[c] for c in MACHINE[n:]],
    )
    assert report_codes[-1] == "FP" and {"A", "B", "C"} <= set(report_codes)
    for row, share in zip(report["estimates"], expected, strict=True):
        assert row["by"] is None
        assert row["share"] == pytest.approx(share.share, abs=1e-12)
        assert (row["ci_low"], row["ci_high"]) == pytest.approx((share.ci_low, share.ci_high))
        assert row["classical_share"] == pytest.approx(share.classical_share)
    assert report["level"] == "type" and report["rater"] == "clf"


def test_estimates_by_repository_and_a_replayed_sample(project, queue):
    items, rater = queue
    for item, code in zip(items[: len(HUMAN)], HUMAN, strict=True):
        final_issue(project, item, code, code)
    by_repo = estimate(project, rater, by="repository").as_json()
    assert {row["by"] for row in by_repo["estimates"]} == {"NVIDIA/Megatron-LM", "o/r"}
    replayed = estimate(project, rater, replay=4, seed=7).as_json()
    assert replayed["n_human"] == 4 and replayed["sample"]["method"] == "replay"
    assert replayed == estimate(project, rater, replay=4, seed=7).as_json()
    with pytest.raises(Refusal) as refused:
        estimate(project, rater, replay=100, seed=7)
    assert refused.value.field == "replay_sample"


def test_the_command_prints_json_and_names_what_is_wrong(project, queue):
    items, _ = queue
    for item, code in zip(items[:3], HUMAN[:3], strict=True):
        final_issue(project, item, code, code)
    out = io.StringIO()
    call_command(
        "estimate", "--project", project.name, "--rater", "clf", "--json", "--plan", "0.1",
        stdout=out,
    )  # fmt: skip
    report = json.loads(out.getvalue())
    assert set(report) >= {"method", "rater", "level", "n_human", "n_total", "estimates"}
    assert set(report["estimates"][0]) >= {
        "code", "by", "share", "ci_low", "ci_high",
        "classical_share", "classical_ci_low", "classical_ci_high",
    }  # fmt: skip
    assert report["plan"]["n_ppi"] <= report["plan"]["n_classical"]
    with pytest.raises(CommandError, match="rater: no rater named 'nope'"):
        call_command("estimate", "--project", project.name, "--rater", "nope")


def test_an_empty_sample_is_refused_with_what_holds_it_back(project, queue):
    _, rater = queue
    with pytest.raises(Refusal) as refused:
        estimate(project, rater)
    assert refused.value.field == "sample"
    assert "0 issues at the front of the queue are final" in str(refused.value)
