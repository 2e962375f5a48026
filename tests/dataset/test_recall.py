"""The keyword filter's recall: Lena (lead) draws a sample of the issues the filter dropped
into her project as recall probes; once they are labeled, the report gives the share of
relevant issues among the dropped ones and the filter's recall with Wilson intervals, on the
page, from the command line and in the release's datasheet.

Expected values are computed here by hand (the Wilson formula written out, the sample-size
formula's values worked on paper), never read from `dataset.recall`'s output.
"""

from __future__ import annotations

import csv
import io
import json
import math
import random
import zipfile

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from dataset.models import RecallProbe
from dataset.recall import (
    draw_probes,
    recall_interval,
    recall_report,
    recall_summary,
    sample_size_for,
    share_interval,
)
from dataset.releases import build_release, create_release, release_path
from ingest.models import Issue, KeywordSet, Repository
from labeling.models import ProjectIssue, Resolution
from labeling.setup import Scope, apply_scope, order_queue, stratified_sample
from lib.refusal import Refusal
from taxonomy.models import TaxonomyNode
from tests.conftest import make_issue

pytestmark = pytest.mark.django_db

Z = 1.959963984540054
KEPT_RELEVANT, KEPT_FP = 8, 2
DROPPED_RELEVANT = range(101, 111)  # "vllm" issues the filter missed
DROPPED_OTHER = range(111, 151)  # genuinely off-topic


def hand_wilson(x: int, n: int) -> tuple[float, float]:
    """The Wilson score interval, written out."""
    p = x / n
    centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z / (1 + Z * Z / n) * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n))
    return centre - half, centre + half


@pytest.fixture
def framework(db):
    keyword_set = KeywordSet.objects.create(name="LLM words", keywords=["llm", "gpt", "lora"])
    return Repository.objects.create(
        forge=Repository.Forge.GITHUB,
        api_url="https://api.github.com",
        owner="pytorch",
        name="pytorch",
        is_framework=True,
        keyword_set=keyword_set,
    )


@pytest.fixture
def study(project, framework):
    """Lena's project: 10 kept issues (8 relevant, 2 false positives, all final) and 50 dropped
    ones outside the scope (10 about vLLM, which the keyword set misses)."""
    for n in range(1, KEPT_RELEVANT + KEPT_FP + 1):
        make_issue(framework, n, title=f"LLM pretraining diverges {n}", filter_status="kept")
    for n in DROPPED_RELEVANT:
        make_issue(
            framework,
            n,
            title=f"vllm serving crashes with tensor parallel {n}",
            body="The vllm engine dies when the KV cache fills.",
            filter_status="filtered_out",
        )
    for n in DROPPED_OTHER:
        make_issue(
            framework,
            n,
            title=f"Typo in the docs of torch.fft page {n}",
            body="A broken link.",
            filter_status="filtered_out",
        )
    apply_scope(
        project,
        Scope(repository_ids=[framework.pk], filter_statuses=["kept"]),
        pilot_size=2,
        seed=11,
    )
    finalize(project, ProjectIssue.objects.filter(project=project), relevant=range(1, 9))
    return project


def finalize(project, items, relevant) -> None:
    """Final labels as the resolution would store them: relevant numbers get a type, the rest
    are false positives."""
    issue_type = TaxonomyNode.objects.filter(
        version_id=project.taxonomy_version_id, level=TaxonomyNode.Level.TYPE
    ).first()
    wanted = {str(n) for n in relevant}
    Resolution.objects.bulk_create(
        Resolution(
            project=project,
            issue_id=issue_id,
            method=Resolution.Method.UNANIMOUS,
            is_false_positive=number not in wanted,
            false_positive_reason="keyword_in_names" if number not in wanted else "",
            issue_type=None if number not in wanted else issue_type,
        )
        for issue_id, number in items.values_list("issue_id", "issue__number")
    )
    items.update(status=ProjectIssue.Status.FINAL)


def probe_items(project):
    return ProjectIssue.objects.filter(project=project, recall_probe__isnull=False)


# --- the sample size -------------------------------------------------------------------------


