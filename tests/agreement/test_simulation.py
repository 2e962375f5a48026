# ruff: noqa: RUF001 (the Chinese texts asserted use Chinese punctuation)
"""The policy simulator on the study's two published sample repositories, and its pieces: the
pattern-wise replay against `early_decision` itself, fixed panels against a direct count, the
command's JSON, and the lead's page."""

from __future__ import annotations

import io
import json
import re
from collections import Counter, defaultdict

import numpy as np
import pytest
from django.core.cache import cache
from django.core.management import CommandError, call_command
from django.urls import reverse

from agreement.measures import fleiss
from agreement.simulation import (
    Replays,
    decide_pattern,
    fleiss_from_pairs,
    kappa_unequal,
    panel_decision,
    patterns,
    rater_orders,
    run,
    simulate,
)
from annotator.models import Membership, Project, Role
from dataset.importer import import_labels
from labeling.models import Annotation, Resolution
from labeling.stopping import FP, AdaptiveRule, early_decision
from tests.dataset.helpers import MINDSPEED, SAMPLES

pytestmark = pytest.mark.django_db


def imported(name: str, paths) -> int:
    import_labels(name, paths)
    return Project.objects.get(name=name).pk


@pytest.fixture(scope="module")
def study_id(module_db) -> int:
    """The two published samples, imported once for the module (tests/conftest.py, module_db)."""
    return module_db(lambda: imported("Study", SAMPLES))


@pytest.fixture
def study(study_id, db):
    cache.clear()  # the same project id in every test: no test reads another's cached figures
    return Project.objects.get(pk=study_id)


def plurality(labels: list, exclusion=None):
    """The majority rule written out: a strict plurality, an exclusion only when unanimous."""
    ranked = Counter(labels).most_common()
    if len(ranked) == 1:
        return ranked[0][0]
    if ranked[0][1] == ranked[1][1] or ranked[0][0] == exclusion:
        return None
    return ranked[0][0]


# --- The study's samples. ---


def test_a_lead_no_panel_can_reach_reproduces_the_full_panel(study):
    report = run(study, lead=7)
    assert report["issues"] == 1194 and report["left_out"] == 0
    assert report["labels_per_issue"] == {"mean": 7.0, "distribution": {"7": 1.0}}
    assert report["same_final"] == 1.0 and report["needs_lead"] == 0.0
    for code, figures in report["by_type"].items():
        assert figures["labels_per_issue"]["mean"] == 7.0, code
        assert figures["same_final"] == 1.0, code
    assert report["fixed"]["7"]["same_final"] == 1.0


def test_fixed_panels_equal_a_direct_count_of_the_first_raters(study):
    orders, seed = 3, 11
    report = run(study, lead=2, orders=orders, seed=seed)

    # The labels and finals as the database holds them, per issue in rater order.
    labels: dict[int, list[tuple[int, str]]] = defaultdict(list)
    for a in Annotation.objects.filter(project=study, is_current=True).select_related("theme"):
        labels[a.issue_id].append((a.annotator_id, a.theme.code))
    final = {
        r.issue_id: r.theme.code
        for r in Resolution.objects.filter(project=study, is_current=True).select_related("theme")
    }
    issues = sorted(labels)
    rows = [[code for _, code in sorted(labels[i])] for i in issues]
    order = rater_orders(np.full(len(issues), 7), 7, orders, seed)
    for n in range(2, 8):
        same = needs_lead = 0
        for o in range(orders):
            for i, issue in enumerate(issues):
                panel = [rows[i][j] for j in order[o, i, :n]]
                winner = plurality(panel)
                same += winner == final[issue]
                needs_lead += winner is None
        total = orders * len(issues)
        assert report["fixed"][str(n)]["same_final"] == round(same / total, 4), n
        assert report["fixed"][str(n)]["needs_lead"] == round(needs_lead / total, 4), n
        assert report["fixed"][str(n)]["labels_per_issue"] == n
    # Panels of 7 of 7 raters, in any order, agree with every published final.
    assert report["fixed"]["7"]["same_final"] == 1.0


def test_the_full_panels_kappa_per_type_is_the_studys(study):
    report = run(study, lead=7, orders=2)
    # The reference values of shared/README.md (statsmodels on the 7 raters' theme codes).
    assert report["by_type"]["A"]["fixed"]["7"]["kappa"] == round(0.923582, 4)
    assert report["by_type"]["B"]["fixed"]["7"]["kappa"] == round(0.756765, 4)
    assert report["by_type"]["C"]["fixed"]["7"]["kappa"] == round(0.753476, 4)
    assert report["by_type"]["A"]["kappa"] == round(0.923582, 4)


