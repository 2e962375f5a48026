"""The label audit on a hand-built project: the command's JSON, the page, and who may see them.

Two careful annotators (Ana and Omar) and a careless one (Tia) label twelve issues. On issue
#103 the lead's final label is B.2 although every annotator chose a C theme: the audit must
list it first and suggest the theme the careful two chose. One issue is in the pilot and stays
out of the model.
"""

from __future__ import annotations

import json
from io import StringIO

import numpy as np
import pytest
from django.core.cache import cache
from django.core.management import CommandError, call_command
from django.urls import reverse

from agreement import dawid_skene as ds
from annotator.models import Membership
from labeling.models import Annotation
from tests.agreement.audit_helpers import (
    LABELS,
    PILOT,
    build_audited_project,
    careless_annotator,
)
from tests.agreement.audit_helpers import label_fields as _label

pytestmark = pytest.mark.django_db


@pytest.fixture
def tia(project):
    return careless_annotator(project)


@pytest.fixture
def audited(project, repository, lead, annotator, other_annotator, tia):
    return build_audited_project(project, repository, lead, [annotator, other_annotator, tia])


def _pseudonym(user) -> str:
    return Membership.objects.get(user=user).pseudonym


def _expected_fit(annotator, other_annotator, tia) -> tuple[ds.Fit, list[str], list[int]]:
    """The same answers encoded here by hand (classes in alphabetical order, raters in the
    order Ana, Omar, Tia): Dawid-Skene's estimates do not depend on the order of either."""
    numbers = [n for n in LABELS if n not in PILOT]
    codes = sorted({code for n in numbers for code in LABELS[n]})
    items, raters, labels = [], [], []
    for i, number in enumerate(numbers):
        for r, code in enumerate(LABELS[number][:3]):
            items.append(i)
            raters.append(r)
            labels.append(codes.index(code))
    fit = ds.fit(ds.answers(items, raters, labels, len(numbers), 3, len(codes)))
    return fit, codes, numbers


def test_the_command_lists_the_planted_final_first_with_the_careful_annotators_theme(
    audited, project, annotator, other_annotator, tia
):
    out = StringIO()
    call_command("audit_labels", "--project", project.name, "--json", stdout=out)
    data = json.loads(out.getvalue())
    assert set(data) >= {"issues", "annotators"}
    assert {"url", "final", "final_posterior", "suggested", "suggested_posterior"} <= set(
        data["issues"][0]
    )
    # Eleven issues outside the pilot, each with a final label.
    assert data["issues_fitted"] == 11 and data["finals"] == 11 and len(data["issues"]) == 11
    first = data["issues"][0]
    assert first["url"] == "https://github.com/NVIDIA/Megatron-LM/issues/103"
    assert first["item_id"] == audited[103].pk
    assert (first["final"], first["suggested"]) == ("B.2", "C.1")
    assert first["votes"] == [{"code": "C.1", "count": 2}, {"code": "C.2", "count": 1}]
    assert "https://github.com/NVIDIA/Megatron-LM/issues/111" not in {
        row["url"] for row in data["issues"]
    }
    # Ranked by the final's posterior, lowest first; the false positive is the class FP.
    posteriors = [row["final_posterior"] for row in data["issues"]]
    assert posteriors == sorted(posteriors)
    assert "FP" in {row["final"] for row in data["issues"]}

    # The values are the model's on the same answers encoded independently of the database.
    fit, codes, numbers = _expected_fit(annotator, other_annotator, tia)
    i = numbers.index(103)
    assert first["final_posterior"] == pytest.approx(fit.posteriors[i, codes.index("B.2")])
    assert first["suggested_posterior"] == pytest.approx(fit.posteriors[i, codes.index("C.1")])
    by_name = {a["pseudonym"]: a for a in data["annotators"]}
    for r, user in enumerate([annotator, other_annotator, tia]):
        assert by_name[_pseudonym(user)]["accuracy"] == pytest.approx(fit.accuracy[r])
        assert by_name[_pseudonym(user)]["labels"] == 11  # the pilot's labels left out
    # The careless annotator is the least accurate under the model.
    assert min(by_name.values(), key=lambda a: a["accuracy"])["pseudonym"] == "rater-careless"