def test_the_sample_size_for_a_margin_matches_values_worked_by_hand():
    # n0 = 1.96^2 * 0.25 / 0.05^2 = 384.15 -> 385 without correction (a huge population);
    # with N = 2000: 384.15 / (1 + 383.15 / 2000) = 322.4 -> 323; N = 100: 79.5 -> 80;
    # margin 0.1, N = 500: 96.04 / (1 + 95.04 / 500) = 80.7 -> 81.
    assert sample_size_for(0.05, 10**9) == 385
    assert sample_size_for(0.05, 2000) == 323
    assert sample_size_for(0.05, 100) == 80
    assert sample_size_for(0.1, 500) == 81
    # An expected share of 10 %: 1.96^2 * 0.09 / 0.0025 = 138.3 -> 139.
    assert sample_size_for(0.05, 10**9, expected_share=0.1) == 139
    assert sample_size_for(0.05, 20) == 20  # never more than there is
    with pytest.raises(Refusal) as exc:
        sample_size_for(0, 100)
    assert exc.value.field == "margin"


# --- the interval covers the true recall -----------------------------------------------------


def _coverage(kept_relevant_used: float, draws: int = 100) -> int:
    """A synthetic repository with a known recall: 150 relevant issues kept, 2,000 dropped of
    which 100 relevant, so the true recall is 150 / 250 = 0.6. Each seeded draw takes the
    sample a 5-point margin asks for, as `draw_probes` does (`stratified_sample` on the dropped
    issues), reads the truth of the drawn issues, and estimates the recall."""
    dropped = list(range(2000))
    relevant = set(random.Random(2024).sample(dropped, 100))
    true_recall = 150 / (150 + 100)
    n = sample_size_for(0.05, len(dropped))
    covered = 0
    for seed in range(draws):
        sample = stratified_sample({1: dropped}, n, seed)
        x = sum(i in relevant for i in sample)
        _, low, high = recall_interval(kept_relevant_used, len(dropped), share_interval(x, n))
        covered += low <= true_recall <= high
    return covered


def test_the_recall_interval_covers_the_true_recall_in_95_of_100_seeded_draws():
    assert _coverage(150) >= 95


def test_the_database_path_gives_the_estimate_the_coverage_test_counts(project, framework):
    """The coverage above runs the sampler and the estimator without the database (100 draws
    through the queue take a minute). Here ten seeded `draw_probes` on a synthetic repository
    (40 relevant kept, 300 dropped of which 30 relevant), each probe finalised by its truth,
    give through `recall_report` exactly the interval those functions give for the same seed;
    each draw is rolled back."""
    from django.db import transaction

    for n in range(1, 41):
        make_issue(framework, n, title=f"LLM issue {n}", filter_status="kept")
    dropped = [
        make_issue(framework, n, title=f"Dropped {n}", filter_status="filtered_out")
        for n in range(1001, 1301)
    ]
    relevant = {i.pk for i in dropped if int(i.number) <= 1030}
    apply_scope(project, Scope(repository_ids=[framework.pk], filter_statuses=["kept"]), 0, seed=1)
    finalize(project, ProjectIssue.objects.filter(project=project), relevant=range(1, 41))
    n = sample_size_for(0.1, 300)  # 96.04 / (1 + 95.04 / 300) = 72.9 -> 73
    assert n == 73

    class Rollback(Exception):
        pass

    for seed in range(10):
        sample = stratified_sample({framework.pk: [i.pk for i in dropped]}, n, seed)
        x = sum(i in relevant for i in sample)
        expected = recall_interval(40, 300, share_interval(x, n))
        try:
            with transaction.atomic():
                draw_probes(project, margin=0.1, seed=seed)
                assert set(RecallProbe.objects.values_list("issue_id", flat=True)) == set(sample)
                finalize(project, probe_items(project), relevant=range(1001, 1031))
                assert recall_report(project)["recall"] == pytest.approx(expected)
                raise Rollback
        except Rollback:
            pass
    assert not RecallProbe.objects.exists()


def test_the_coverage_check_can_fail():
    """With the kept relevant count wrong by a fifth, the intervals miss the truth often."""
    assert _coverage(120) < 95


# --- drawing probes --------------------------------------------------------------------------