def test_same_seed_same_json_other_seed_other_orders(study):
    def report(seed: int) -> str:
        out = io.StringIO()
        call_command("simulate_policy", project="Study", seed=seed, orders=4, json=True, stdout=out)
        return out.getvalue()

    first = json.loads(report(3))
    assert report(3) == json.dumps(first, indent=2, ensure_ascii=False) + "\n"
    other = json.loads(report(4))
    assert other["labels_per_issue"] != first["labels_per_issue"]  # other orders, other stops
    # A full panel does not depend on the order.
    assert other["fixed"]["7"] == first["fixed"]["7"]
    assert {"labels_per_issue", "same_final", "fixed", "by_type"} <= set(first)
    assert set(first["fixed"]) == {"2", "3", "4", "5", "6", "7"}
    assert {"labels_per_issue", "same_final"} <= set(first["fixed"]["3"])
    assert set(first["by_type"]) == {"A", "B", "C"}
    assert {"labels_per_issue", "same_final", "fixed"} <= set(first["by_type"]["B"])
    mean = first["labels_per_issue"]["mean"]
    assert 2 <= mean < 7
    shares = first["labels_per_issue"]["distribution"]
    assert sum(shares.values()) == pytest.approx(1, abs=1e-3)
    assert mean == pytest.approx(sum(int(n) * s for n, s in shares.items()), abs=1e-3)


def test_the_command_names_a_bad_parameter(study):
    with pytest.raises(CommandError, match="lead"):
        call_command("simulate_policy", project="Study", lead=0, stdout=io.StringIO())
    with pytest.raises(CommandError, match="min"):
        call_command("simulate_policy", project="Study", min_labels=8, stdout=io.StringIO())
    with pytest.raises(CommandError, match="orders"):
        call_command("simulate_policy", project="Study", orders=0, stdout=io.StringIO())
    with pytest.raises(CommandError, match="project"):
        call_command("simulate_policy", project="Nope", stdout=io.StringIO())
    out = io.StringIO()
    call_command("simulate_policy", project="Study", orders=2, stdout=out)
    assert "adaptive lead 2" in out.getvalue() and "fixed 3" in out.getvalue()


# --- The replay by pattern is `early_decision` and the majority rule, case by case. ---


@pytest.mark.parametrize(
    "min_labels,lead,k,values", [(2, 2, 7, 4), (1, 1, 7, 3), (3, 2, 5, 5), (2, 3, 7, 2)]
)
def test_pattern_decisions_equal_early_decision_on_random_sequences(min_labels, lead, k, values):
    rng = np.random.default_rng(min_labels * 100 + lead * 10 + k)
    seq = rng.integers(0, values, size=(3000, k))  # key 0 is the exclusion
    seq[:50] = 0  # some unanimous exclusions
    rule = AdaptiveRule(min_labels=min_labels, lead=lead, k=k)
    found = patterns(seq, fp_code=0)
    checked_early = 0
    for row, pattern in zip(seq.tolist(), found.tolist(), strict=True):
        outcome = decide_pattern(pattern, k, rule, threshold=0.0)
        expected_n, expected_key = k, None
        for n in range(1, k):
            decided = early_decision(row[:n], rule, exclusion=0)
            if decided is not None:
                expected_n, expected_key = n, decided
                checked_early += 1
                break
        else:
            expected_key = plurality(row, exclusion=0)
        assert outcome.labels == expected_n, row
        assert (None if outcome.winner < 0 else row[outcome.winner]) == expected_key, row
        for n in range(1, k + 1):
            winner = outcome.panels[n - 1]
            assert (None if winner < 0 else row[winner]) == plurality(row[:n], exclusion=0)
    assert checked_early > 100  # the probe saw early decisions


def test_simulate_equals_a_direct_replay_with_exclusions_and_uneven_counts():
    rng = np.random.default_rng(5)
    issues, width, k, orders = 400, 8, 6, 3
    counts = rng.integers(5, width + 1, size=issues)  # some below K: left out
    keys = rng.choice([0, 1, 1, 2, 2, 2, 3], size=(issues, width))  # 0: the exclusion
    keys[np.arange(width)[None, :] >= counts[:, None]] = -1
    keys[:20, :] = np.where(keys[:20] >= 0, 0, -1)  # unanimous exclusions
    final = rng.choice([-1, 0, 1, 2, 3], size=issues)
    replays = Replays(
        keys=keys,
        counts=counts,
        final=final,
        issue_type=["T"] * issues,
        key_values=["FP", "a", "b", "c"],
        fp_code=0,
        type_names={"T": "Type"},
    )
    result = simulate(replays, min_labels=2, leads=[1, 2], k=k, orders=orders, seed=9)

    keep = counts >= k
    order = rater_orders(counts[keep], width, orders, 9)
    rows, finals = keys[keep].tolist(), final[keep].tolist()
    assert result["issues"] == len(rows) and result["left_out"] == int((~keep).sum())
    for lead in (1, 2):
        rule = AdaptiveRule(min_labels=2, lead=lead, k=k)
        taken, same, judged = [], 0, 0
        for o in range(orders):
            for i, row in enumerate(rows):
                seq = [row[j] for j in order[o, i, :k]]
                n_used, key = k, None
                for n in range(1, k):
                    key = early_decision(seq[:n], rule, exclusion=0)
                    if key is not None:
                        n_used = n
                        break
                else:
                    key = plurality(seq, exclusion=0)
                taken.append(n_used)
                if finals[i] >= 0:
                    judged += 1
                    same += key == finals[i]
        figures = result["policies"][lead]
        assert figures["labels_per_issue"]["mean"] == round(float(np.mean(taken)), 4)
        assert figures["same_final"] == round(same / judged, 4)


