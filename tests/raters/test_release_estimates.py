"""A release carries the estimates with machine help (#29): Lena's project has labeled the front
of its seeded queue over two repositories, three volunteers labeled every final issue, and an
external rater labeled every issue in scope. When she freezes a release, Rita (researcher) reads
in `machine_raters.json` the estimates `raters.estimates.estimate` gives (type shares over the
scope and per repository, theme shares), in DATASHEET.md a table of the same type shares with
their intervals, the rater's alternative annotator test and the human sample, and in the
metadata that shares were estimated. A project whose every issue is final says there is nothing
to estimate.

The expected figures are `estimate(...)` and `rater_alt_test(...)` called here; the datasheet's
table is read back as numbers.
"""

from __future__ import annotations

import json
import zipfile

import pytest

from annotator.models import Role
from dataset.releases import build_release, create_release, release_path
from ingest.models import Repository
from labeling.models import MachineLabel, MachineRater, ProjectIssue
from raters.alt_test import rater_alt_test
from raters.estimates import estimate
from tests.conftest import add_members, make_user
from tests.raters.conftest import WORDS, add_finals, label_fields

pytestmark = pytest.mark.django_db

CODES = list(WORDS)  # add_finals labels issue i with CODES[i % 5]


@pytest.fixture
def export_root(settings, tmp_path):
    settings.EXPORT_ROOT = tmp_path / "exports"
    return settings.EXPORT_ROOT


def labeled_study(project, repository, annotator, other_annotator, open_issues: int):
    """40 final issues of Megatron-LM, then 30 final and `open_issues` open ones of a second
    repository, in queue order; three volunteers labeled every final issue; an external rater
    labeled every issue, wrong on every seventh."""
    third = make_user("tia-annotator")
    add_members(project, (third, Role.ANNOTATOR))
    other = Repository.objects.create(
        forge=Repository.Forge.GITHUB, api_url="https://api.github.com", owner="vllm-project",
        name="vllm", group="vLLM",
    )  # fmt: skip
    people = (annotator, other_annotator, third)
    first = add_finals(project, repository, 40, annotators=people, seed=1)
    second = add_finals(
        project, other, 30, annotators=people, seed=2, start=3000, open_issues=open_issues
    )
    rater = MachineRater.objects.create(project=project, name="their-model", kind="external")
    labels = []
    for issues in (first, second):
        for i, issue in enumerate(issues):
            code = CODES[i % 5] if i % 7 else CODES[(i + 1) % 5]
            labels.append(MachineLabel(rater=rater, issue=issue, **label_fields(project, code)))
    MachineLabel.objects.bulk_create(labels)
    return rater


def _release(project, lead) -> dict[str, bytes]:
    made = build_release(create_release(project, lead, "1.0.0").pk)
    with zipfile.ZipFile(release_path(made)) as zf:
        return {name: zf.read(name) for name in zf.namelist()}


def _section(sheet: str, heading: str) -> str:
    return sheet.split(f"\n{heading}\n", 1)[1].split("\n## ", 1)[0]


def _table(text: str, columns: int) -> list[list[str]]:
    """The rows of the Markdown tables in `text` with this many cells (header and rule out)."""
    rows = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) == columns and not cells[-1].startswith("-"):
            rows.append(cells)
    return [r for r in rows if r[0] not in ("code", "repository")]


def _interval(cell: str) -> tuple[float, float]:
    low, high = cell.strip("[]").split(",")
    return float(low), float(high)


