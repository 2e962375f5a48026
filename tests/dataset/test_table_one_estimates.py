# ruff: noqa: RUF001 (the pages show intervals with an en dash and Chinese punctuation)
"""Table I with estimated shares beside its counts (#29): Lena's project labels the front of its
seeded queue with an enlisted external rater's help. Rita (researcher) opens Table I and reads,
beside each repository's counts, the estimated type shares with their 95 % intervals; the API
gives the same figures. They are `raters.estimates.estimate(..., by="repository")` called here
(the Sum row's `estimate(...)` over the scope). Ada (an annotator) sees the counts alone. With a
second enlisted rater Table I takes the one with the better advantage probability; `?rater=`
picks another, and a rater of no project is a 400 naming `rater`. Once every issue is final,
the page says there is nothing to estimate.
"""

from __future__ import annotations

import random
import re

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from labeling.models import MachineLabel, MachineRater
from raters.alt_test import rater_alt_test
from raters.estimates import estimate
from tests.raters.conftest import WORDS, label_fields
from tests.raters.test_release_estimates import labeled_study

pytestmark = pytest.mark.django_db

LABELS = {"A": "Question", "C": "Bug", "B": "Requirement", "FP": "False positive"}
ROW = {"NVIDIA/Megatron-LM": "Megatron", "vllm-project/vllm": "vLLM"}  # the repositories' groups


@pytest.fixture
def enlisted(project, repository, annotator, other_annotator) -> MachineRater:
    rater = labeled_study(project, repository, annotator, other_annotator, open_issues=10)
    MachineRater.objects.filter(pk=rater.pk).update(enlisted=True)
    return rater


def _api(user, project, **query):
    api = APIClient()
    api.force_authenticate(user)
    return api.get(reverse("api_table_one", args=[project.pk]), query)


