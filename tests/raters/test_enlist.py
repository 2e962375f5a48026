"""Enlisting: Lena (the lead) lets a machine rater count as one vote in the adaptive stopping
rule from a confidence on; a researcher, an annotator or an outsider cannot.

Only a rater with a current validation may be enlisted: one that never ran, or a classifier
trained again since it last labeled the final issues, is refused on the page, through the API
and by `manage.py enlist_rater` alike, with an error naming `enlisted`. The page shows the
current validation beside the checkbox, and says when the project's fixed rule ignores it."""

from __future__ import annotations

import html
import json
import random
import re
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from sklearn.metrics import cohen_kappa_score

from annotator.models import Membership, Role
from labeling.labels import LABEL_FIELDS
from labeling.models import Annotation, MachineLabel, MachineRater, Resolution
from raters.models import RaterRun
from raters.runs import create_run, run_rater
from tests.conftest import add_members, make_user
from tests.raters.conftest import add_finals, label_fields

pytestmark = pytest.mark.django_db

# The validated rater's labels of the eight final issues (their finals cycle through the
# conftest's codes: A.1, B.1, C.1, C.2, FP, A.1, B.1, C.1); the last output was unreadable.
FINALS = ["A.1", "B.1", "C.1", "C.2", "FP", "A.1", "B.1", "C.1"]
SAID = ["A.1", "B.1", "C.2", "C.2", "FP", "B.1", "B.1", None]


@pytest.fixture
def rater(project) -> MachineRater:
    """A classifier added but never run."""
    return MachineRater.objects.create(project=project, name="clf", kind="classifier")


def volunteers_label_open_issues(project, repository, rater, machine_accuracy: float) -> None:
    """32 open issues that four volunteers labeled (right 85 % of the time), and the rater's
    current version's label of each (right `machine_accuracy` of the time): what the
    alternative annotator test reads. Open issues, so the validation figures (finals) stay."""
    pia, quinn = make_user("pia-annotator"), make_user("quinn-annotator")
    add_members(project, (pia, Role.ANNOTATOR), (quinn, Role.ANNOTATOR))
    people = [m.user for m in Membership.objects.filter(project=project, role=Role.ANNOTATOR)]
    rng = random.Random(3)
    codes = ["A.1", "B.1", "C.1", "C.2", "FP"]
    issues = add_finals(project, repository, 0, open_issues=32, start=5000)
    for issue in issues:
        truth = rng.choice(codes)
        for person in people:
            said = truth if rng.random() < 0.85 else rng.choice([c for c in codes if c != truth])
            Annotation.objects.create(
                project=project, issue=issue, annotator=person, **label_fields(project, said)
            )
        said = truth if rng.random() < machine_accuracy else rng.choice(codes)
        MachineLabel.objects.create(
            rater=rater, issue=issue, confidence=0.9, model_version=f"v{rater.version}",
            **label_fields(project, said),
        )  # fmt: skip


def checked_rater(project, repository) -> MachineRater:
    """A classifier whose current version (1) labeled eight final issues, seven validly."""
    issues = add_finals(project, repository, len(FINALS), noise=0.0)
    rater = MachineRater.objects.create(
        project=project, name="checked", kind="classifier", version=1, trained_on=len(FINALS)
    )
    run = RaterRun.objects.create(rater=rater, status="done", total=8, done=8, invalid=1)
    for issue, said in zip(issues, SAID, strict=True):
        MachineLabel.objects.create(
            rater=rater,
            issue=issue,
            run=run,
            valid=said is not None,
            confidence=0.9,
            model_version="v1",
            **(label_fields(project, said) if said else {}),
        )
    return rater


@pytest.fixture
def validated(project, repository) -> MachineRater:
    """`checked_rater`, which also passes the alternative annotator test (it gives the true
    code of every issue four volunteers labeled)."""
    rater = checked_rater(project, repository)
    volunteers_label_open_issues(project, repository, rater, machine_accuracy=1.0)
    return rater


def _page(client, project, rater, data):
    answer = client.post(reverse("rater_enlist", args=[project.pk, rater.pk]), data)
    return answer.status_code, answer.content.decode()


def _api(client, project, rater, data):
    answer = client.post(
        reverse("api_rater_enlist", args=[project.pk, rater.pk]),
        json.dumps(data),
        content_type="application/json",
    )
    return answer.status_code, answer.content.decode()


def _command(client, project, rater, data):
    args = ["enlist_rater", "--project", project.name, "--rater", rater.name]
    if data.get("confidence_threshold") is not None:
        args += ["--confidence-threshold", str(data["confidence_threshold"])]
    if not data.get("enlisted"):
        args.append("--withdraw")
    out = StringIO()
    try:
        call_command(*args, stdout=out)
    except CommandError as error:
        return 400, str(error)
    return 200, out.getvalue()