def test_a_release_of_a_sampled_project_carries_the_estimates(
    project, repository, annotator, other_annotator, lead, export_root
):
    rater = labeled_study(project, repository, annotator, other_annotator, open_issues=10)
    expected = {
        "type": estimate(project, rater, level="type").as_json(),
        "type_by_repository": estimate(project, rater, level="type", by="repository").as_json(),
        "theme": estimate(project, rater, level="theme").as_json(),
    }
    assert expected["type"]["n_human"] == 70 and expected["type"]["n_total"] == 80
    test = rater_alt_test(rater).as_json()
    assert test["enough_data"] and test["passed"]  # the probe below can tell "passed"

    files = _release(project, lead)
    described = {r["name"]: r for r in json.loads(files["machine_raters.json"])["machine_raters"]}
    stored = described["their-model"]["estimates"]
    assert stored["status"] == "estimated"
    for key, report in expected.items():
        assert stored[key] == json.loads(json.dumps(report)), key
    assert {row["by"] for row in stored["type_by_repository"]["estimates"]} == {
        "NVIDIA/Megatron-LM",
        "vllm-project/vllm",
    }
    assert described["their-model"]["validation"]["alt_test"] == json.loads(json.dumps(test))

    package = json.loads(files["datapackage.json"])
    assert package["machine_raters"] == list(described.values())
    [brief] = package["estimates_with_machine_help"]
    assert brief["rater"] == "their-model" and brief["n_human"] == 70
    assert brief["sample"]["seed"] == project.queue_seed
    assert brief["sample"]["rule"].startswith("the longest prefix of the seeded queue order")
    assert brief["alt_test"]["passed"] is True
    assert brief["alt_test"]["advantage_probability"] == test["advantage_probability"]
    assert "estimated with machine help" in package["description"]
    croissant = json.loads(files["croissant.json"])
    assert "estimated with machine help" in croissant["description"]
    machine_set = next(r for r in croissant["recordSet"] if r["name"] == "machine-labels")
    assert "alt-test passed" in machine_set["description"]
    assert "human sample of 70 of 80 issues" in machine_set["description"]

    sheet = files["DATASHEET.md"].decode()
    section = _section(sheet, "## Estimates with machine help")
    assert "ppi-python" in section
    assert "Human sample: 70 of the 80 issues in scope" in section
    assert f"seed {project.queue_seed}" in section and "0 disputed issues" in section
    assert "winning rate ω " + f"{test['winning_rate']:.3f}" in section
    rho = f"advantage probability \N{GREEK SMALL LETTER RHO} {test['advantage_probability']:.3f}"
    assert "passed;" in section and rho in section
    overall = _table(section.split("Type shares per repository")[0], 6)
    assert [row[0].split(" ")[0] for row in overall] == [
        e["code"] for e in expected["type"]["estimates"]
    ]
    for row, want in zip(overall, expected["type"]["estimates"], strict=True):
        assert float(row[1]) == pytest.approx(want["share"], abs=5e-4)
        assert _interval(row[2]) == pytest.approx((want["ci_low"], want["ci_high"]), abs=5e-4)
        assert float(row[3]) == pytest.approx(want["classical_share"], abs=5e-4)
        assert _interval(row[4]) == pytest.approx(
            (want["classical_ci_low"], want["classical_ci_high"]), abs=5e-4
        )
    grouped = _table(section.split("Type shares per repository")[1], 7)
    by_repo = {(row[0], row[1].split(" ")[0]): row for row in grouped}
    assert len(by_repo) == len(expected["type_by_repository"]["estimates"])
    for want in expected["type_by_repository"]["estimates"]:
        row = by_repo[(want["by"], want["code"])]
        assert float(row[2]) == pytest.approx(want["share"], abs=5e-4)
        assert _interval(row[3]) == pytest.approx((want["ci_low"], want["ci_high"]), abs=5e-4)
    # The machine raters' section names the same test.
    raters = _section(sheet, "## Machine raters")
    assert "Alternative annotator test (ε = 0.20): passed" in raters


def test_a_release_where_every_issue_is_final_says_there_is_nothing_to_estimate(
    project, repository, annotator, other_annotator, lead, export_root
):
    rater = labeled_study(project, repository, annotator, other_annotator, open_issues=0)
    report = estimate(project, rater).as_json()
    assert report["n_human"] == report["n_total"] == 70  # the whole scope is the sample

    files = _release(project, lead)
    [described] = json.loads(files["machine_raters.json"])["machine_raters"]
    stored = described["estimates"]
    assert stored["status"] == "nothing_to_estimate" and stored["n_total"] == 70
    assert "type" not in stored and "nothing to estimate" in stored["note"]
    section = _section(files["DATASHEET.md"].decode(), "## Estimates with machine help")
    assert "Nothing to estimate: every one of the 70 issues in scope is final" in section
    assert "| code |" not in section
    package = json.loads(files["datapackage.json"])
    assert package["estimates_with_machine_help"] == []
    assert "estimated with machine help" not in package["description"]


def test_a_release_before_the_sample_begins_says_why_nothing_is_estimated(
    project, repository, annotator, other_annotator, lead, export_root
):
    rater = labeled_study(project, repository, annotator, other_annotator, open_issues=10)
    # The queue's front issue goes back to open: the prefix of final issues is empty.
    front = ProjectIssue.objects.filter(project=project).order_by("position").first()
    ProjectIssue.objects.filter(pk=front.pk).update(status=ProjectIssue.Status.OPEN)
    files = _release(project, lead)
    [described] = json.loads(files["machine_raters.json"])["machine_raters"]
    assert described["estimates"]["status"] == "no_sample"
    assert "0 issues at the front of the queue are final" in described["estimates"]["note"]
    section = _section(files["DATASHEET.md"].decode(), "## Estimates with machine help")
    assert "Not estimated: no human sample yet" in section
    assert rater.pk  # the rater exists: the section is about it, not about no rater
