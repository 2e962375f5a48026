"""The adaptive stopping rule, as a lead sets it and as annotators meet it.

Lena (lead) chooses the adaptive rule on the setup page: at least 2 labels, at most K = 5, an
issue decided once its leading theme is 2 votes ahead. Ada, Otto, Tia, Uma and Vic label. Each
scenario runs on both labeling paths (the `both_paths` fixture): the PL/pgSQL functions and the
Python path alone.
"""

from __future__ import annotations

import random
import re
import threading
from datetime import timedelta

import pytest
import requests
from django.conf import settings as django_settings
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotator.models import Membership, Project, Role
from labeling import queue, submission
from labeling.labels import label_key
from labeling.models import Annotation, ProjectIssue, Reservation, Resolution
from labeling.stopping import AdaptiveRule, deciding_key, early_decision
from lib.refusal import Refusal
from tests.conftest import make_issue, make_user
from tests.labeling.conftest import label_data, label_item, node

# The queue, a submission or resolution: the labeling path matters, so each test runs on both.
pytestmark = pytest.mark.both_paths

K = 5


@pytest.fixture
def adaptive(client, lead, project, issues_in_project):
    """Lena sets the rule through the setup page, as a lead would."""
    client.force_login(lead)
    response = client.post(
        reverse("project_setup", args=[project.pk]),
        {
            "action": "settings",
            "annotations_per_issue": str(K),
            "resolution_policy": "lead_decides",
            "majority_threshold": "0.6",
            "stopping_rule": "adaptive",
            "min_labels": "2",
            "lead_margin": "2",
            "needs_more_first": "1",
        },
        follow=True,
    )
    assert "Settings saved." in response.content.decode()
    project.refresh_from_db()
    assert (project.stopping_rule, project.min_labels, project.lead_margin, K) == (
        "adaptive",
        2,
        2,
        project.annotations_per_issue,
    )
    return project


@pytest.fixture
def crowd(project, annotator, other_annotator, third_annotator):
    """Ada, Otto, Tia, Uma and Vic: five annotators, one per slot of K."""
    more = []
    for name in ("uma-annotator", "vic-annotator"):
        user = make_user(name)
        Membership.objects.create(project=project, user=user, role=Role.ANNOTATOR)
        more.append(user)
    return [annotator, other_annotator, third_annotator, *more]


@pytest.fixture
def items(issues_in_project, project):
    return list(ProjectIssue.objects.filter(project=project).order_by("position"))


def labels_in_order(codes: list[str], project: Project, item: ProjectIssue, crowd) -> None:
    for user, code in zip(crowd, codes, strict=False):
        label_item(user, project, item, code)


def state(item: ProjectIssue) -> tuple:
    item.refresh_from_db()
    return item.status, item.annotation_count


def final_of(item: ProjectIssue) -> Resolution:
    return Resolution.objects.get(project_id=item.project_id, issue_id=item.issue_id)


def test_two_annotators_who_agree_decide_the_issue_and_a_third_is_not_served_it(
    adaptive, items, crowd
):
    ada, otto, tia = crowd[:3]
    first = items[0]
    label_item(ada, adaptive, first, "C.1")
    assert state(first) == ("open", 1)  # one label is below the minimum
    label_item(otto, adaptive, first, "C.1")
    assert state(first) == ("final", 2)
    final = final_of(first)
    assert (final.method, final.label_code, len(final.based_on)) == ("unanimous", "C.1", 2)
    # Tia is served another issue; the decided one left the queue.
    assert queue.next_issue_id_for(tia, adaptive) == items[1].pk
    # And nothing lets her label it: it was never handed to her.
    with pytest.raises(submission.NotYours):
        submission.submit(
            tia, adaptive, first, submission.parse_label(adaptive, label_data(adaptive, "C.1"))
        )
    assert state(first) == ("final", 2)


def test_two_who_disagree_send_the_issue_to_the_next_annotator(adaptive, items, crowd):
    ada, otto, tia = crowd[:3]
    second = items[1]
    label_item(ada, adaptive, second, "C.1")
    label_item(otto, adaptive, second, "C.2")
    assert state(second) == ("open", 2)
    assert not Resolution.objects.filter(issue_id=second.issue_id).exists()
    # Tia is served the issue that needs one more label before the fresh one at the front.
    assert queue.next_issue_id_for(tia, adaptive) == second.pk