def test_the_command_prints_a_table_and_limits_rows(audited, project):
    out = StringIO()
    call_command("audit_labels", "--project", project.name, "--top", "2", stdout=out)
    text = out.getvalue()
    assert "issues/103" in text and "C.1x2 C.2x1" in text
    assert text.count("https://github.com/") == 2
    assert "rater-careless" in text
    with pytest.raises(CommandError, match="--project"):
        call_command("audit_labels", "--project", "No such project")


def test_a_project_without_labels_audits_to_nothing(project):
    out = StringIO()
    call_command("audit_labels", "--project", project.name, "--json", stdout=out)
    data = json.loads(out.getvalue())
    assert data["issues"] == [] and data["annotators"] == []


def test_a_lead_reads_the_audit_page_with_links_to_reopen(client, audited, project, lead):
    client.force_login(lead)
    response = client.get(reverse("label_audit", args=[project.pk]))
    assert response.status_code == 200
    html = response.content.decode()
    resolve = reverse("resolve_issue", args=[project.pk, audited[103].pk])
    # The first row of the table opens the planted issue's resolve page.
    table = html[html.index('id="audit-table"') :]
    assert table.index(resolve) < min(
        table.index(reverse("resolve_issue", args=[project.pk, audited[n].pk]))
        for n in LABELS
        if n not in PILOT and n != 103
    )
    assert "rater-careless" in html and "Model accuracy (Dawid" in html
    assert "style=" not in html


def test_the_page_says_which_field_is_wrong(client, audited, project, lead):
    client.force_login(lead)
    response = client.get(reverse("label_audit", args=[project.pk]), {"top": "many"})
    assert response.status_code == 400
    assert "top:" in response.content.decode()
    response = client.get(reverse("label_audit", args=[project.pk]), {"top": "1"})
    assert response.content.decode().count('class="audit-issue"') == 1


@pytest.mark.parametrize("persona", ["annotator", "researcher", "outsider"])
def test_only_leads_open_the_audit(client, audited, project, persona, request, lead):
    client.force_login(lead)
    assert client.get(reverse("label_audit", args=[project.pk])).status_code == 200
    client.force_login(request.getfixturevalue(persona))
    assert client.get(reverse("label_audit", args=[project.pk])).status_code == 404


def test_the_agreement_page_shows_model_accuracy_to_a_lead_only(
    client, audited, project, lead, researcher, annotator, other_annotator, tia
):
    fit, _, _ = _expected_fit(annotator, other_annotator, tia)
    url = reverse("agreement_report", args=[project.pk])
    client.force_login(lead)
    html = client.get(url).content.decode()
    assert 'id="model-accuracy-head"' in html
    careless = html[html.index("<td>rater-careless</td>") :]
    cell = careless[careless.index('class="num model-accuracy">') :]
    assert cell.split(">", 1)[1].startswith(f"{fit.accuracy[2]:.3f}<")

    cache.clear()  # a researcher's view must not depend on what the lead's view computed
    client.force_login(researcher)
    response = client.get(url)
    assert response.status_code == 200
    assert "model-accuracy" not in response.content.decode()
    assert "Dawid" not in response.content.decode()

    client.force_login(annotator)
    assert client.get(url).status_code == 404


def test_the_accuracy_column_follows_a_changed_label(
    client, audited, project, lead, annotator, other_annotator, tia
):
    url = reverse("agreement_report", args=[project.pk])
    client.force_login(lead)
    before = client.get(url).content.decode()
    # Tia revises every label to agree with the careful two: her accuracy must move.
    for number, (ana, *_rest) in LABELS.items():
        if number in PILOT:
            continue
        issue = audited[number].issue
        Annotation.objects.filter(project=project, issue=issue, annotator=tia).update(
            is_current=False
        )
        Annotation.objects.create(
            project=project, issue=issue, annotator=tia, revision=2, **_label(project, ana)
        )
    after = client.get(url).content.decode()

    def careless(html: str) -> str:
        row = html[html.index("<td>rater-careless</td>") :]
        return row[row.index('class="num model-accuracy">') :].split(">", 1)[1].split("<", 1)[0]

    assert float(careless(after)) > float(careless(before)) + 0.3
    assert np.isfinite(float(careless(after)))