def test_panel_decision_is_the_fixed_rule():
    assert panel_decision(["a"] * 7) == "a"
    assert panel_decision([FP] * 7) == FP
    assert panel_decision([FP] * 4 + ["a"] * 3) is None  # exclusion only when unanimous
    assert panel_decision(["x"] * 4 + ["a"] * 3, exclusion="x") is None
    assert panel_decision(["a", "a", "b", "b", "c"]) is None  # a tie for first
    assert panel_decision(["a", "a", "a", "b", "b", "c", "d"]) == "a"
    assert panel_decision(["a", "a", "a", "b", "b", "c", "d"], threshold=0.6) is None
    assert panel_decision(["a"] * 5 + ["b", "c"], threshold=0.6) == "a"


def test_kappa_from_pairs_is_fleiss_with_uneven_counts():
    rng = np.random.default_rng(2)
    table = rng.integers(0, 4, size=(200, 6))
    table[:10] = 0
    table[:5, 1] = 1  # issues with one label or none are left out
    equal = np.zeros((200, 6), dtype=np.int64)
    for i in range(200):
        np.add.at(equal[i], rng.integers(0, 6, size=7), 1)

    def from_pairs(t: np.ndarray) -> float | None:
        totals = t[t.sum(axis=1) >= 2].sum(axis=0)
        return fleiss_from_pairs(np.square(t).sum(axis=1), t.sum(axis=1), totals)

    assert from_pairs(equal) == pytest.approx(fleiss(equal), abs=1e-12)
    assert kappa_unequal(equal) == pytest.approx(fleiss(equal), abs=1e-12)
    assert from_pairs(table) == pytest.approx(kappa_unequal(table), abs=1e-12)
    # Written out for unequal counts: mean pairwise agreement against pooled chance, over the
    # issues with two labels or more.
    rated = table[table.sum(axis=1) >= 2]
    assert len(rated) <= 190  # the ten made short, at least
    n = rated.sum(axis=1)
    p_bar = ((np.square(rated).sum(axis=1) - n) / (n * (n - 1))).mean()
    p_e = np.square(rated.sum(axis=0) / rated.sum()).sum()
    assert kappa_unequal(table) == pytest.approx((p_bar - p_e) / (1 - p_e), abs=1e-12)


# --- The page: leads only. ---


@pytest.fixture(scope="module")
def mindspeed_id(module_db) -> int:
    return module_db(lambda: imported("MindSpeed", [MINDSPEED]))


@pytest.fixture
def mindspeed(mindspeed_id, db, lead, annotator, researcher):
    cache.clear()
    project = Project.objects.get(pk=mindspeed_id)
    Membership.objects.create(project=project, user=lead, role=Role.LEAD)
    Membership.objects.create(project=project, user=annotator, role=Role.ANNOTATOR)
    Membership.objects.create(project=project, user=researcher, role=Role.RESEARCHER)
    return project


def test_a_lead_draws_the_trade_off_of_their_pilot(client, mindspeed, lead):
    client.force_login(lead)
    url = reverse("policy_simulator", args=[mindspeed.pk])
    page = client.get(url)
    assert page.status_code == 200 and 'id="simulator-form"' in page.content.decode()
    assert "tradeoff-chart" not in page.content.decode()  # nothing computed on a GET

    response = client.post(url, {"min_labels": 2, "leads": "5", "orders": 3, "seed": 1})
    assert response.status_code == 200
    html = response.content.decode()
    svg = re.search(r'<svg id="tradeoff-chart".*?</svg>', html, re.S).group(0)
    assert len(re.findall(r"<circle ", svg)) == 4  # lead 1, 2, 3 always, and the chosen 5
    assert "lead 5" in svg
    assert len(re.findall(r"<rect ", svg)) == 6  # fixed panels of 2..7
    assert "lead 1" in svg and "fixed 7: 7 labels per issue, 100.0 % same final" in svg
    table = re.search(r'<table class="table" id="simulation-table">.*?</table>', html, re.S)
    assert table and "fixed 3" in table.group(0)
    assert "style=" not in html  # the CSP forbids inline styles

    # The same figures as the command for lead 2.
    figures = run(mindspeed, lead=2, orders=3, seed=1)
    assert f"{round(100 * figures['same_final'], 1)} %" in table.group(0)


