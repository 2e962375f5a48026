"""Active sampling on a project (`raters.sampling`, `manage.py draw_sample`, `manage.py
estimate`): Lena, the lead, draws the human sample from the classifier's uncertainty. The draw
is the seed's and is recorded issue by issue; the drawn issues move to the front of the part of
the queue nobody has been served, the served issues stay where they were; the estimates then
use the drawn issues, weighted by their inclusion probabilities, and a disputed drawn issue
holds them back as in the queue-prefix rule."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from django.utils import translation

from agreement.active import bernoulli_draw, estimate_shares_active, inclusion_probabilities
from ingest.models import Issue
from labeling import resolution, submission
from labeling.models import MachineLabel, MachineRater, ProjectIssue, Resolution
from lib.refusal import Refusal
from raters.estimates import estimate
from raters.models import SampleDraw, SampleInclusion
from raters.sampling import draw_sample
from tests.builders import final_issue, label_data, label_item
from tests.raters.conftest import label_fields

pytestmark = pytest.mark.django_db

SIZE = 40
CODES = ["C.1", "A.1", "B.1", "C.2", "FP"]


def human_code(k: int) -> str:
    return CODES[k % len(CODES)]


def machine_code(k: int) -> str:
    # Right on the issues it is sure of (even k), wrong on a third of the others.
    return human_code(k) if k % 2 == 0 or k % 3 else human_code(k + 1)


def confidence(k: int) -> float | None:
    if k == 5:
        return None  # no confidence: counted as unsure
    return 0.98 if k % 2 == 0 else 0.4


@pytest.fixture
def queue(project, repository):
    project.annotations_per_issue = 2
    project.save(update_fields=["annotations_per_issue"])
    issues = Issue.objects.bulk_create(
        Issue(
            repository=repository,
            number=str(k),
            url=f"https://github.com/x/y/issues/{k}",
            title=f"Issue {k}",
        )
        for k in range(SIZE)
    )
    items = ProjectIssue.objects.bulk_create(
        ProjectIssue(project=project, issue=issue, position=k) for k, issue in enumerate(issues)
    )
    rater = MachineRater.objects.create(project=project, name="clf", kind="external")
    MachineLabel.objects.bulk_create(
        MachineLabel(
            rater=rater, issue=issue, confidence=confidence(k), **label_fields(project, code)
        )
        for k, (issue, code) in enumerate(
            zip(issues, [machine_code(k) for k in range(SIZE)], strict=True)
        )
    )
    return items, rater


def positions(project) -> dict[int, int]:
    return dict(ProjectIssue.objects.filter(project=project).values_list("pk", "position"))


def test_the_draw_is_the_seeds_and_every_probability_is_recorded(project, queue, lead):
    items, rater = queue
    draw = draw_sample(project, rater, size=12, seed=3, user=lead)
    rows = {
        row.issue_id: row for row in SampleInclusion.objects.filter(draw=draw).order_by("issue_id")
    }
    issue_ids = [item.issue_id for item in items]
    assert set(rows) == set(issue_ids)
    # Recorded: the probabilities the method gives for these confidences, summing to 12.
    expected = inclusion_probabilities(
        [1.0 if confidence(k) is None else (1 - confidence(k)) ** 0.5 for k in range(SIZE)], 12
    )
    recorded = [rows[i].probability for i in issue_ids]
    assert recorded == pytest.approx(expected, abs=1e-12)
    assert sum(recorded) == pytest.approx(12)
    assert recorded[1] > recorded[0] and recorded[5] == max(recorded)
    assert [rows[i].confidence for i in issue_ids] == [confidence(k) for k in range(SIZE)]
    drawn = [rows[i].drawn for i in issue_ids]
    assert drawn == bernoulli_draw(expected, 3)
    assert (draw.drawn, draw.budget, draw.seed, draw.rater_version) == (sum(drawn), 12, 3, 0)
    assert draw.created_by == lead and draw.is_current

    again = draw_sample(project, rater, size=12, seed=3)
    assert [r.drawn for r in again.inclusions.order_by("issue_id")] == [
        rows[i].drawn for i in sorted(rows)
    ]
    other = draw_sample(project, rater, size=12, seed=4)
    assert [r.drawn for r in other.inclusions.order_by("issue_id")] != [
        rows[i].drawn for i in sorted(rows)
    ]
    # The newest draw is the current one.
    assert list(SampleDraw.objects.filter(project=project, is_current=True)) == [other]


def test_drawn_issues_go_first_and_served_ones_stay(project, queue, annotator):
    items, rater = queue
    # Two issues were served before the draw: one labeled, one reserved and handed back.
    label_item(annotator, project, items[0], "C.1")
    label_item(annotator, project, items[1], "A.1")
    before = positions(project)
    draw = draw_sample(project, rater, size=12, seed=3)
    after = positions(project)
    assert after[items[0].pk] == before[items[0].pk] == 0
    assert after[items[1].pk] == before[items[1].pk] == 1
    drawn = set(draw.inclusions.filter(drawn=True).values_list("issue_id", flat=True))
    moved = [item for item in items[2:] if item.issue_id in drawn]
    rest = [item for item in items[2:] if item.issue_id not in drawn]
    assert moved and rest
    # Right after the served ones: the drawn issues, then the others in their old order.
    assert sorted(after[item.pk] for item in moved) == list(range(2, 2 + len(moved)))
    assert [after[item.pk] for item in rest] == list(
        range(2 + len(moved), 2 + len(moved) + len(rest))
    )
    assert len(set(after.values())) == SIZE


def test_the_estimate_uses_the_draw_weighted_and_held_back_by_a_dispute(
    client, project, queue, annotator, other_annotator, lead, researcher
):
    items, rater = queue
    draw = draw_sample(project, rater, size=14, seed=5)
    by_issue = {item.issue_id: (k, item) for k, item in enumerate(items)}
    drawn = sorted(
        draw.inclusions.filter(drawn=True).values_list("issue_id", "probability"),
        key=lambda row: positions(project)[by_issue[row[0]][1].pk],
    )
    assert len(drawn) >= 6
    # The first drawn issue in the queue is disputed; the others are final.
    first_k, first = by_issue[drawn[0][0]]
    label_item(annotator, project, first, "A.1")
    label_item(other_annotator, project, first, "B.1")
    for issue_id, _ in drawn[1:]:
        k, item = by_issue[issue_id]
        final_issue(project, item, human_code(k), human_code(k))
    with pytest.raises(Refusal) as refused:
        estimate(project, rater)
    assert refused.value.field == "sample"
    assert "0 issues of the active draw are final" in refused.value.message
    assert "(1 disputed issues hold it back)" in refused.value.message

    label = submission.parse_label(project, label_data(project, human_code(first_k)))
    resolution.resolve(first, lead, label, Resolution.Method.LEAD_DECISION)
    report = estimate(project, rater, level="theme").as_json()
    sample = report["sample"]
    assert sample["method"] == "active" and sample["seed"] == 5
    assert report["n_human"] == len(drawn) and report["n_total"] == SIZE
    assert sample["active"]["pending"] == 0 and sample["active"]["budget"] == 14
    assert sample["active"]["probability_min"] == min(p for _, p in drawn)
    # The numbers: the weighted estimator on the drawn finals and the machine on every issue.
    codes = [row["code"] for row in report["estimates"]]
    expected = estimate_shares_active(
        codes,
        [human_code(by_issue[i][0]) for i, _ in drawn],
        [machine_code(by_issue[i][0]) for i, _ in drawn],
        [machine_code(k) for k in range(SIZE)],
        [p for _, p in drawn],
    )
    for row, share in zip(report["estimates"], expected, strict=True):
        assert row["share"] == pytest.approx(share.share, abs=1e-12)
        assert (row["ci_low"], row["ci_high"]) == pytest.approx((share.ci_low, share.ci_high))
    # The researcher's page says what the sample is.
    client.force_login(researcher)
    url = reverse("estimates_page", args=[project.pk])
    page = client.get(url, {"rater": rater.pk}).content.decode()
    assert 'id="active-sample"' in page
    assert f"An active sample: {len(drawn)} issues drawn" in page
    chinese = client.get(url, {"rater": rater.pk}, HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert "这是主动抽取的样本" in chinese.content.decode()
    translation.activate("en")  # the request left Chinese active in this thread
    # An issue that joins the scope after the draw had no chance: the estimate says draw again.
    late = Issue.objects.create(
        repository=first.issue.repository, number="late", url="https://github.com/x/y/issues/99"
    )
    late_item = ProjectIssue.objects.create(project=project, issue=late, position=SIZE)
    with pytest.raises(Refusal, match="1 issues joined the scope after the active draw"):
        estimate(project, rater)
    late_item.delete()
    # A replay still asks for a uniform draw, whatever the project's sample.
    assert estimate(project, rater, replay=4, seed=1).as_json()["sample"]["method"] == "replay"
    with pytest.raises(Refusal) as no_plan:
        estimate(project, rater, plan_half_width=0.1)
    assert no_plan.value.field == "plan"


def test_the_commands_draw_compare_and_name_what_is_wrong(project, queue):
    items, _ = queue
    for k, item in enumerate(items[:30]):
        final_issue(project, item, human_code(k), human_code(k))
    out = io.StringIO()
    call_command(
        "draw_sample", "--project", project.name, "--rater", "clf", "--size", "10",
        "--seed", "8", "--json", stdout=out,
    )  # fmt: skip
    report = json.loads(out.getvalue())
    assert report["budget"] == 10 and report["seed"] == 8 and report["in_scope"] == SIZE
    assert report["drawn"] == SampleDraw.objects.get(is_current=True, project=project).drawn
    for args, message in (
        (["--size", "41", "--seed", "1"], "size: a whole number from 2 to the 40 issues"),
        (["--size", "5", "--seed", "1", "--uniform-share", "0"], "uniform_share"),
        (["--size", "5", "--seed", str(2**40)], "seed: a whole number"),
    ):
        with pytest.raises(CommandError, match=message):
            call_command("draw_sample", "--project", project.name, "--rater", "clf", *args)
    with pytest.raises(CommandError, match="rater: no rater named 'nope'"):
        call_command(
            "draw_sample", "--project", project.name, "--rater", "nope", "--size", "5",
            "--seed", "1",
        )  # fmt: skip

    out = io.StringIO()
    call_command(
        "estimate", "--project", project.name, "--rater", "clf", "--compare-sampling", "8,12",
        "--draws", "5", "--json", stdout=out,
    )  # fmt: skip
    compared = json.loads(out.getvalue())
    assert compared["population"] == 30 and compared["draws"] == 5
    assert [row["size"] for row in compared["comparisons"]] == [8, 12]
    assert set(compared["comparisons"][0]) >= {
        "uniform_mean_width", "active_mean_width", "human_labels_saved",
    }  # fmt: skip
    for bad, message in (("8,x", "whole numbers"), ("8,30", "each size between 2 and 29")):
        with pytest.raises(CommandError, match=message):
            call_command(
                "estimate", "--project", project.name, "--rater", "clf",
                "--compare-sampling", bad,
            )  # fmt: skip