CHANNELS = {"page": _page, "api": _api, "command": _command}
ENLIST = {"enlisted": True, "confidence_threshold": 0.8}


def _form(data: dict) -> dict:
    """The page's form fields for `data` (an unticked box is absent)."""
    threshold = data.get("confidence_threshold")
    out = {"confidence_threshold": "" if threshold is None else str(threshold)}
    if data.get("enlisted"):
        out["enlisted"] = "on"
    return out


def attempt(channel: str, client, project, rater, data: dict) -> tuple[int, str]:
    return CHANNELS[channel](client, project, rater, _form(data) if channel == "page" else data)


@pytest.mark.parametrize("channel", CHANNELS)
def test_a_rater_that_never_ran_is_refused(client, project, lead, rater, channel):
    client.force_login(lead)
    status, said = attempt(channel, client, project, rater, ENLIST)
    assert status == 400, said
    assert "enlisted" in said and "never run" in said
    rater.refresh_from_db()
    assert (rater.enlisted, rater.confidence_threshold) == (False, None)


@pytest.mark.parametrize("channel", CHANNELS)
def test_a_validated_rater_is_enlisted_and_taken_back(client, project, lead, validated, channel):
    client.force_login(lead)
    status, said = attempt(channel, client, project, validated, ENLIST)
    assert status in (200, 302), said
    validated.refresh_from_db()
    assert (validated.enlisted, validated.confidence_threshold) == (True, 0.8)
    status, said = attempt(channel, client, project, validated, {"enlisted": False})
    assert status in (200, 302), said
    validated.refresh_from_db()
    assert (validated.enlisted, validated.confidence_threshold) == (False, None)


@pytest.mark.usefixtures("fit_once")
def test_a_classifier_trained_again_since_it_labeled_the_finals_is_refused(
    client, project, lead, finals
):
    """A real classifier: its run over the final issues validates version 1 and it may be
    enlisted; a run over the open issues alone trains version 2, whose labels of the finals are
    still version 1's, so it has no current validation until it labels them again. Taking it
    back stays possible."""
    # What this test is about is the version, not the alt-test: a third volunteer labels the
    # finals too (the test needs three), and the margin makes any rater with data pass it.
    third = make_user("pia-annotator")
    add_members(project, (third, Role.ANNOTATOR))
    for resolution in Resolution.objects.filter(project=project, is_current=True):
        Annotation.objects.create(
            project=project, issue_id=resolution.issue_id, annotator=third,
            **{f: getattr(resolution, f) for f in LABEL_FIELDS},
        )  # fmt: skip
    project.alt_test_epsilon = 1.0
    project.save(update_fields=["alt_test_epsilon"])
    rater = MachineRater.objects.create(project=project, name="tfidf", kind="classifier")
    run_rater(create_run(rater, "final").pk)
    rater.refresh_from_db()
    client.force_login(lead)
    assert attempt("api", client, project, rater, ENLIST)[0] == 200
    run_rater(create_run(rater, "open").pk)
    rater.refresh_from_db()
    assert rater.version == 2
    for channel in CHANNELS:
        status, said = attempt(channel, client, project, rater, ENLIST)
        assert status == 400 and "enlisted" in said and "no current validation" in said, channel
    status, _ = attempt("page", client, project, rater, {"enlisted": False})
    rater.refresh_from_db()
    assert status == 302 and not rater.enlisted
    # Labeling the finals again validates version 2.
    run_rater(create_run(rater, "final").pk)
    rater.refresh_from_db()
    assert attempt("command", client, project, rater, ENLIST)[0] == 200


def _beside_the_checkbox(page: str, name: str) -> str:
    row = page.split(f'data-rater="{name}"')[1].split("</tr>")[0]
    form = row.split('class="enlist-rater"')[1].split("</form>")[0]
    return html.unescape(re.sub(r"<[^>]+>", " ", form))


def test_the_validation_is_shown_beside_the_checkbox(client, project, lead, rater, validated):
    pairs = [(f, s) for f, s in zip(FINALS, SAID, strict=True) if s is not None]
    kappa = cohen_kappa_score([f for f, _ in pairs], [s for _, s in pairs])
    accuracy = sum(f == s for f, s in pairs) / len(pairs)
    client.force_login(lead)
    page = client.get(reverse("raters_page", args=[project.pk])).content.decode()
    shown = " ".join(_beside_the_checkbox(page, "checked").split())
    assert f"on {len(pairs)} final issues" in shown, shown
    assert f"κ theme {kappa:.3f}" in shown and f"accuracy {accuracy:.3f}" in shown, shown
    # The rater that never ran: no validation, and its box cannot be ticked.
    never = _beside_the_checkbox(page, "clf")
    assert "no current validation" in never
    box = re.compile(r'name="enlisted"[^>]* disabled')
    assert box.search(page.split('data-rater="clf"')[1].split("</tr>")[0])
    assert not box.search(page.split('data-rater="checked"')[1].split("</tr>")[0])
    # The API gives the same figures.
    report = client.get(reverse("api_raters", args=[project.pk])).json()
    current = {r["name"]: r["current_validation"] for r in report["raters"]}
    assert current["clf"] is None
    assert current["checked"]["n"] == len(pairs)
    assert current["checked"]["kappa_theme"] == pytest.approx(kappa)