def test_lena_draws_probes_which_take_random_places_among_the_unserved_issues(study, lead):
    before = dict(ProjectIssue.objects.filter(project=study).values_list("pk", "position"))
    pilot_before = set(ProjectIssue.objects.filter(project=study, is_pilot=True).values_list("pk"))
    draw = draw_probes(study, sample_size=20, seed=7, drawn_by=lead)
    assert draw.number == 1 and draw.size == 20 and draw.seed == 7
    probes = list(RecallProbe.objects.filter(project=study))
    assert len(probes) == 20 and {p.draw for p in probes} == {1}
    assert all(p.issue.filter_status == Issue.FilterStatus.FILTERED_OUT for p in probes)
    assert all(p.stratum_size == 50 and p.drawn_by == lead for p in probes)
    # The pilot is the same draw at the same places, and every ordinary issue keeps its place:
    # all ten are final (served), so the probes take the places after them. (Probes among
    # issues not served yet: tests/dataset/test_recall_blindness.py.)
    items = list(ProjectIssue.objects.filter(project=study))
    positions = {i.pk: i.position for i in items}
    assert sorted(positions.values()) == list(range(len(items)))
    assert set(ProjectIssue.objects.filter(project=study, is_pilot=True).values_list("pk")) == (
        pilot_before
    )
    assert all(positions[pk] == before[pk] for pk in before)
    probe_positions = sorted(positions[p.project_issue_id] for p in probes)
    assert probe_positions == list(range(10, 30))

    # The same seed on the same dropped issues draws the same sample.
    again = set(p.issue_id for p in probes)
    RecallProbe.objects.all().delete()
    ProjectIssue.objects.filter(issue_id__in=again).delete()
    draw_probes(study, sample_size=20, seed=7)
    assert set(RecallProbe.objects.values_list("issue_id", flat=True)) == again


def test_a_second_draw_takes_issues_not_drawn_yet_and_a_margin_counts_earlier_draws(study):
    draw_probes(study, sample_size=10, seed=1)
    second = draw_probes(study, sample_size=10, seed=1)
    assert second.number == 2
    assert RecallProbe.objects.filter(project=study).values("issue").distinct().count() == 20
    # 50 dropped, margin 0.2: n0 = 24.01, 24.01 / (1 + 23.01 / 50) = 16.4 -> 17: reached.
    with pytest.raises(Refusal) as exc:
        draw_probes(study, margin=0.2, seed=2)
    assert exc.value.field == "margin"
    # Margin 0.1: 96.04 / (1 + 95.04 / 50) = 33.1 -> 34, so 14 more.
    assert draw_probes(study, margin=0.1, seed=2).size == 14


def test_probes_stay_when_the_lead_applies_the_scope_again(study, framework):
    draw_probes(study, sample_size=5, seed=3)
    apply_scope(
        study, Scope(repository_ids=[framework.pk], filter_statuses=["kept"]), pilot_size=2, seed=11
    )
    assert probe_items(study).count() == 5
    order_queue(study, 2, 11)
    assert not probe_items(study).filter(is_pilot=True).exists()


def test_a_draw_needs_a_size_or_a_margin_and_dropped_issues_left(study):
    with pytest.raises(Refusal) as exc:
        draw_probes(study, seed=1)
    assert exc.value.field == "sample_size"
    with pytest.raises(Refusal) as exc:
        draw_probes(study, sample_size=5, seed=-1)
    assert exc.value.field == "seed"
    draw_probes(study, sample_size=50, seed=1)
    with pytest.raises(Refusal, match="no dropped issue left"):
        draw_probes(study, sample_size=1, seed=1)


# --- the estimate ----------------------------------------------------------------------------