def test_three_against_one_is_decided_at_the_fourth_label(adaptive, items, crowd):
    item = items[0]
    labels_in_order(["C.1", "C.2", "C.1"], adaptive, item, crowd)
    assert state(item) == ("open", 3)  # 2 against 1: one vote ahead, not two
    label_item(crowd[3], adaptive, item, "C.1.i")
    assert state(item) == ("final", 4)
    final = final_of(item)
    # Not every label said the same: a majority; the theme's most common sub-theme is none.
    assert (final.method, final.label_code, len(final.based_on)) == ("majority", "C.1", 4)
    item.refresh_from_db()
    assert item.disagreement_level == "theme"
    assert item.split == pytest.approx(1 - 2 / 4)  # full labels: C.1 twice, C.2, C.1.i


def test_the_final_sub_theme_is_the_most_common_among_the_winning_theme(adaptive, items, crowd):
    tied, counted = items[0], items[1]
    # A tie between sub-themes goes to the one chosen first.
    labels_in_order(["C.1.ii", "C.1.i"], adaptive, tied, crowd)
    assert (final_of(tied).method, final_of(tied).label_code) == ("majority", "C.1.ii")
    labels_in_order(["C.1.i", "C.2", "C.1.ii", "C.1.ii"], adaptive, counted, crowd)
    assert state(counted) == ("final", 4)
    assert final_of(counted).label_code == "C.1.ii"


def test_an_exclusion_needs_every_label_taken_and_at_k_the_fixed_rules_apply(
    adaptive, items, crowd
):
    unanimous, contested = items[0], items[1]
    labels_in_order(["FP", "FP"], adaptive, unanimous, crowd)
    assert state(unanimous) == ("final", 2)
    assert (final_of(unanimous).method, final_of(unanimous).label_code) == ("unanimous", "FP")
    # Three exclusions against one theme: two votes ahead, but not unanimous.
    labels_in_order(["C.1", "FP", "FP", "FP"], adaptive, contested, crowd)
    assert state(contested) == ("open", 4)
    label_item(crowd[4], adaptive, contested, "FP")
    # At K: an exclusion needs all K votes, so the lead decides.
    assert state(contested) == ("disagreement", K)
    assert not Resolution.objects.filter(issue_id=contested.issue_id).exists()


@pytest.mark.parametrize(
    ("policy", "expected"),
    [("lead_decides", ("disagreement", None)), ("majority", ("final", "majority"))],
)
def test_at_k_the_majority_policy_or_the_lead_decides(adaptive, items, crowd, policy, expected):
    adaptive.resolution_policy = policy
    adaptive.save(update_fields=["resolution_policy"])
    item = items[0]
    # Never two votes ahead before K: C.1, C.2, C.1, C.2 — then C.1 makes 3 of 5 (0.6).
    labels_in_order(["C.1", "C.2", "C.1", "C.2", "C.1"], adaptive, item, crowd)
    status, _ = state(item)
    method = Resolution.objects.filter(issue_id=item.issue_id).values_list("method", flat=True)
    assert (status, method.first()) == expected


def test_a_revision_never_decides_the_issue(adaptive, items, crowd):
    """Revising until the issue turns final would tell an annotator the others' labels."""
    adaptive.min_labels = 3
    adaptive.save(update_fields=["min_labels"])
    ada, otto, tia = crowd[:3]
    item = items[0]
    label_item(ada, adaptive, item, "C.1")
    label_item(otto, adaptive, item, "C.2")
    label_item(otto, adaptive, item, "C.1")  # a revision below the minimum: both say C.1 now
    assert state(item) == ("open", 2)
    label_item(tia, adaptive, item, "C.1")  # the next new label is looked at under the rule
    assert state(item) == ("final", 3)
    assert final_of(item).method == "unanimous"