def test_htmx_gets_the_fragment_and_bad_input_names_its_field(client, mindspeed, lead):
    client.force_login(lead)
    url = reverse("policy_simulator", args=[mindspeed.pk])
    fragment = client.post(
        url, {"min_labels": 2, "leads": "2", "orders": 2, "seed": 1}, HTTP_HX_REQUEST="true"
    )
    assert fragment.status_code == 200
    text = fragment.content.decode()
    assert text.lstrip().startswith('<section id="simulator">') and "<html" not in text

    for leads in ("two", "2, \u00b2", "0", "2, 21"):
        bad = client.post(url, {"min_labels": 2, "leads": leads, "orders": 2, "seed": 1})
        assert bad.status_code == 400, leads
        assert "Lead values: " in bad.content.decode(), leads
    too_many = client.post(url, {"min_labels": 9, "leads": "2", "orders": 2, "seed": 1})
    assert too_many.status_code == 400 and "Minimum labels" in too_many.content.decode()
    orders = client.post(url, {"min_labels": 2, "leads": "2", "orders": 1000, "seed": 1})
    assert orders.status_code == 400 and "Orders:" in orders.content.decode()


def test_a_project_without_labels_says_so(client, project, lead):
    client.force_login(lead)
    url = reverse("policy_simulator", args=[project.pk])
    response = client.post(url, {"min_labels": 2, "leads": "", "orders": 2, "seed": 1})
    assert response.status_code == 400
    assert "no labels to replay yet" in response.content.decode()
    assert "tradeoff-chart" not in response.content.decode()


def test_a_panel_larger_than_any_issue_has_is_refused(study):
    with pytest.raises(CommandError, match="max: at most 7"):
        call_command("simulate_policy", project="Study", max=8, stdout=io.StringIO())
    # A smaller K replays the first K of each order: a fixed panel of K is then the full one.
    report = run(study, lead=9, k=5, orders=2)
    assert report["labels_per_issue"]["mean"] == 5.0
    assert set(report["fixed"]) == {"2", "3", "4", "5"}
    assert report["fixed"]["5"]["same_final"] == report["same_final"]


@pytest.mark.parametrize("persona", ["annotator", "researcher", "outsider"])
def test_others_get_404(client, mindspeed, persona, request):
    client.force_login(request.getfixturevalue(persona))
    url = reverse("policy_simulator", args=[mindspeed.pk])
    assert client.get(url).status_code == 404
    assert client.post(url, {"min_labels": 2, "leads": "2", "orders": 1}).status_code == 404


def test_the_simulator_speaks_chinese_to_a_chinese_browser(client, mindspeed, lead):
    """The form's labels, the result's headings and the settings' names in Chinese, the same
    figures as in English; a refused value is explained in Chinese beside its field."""
    client.force_login(lead)
    url = reverse("policy_simulator", args=[mindspeed.pk])
    form = {"min_labels": 2, "leads": "5", "orders": 3, "seed": 1}
    english = client.post(url, form).content.decode()
    html = client.post(url, form, HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "最少标注数" in html and "领先票数" in html
    assert "<h2>每个议题的标注数与最终标注相同率</h2>" in html
    svg = re.search(r'<svg id="tradeoff-chart".*?</svg>', html, re.S).group(0)
    assert "领先 5 票" in svg and "固定 7 人：每个议题 7 个标注，100.0 % 最终标注相同" in svg
    assert "lead 5" not in html and "Minimum labels" not in html
    percents = re.findall(r"(\d+\.\d) %", english)
    assert percents and percents == re.findall(r"(\d+\.\d) %", html)

    bad = client.post(url, {**form, "leads": "two"}, HTTP_ACCEPT_LANGUAGE="zh-hans")
    assert bad.status_code == 400
    assert "领先票数: 请输入以逗号分隔的整数" in bad.content.decode()
    none = client.post(
        reverse("policy_simulator", args=[mindspeed.pk]),
        {**form, "min_labels": 9},
        HTTP_ACCEPT_LANGUAGE="zh-hans",
    )
    assert none.status_code == 400
    assert "最少标注数: 必须在 1 到 7 之间（实际为 9）" in none.content.decode()
