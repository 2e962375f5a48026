"""Machine labels from outside (`raters.imports`, `manage.py import_machine_labels`): Lena
brings the labels a partner team's model gave her project's issues. Every bad row is named by
its line and nothing is stored; a second file replaces the first as a new version; the external
rater is validated like any other and never run."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from ingest.models import Issue
from labeling.models import MachineLabel, MachineRater, ProjectIssue
from lib.refusal import Refusal
from raters.imports import LabelFileError, import_machine_labels
from raters.models import RaterRun
from raters.runs import create_run
from raters.validation import validation_report

pytestmark = pytest.mark.django_db


@pytest.fixture
def issues(project, repository) -> list[Issue]:
    made = Issue.objects.bulk_create(
        Issue(repository=repository, number=str(n), url=f"{repository.web_url}/issues/{n}")
        for n in (11, 12, 13, 14)
    )
    ProjectIssue.objects.bulk_create(
        ProjectIssue(project=project, issue=issue, position=k) for k, issue in enumerate(made)
    )
    return made


def csv_bytes(*lines: str) -> bytes:
    return ("\n".join(["Issue_URL,label,confidence", *lines]) + "\n").encode()


def test_a_partners_labels_become_an_external_raters_current_labels(project, issues, lead):
    data = csv_bytes(
        "https://github.com/NVIDIA/Megatron-LM/issues/11,C.1,0.9",
        "http://www.github.com/NVIDIA/Megatron-LM/issues/12/,C,",  # another spelling, a type
        "https://github.com/NVIDIA/Megatron-LM/issues/13,FP,0",
        "https://github.com/NVIDIA/Megatron-LM/issues/14,C.1.i,1",
    )
    result = import_machine_labels(project, "partner", "partner.csv", data, model="m-7b", user=lead)

    rater = MachineRater.objects.get(project=project, name="partner")
    assert rater.kind == MachineRater.Kind.EXTERNAL and rater.version == 1
    assert (result.labels, result.replaced, result.version) == (4, 0, 1)
    stored = {
        label.issue_id: (label.label_code, label.confidence, label.model)
        for label in MachineLabel.objects.filter(rater=rater, is_current=True)
    }
    assert stored == {
        issues[0].pk: ("C.1", 0.9, "m-7b"),
        issues[1].pk: ("C", None, "m-7b"),
        issues[2].pk: ("FP", 0.0, "m-7b"),
        issues[3].pk: ("C.1.i", 1.0, "m-7b"),
    }
    run = RaterRun.objects.get(rater=rater)
    assert (run.status, run.total) == (RaterRun.Status.DONE, 4)


def test_every_bad_row_is_named_by_line_and_nothing_is_stored(project, issues):
    data = csv_bytes(
        "https://github.com/NVIDIA/Megatron-LM/issues/11,C.1,0.9",
        "https://github.com/NVIDIA/Megatron-LM/issues/999,C.1,0.9",
        "https://github.com/NVIDIA/Megatron-LM/issues/12,Z.9,0.5",
        "https://github.com/NVIDIA/Megatron-LM/issues/13,C.1,1.5",
        "https://github.com/NVIDIA/Megatron-LM/issues/14,C.1,nan",
        "https://github.com/NVIDIA/Megatron-LM/issues/11,C.2,0.1",
        "not a url,C.1,0.5",
        "https://github.com/NVIDIA/Megatron-LM/issues/12,C.1",
    )
    with pytest.raises(LabelFileError) as refused:
        import_machine_labels(project, "partner", "partner.csv", data)
    problems = refused.value.problems
    assert [p.split(":")[0] for p in problems] == [
        f"partner.csv, line {n}" for n in (3, 4, 5, 6, 7, 8, 9)
    ]
    assert "Issue_URL: not an issue of this project" in problems[0]
    assert "label: 'Z.9'" in problems[1]
    assert "confidence" in problems[2] and "confidence" in problems[3]
    assert "the same issue as line 2" in problems[4]
    assert "expected 3 cells, got 2" in problems[6]
    assert not MachineRater.objects.filter(project=project).exists()
    assert not MachineLabel.objects.exists()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "the file is empty"),
        (b"url,code,p\nx,y,z\n", "the header must be Issue_URL,label,confidence"),
        (b"Issue_URL,label,confidence\n", "no labels after the header"),
        (b"\xff\xfe", "not UTF-8"),
    ],
)
def test_a_file_that_is_no_label_file_is_refused(project, issues, data, message):
    with pytest.raises(LabelFileError, match=message):
        import_machine_labels(project, "partner", "partner.csv", data)


def test_a_second_file_replaces_the_first_as_a_new_version(project, issues):
    import_machine_labels(project, "partner", "v1.csv", csv_bytes(
        "https://github.com/NVIDIA/Megatron-LM/issues/11,C.1,0.9",
        "https://github.com/NVIDIA/Megatron-LM/issues/12,C.2,0.8",
    ))  # fmt: skip
    result = import_machine_labels(project, "partner", "v2.csv", csv_bytes(
        "https://github.com/NVIDIA/Megatron-LM/issues/11,A.1,0.7",
    ))  # fmt: skip
    assert (result.version, result.replaced, result.labels) == (2, 2, 1)
    current = MachineLabel.objects.filter(rater=result.rater, is_current=True)
    assert [(c.issue_id, c.label_code) for c in current] == [(issues[0].pk, "A.1")]
    assert MachineLabel.objects.filter(rater=result.rater, is_current=False).count() == 2


def test_labels_go_only_into_an_external_rater_which_never_runs(project, issues):
    MachineRater.objects.create(project=project, name="clf", kind="classifier")
    with pytest.raises(LabelFileError, match="clf is a classifier rater"):
        import_machine_labels(project, "clf", "x.csv", csv_bytes())
    result = import_machine_labels(project, "partner", "x.csv", csv_bytes(
        "https://github.com/NVIDIA/Megatron-LM/issues/11,C.1,0.9",
    ))  # fmt: skip
    with pytest.raises(Refusal, match="imported from a file, never run"):
        create_run(result.rater)
    names = [row["name"] for row in validation_report(project)["raters"]]
    assert "partner" in names


def test_the_command_lists_the_problems_and_imports_a_good_file(project, issues, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_bytes(csv_bytes("https://github.com/NVIDIA/Megatron-LM/issues/11,Q,0.9"))
    with pytest.raises(CommandError, match=r"bad.csv, line 2: label: 'Q'"):
        call_command(
            "import_machine_labels", "--project", project.name, "--rater", "partner", str(bad)
        )
    good = tmp_path / "good.csv"
    good.write_bytes(csv_bytes("https://github.com/NVIDIA/Megatron-LM/issues/11,C.1,"))
    call_command(
        "import_machine_labels", "--project", project.name, "--rater", "partner", str(good)
    )
    assert MachineLabel.objects.filter(rater__name="partner", is_current=True).count() == 1


def test_the_lead_uploads_labels_on_the_raters_page(client, project, issues, lead):
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.urls import reverse

    client.force_login(lead)
    url = reverse("rater_import", args=[project.pk])
    bad = csv_bytes("https://github.com/NVIDIA/Megatron-LM/issues/11,Q.9,0.9")
    answer = client.post(url, {
        "import-rater": "partner", "import-file": SimpleUploadedFile("p.csv", bad),
    })  # fmt: skip
    assert answer.status_code == 400
    assert "p.csv, line 2: label: &#x27;Q.9&#x27;" in answer.content.decode()
    assert not MachineRater.objects.filter(project=project).exists()

    good = csv_bytes("https://github.com/NVIDIA/Megatron-LM/issues/11,C.1,0.9")
    answer = client.post(url, {
        "import-rater": "partner", "import-model": "m-7b",
        "import-file": SimpleUploadedFile("p.csv", good),
    })  # fmt: skip
    assert answer.status_code == 302
    rater = MachineRater.objects.get(project=project, name="partner")
    assert (rater.kind, rater.model, rater.version) == ("external", "m-7b", 1)


@pytest.mark.parametrize("who", ["researcher", "annotator", "outsider"])
def test_only_a_lead_uploads_labels(client, request, project, issues, who):
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.urls import reverse

    client.force_login(request.getfixturevalue(who))
    good = csv_bytes("https://github.com/NVIDIA/Megatron-LM/issues/11,C.1,0.9")
    answer = client.post(reverse("rater_import", args=[project.pk]), {
        "import-rater": "partner", "import-file": SimpleUploadedFile("p.csv", good),
    })  # fmt: skip
    assert answer.status_code == 404
    assert not MachineRater.objects.exists()