def test_labels_lock_at_the_minimum(adaptive, items, crowd):
    """Past the minimum an issue still open says the labels differ: a revision then would be a
    way to follow the others, so labels lock there (under the fixed rule, at K)."""
    ada, otto = crowd[:2]
    item = items[0]
    label_item(ada, adaptive, item, "C.1")
    label_item(otto, adaptive, item, "C.2")
    assert state(item) == ("open", 2)
    with pytest.raises(Refusal, match="locked"):
        label_item(otto, adaptive, item, "C.1")
    assert state(item) == ("open", 2)


def test_the_queue_serves_issues_that_need_one_more_label_first(adaptive, items, crowd):
    ada, otto, tia = crowd[:3]
    later = items[3]
    label_item(ada, adaptive, later, "C.1")
    label_item(otto, adaptive, later, "C.2")
    Reservation.objects.filter(project_issue=later).delete()
    # Needs more first: Tia gets the issue at position 3 before the fresh one at position 0.
    assert queue.next_issue_id_for(tia, adaptive) == later.pk
    Reservation.objects.filter(annotator=tia).delete()
    # Without it, the usual queue order.
    adaptive.needs_more_first = False
    adaptive.save(update_fields=["needs_more_first"])
    assert queue.next_issue_id_for(tia, adaptive) == items[0].pk


def test_needs_more_first_applies_only_under_the_adaptive_rule(project, items, crowd):
    ada, tia = crowd[0], crowd[2]
    project.annotations_per_issue = K
    project.needs_more_first = True
    project.save()
    label_item(ada, project, items[3], "C.1")
    assert queue.next_issue_id_for(tia, project) == items[0].pk


def test_past_the_minimum_an_issue_is_handed_out_one_label_at_a_time(adaptive, items, crowd):
    ada, otto, tia, uma, vic = crowd
    adaptive.needs_more_first = False
    adaptive.save(update_fields=["needs_more_first"])
    # The first two labels are both needed: two annotators may hold the issue at once.
    assert queue.next_issue_id_for(ada, adaptive) == items[0].pk
    assert queue.next_issue_id_for(otto, adaptive) == items[0].pk
    assert queue.next_issue_id_for(tia, adaptive) == items[1].pk
    for user, code in ((ada, "C.1"), (otto, "C.2")):
        submission.submit(
            user, adaptive, items[0], submission.parse_label(adaptive, label_data(adaptive, code))
        )
    # Not decided: one more label, handed to one annotator at a time.
    assert queue.next_issue_id_for(uma, adaptive) == items[0].pk
    assert queue.next_issue_id_for(vic, adaptive) == items[1].pk


def test_a_reservation_on_an_issue_decided_meanwhile_is_refused_as_today(adaptive, items, crowd):
    ada, otto, tia = crowd[:3]
    item = items[0]
    # Tia's reservation expired unused and her slot went to Otto; she sends her label late.
    Reservation.objects.create(
        project_issue=item, annotator=tia, expires_at=timezone.now() - timedelta(minutes=1)
    )
    label_item(ada, adaptive, item, "C.1")
    label_item(otto, adaptive, item, "C.1")
    assert state(item) == ("final", 2)
    with pytest.raises(submission.NotYours):
        submission.submit(
            tia, adaptive, item, submission.parse_label(adaptive, label_data(adaptive, "C.2"))
        )
    assert Annotation.objects.filter(issue_id=item.issue_id).count() == 2
    assert queue.next_issue_id_for(tia, adaptive) == items[1].pk


def test_progress_counts_issues_decided_early_as_done(adaptive, items, crowd):
    ada, tia = crowd[0], crowd[2]
    labels_in_order(["C.1", "C.1"], adaptive, items[0], crowd)  # decided at 2 of 5
    labels_in_order(["C.1", "C.2"], adaptive, items[1], crowd)  # open, needs more
    counts = submission.project_counts(adaptive)
    assert (counts["total"], counts["final"], counts["needing"]) == (6, 1, 5)
    # Ada labeled both; left for her are the four issues she has not labeled.
    mine = submission.progress_of(ada, adaptive)
    assert (mine.labeled, mine.left, mine.project_done) == (2, 4, 1)
    # Tia labeled neither: the open one still needs labels, the decided one does not.
    assert submission.progress_of(tia, adaptive).left == 5


