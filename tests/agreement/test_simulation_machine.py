"""The policy simulator with an enlisted machine rater: a lead asks what the adaptive rule would
have cost if the classifier had counted as one vote, beside the human-only rule.

Every issue here is built so that its outcome does not depend on the order of its labels, so the
simulator's random orders must give exactly what a direct count over every order gives."""

from __future__ import annotations

import itertools
import json
from collections import Counter
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from agreement.simulation import machine_votes, simulate_machine
from ingest.models import Issue
from labeling.models import Annotation, MachineLabel, MachineRater, ProjectIssue, Resolution
from labeling.stopping import FP, AdaptiveRule, early_decision
from lib.refusal import Refusal
from tests.conftest import make_issue, make_user
from tests.raters.conftest import label_fields

K, MIN, LEAD = 3, 2, 2

# issue number -> (the three humans' labels, the machine's label and confidence, the final)
CASES = {
    1: (["A.1", "A.1", "A.1"], ("A.1", 0.9), "A.1"),  # the machine agrees: one human suffices
    2: (["A.1", "A.1", "A.1"], ("C.1", 0.9), "A.1"),  # it disagrees: the humans go to K
    3: (["C.1", "C.1", "C.1"], ("C.1", 0.3), "C.1"),  # below the threshold: no vote
    4: (["FP", "FP", "FP"], ("FP", 0.95), "FP"),  # an agreed exclusion
    5: (["C.2", "C.2", "C.2"], ("C.2", 0.8), "C.1"),  # the lead chose another final
    6: (["B.1", "B.1", "B.1"], None, "B.1"),  # the rater never labeled it
}


def direct(humans: list[str], machine: str | None) -> tuple[int, str | None]:
    """The rule written out by hand: take humans one by one; below K votes in all (humans plus
    the machine's one), from MIN votes on, decide when the leader is LEAD ahead (an exclusion
    only when unanimous); at K humans, a unanimous or strict-plurality panel, never an exclusion
    without unanimity."""
    for n in range(1, K):
        votes = humans[:n] + ([machine] if machine else [])
        if len(votes) >= K or len(votes) < MIN:
            continue
        counts = [*sorted(Counter(votes).values(), reverse=True), 0]
        leader = Counter(votes).most_common(1)[0][0]
        if counts[0] - counts[1] >= LEAD and (leader != "FP" or counts[0] == len(votes)):
            return n, leader
    counts = Counter(humans[:K]).most_common()
    if len(counts) == 1:
        return K, counts[0][0]
    return K, None


@pytest.fixture
def replayed(project, repository, annotator, other_annotator):
    project.annotations_per_issue = K
    project.save()
    third = make_user("tilda")
    rater = MachineRater.objects.create(
        project=project, name="clf", kind="classifier", confidence_threshold=0.5
    )
    for number, (humans, machine, final) in CASES.items():
        issue = make_issue(repository, number)
        ProjectIssue.objects.create(
            project=project, issue=issue, position=number, status="final", annotation_count=K
        )
        for user, code in zip((annotator, other_annotator, third), humans, strict=True):
            Annotation.objects.create(
                project=project, issue=issue, annotator=user, **label_fields(project, code)
            )
        Resolution.objects.create(
            project=project, issue=issue, method="lead", **label_fields(project, final)
        )
        if machine:
            MachineLabel.objects.create(
                rater=rater, issue=issue, confidence=machine[1], **label_fields(project, machine[0])
            )
    # Only two labels: left out of the replays.
    short = make_issue(repository, 99)
    ProjectIssue.objects.create(project=project, issue=short, position=99, annotation_count=2)
    for user in (annotator, other_annotator):
        Annotation.objects.create(
            project=project, issue=short, annotator=user, **label_fields(project, "A.1")
        )
    return rater


