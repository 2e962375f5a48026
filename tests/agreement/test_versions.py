"""Agreement read under any taxonomy version: a lead merges two themes, both figures remain."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from django.core.cache import cache
from statsmodels.stats.inter_rater import fleiss_kappa

from agreement.measures import agreement_report
from annotator.models import Membership, Project, Role
from dataset.importer import import_labels
from taxonomy.edits import merge
from tests.agreement.test_measures import REFERENCE
from tests.dataset.helpers import SAMPLES, read_rows


def bug_table(rename: dict[str, str]) -> np.ndarray:
    """The study's Bug table built from the CSVs, with theme codes renamed as a merge would."""
    rows = [row for path in SAMPLES for row in read_rows(path)[1:]]
    rows = [[rename.get(c, c) for c in row] for row in rows]
    themes = sorted({c for row in rows for c in row[1:-1]})
    bugs = [row for row in rows if row[-1].startswith("C")]
    return np.array([[Counter(row[1:-1])[t] for t in themes] for row in bugs])


@pytest.fixture(scope="module")
def study_id(module_db) -> int:
    """The two published samples, imported once for the module (tests/conftest.py, module_db)."""

    def build() -> int:
        import_labels("Study", SAMPLES)
        return Project.objects.get(name="Study").pk

    return module_db(build)


@pytest.fixture
def merged_study(study_id, db, lead):
    cache.clear()  # the same project id in every test: no test reads another's cached report
    project = Project.objects.get(pk=study_id)
    Membership.objects.create(project=project, user=lead, role=Role.LEAD)
    version = project.taxonomy_version
    source, target = version.nodes.get(code="C.1"), version.nodes.get(code="C.9")
    merge(project, lead, source, target)
    project.refresh_from_db()
    return project, version


def _bug_kappa(report: dict) -> float:
    return next(g for g in report["groups"] if g["name"] == "Bug")["levels"]["theme"]["kappa"]


# Transactional: before the tests that share the imported study (module_db).
@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_in_chromium_the_lead_switches_the_report_between_versions(
    live_server, page, taxonomy_version, lead
):
    from tests.conftest import log_in

    import_labels("Study", SAMPLES)
    project = Project.objects.get(name="Study")
    Membership.objects.create(project=project, user=lead, role=Role.LEAD)
    old = project.taxonomy_version
    merge(project, lead, old.nodes.get(code="C.1"), old.nodes.get(code="C.9"))
    project.refresh_from_db()

    log_in(page, live_server, lead.username)
    page.goto(f"{live_server.url}/projects/{project.pk}/agreement/")
    assert "(pinned)" in page.locator("#agreement-version option:checked").inner_text()
    page.select_option("#agreement-version", str(old.pk))
    page.wait_for_url(f"**/agreement/?version={old.pk}")
    assert page.locator("#agreement-version option:checked").inner_text() == str(old)
    assert f"taxonomy {old}" in page.locator("p.hint").first.inner_text()


def test_merge_changes_the_pinned_figure_and_keeps_the_old_one(merged_study):
    project, old_version = merged_study
    assert project.taxonomy_version != old_version
    old = agreement_report(project, use_cache=False, version=old_version)
    assert round(_bug_kappa(old), 6) == REFERENCE["Bug"][1]
    new = agreement_report(project, use_cache=False)
    expected = fleiss_kappa(bug_table({"C.1": "C.9"}))
    assert _bug_kappa(new) == pytest.approx(expected, abs=1e-12)
    assert _bug_kappa(new) != pytest.approx(_bug_kappa(old), abs=1e-6)
    # Every issue is still counted under the new version: no label fell out of the table.
    assert next(g for g in new["groups"] if g["name"] == "All issues")["issues"] == 1194


def test_report_page_offers_both_versions(client, lead, merged_study):
    project, old_version = merged_study
    client.force_login(lead)
    pinned = client.get(f"/projects/{project.pk}/agreement/")
    assert pinned.status_code == 200
    assert f'value="{old_version.pk}"'.encode() in pinned.content
    assert pinned.context["version"] == project.taxonomy_version
    old = client.get(f"/projects/{project.pk}/agreement/?version={old_version.pk}")
    assert old.context["version"] == old_version
    assert round(_bug_kappa(old.context["report"]), 6) == REFERENCE["Bug"][1]
    assert client.get(f"/projects/{project.pk}/agreement/?version=999999").status_code == 404