def test_rita_reads_estimated_shares_beside_the_counts(client, project, researcher, enlisted):
    by_repository = estimate(project, enlisted, level="type", by="repository").as_json()
    overall = estimate(project, enlisted, level="type").as_json()
    assert overall["n_human"] == 70 and overall["n_total"] == 80

    data = _api(researcher, project).json()
    assert data["estimates"]["rater"] == "their-model"
    assert data["estimates"]["status"] == "estimated"
    assert data["estimates"]["chosen"] == "enlisted"
    assert data["estimates"]["n_human"] == 70 and data["estimates"]["n_total"] == 80
    rows = {row["name"]: row for row in data["rows"]}
    seen = 0
    for want in by_repository["estimates"]:
        got = rows[ROW[want["by"]]]["estimated"][LABELS[want["code"]]]
        for key in ("share", "ci_low", "ci_high", "classical_ci_low", "classical_ci_high"):
            assert got[key] == pytest.approx(want[key], abs=1e-12), (want["by"], key)
        seen += 1
    assert seen == 2 * len(LABELS)
    for want in overall["estimates"]:
        assert rows["Sum"]["estimated"][LABELS[want["code"]]]["share"] == pytest.approx(
            want["share"], abs=1e-12
        )
    assert rows["vLLM"]["final"] == 30  # the counts are the final issues' still

    client.force_login(researcher)
    page = client.get(reverse("table_one", args=[project.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="table-one-estimates-method"' in html and "their-model" in html
    body = html.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    vllm_row = next(r for r in body.split("<tr>") if r.startswith("<td>vLLM</td>"))
    bug = next(
        e for e in by_repository["estimates"] if e["by"] == "vllm-project/vllm" and e["code"] == "C"
    )
    shown = re.search(
        r'data-code="C">([0-9.]+) %</span><br>'
        r'<span class="estimated-interval">\(([0-9.]+)–([0-9.]+)\)',
        vllm_row,
    )
    assert shown is not None
    share, low, high = (float(x) for x in shown.groups())
    assert share == pytest.approx(100 * bug["share"], abs=0.051)
    assert (low, high) == pytest.approx((100 * bug["ci_low"], 100 * bug["ci_high"]), abs=0.051)

    # In Chinese, the note and the columns' headings are Chinese.
    chinese = client.get(reverse("table_one", args=[project.pk]), HTTP_ACCEPT_LANGUAGE="zh-hans")
    text = chinese.content.decode()
    assert "问题（估计）" in text and "误报（估计）" in text and "预测驱动推断" in text


def test_an_annotator_sees_the_counts_alone(client, project, annotator, enlisted):
    data = _api(annotator, project, rater=enlisted.pk).json()
    assert data["estimates"] is None
    assert all(row["estimated"] is None for row in data["rows"])
    client.force_login(annotator)
    page = client.get(reverse("table_one", args=[project.pk]), {"rater": enlisted.pk})
    assert page.status_code == 200
    assert b"table-one-estimates" not in page.content and b"their-model" not in page.content


def test_the_better_rater_is_taken_and_another_may_be_chosen(
    client, project, researcher, enlisted, taxonomy_version
):
    # A second enlisted rater that labels at random: its advantage probability is lower.
    rng = random.Random(5)
    guesser = MachineRater.objects.create(
        project=project, name="a-guesser", kind="external", enlisted=True
    )
    labeled = MachineLabel.objects.filter(rater=enlisted).values_list("issue_id", flat=True)
    MachineLabel.objects.bulk_create(
        MachineLabel(
            rater=guesser, issue_id=issue_id, **label_fields(project, rng.choice(list(WORDS)))
        )
        for issue_id in labeled
    )
    rho = {r.name: rater_alt_test(r).advantage_probability for r in (enlisted, guesser)}
    assert rho["their-model"] > rho["a-guesser"]  # the probe: the choice is not by name
    assert _api(researcher, project).json()["estimates"]["rater"] == "their-model"

    chosen = _api(researcher, project, rater=guesser.pk).json()["estimates"]
    assert chosen["rater"] == "a-guesser" and chosen["chosen"] == "requested"

    from annotator.models import Project

    other = Project.objects.create(name="Other study", taxonomy_version=taxonomy_version)
    foreign = MachineRater.objects.create(project=other, name="theirs", kind="classifier")
    for wrong in (foreign.pk, "x", "99999999999999999999999"):
        bad = _api(researcher, project, rater=wrong)
        assert bad.status_code == 400 and "rater" in bad.json(), wrong
    client.force_login(researcher)
    page = client.get(reverse("table_one", args=[project.pk]), {"rater": "x"})
    assert page.status_code == 400 and b'id="rater-errors"' in page.content


def test_a_project_whose_every_issue_is_final_has_nothing_to_estimate(
    client, project, repository, annotator, other_annotator, researcher
):
    rater = labeled_study(project, repository, annotator, other_annotator, open_issues=0)
    data = _api(researcher, project, rater=rater.pk).json()
    assert data["estimates"]["status"] == "nothing_to_estimate"
    assert all(row["estimated"] is None for row in data["rows"])
    client.force_login(researcher)
    page = client.get(reverse("table_one", args=[project.pk]), {"rater": rater.pk})
    assert b"there is nothing to estimate" in page.content
    assert b"estimated-share" not in page.content


def test_a_row_of_several_repositories_has_no_estimate(project, repository, researcher, enlisted):
    from ingest.models import Repository

    Repository.objects.filter(name="vllm").update(group="Megatron")  # one row, two repositories
    data = _api(researcher, project).json()
    assert data["estimates"]["several_repositories"] == ["Megatron"]
    [row, total] = data["rows"]
    assert row["name"] == "Megatron" and row["estimated"] is None
    assert total["estimated"]["Bug"]["share"] == pytest.approx(
        next(
            e["share"]
            for e in estimate(project, enlisted).as_json()["estimates"]
            if e["code"] == "C"
        )
    )