def test_the_lead_gets_errors_that_name_the_field(client, lead, project):
    client.force_login(lead)
    url = reverse("project_setup", args=[project.pk])
    base = {
        "action": "settings",
        "annotations_per_issue": "5",
        "resolution_policy": "lead_decides",
        "majority_threshold": "0.6",
        "stopping_rule": "adaptive",
        "min_labels": "2",
        "lead_margin": "2",
    }
    for field, value in [
        ("min_labels", "0"),
        ("min_labels", "6"),
        ("lead_margin", "0"),
        ("lead_margin", "9"),
        ("stopping_rule", "whenever"),
        ("min_labels", "two"),
    ]:
        response = client.post(url, {**base, field: value}, follow=True)
        assert response.status_code == 200
        text = response.content.decode()
        assert f"Not saved: {field}" in text, (field, value)
        project.refresh_from_db()
        assert project.stopping_rule == "fixed"
    client.post(url, base)
    project.refresh_from_db()
    assert (project.stopping_rule, project.min_labels, project.lead_margin) == ("adaptive", 2, 2)


def test_annotators_see_the_rule_where_k_is_shown_but_never_others_labels(
    client, adaptive, items, crowd
):
    ada, otto = crowd[:2]
    label_item(otto, adaptive, items[0], "C.3")
    client.force_login(ada)
    for url in (
        reverse("project_detail", args=[adaptive.pk]),
        reverse("my_progress", args=[adaptive.pk]),
    ):
        text = client.get(url).content.decode()
        assert "Adaptive stopping rule" in text and "at least 2 and at most 5 labels" in text
        theme = node(adaptive, "C.3")
        assert theme.name not in text  # Otto's label shows nowhere


# Over HTTP: annotators at once against a live server, each in a thread of their own.
THREADS = 6
ISSUES = 24
# Weighted so that issues are decided at 2, 3, 4 labels or go to K, exclusions included.
CODES = ["C.1"] * 4 + ["C.1.i", "C.2", "C.3", "FP", "FP"]
_ITEM_URL = re.compile(r"/projects/\d+/label/(\d+)/$")
_CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


