"""The demo project gives a newcomer issues to label and accounts for every role, and a history
in which every feature has something to show: final issues enough for a classifier rater to
train and validate on, disagreements for the lead, issues the newcomer's first labels complete,
and a lead who may try *New project*.

The tests that read the demo with its history share one, loaded once for the module
(`module_db`); those that load it themselves come first."""

import json
from collections import Counter
from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import override_settings
from django.urls import reverse

from annotator.models import Membership, Project, Role
from ingest.models import Issue
from labeling.demo import DEMO_ACCOUNTS, DEMO_PROJECT, load_demo


@pytest.mark.django_db
def test_load_demo_creates_project_accounts_and_is_idempotent(settings, tmp_path, capsys):
    settings.DATA_DIR = tmp_path
    call_command("load_demo")
    call_command("load_demo")
    project = Project.objects.get(name=DEMO_PROJECT)
    assert project.project_issues.count() >= 24
    assert project.taxonomy_version.nodes.filter(level=3).count() == 70
    roles = set(Membership.objects.filter(project=project).values_list("role", flat=True))
    assert roles == {Role.LEAD, Role.ANNOTATOR, Role.RESEARCHER}
    assert Membership.objects.filter(project=project).count() == len(DEMO_ACCOUNTS)
    # Issues from all three repositories, with discussions, in an interleaved order.
    repos = [pi.issue.repository.name for pi in project.project_issues.order_by("position")[:6]]
    assert len(set(repos)) >= 2
    assert (
        Issue.objects.filter(project_issues__project=project, comments__isnull=False)
        .distinct()
        .count()
        >= 15
    )
    out = capsys.readouterr().out
    assert f"password is in {tmp_path / 'admin-password.txt'}" in out
    assert (tmp_path / "admin-password.txt").stat().st_mode & 0o077 == 0


@pytest.mark.django_db
def test_demo_password_is_not_in_the_output(settings, tmp_path, capsys):
    settings.DATA_DIR = tmp_path
    call_command("load_demo", "--no-history")
    password = (tmp_path / "demo-password.txt").read_text().strip()
    assert password not in capsys.readouterr().out


@pytest.mark.django_db
def test_the_demo_without_history_has_no_labels(settings, tmp_path):
    from labeling.models import Annotation

    settings.DATA_DIR = tmp_path
    call_command("load_demo", "--no-admin", "--no-history")
    assert not Annotation.objects.exists()


# -- The demo with its history, loaded once for the tests below --------------------------------


@pytest.fixture(scope="module")
def demo_id(module_db, tmp_path_factory) -> int:
    data_dir = tmp_path_factory.mktemp("demo-data")

    def build() -> int:
        with override_settings(DATA_DIR=data_dir):
            return load_demo(history=True).project.pk

    return module_db(build)


@pytest.fixture
def demo(demo_id, db) -> Project:
    return Project.objects.get(pk=demo_id)


def final_codes(project) -> dict[int, str]:
    """Each final issue's label code, read from the stored resolutions."""
    from labeling.models import Resolution

    return {
        r.issue_id: r.label_code
        for r in Resolution.objects.filter(project=project, is_current=True).select_related(
            "issue_type", "theme", "sub_theme"
        )
    }


def theme_of(code: str) -> str:
    return "FP" if code == "FP" else ".".join(code.split(".")[:2])


def test_the_demo_comes_with_a_labeling_history(demo):
    """The three volunteers have labeled the first issues of the queue, all three on the first
    HISTORY_COMPLETE (finals, and a few disagreements for the lead), two on the next few (which
    demo-annotator-1's first labels complete); the rest is open. The labels are spread over
    the last weeks for the dashboard."""
    from labeling import queue
    from labeling.demo import HISTORY_COMPLETE, HISTORY_DISAGREEMENTS, HISTORY_WAITING
    from labeling.models import Annotation, ProjectIssue

    items = list(demo.project_issues.order_by("position"))
    counts = [pi.annotation_count for pi in items]
    assert counts == [3] * HISTORY_COMPLETE + [2] * HISTORY_WAITING + [0] * (
        len(items) - HISTORY_COMPLETE - HISTORY_WAITING
    )
    assert len(items) - HISTORY_COMPLETE - HISTORY_WAITING >= 10  # open issues for everyone
    statuses = Counter(pi.status for pi in items[:HISTORY_COMPLETE])
    assert statuses[ProjectIssue.Status.DISAGREEMENT] == len(HISTORY_DISAGREEMENTS)
    assert statuses[ProjectIssue.Status.FINAL] == HISTORY_COMPLETE - len(HISTORY_DISAGREEMENTS)
    # Each dissent is one volunteer's, and not always the same volunteer's.
    dissenters = set()
    for position in HISTORY_DISAGREEMENTS:
        labels = Counter(
            (a.is_false_positive, a.sub_theme_id, a.annotator_id)
            for a in Annotation.objects.filter(project=demo, issue=items[position].issue)
        )
        by_label = Counter((fp, sub) for fp, sub, _ in labels)
        assert sorted(by_label.values()) == [1, 2], position
        odd = next(key for key, n in by_label.items() if n == 1)
        dissenters |= {who for fp, sub, who in labels if (fp, sub) == odd}
    assert len(dissenters) >= 2
    days = {a.created_at.date() for a in Annotation.objects.filter(project=demo)}
    assert len(days) >= 15
    # The issue list's "last label" is each issue's newest label on its spread-out day.
    newest: dict[int, object] = {}
    for a in Annotation.objects.filter(project=demo, is_current=True):
        newest[a.issue_id] = max(a.created_at, newest.get(a.issue_id, a.created_at))
    assert [pi.last_label_at for pi in items] == [newest.get(pi.issue_id) for pi in items]
    assert len({pi.last_label_at.date() for pi in items if pi.last_label_at}) >= 15
    newcomer = User.objects.get(username="demo-annotator-1")
    assert queue.next_issue_id_for(newcomer, demo) == items[HISTORY_COMPLETE].pk
    # The lead's guideline is there for the newcomer to read above the issue.
    assert "Not LLM-related" in demo.guideline