def test_the_report_estimates_share_and_recall_from_the_final_probes(study):
    draw_probes(study, sample_size=20, seed=7)
    assert recall_summary(study) is None  # drawn but not labeled: not measured yet
    finalize(study, probe_items(study), relevant=DROPPED_RELEVANT)
    drawn = set(RecallProbe.objects.values_list("issue__number", flat=True))
    x = len(drawn & {str(n) for n in DROPPED_RELEVANT})
    assert 0 < x < 20  # the seed gives a sample with both kinds (else the test proves little)

    summary = recall_summary(study)
    assert summary is not None
    low, high = hand_wilson(x, 20)
    assert summary["sample_size"] == 20 and summary["labeled"] == 20
    assert summary["llm_related"] == x and summary["dropped_total"] == 50
    assert summary["share"] == pytest.approx((x / 20, low, high))
    # Recall = K / (K + N p): 8 relevant kept, 50 dropped.
    assert summary["recall"] == pytest.approx(
        (8 / (8 + 50 * x / 20), 8 / (8 + 50 * high), 8 / (8 + 50 * low))
    )
    (row,) = summary["by_repository"]
    assert row["repository"] == "pytorch/pytorch" and row["sample_size"] == 20
    assert row["recall"] == pytest.approx(summary["recall"])
    # "vllm" is in every missed issue's title and body and in no keyword; "typo" only in
    # false positives, "with" a stop word, "llm" a keyword already.
    suggested = summary["suggested_keywords"]
    assert "vllm" in suggested and "serving" in suggested
    assert not {"typo", "with", "llm"} & set(suggested)
    (vllm,) = [r for r in summary["keyword_candidates"] if r["word"] == "vllm"]
    assert vllm["missed_caught"] == x and vllm["false_positives"] == 0


def test_kept_relevant_is_scaled_from_the_final_kept_issues_while_some_are_open(study):
    draw_probes(study, sample_size=10, seed=5)
    finalize(study, probe_items(study), relevant=DROPPED_RELEVANT)
    # Reopen two kept issues (one relevant, one false positive): 7 of 8 final ones relevant.
    kept = ProjectIssue.objects.filter(project=study, recall_probe__isnull=True)
    for number in ("1", "9"):
        Resolution.objects.filter(project=study, issue__number=number).delete()
        kept.filter(issue__number=number).update(status=ProjectIssue.Status.OPEN)
    report = recall_report(study)
    assert report["kept_relevant"] == pytest.approx(10 * 7 / 8)


# --- the command -----------------------------------------------------------------------------


def test_the_command_draws_and_prints_the_report(study):
    out = io.StringIO()
    call_command(
        "filter_recall", "--project", study.name, "--sample", "12", "--seed", "4", stdout=out
    )
    text = out.getvalue()
    assert "draw 1: 12 probes (seed 4) pytorch/pytorch 12" in text
    assert "50 dropped issues in scope, 12 drawn, 0 final, 0 relevant" in text
    finalize(study, probe_items(study), relevant=DROPPED_RELEVANT)
    out = io.StringIO()
    call_command("filter_recall", "--project", study.name, "--json", stdout=out)
    data = json.loads(out.getvalue())
    x = probe_items(study).filter(issue__number__in=[str(n) for n in DROPPED_RELEVANT]).count()
    assert data["labeled"] == 12 and data["llm_related"] == x
    assert data["share"][0] == pytest.approx(x / 12)
    assert data["share"][1] == pytest.approx(hand_wilson(x, 12)[0])


def test_the_command_names_the_option_at_fault(study):
    with pytest.raises(CommandError, match=r"^project: "):
        call_command("filter_recall", "--project", "nope", "--sample", "3")
    with pytest.raises(CommandError, match=r"^sample: "):
        call_command("filter_recall", "--project", study.name, "--sample", "0")
    with pytest.raises(CommandError, match=r"^margin: "):
        call_command("filter_recall", "--project", study.name, "--margin", "2")


# --- the page, by persona ----------------------------------------------------------------------


def test_lena_draws_on_the_page_and_rita_reads_the_report(
    client, study, lead, researcher, annotator, outsider
):
    url = reverse("filter_recall", args=[study.pk])
    client.force_login(lead)
    page = client.get(url)
    assert page.status_code == 200 and b'id="recall-form"' in page.content
    assert b"Not measured" in page.content
    response = client.post(url, {"sample_size": "15", "seed": "9"})
    assert response.status_code == 302
    assert RecallProbe.objects.filter(project=study, seed=9).count() == 15
    finalize(study, probe_items(study), relevant=DROPPED_RELEVANT)

    client.force_login(researcher)
    page = client.get(url)
    assert page.status_code == 200 and b'id="recall-form"' not in page.content
    x = probe_items(study).filter(issue__number__in=[str(n) for n in DROPPED_RELEVANT]).count()
    low, high = hand_wilson(x, 15)
    dash = "\N{EN DASH}"
    assert f"{x / 15:.3f}</strong> (95 % CI {low:.3f}{dash}{high:.3f})" in page.content.decode()
    assert client.post(url, {"sample_size": "5"}).status_code == 404
    assert RecallProbe.objects.filter(project=study).count() == 15

    for user in (annotator, outsider):
        client.force_login(user)
        assert client.get(url).status_code == 404
        assert client.post(url, {"sample_size": "5"}).status_code == 404