def expected(with_machine: bool) -> tuple[float, float]:
    """Human labels per issue and same-final share, over every order of every issue."""
    labels, same = [], []
    for humans, machine, final in CASES.values():
        vote = machine[0] if with_machine and machine and machine[1] >= 0.5 else None
        outcomes = {direct(list(order), vote) for order in itertools.permutations(humans)}
        assert len(outcomes) == 1  # the case really is order-free
        n, decided = outcomes.pop()
        labels.append(n)
        same.append(decided == final)
    return sum(labels) / len(labels), sum(same) / len(same)


def test_the_simulator_with_a_machine_rater_equals_a_direct_count(project, replayed):
    votes = machine_votes(project, "clf", None)
    assert len(votes) == 4  # issue 3's label is below the rater's threshold
    report = simulate_machine(project, votes, min_labels=MIN, lead=LEAD, k=K, orders=7, seed=3)
    assert report["issues"] == len(CASES) and report["left_out"] == 1
    assert report["machine_votes"] == 4
    labels, same = expected(with_machine=True)
    assert report["human_labels_per_issue"] == pytest.approx(labels)
    assert report["same_final"] == pytest.approx(same)
    human_labels, human_same = expected(with_machine=False)
    assert report["human_only"]["labels_per_issue"] == pytest.approx(human_labels)
    assert report["human_only"]["same_final"] == pytest.approx(human_same)
    # The machine saves human labels here (issues 1 and 4), and costs some on issue 2.
    assert report["human_labels_per_issue"] != report["human_only"]["labels_per_issue"]


def test_a_lower_confidence_lets_more_machine_labels_vote(project, replayed):
    assert len(machine_votes(project, "clf", 0.2)) == 5
    with pytest.raises(Refusal, match="confidence"):
        machine_votes(project, "clf", 1.5)
    with pytest.raises(Refusal, match="machine-rater"):
        machine_votes(project, "nobody", None)


def test_the_command_reports_both_rules_as_json(project, replayed):
    out = StringIO()
    call_command(
        "simulate_policy", "--project", project.name, "--machine-rater", "clf", "--min", "2",
        "--lead", "2", "--max", "3", "--orders", "5", "--json", stdout=out,
    )  # fmt: skip
    report = json.loads(out.getvalue())
    labels, same = expected(with_machine=True)
    assert report["human_labels_per_issue"] == pytest.approx(labels)
    assert report["same_final"] == pytest.approx(same)
    assert set(report["human_only"]) >= {"labels_per_issue", "same_final"}
    with pytest.raises(CommandError, match="machine-rater"):
        call_command("simulate_policy", "--project", project.name, "--machine-rater", "x")


def test_an_enlisted_machine_never_decides_alone_nor_beyond_k():
    rule = AdaptiveRule(min_labels=1, lead=1, k=3)
    assert early_decision([], rule, machine=("t", "h")) is None  # no human: no decision
    assert early_decision([], AdaptiveRule(1, 1, 3)) is None
    # Two humans and the machine make K votes: the fixed rules decide at K humans instead.
    assert early_decision([("t", "h")] * 2, AdaptiveRule(2, 2, 3), machine=("t", "h")) is None
    # One vote, however sure: one human and the machine agreeing are two votes, not more.
    assert early_decision([("t", "h")], AdaptiveRule(2, 2, 4), machine=("t", "h")) == ("t", "h")
    assert early_decision([("t", "h")], AdaptiveRule(2, 3, 4), machine=("t", "h")) is None
    # An exclusion still needs every vote, the machine's included.
    assert early_decision([FP, FP], AdaptiveRule(2, 1, 4), machine=("t", "h")) is None


def test_the_lead_reads_the_machine_trade_off_on_the_simulator_page(
    client, project, lead, replayed
):
    client.force_login(lead)
    url = f"/projects/{project.pk}/simulate/"
    assert b'<option value="clf">' in client.get(url).content
    data = {"min_labels": MIN, "leads": "2", "orders": 4, "seed": 1, "machine_rater": "clf"}
    page = client.post(url, data)
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="machine-table"' in html
    labels, _ = expected(with_machine=True)
    human_labels, _ = expected(with_machine=False)
    row = html.split('id="machine-table"')[1].split("<tr>")[2]  # lead 2's row
    assert f"{labels:.2f}" in row and f"{human_labels:.2f}" in row