def test_the_demo_has_sixty_final_issues_of_varied_themes(demo):
    """Enough finals for a classifier to train and validate on (it needs 20), spread over
    themes each of several issues, with false positives among them."""
    finals = final_codes(demo)
    assert len(finals) >= 60
    themes = Counter(theme_of(code) for code in finals.values())
    assert "FP" in themes
    assert len([t for t, n in themes.items() if n >= 4]) >= 8, themes
    assert max(themes.values()) <= len(finals) / 4, themes  # no theme dominates


# Six fits of the classifier (five folds and the model for the open issues) on the demo's texts:
# 5,000 columns for 16 classes, several seconds of CPU, so in the slow tier.
@pytest.mark.slow
def test_the_demo_trains_a_classifier_with_add_rater_and_machine_label(demo):
    """The lead adds a classifier rater and runs it from the command line on the demo as it
    comes: every issue gets a machine label, those of the final issues out of sample, and the
    validation counts them. The stored labels are compared with the finals here, and the
    classifier beats always answering the commonest theme (scikit-learn's DummyClassifier)."""
    from sklearn.dummy import DummyClassifier
    from sklearn.metrics import accuracy_score

    from labeling.models import MachineLabel

    def run(*args: str) -> str:
        out = StringIO()
        call_command(*args, stdout=out)
        return out.getvalue()

    out = run(
        "add_rater", "--project", DEMO_PROJECT, "--name", "demo-tfidf", "--kind", "classifier"
    )
    assert "added rater demo-tfidf (classifier" in out
    out = run("machine_label", "--project", DEMO_PROJECT, "--rater", "demo-tfidf", "--wait")
    issues = demo.project_issues.count()
    assert f"{issues} issues labeled, 0 invalid" in out
    labels = {
        m.issue_id: m
        for m in MachineLabel.objects.filter(
            rater__project=demo, rater__name="demo-tfidf", is_current=True
        ).select_related("issue_type", "theme", "sub_theme")
    }
    assert len(labels) == issues and all(m.valid for m in labels.values())

    finals = final_codes(demo)
    assert all(labels[i].fold is not None for i in finals)  # cross-fitted: out of sample
    report = json.loads(run("raters", "--project", DEMO_PROJECT, "--json"))
    [row] = report["raters"]
    assert row["name"] == "demo-tfidf" and row["n"] == len(finals) >= 20
    assert row["kappa_theme"] is not None

    ids = sorted(finals)
    truth = [theme_of(finals[i]) for i in ids]
    predicted = [theme_of(labels[i].label_code) for i in ids]
    accuracy = accuracy_score(truth, predicted)
    assert accuracy == pytest.approx(row["accuracy_theme"])
    baseline = DummyClassifier(strategy="most_frequent").fit([[0]] * len(truth), truth)

    assert accuracy > baseline.score([[0]] * len(truth), truth) + 0.1


def test_demo_lead_may_try_new_project(client, demo):
    """demo-lead holds `annotator.add_project`: the home page links *New project* and the page
    offers the demo's repositories. The other demo accounts read who may create projects."""
    from annotator.permissions import may_create_project

    url = reverse("project_create")
    lead = User.objects.get(username="demo-lead")
    client.force_login(lead)
    assert may_create_project(lead)
    assert 'id="new-project"' in client.get(reverse("home")).content.decode()
    page = client.get(url)
    assert page.status_code == 200
    assert "vllm-project/vllm" in page.content.decode()
    for name, _ in DEMO_ACCOUNTS:
        if name != "demo-lead":
            client.force_login(User.objects.get(username=name))
            assert client.get(url).status_code == 403, name