def _session_cookie(user) -> dict[str, str]:
    client = Client()
    client.force_login(user)
    return {
        django_settings.SESSION_COOKIE_NAME: client.cookies[
            django_settings.SESSION_COOKIE_NAME
        ].value
    }


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
@pytest.mark.one_path
@pytest.mark.parametrize("functions", [True, False], ids=["pg-functions", "python-only"])
def test_annotators_at_once_over_http_never_overfill_and_stop_at_the_deciding_label(
    live_server, project, repository, settings, functions
):
    settings.DB_FUNCTIONS = functions
    project.annotations_per_issue = K
    project.stopping_rule = Project.StoppingRule.ADAPTIVE
    project.min_labels = 2
    project.lead_margin = 2
    project.needs_more_first = True
    project.save()
    for n in range(ISSUES):
        ProjectIssue.objects.create(project=project, issue=make_issue(repository, n), position=n)
    users = [make_user(f"volunteer-{n}") for n in range(THREADS)]
    for user in users:
        Membership.objects.create(project=project, user=user, role=Role.ANNOTATOR)
    forms = {code: label_data(project, code, summary="seen") for code in CODES}
    cookies = {user.pk: _session_cookie(user) for user in users}
    base = live_server.url
    refused: list[str] = []
    errors: list[BaseException] = []
    start = threading.Barrier(THREADS)

    def work(user, seed: int) -> None:
        rng = random.Random(seed)
        http = requests.Session()
        http.cookies.update(cookies[user.pk])
        try:
            start.wait()
            while True:
                asked = http.get(f"{base}/projects/{project.pk}/label/", allow_redirects=False)
                if asked.status_code == 200:
                    assert 'id="nothing-left"' in asked.text
                    break  # nothing left for this annotator
                assert asked.status_code == 302, asked.status_code
                location = asked.headers["Location"]
                assert _ITEM_URL.search(location), location
                page = http.get(f"{base}{location}")
                assert page.status_code == 200, page.status_code
                found = _CSRF.search(page.text)
                assert found, "no CSRF token on the labeling page"
                sent = http.post(
                    f"{base}{location}",
                    {**forms[rng.choice(CODES)], "csrfmiddlewaretoken": found.group(1)},
                    allow_redirects=False,
                )
                if sent.status_code != 302:
                    refused.append(f"{user.username} {location}: {sent.status_code}")
        except BaseException as exc:
            errors.append(exc)
        finally:
            http.close()

    threads = [threading.Thread(target=work, args=(u, n)) for n, u in enumerate(users)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    assert errors == [] and refused == []

    rule = AdaptiveRule.of(project)
    assert rule is not None
    decided_at: list[int] = []
    labels_per_issue: list[int] = []
    for item in ProjectIssue.objects.filter(project=project):
        # In the order they were stored under the issue's row lock.
        labels = list(
            Annotation.objects.filter(
                project=project, issue_id=item.issue_id, is_current=True
            ).order_by("id")
        )
        keys = [deciding_key(a) for a in labels]
        labels_per_issue.append(len(labels))
        assert len(labels) <= K and len({a.annotator_id for a in labels}) == len(labels)
        assert item.annotation_count == len(labels)
        # The first label at which the rule decides, replayed prefix by prefix.
        deciding = next(
            (n for n in range(1, len(keys) + 1) if early_decision(keys[:n], rule) is not None),
            None,
        )
        final = Resolution.objects.filter(project=project, issue_id=item.issue_id).first()
        if deciding is not None:
            decided_at.append(deciding)
            # Decided exactly there: no label after it, final on those labels.
            assert len(labels) == deciding, (item.pk, keys)
            assert item.status == "final" and final is not None
            assert sorted(final.based_on) == sorted(a.pk for a in labels)
            assert deciding_key(final) == early_decision(keys, rule)
        elif len(labels) == K:
            unanimous = len({label_key(a) for a in labels}) == 1
            assert item.status == ("final" if unanimous else "disagreement"), (item.pk, keys)
        else:
            # Undecided and short of K: waiting for an annotator who has not labeled it (each
            # left when nothing was free for them at that moment).
            assert item.status == "open" and final is None, (item.pk, keys)
    # The rule cut issues short, and undecided ones went on past the minimum. (With min 2 and
    # lead 2 an issue is decided at 2 or 4 labels: at 3 the leader is at most 2 to 1.) How many
    # are decided depends on which thread labels which issue: the first two labels agree on an
    # issue with probability 0.31 under CODES' weights, so about 8 of 24 (a bound of "more than
    # 8" failed now and then); none at all has a chance below 0.69^24 = 1.3e-4.
    assert decided_at and set(decided_at) <= {2, 4}, decided_at
    assert max(labels_per_issue) > 2, labels_per_issue


def test_a_minimum_equal_to_k_is_accepted_with_a_word_that_it_is_the_fixed_rule(
    client, lead, project
):
    client.force_login(lead)
    url = reverse("project_setup", args=[project.pk])
    base = {
        "action": "settings",
        "annotations_per_issue": "5",
        "resolution_policy": "lead_decides",
        "majority_threshold": "0.6",
        "stopping_rule": "adaptive",
        "lead_margin": "2",
    }
    warning = "behaves like the fixed rule"
    # The probe: a minimum below K says nothing of the kind.
    text = client.post(url, {**base, "min_labels": "4"}, follow=True).content.decode()
    assert "Settings saved." in text and warning not in text
    # At K: saved, and the message and the page itself say what it amounts to.
    text = client.post(url, {**base, "min_labels": "5"}, follow=True).content.decode()
    assert "Settings saved." in text and warning in text
    project.refresh_from_db()
    assert (project.stopping_rule, project.min_labels) == ("adaptive", 5)
    page = client.get(url).content.decode()
    assert 'id="stopping-warning"' in page and warning in page
    # The fixed rule with the same numbers needs no word.
    client.post(url, {**base, "stopping_rule": "fixed", "min_labels": "5"})
    assert 'id="stopping-warning"' not in client.get(url).content.decode()
