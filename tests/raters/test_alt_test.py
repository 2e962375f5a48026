"""A machine rater's alt-test on its project's stored labels (`raters.alt_test`): Ada, Otto,
Pia and Quinn each label forty issues, some at sub-theme level, some as false positives; the
classifier's stored labels (one of them an unreadable output) are compared at theme level.
The expected result is `agreement.alt_test` on the codes this test wrote, so what is checked is
the reading: theme level, the false positive a category, an invalid output a miss."""

from __future__ import annotations

import random

import pytest

from agreement.alt_test import alt_test
from annotator.models import Role
from ingest.models import Issue
from labeling.models import Annotation, MachineLabel, MachineRater, ProjectIssue
from raters.alt_test import rater_alt_test
from tests.conftest import add_members, make_user
from tests.raters.conftest import label_fields

pytestmark = pytest.mark.django_db

CODES = ["A.1", "B.1", "C.1", "C.2", "C.1.i", "FP"]


def theme(code: str) -> str:
    return code if code == "FP" else ".".join(code.split(".")[:2])


@pytest.fixture
def labeled(project, repository, annotator, other_annotator):
    pia, quinn = make_user("pia-annotator"), make_user("quinn-annotator")
    add_members(project, (pia, Role.ANNOTATOR), (quinn, Role.ANNOTATOR))
    people = [annotator, other_annotator, pia, quinn]
    rng = random.Random(11)
    issues = Issue.objects.bulk_create(
        Issue(
            repository=repository,
            number=str(n),
            url=f"{repository.web_url}/issues/{n}",
            title=f"Problem {n}",
        )
        for n in range(40)
    )
    ProjectIssue.objects.bulk_create(
        ProjectIssue(project=project, issue=issue, position=k) for k, issue in enumerate(issues)
    )
    fields = {code: label_fields(project, code) for code in CODES}
    said: dict[int, dict[int, str]] = {person.pk: {} for person in people}
    rows = []
    for issue in issues:
        truth = rng.choice(CODES)
        for person in people:
            code = truth if rng.random() < 0.7 else rng.choice(CODES)
            said[person.pk][issue.pk] = theme(code)
            rows.append(Annotation(project=project, issue=issue, annotator=person, **fields[code]))
    Annotation.objects.bulk_create(rows)
    return issues, said


def test_the_rater_is_tested_on_what_the_volunteers_and_the_machine_said(project, labeled):
    issues, said = labeled
    rater = MachineRater.objects.create(project=project, name="clf", kind="external")
    rng = random.Random(5)
    machine = {}
    rows = []
    for k, issue in enumerate(issues):
        if k == 0:
            rows.append(MachineLabel(rater=rater, issue=issue, valid=False, raw_output="?"))
            machine[issue.pk] = "not a code"
            continue
        code = rng.choice(CODES)
        machine[issue.pk] = theme(code)
        rows.append(MachineLabel(rater=rater, issue=issue, **label_fields(project, code)))
    MachineLabel.objects.bulk_create(rows)

    # Annotators are named by their pseudonyms (rater-<user id> in these tests).
    named = {f"rater-{pk}": labels for pk, labels in said.items()}
    expected = alt_test(named, machine, epsilon=0.2)
    result = rater_alt_test(rater)

    assert result.enough_data and expected.enough_data
    assert result.n_items == 40 and result.n_annotators == 4
    assert result.winning_rate == expected.winning_rate
    assert result.advantage_probability == pytest.approx(expected.advantage_probability)
    got = {c.annotator: c.p_value for c in result.comparisons}
    assert got == pytest.approx({c.annotator: c.p_value for c in expected.comparisons})


def test_the_projects_margin_is_used(project, labeled):
    issues, _ = labeled
    rater = MachineRater.objects.create(project=project, name="clf", kind="external")
    MachineLabel.objects.bulk_create(
        MachineLabel(rater=rater, issue=issue, **label_fields(project, "C.1")) for issue in issues
    )
    project.alt_test_epsilon = 0.05
    project.save(update_fields=["alt_test_epsilon"])
    rater.refresh_from_db()
    assert rater_alt_test(rater).epsilon == 0.05


def test_a_rater_that_never_ran_has_not_enough_data(project, labeled):
    rater = MachineRater.objects.create(project=project, name="clf", kind="external")
    result = rater_alt_test(rater)
    assert result.enough_data is False
    assert result.n_items == 0
    assert set(result.items_per_annotator.values()) == {0}


def test_raters_json_carries_each_raters_alt_test(project, labeled):
    import io
    import json

    from django.core.management import call_command

    issues, _ = labeled
    rater = MachineRater.objects.create(project=project, name="clf", kind="external")
    MachineLabel.objects.bulk_create(
        MachineLabel(rater=rater, issue=issue, **label_fields(project, "C.1")) for issue in issues
    )
    out = io.StringIO()
    call_command("raters", "--project", project.name, "--json", stdout=out)
    [row] = json.loads(out.getvalue())["raters"]
    assert set(row["alt_test"]) >= {
        "epsilon", "n_items", "n_annotators", "winning_rate", "passed", "advantage_probability",
    }  # fmt: skip
    assert row["alt_test"]["n_annotators"] == 4
    # Annotators appear by pseudonym, never by account.
    assert all(c["annotator"].startswith("rater-") for c in row["alt_test"]["comparisons"])


def test_the_raters_page_reads_the_annotations_once_until_one_changes(
    project, labeled, annotator, monkeypatch
):
    """The alt-test is cached per state: a second load reads no annotation; a revised label
    (a new annotation row) makes it read them again."""
    from raters import alt_test as module
    from raters.validation import validation_report

    issues, _ = labeled
    rater = MachineRater.objects.create(project=project, name="clf", kind="external")
    MachineLabel.objects.bulk_create(
        MachineLabel(rater=rater, issue=issue, **label_fields(project, "C.1")) for issue in issues
    )
    reads = []
    real = module.human_theme_codes
    monkeypatch.setattr(module, "human_theme_codes", lambda p: reads.append(p) or real(p))

    first = validation_report(project)["raters"][0]["alt_test"]
    again = validation_report(project)["raters"][0]["alt_test"]
    assert len(reads) == 1 and again == first

    current = Annotation.objects.get(project=project, issue=issues[0], annotator=annotator)
    current.is_current = False
    current.save(update_fields=["is_current"])
    Annotation.objects.create(
        project=project, issue=issues[0], annotator=annotator, revision=2,
        **label_fields(project, "FP"),
    )  # fmt: skip
    validation_report(project)
    assert len(reads) == 2