def test_a_fixed_rule_project_says_enlisting_has_no_effect(client, project, lead, validated):
    notice = "stopping rule is fixed"
    client.force_login(lead)
    assert project.stopping_rule == "fixed"
    page = client.get(reverse("raters_page", args=[project.pk])).content.decode()
    assert notice in _beside_the_checkbox(page, "checked")
    answer = client.post(
        reverse("rater_enlist", args=[project.pk, validated.pk]), _form(ENLIST), follow=True
    )
    assert notice in answer.content.decode().split('class="messages"')[1].split("</ul>")[0]
    status, said = attempt("api", client, project, validated, ENLIST)
    assert status == 200 and json.loads(said)["stopping_rule_uses_it"] is False
    assert notice in attempt("command", client, project, validated, ENLIST)[1]

    project.stopping_rule = "adaptive"
    project.save()
    page = client.get(reverse("raters_page", args=[project.pk])).content.decode()
    assert notice not in page
    assert json.loads(attempt("api", client, project, validated, ENLIST)[1])[
        "stopping_rule_uses_it"
    ]
    assert notice not in attempt("command", client, project, validated, ENLIST)[1]


@pytest.mark.parametrize(
    "data",
    [{"enlisted": "on"}, {"enlisted": "on", "confidence_threshold": "1.5"},
     {"enlisted": "on", "confidence_threshold": "x"}],
)  # fmt: skip
def test_enlisting_without_a_sound_threshold_is_a_400_naming_the_field(
    client, project, lead, validated, data
):
    client.force_login(lead)
    answer = client.post(reverse("rater_enlist", args=[project.pk, validated.pk]), data)
    assert answer.status_code == 400
    assert b"confidence_threshold" in answer.content
    validated.refresh_from_db()
    assert not validated.enlisted


@pytest.mark.parametrize("body", [[1, 2], {"enlisted": True, "confidence_threshold": "x"}])
def test_a_bad_api_body_is_a_400_naming_the_field(client, project, lead, validated, body):
    client.force_login(lead)
    status, said = _api(client, project, validated, body)
    assert status == 400
    assert ("confidence_threshold" if isinstance(body, dict) else "non_field_errors") in said


@pytest.mark.parametrize("who", ["researcher", "annotator", "outsider"])
def test_only_a_lead_may_enlist(client, request, project, validated, who):
    client.force_login(request.getfixturevalue(who))
    answer = client.post(
        reverse("rater_enlist", args=[project.pk, validated.pk]),
        {"enlisted": "on", "confidence_threshold": "0.5"},
    )
    assert answer.status_code == 404
    assert _api(client, project, validated, ENLIST)[0] == 404
    validated.refresh_from_db()
    assert not validated.enlisted


@pytest.mark.parametrize("channel", CHANNELS)
def test_a_validated_rater_that_fails_the_alt_test_is_refused(
    client, project, lead, repository, channel
):
    """Validated on the finals, but on the issues four volunteers labeled it is right only
    a quarter of the time: it does not represent them better than they do each other."""
    rater = checked_rater(project, repository)
    volunteers_label_open_issues(project, repository, rater, machine_accuracy=0.25)
    client.force_login(lead)
    status, said = attempt(channel, client, project, rater, ENLIST)
    assert status == 400, said
    assert "enlisted" in said and "did not pass the alternative annotator test" in said
    rater.refresh_from_db()
    assert not rater.enlisted


def test_a_rater_without_enough_volunteer_labels_for_the_test_is_refused(
    client, project, lead, repository
):
    rater = checked_rater(project, repository)
    client.force_login(lead)
    status, said = attempt("api", client, project, rater, ENLIST)
    assert status == 400
    assert "cannot be enlisted yet" in said and "0 annotators have that many" in said


def test_a_new_version_that_fails_the_test_is_taken_back(project, repository):
    """An enlisted rater counts on as long as each new version passes; an import of worse
    labels (a new version) takes it back."""
    from raters.alt_test import retest_enlisted

    rater = checked_rater(project, repository)
    volunteers_label_open_issues(project, repository, rater, machine_accuracy=1.0)
    rater.enlisted, rater.confidence_threshold = True, 0.8
    rater.save()
    assert retest_enlisted(rater.pk) is True
    rater.version = 2
    rater.save()  # its labels are version 1's: the new version has none, so it cannot pass
    assert retest_enlisted(rater.pk) is False
    rater.refresh_from_db()
    assert not rater.enlisted
