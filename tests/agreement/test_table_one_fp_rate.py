"""Table I's false-positive rate counts only the finals that could be marked a false positive
(the review's finding on #21's rate). Lena (lead) imported 10,000 final labels of Megatron-LM
from the study's files and decided one more issue here, a false positive; MindSpeed has
imported finals only. Rita (researcher) reads the rate on the page, in the API and in
table_one.csv.

Expected figures by hand: Megatron has 1 screened final (the decision here), of which 1 is a
false positive, so 1 / 1 = 1.0 (pooling over all finals would say 1 / 10,001). MindSpeed has
no screened final: blank. The Sum row averages the known rates: 1.0 alone.
"""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest
from django.db import connection
from django.db.models import Model
from django.urls import reverse
from rest_framework.test import APIClient

from agreement.table_one import table_one
from annotator.models import Membership, Project, Role
from dataset.exports import write_table_one
from ingest.models import Issue, Repository
from labeling.models import PUBLIC_ID_LOW, ProjectIssue, Resolution
from taxonomy.models import TaxonomyVersion

pytestmark = pytest.mark.django_db

IMPORTED = 10_000


def _insert_rows(
    model: type[Model], source: str, varying: dict[str, tuple[str, list]], **fields: Any
) -> None:
    """One INSERT … SELECT … FROM `source` of `model`'s rows: each field as an unsaved
    `model(**fields)` holds it (defaults included), except the `varying` fields, each an SQL
    expression and its parameters. Ten thousand rows in a fraction of a second, where
    bulk_create spends over a second of Python on each model."""
    row = model(**fields)
    columns, values, params = [], [], []
    for field in model._meta.concrete_fields:
        if field.primary_key:
            continue
        columns.append(connection.ops.quote_name(field.column))
        if field.name in varying:
            expression, expression_params = varying[field.name]
            values.append(expression)
            params.extend(expression_params)
        else:
            values.append(f"%s::{field.cast_db_type(connection)}")
            params.append(field.get_db_prep_save(field.pre_save(row, add=True), connection))
    assert set(varying) <= {f.name for f in model._meta.concrete_fields}
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {model._meta.db_table} ({', '.join(columns)}) "
            f"SELECT {', '.join(values)} FROM {source}",
            params,
        )


@pytest.fixture(scope="module")
def imported_id(module_db) -> int:
    """The 10,003 imported finals, built once for the module (tests/conftest.py, module_db):
    a project of the study's taxonomy without members yet."""

    def build() -> int:
        project = Project.objects.create(
            name="LLM issues pilot", taxonomy_version=TaxonomyVersion.objects.get()
        )
        megatron = Repository.objects.create(
            forge=Repository.Forge.GITHUB,
            api_url="https://api.github.com",
            owner="NVIDIA",
            name="Megatron-LM",
            group="Megatron",
            is_framework=False,
        )
        mindspeed = Repository.objects.create(
            forge="gitee",
            api_url="https://gitee.com/api/v5",
            owner="ascend",
            name="MindSpeed",
            group="MindSpeed",
        )
        bug = project.taxonomy_version.nodes.get(code="C.5")
        for repo, count in ((megatron, IMPORTED), (mindspeed, 3)):
            _insert_rows(
                Issue,
                f"generate_series(0, {count - 1}) AS n",
                {"number": ("n::text", []), "url": ("%s || '/issues/' || n", [repo.web_url])},
                repository=repo,
            )
        # Ordered by id: Megatron's issues, then MindSpeed's, as they were inserted.
        issues = (
            "(SELECT id, row_number() OVER (ORDER BY id) - 1 AS n"
            f" FROM {Issue._meta.db_table} WHERE repository_id IN ({megatron.pk}, {mindspeed.pk}))"
            " AS i"
        )
        _insert_rows(
            ProjectIssue,
            issues,
            # Distinct public ids (the default draws each at random).
            {
                "issue": ("i.id", []),
                "position": ("i.n", []),
                "public_id": ("%s + i.n", [PUBLIC_ID_LOW]),
            },
            project=project,
        )
        _insert_rows(
            Resolution,
            issues,
            {"issue": ("i.id", [])},
            project=project,
            method=Resolution.Method.IMPORTED,
            issue_type=bug.issue_type,
            theme=bug,
        )
        return project.pk

    return module_db(build)


@pytest.fixture
def study(imported_id, db, lead, researcher):
    """Lena's decision, a false positive, beside the imported finals; Rita a researcher."""
    project = Project.objects.get(pk=imported_id)
    Membership.objects.create(project=project, user=lead, role=Role.LEAD, pseudonym="rater-lena")
    Membership.objects.create(
        project=project, user=researcher, role=Role.RESEARCHER, pseudonym="rater-rita"
    )
    megatron = Repository.objects.get(name="Megatron-LM")
    reviewed = Issue.objects.create(repository=megatron, number="X1", url="x1")
    ProjectIssue.objects.create(project=project, issue=reviewed, position=IMPORTED + 3)
    Resolution.objects.create(
        project=project,
        issue=reviewed,
        method=Resolution.Method.LEAD_DECISION,
        is_false_positive=True,
    )
    return project


def test_the_rate_is_over_the_screened_finals_not_all_finals(study):
    (megatron, mindspeed), total = table_one(study)
    assert megatron.name == "Megatron" and megatron.final == IMPORTED + 1
    assert megatron.screened == 1 and megatron.false_positives == 1
    assert megatron.false_positive_rate == pytest.approx(1.0)
    assert mindspeed.name == "MindSpeed" and mindspeed.final == 3 and mindspeed.screened == 0
    assert mindspeed.false_positive_rate is None and mindspeed.known_false_positives is None
    assert total.average_rate == pytest.approx(1.0)
    # table_one.csv, as the export writes it: the rate, its denominator, and a blank.
    out = io.StringIO()
    write_table_one(study, out)
    megatron, mindspeed, total = csv.DictReader(io.StringIO(out.getvalue()))
    assert megatron["false positive rate"] == "1.0000" and megatron["screened finals"] == "1"
    assert megatron["final"] == str(IMPORTED + 1)
    assert mindspeed["false positive rate"] == "" and mindspeed["false positives"] == ""
    assert mindspeed["screened finals"] == "0"
    assert total["false positive rate"] == "1.0000"


def test_rita_reads_the_rate_on_the_page_and_in_the_api(client, study, researcher, outsider):
    client.force_login(researcher)
    page = client.get(reverse("table_one", args=[study.pk]))
    assert page.status_code == 200
    megatron, mindspeed = page.context["rows"][:2]
    assert megatron["screened"] == 1 and megatron["false_positive_rate"] == pytest.approx(1.0)
    assert mindspeed["false_positive_rate"] is None
    body = page.content.decode()
    assert '<td class="num fp-rate">100%</td>' in body  # Megatron
    assert '<td class="num fp-rate"></td>' in body  # MindSpeed: blank, not 0 %
    assert "screened finals" in body

    url = reverse("api_table_one", args=[study.pk])
    api = APIClient()
    api.force_authenticate(researcher)
    megatron, mindspeed, total = api.get(url).json()["rows"]
    assert (megatron["screened"], megatron["false_positives"]) == (1, 1)
    assert megatron["false_positive_rate"] == pytest.approx(1.0)
    assert mindspeed["false_positive_rate"] is None and mindspeed["false_positives"] is None
    assert total["false_positive_rate"] == pytest.approx(1.0)
    api.force_authenticate(outsider)
    assert api.get(url).status_code == 404
