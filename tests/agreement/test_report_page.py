# ruff: noqa: RUF001 (the Chinese texts asserted use Chinese punctuation)
"""The agreement report page: leads and admins only; table, chart data, heat map, Table I."""

from __future__ import annotations

import json
import re

import pytest
from django.core.cache import cache
from django.urls import reverse

from annotator.models import Membership, Project, Role
from dataset.importer import import_labels
from tests.conftest import log_in
from tests.dataset.helpers import SAMPLES

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def study_id(module_db) -> int:
    """The two published samples, imported once for the module (tests/conftest.py, module_db)."""

    def build() -> int:
        import_labels("Study", SAMPLES)
        return Project.objects.get(name="Study").pk

    return module_db(build)


@pytest.fixture
def study(study_id, db, lead, annotator, researcher):
    cache.clear()  # the same project id in every test: no test reads another's cached report
    project = Project.objects.get(pk=study_id)
    Membership.objects.create(project=project, user=lead, role=Role.LEAD)
    Membership.objects.create(project=project, user=annotator, role=Role.ANNOTATOR)
    Membership.objects.create(project=project, user=researcher, role=Role.RESEARCHER)
    return project


# Transactional: before the tests that share the imported study (module_db).
@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_chart_draws_in_chromium(live_server, page, taxonomy_version, lead):
    import_labels("Study", SAMPLES)
    project = Project.objects.get(name="Study")
    Membership.objects.create(project=project, user=lead, role=Role.LEAD)
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    log_in(page, live_server, lead.username)
    page.goto(f"{live_server.url}{reverse('agreement_report', args=[project.pk])}")
    page.wait_for_selector("#kappa-chart[data-rendered=true]")
    box = page.locator("#kappa-chart").bounding_box()
    assert box and box["height"] > 100
    assert page.locator("#agreement-table tbody tr").count() == 12
    assert not errors, errors


def test_lead_sees_table_chart_data_heat_map_and_table_one(client, study, lead):
    client.force_login(lead)
    response = client.get(reverse("agreement_report", args=[study.pk]))
    assert response.status_code == 200
    html = response.content.decode()
    assert "0.924" in html and "0.757" in html and "0.753" in html
    assert 'id="confusion-heatmap"' in html and 'id="annotator-table"' in html
    assert "Landis" in html and "almost perfect" in html
    data = json.loads(
        re.search(
            r'<script id="agreement-chart-data" type="application/json">(.*?)</script>', html, re.S
        ).group(1)
    )
    assert [g["name"] for g in data["groups"]] == ["Question", "Requirement", "Bug", "All issues"]
    assert round(data["groups"][0]["kappa"][1], 6) == 0.923582
    # Table I rows come from agreement.table_one: Megatron-LM had 120 questions.
    assert re.search(r"NVIDIA/Megatron-LM</td>(<td[^>]*>\d+</td>){3}<td[^>]*>120</td>", html)
    assert "style=" not in html  # the CSP forbids inline styles


@pytest.mark.parametrize("persona", ["annotator", "outsider"])
def test_others_get_404(client, study, persona, request):
    client.force_login(request.getfixturevalue(persona))
    assert client.get(reverse("agreement_report", args=[study.pk])).status_code == 404


def test_a_researcher_reads_the_figures_the_api_gives_them(client, study, researcher):
    client.force_login(researcher)
    html = client.get(reverse("agreement_report", args=[study.pk])).content.decode()
    api = client.get(reverse("api_agreement", args=[study.pk])).json()
    question = next(g for g in api["groups"] if g["name"] == "Question")
    kappa = next(v["kappa"] for v in question["levels"].values() if v["kappa"] is not None)
    assert f"{kappa:.3f}" in html


def test_anonymous_is_sent_to_login(client, study):
    response = client.get(reverse("agreement_report", args=[study.pk]))
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_issues_with_fewer_labels_than_k_are_measured(client, study, lead, researcher):
    """Under the adaptive rule issues stop at 2..K labels: the report, its API and Table I still
    answer, with Fleiss' kappa over the issues that have a full panel or over what there is."""
    from labeling.models import Annotation

    study.stopping_rule = Project.StoppingRule.ADAPTIVE
    study.save()
    labels: dict[int, list[int]] = {}
    for issue_id, pk in (
        Annotation.objects.filter(project=study).order_by("id").values_list("issue", "id")
    ):
        labels.setdefault(issue_id, []).append(pk)
    # Every other issue keeps only its first two labels, as if decided early (one DELETE).
    extra = [pk for issue_id in sorted(labels)[::2] for pk in labels[issue_id][2:]]
    Annotation.objects.filter(pk__in=extra).delete()
    client.force_login(lead)
    page = client.get(reverse("agreement_report", args=[study.pk]))
    assert page.status_code == 200
    api = client.get(reverse("api_agreement", args=[study.pk]))
    assert api.status_code == 200
    kappas = [v["kappa"] for g in api.json()["groups"] for v in g["levels"].values() if v["kappa"]]
    assert kappas and all(-1 <= k <= 1 for k in kappas)
    client.force_login(researcher)
    assert client.get(reverse("table_one", args=[study.pk])).status_code == 200


def test_the_report_speaks_the_readers_language_and_keeps_the_data_in_english(client, study, lead):
    """A reader whose browser asks for Chinese reads the headings, the method statements, the
    readings and the reasons in Chinese; the taxonomy's names stay as written; the API and the
    chart's JSON keys stay as they are. Without the header the page is English."""
    client.force_login(lead)
    url = reverse("agreement_report", args=[study.pk])
    english = client.get(url).content.decode()
    assert '<html lang="en">' in english
    assert "What the numbers mean" in english and "How much more often the raters" in english
    assert "every issue in this group has the final type Bug" in english
    assert "一致性" not in english

    html = client.get(url, HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert '<html lang="zh-hans">' in html
    assert "<h2>各类型与层级的一致性</h2>" in html and "<h2>这些数字的含义</h2>" in html
    assert "<dt>Fleiss κ 系数</dt>" in html and "同一议题的评分者选择相同类别的频率" in html
    assert "几乎完全一致" in html  # Landis & Koch's words, in the table and the scale
    assert "本组每个议题的最终类型都是 Bug（C）" in html  # the reason; the name as written
    assert "<td>全部议题</td>" in html and "<td>子主题</td>" in html
    assert "What the numbers mean" not in html and "almost perfect" not in html
    # The figures themselves are the same numbers.
    assert "0.924" in html and "0.757" in html
    # Table I's columns are the paper's types in Chinese; the chart's labels too.
    assert '<th class="num">问题</th>' in html and "<th>合计</th>" in html
    data = json.loads(
        re.search(
            r'<script id="agreement-chart-data" type="application/json">(.*?)</script>', html, re.S
        ).group(1)
    )
    assert data["levels"] == ["类型", "主题", "子主题"]
    assert [g["name"] for g in data["groups"]][-1] == "全部议题"

    # The API is data: English words whatever the reader's language.
    api = client.get(reverse("api_agreement", args=[study.pk]), HTTP_ACCEPT_LANGUAGE="zh-hans")
    everything = next(g for g in api.json()["groups"] if g["code"] == "all")
    assert everything["name"] == "All issues"
    bug_type = next(g for g in api.json()["groups"] if g["code"] == "C")["levels"]["type"]
    assert bug_type["reading"] == "not meaningful"
    assert "every issue in this group has the final type Bug" in bug_type["note"]