@pytest.mark.parametrize(
    ("extra", "field"),
    [({"machine_rater": "nobody"}, "machine_rater"), ({"confidence": "7"}, "confidence")],
)
def test_a_bad_machine_setting_is_a_400_naming_the_field(
    client, project, lead, replayed, extra, field
):
    client.force_login(lead)
    data = {"min_labels": MIN, "leads": "2", "orders": 4, "seed": 1, "machine_rater": "clf"}
    page = client.post(f"/projects/{project.pk}/simulate/", {**data, **extra})
    assert page.status_code == 400
    assert f'id="{field}-errors"'.encode() in page.content
    assert b'id="machine-table"' not in page.content


@pytest.mark.parametrize("persona", ["annotator", "researcher", "outsider"])
def test_only_leads_open_the_simulator(client, project, replayed, persona, request):
    client.force_login(request.getfixturevalue(persona))
    data = {"min_labels": MIN, "leads": "2", "orders": 4, "seed": 1, "machine_rater": "clf"}
    assert client.post(f"/projects/{project.pk}/simulate/", data).status_code == 404


# --- Per issue, not only the mean; the same human orders with and without the machine ---------


def test_a_confident_vote_that_disagrees_makes_an_issue_cost_more(client, project, lead, replayed):
    """Issue 2's humans agree on A.1, but the rater says C.1 at 0.9: with its vote the first
    human ties with it and the panel goes to K, where without it two humans decide. The
    direct rule, per issue, tells which issues cost more and fewer; the simulator, the command
    and the page must say the same, though the mean shows only a saving."""

    def labels(humans: list[str], vote: str | None) -> int:
        taken = {direct(list(order), vote)[0] for order in itertools.permutations(humans)}
        assert len(taken) == 1  # an order-free case
        return taken.pop()

    pairs = [
        (
            labels(humans, machine[0] if machine and machine[1] >= 0.5 else None),
            labels(humans, None),
        )
        for humans, machine, _final in CASES.values()
    ]
    more = sum(with_machine > alone for with_machine, alone in pairs)
    fewer = sum(with_machine < alone for with_machine, alone in pairs)
    assert (more, fewer) == (1, 3)  # issue 2 costs more; issues 1, 4 and 5 fewer

    votes = machine_votes(project, "clf", None)
    report = simulate_machine(project, votes, min_labels=MIN, lead=LEAD, k=K, orders=6)
    assert (report["costs_more"], report["costs_fewer"]) == (more, fewer)
    assert report["human_labels_per_issue"] < report["human_only"]["labels_per_issue"]

    out = StringIO()
    call_command(
        "simulate_policy", "--project", project.name, "--machine-rater", "clf", "--max", "3",
        "--json", stdout=out,
    )  # fmt: skip
    figures = json.loads(out.getvalue())
    assert (figures["costs_more"], figures["costs_fewer"]) == (more, fewer)
    out = StringIO()
    call_command(
        "simulate_policy", "--project", project.name, "--machine-rater", "clf", "--max", "3",
        stdout=out,
    )  # fmt: skip
    assert f"{more} issues need more human labels, {fewer} fewer" in out.getvalue()

    client.force_login(lead)
    data = {"min_labels": MIN, "leads": "2", "orders": 4, "seed": 1, "machine_rater": "clf"}
    html = client.post(f"/projects/{project.pk}/simulate/", data).content.decode()
    row = html.split('id="machine-table"')[1].split("<tr>")[2]
    assert f'costs-more">{more}<' in row and f'costs-fewer">{fewer}<' in row