@pytest.mark.parametrize(
    "data, field",
    [
        ({}, "sample_size"),
        ({"sample_size": "5", "margin": "0.05"}, "sample_size"),
        ({"sample_size": "abc"}, "sample_size"),
        ({"margin": "3"}, "margin"),
        ({"sample_size": "5", "seed": "-4"}, "seed"),
        ({"sample_size": "5", "seed": str(2**40)}, "seed"),
    ],
)
def test_a_bad_draw_on_the_page_is_a_400_naming_the_field(client, study, lead, data, field):
    client.force_login(lead)
    response = client.post(reverse("filter_recall", args=[study.pk]), data)
    assert response.status_code == 400
    assert field in response.context["form"].errors
    assert not RecallProbe.objects.exists()


# --- the datasheet ---------------------------------------------------------------------------


def test_the_datasheet_reports_the_measured_recall(study, lead, export_root):
    draw_probes(study, sample_size=20, seed=7)
    finalize(study, probe_items(study), relevant=DROPPED_RELEVANT)
    x = probe_items(study).filter(issue__number__in=[str(n) for n in DROPPED_RELEVANT]).count()
    low, high = hand_wilson(x, 20)
    release = build_release(create_release(study, lead, "1.0.0").pk)
    with zipfile.ZipFile(release_path(release)) as zf:
        sheet = zf.read("DATASHEET.md").decode()
        finals = list(csv.DictReader(io.StringIO(zf.read("final_labels.csv").decode("utf-8-sig"))))
        issues = [json.loads(line) for line in zf.read("issues.jsonl").decode().splitlines()]
    # Researchers can tell the probes apart in the files (annotators never see them).
    drawn = set(RecallProbe.objects.values_list("issue__url", flat=True))
    assert len(finals) == 30 and len(drawn) == 20
    assert {r["issue_url"] for r in finals if r["recall_probe"] == "true"} == drawn
    assert {r["url"] for r in issues if r["recall_probe"]} == drawn
    assert "Not measured" not in sheet
    assert "A seeded random sample of 20 of the 50 dropped issues" in sheet
    recall = (8 / (8 + 50 * x / 20), 8 / (8 + 50 * high), 8 / (8 + 50 * low))
    assert (
        f"Recall of the filter: {recall[0]:.3f} (95 % CI {recall[1]:.3f}-{recall[2]:.3f})" in sheet
    )
    assert "| pytorch/pytorch | 20 | 20 |" in sheet
    assert "`vllm`" in sheet


# --- the API -----------------------------------------------------------------------------------


def test_the_api_draws_for_lena_and_reports_to_rita(study, lead, researcher, annotator, outsider):
    from rest_framework.test import APIClient

    url = reverse("api_filter_recall", args=[study.pk])
    api = APIClient()
    api.force_authenticate(lead)
    response = api.post(url, {"sample_size": 10, "seed": 2}, format="json")
    assert response.status_code == 201
    assert response.json()["draw"] == {
        "number": 1,
        "seed": 2,
        "size": 10,
        "margin": None,
        "by_repository": {"pytorch/pytorch": 10},
    }
    bad = api.post(url, {"margin": 0.05, "sample_size": 3}, format="json")
    assert bad.status_code == 400 and "sample_size" in bad.json()
    assert api.post(url, {"seed": -1, "sample_size": 3}, format="json").status_code == 400
    finalize(study, probe_items(study), relevant=DROPPED_RELEVANT)

    api.force_authenticate(researcher)
    data = api.get(url).json()
    x = probe_items(study).filter(issue__number__in=[str(n) for n in DROPPED_RELEVANT]).count()
    assert data["labeled"] == 10 and data["llm_related"] == x
    assert data["share"] == pytest.approx([x / 10, *hand_wilson(x, 10)])
    assert api.post(url, {"sample_size": 3}, format="json").status_code == 404
    for user in (annotator, outsider):
        api.force_authenticate(user)
        assert api.get(url).status_code == 404
    assert RecallProbe.objects.count() == 10