# Issues whose outcome does depend on the order of their labels (lead 2, min 2, K 3).
MIXED = {
    11: (["A.1", "A.1", "C.1"], ("A.1", 0.9)),
    12: (["A.1", "C.1", "C.1"], ("A.1", 0.9)),
    13: (["B.1", "A.1", "B.1"], ("C.2", 0.8)),
    14: (["FP", "FP", "A.1"], ("FP", 0.7)),
    15: (["C.2", "C.1", "C.2"], None),
    16: (["A.1", "B.1", "C.1"], ("B.1", 0.6)),
    17: (["C.1", "C.1", "C.1"], ("C.1", 0.9)),
}


@pytest.fixture
def mixed(project, repository, annotator, other_annotator):
    project.annotations_per_issue = K
    project.save()
    users = (annotator, other_annotator, make_user("tilda"))
    rater = MachineRater.objects.create(
        project=project, name="clf", kind="classifier", confidence_threshold=0.5
    )
    for number, (humans, machine) in MIXED.items():
        issue = make_issue(repository, number)
        ProjectIssue.objects.create(
            project=project, issue=issue, position=number, status="final", annotation_count=K
        )
        for user, code in zip(users, humans, strict=True):
            Annotation.objects.create(
                project=project, issue=issue, annotator=user, **label_fields(project, code)
            )
        final = Counter(humans).most_common(1)[0][0]
        Resolution.objects.create(
            project=project, issue=issue, method="lead", **label_fields(project, final)
        )
        if machine:
            MachineLabel.objects.create(
                rater=rater, issue=issue, confidence=machine[1], **label_fields(project, machine[0])
            )
    return {u.pk: u.username for u in users}


def test_the_same_seed_gives_the_same_human_orders_with_and_without_the_machine(
    project, mixed, monkeypatch
):
    """The human orders each replay uses, read as who labeled first, second and third on each
    issue, are the same for `simulate_policy` with and without `--machine-rater` (another seed
    gives others), and so are the human-only figures."""
    from agreement import simulation

    annotators = {
        issue: [mixed[a] for a in sorted(ids)]
        for issue, ids in _annotators_by_issue(project).items()
    }
    recorded: list[list[dict[int, list[str]]]] = []
    real = simulation.human_orders

    def spy(replays, k, orders, seed):
        result = real(replays, k, orders, seed)
        issues = replays.issue_ids[replays.counts >= k].tolist()
        recorded.append(
            [
                {
                    issue: [annotators[issue][p] for p in row]
                    for issue, row in zip(issues, o.tolist(), strict=True)
                }
                for o in result
            ]
        )
        return result

    monkeypatch.setattr(simulation, "human_orders", spy)

    def command(*extra: str) -> dict:
        out = StringIO()
        call_command(
            "simulate_policy", "--project", project.name, "--max", "3", "--orders", "12",
            "--json", *extra, stdout=out,
        )  # fmt: skip
        return json.loads(out.getvalue())

    alone = command("--seed", "5")
    machine = command("--seed", "5", "--machine-rater", "clf")
    command("--seed", "6")
    assert len(recorded) == 3
    numbers = {issue.pk: int(issue.number) for issue in Issue.objects.all()}
    assert len(recorded[0]) == 12 and {numbers[i] for i in recorded[0][0]} == set(MIXED)
    assert recorded[0] == recorded[1]
    assert recorded[2] != recorded[0]  # the probe: another seed, other orders
    human = machine["human_only"]
    assert human["labels_per_issue"] == pytest.approx(alone["labels_per_issue"]["mean"], abs=1e-4)
    assert human["same_final"] == pytest.approx(alone["same_final"], abs=1e-4)
    assert human["needs_lead"] == pytest.approx(alone["needs_lead"], abs=1e-4)


def _annotators_by_issue(project) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for issue, user in Annotation.objects.filter(project=project).values_list(
        "issue_id", "annotator_id"
    ):
        out.setdefault(issue, []).append(user)
    return out
