"""The PL/pgSQL path and the Python path of labeling decide every state alike.

On PostgreSQL the queue's reservation and a first label that stays below K are one PL/pgSQL
call each (labeling.pg_functions); the Python path decides every other case, and is the whole
path with DB_FUNCTIONS off (and on SQLite). Here Ada meets one issue in every state the table
below spans — issue status x her own label x her reservation x how many of the K slots the
others took x resolution policy x K — and does one thing: asks for her next issue, sends a
first label (agreeing with the others or not), revises her label, or sends the same label
again. Each state is built in a savepoint, the action runs with the functions on, what it
returned (or raised) and every row it may touch are captured, the savepoint is rolled back,
and the same action runs with the functions off. Both must be identical, ids normalised to
personas. Impossible states are skipped with the reason they cannot arise. A second table
(`ADAPTIVE_TABLE`) does the same for states of a project under the adaptive stopping rule.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.db.models import Max
from django.utils import timezone

from annotator.models import Membership, Project, Role
from labeling import queue, resolution, submission
from labeling.labels import Label
from labeling.models import (
    Annotation,
    MachineLabel,
    MachineRater,
    ProjectIssue,
    QueueFrontier,
    Reservation,
    Resolution,
)
from labeling.stopping import AdaptiveRule, deciding_key, early_decision
from lib import sql
from tests.conftest import make_issue, make_user
from tests.labeling.conftest import label_data
from tests.raters.conftest import label_fields

# The table sets DB_FUNCTIONS itself, both ways, for each state.
pytestmark = pytest.mark.one_path

STATUSES = ("open", "disagreement", "final")
OWN_LABELS = ("none", "current")
RESERVATIONS = ("none", "active", "expired", "handed back")
# How many of the K slots the others took: K-2 labels ("fewer"), K-1 labels, or all K
# ("full": K-1 labels and a reservation while open, K labels once compared).
SLOTS = ("fewer", "k-1", "full")
POLICIES = (Project.Policy.LEAD_DECIDES, Project.Policy.MAJORITY)
KS = (2, 3)
ACTIONS = ("next issue", "first label agreeing", "first label differing", "revision", "same again")
# How a submission names the issue: by row id (`submit(item.pk)`) or by the public id the
# labeling page's URL carries (`submit(public_id, public=True)`), which the one-call path
# looks the row up by itself.
NAMINGS = ("row id", "public id")

# Ada's own label, the others' labels, and what she sends. In a disagreement every label
# differs (no majority under either policy); otherwise the others agree with each other.
OWN_CODE = "C.2"
OTHERS_CODE = "C.1"
DISTINCT_CODES = ("C.1", "C.3", "A.1")
DIFFERING_CODE = "C.3"
SUMMARY = "NCCL timeout at step 0"


@dataclass(frozen=True)
class State:
    status: str
    own: str
    reservation: str
    slots: str
    policy: str
    k: int
    action: str
    naming: str = "row id"

    def __str__(self) -> str:
        return (
            f"{self.action} by {self.naming} | status={self.status} own={self.own}"
            f" reservation={self.reservation} slots={self.slots} policy={self.policy} K={self.k}"
        )


def why_impossible(state: State) -> str | None:
    """The reason a combination cannot arise, or None when it can."""
    labeled = state.own == "current"
    if state.action == "next issue" and state.naming != "public id":
        return "asking for the next issue names no issue: the queue answers with both ids"
    if state.action.startswith("first label") and labeled:
        return "a label sent over one's own current label is a revision (or the same again)"
    if state.action in ("revision", "same again") and not labeled:
        return "no own label to revise or repeat"
    if labeled and state.reservation != "none":
        return (
            "a stored label deletes its annotator's reservation, and a labeled issue is "
            "never reserved again"
        )
    if state.status == "open":
        if labeled and state.slots != "fewer":
            return (
                "an open issue never has K labels (the K-th is compared at once) nor more "
                "than K slots taken"
            )
        if state.slots == "full" and state.reservation == "active":
            return "the queue never hands out more than K slots"
        return None
    # Compared (disagreement or final): exactly K current labels.
    if labeled and state.slots != "k-1":
        return "a compared issue has exactly K labels: Ada's and K-1 others'"
    if not labeled and state.slots != "full":
        return "a compared issue has exactly K labels: the others' K"
    if state.reservation == "active":
        return "an active reservation holds a slot, and K labels leave none"
    return None


TABLE = [
    State(*combination)
    for combination in itertools.product(
        STATUSES, OWN_LABELS, RESERVATIONS, SLOTS, POLICIES, KS, ACTIONS, NAMINGS
    )
]
POSSIBLE = [state for state in TABLE if why_impossible(state) is None]


def _label(project: Project, code: str) -> Label:
    return submission.parse_label(project, label_data(project, code, summary=SUMMARY))


class Study:
    """Ada, K others and two issues of the project: the target and a spare one behind it."""

    def __init__(self, project: Project, annotator, repository, others: list) -> None:
        self.project = project
        self.ada = annotator
        self.others = others
        self.target = ProjectIssue.objects.create(
            project=project, issue=make_issue(repository, 1), position=0
        )
        self.spare = ProjectIssue.objects.create(
            project=project, issue=make_issue(repository, 2), position=1
        )
        self.who = {annotator.pk: "ada", **{u.pk: u.username for u in others}}
        self.issue_name = {self.target.issue_id: "target", self.spare.issue_id: "spare"}
        self.item_name = {self.target.pk: "target", self.spare.pk: "spare"}
        self.public_name = {self.target.public_id: "target", self.spare.public_id: "spare"}

    def next_issue(self) -> tuple:
        """Ada's next issue, named by its row id and by the public id the queue gave with it."""
        got = queue.next_item_for(self.ada, self.project)
        if got is None:
            return ("issue", None)
        return ("issue", self.item_name.get(got.id, got.id), self.public_name.get(got.public_id))

    def submit(self, label: Label, naming: str) -> Annotation:
        """Ada's label of the target, naming it by row id or by public id."""
        if naming == "public id":
            return submission.submit(
                self.ada, self.project, self.target.public_id, label, public=True
            )
        return submission.submit(self.ada, self.project, self.target.pk, label)

    def build(self, state: State) -> None:
        """Store the state's rows, as the queue and submissions would have left them."""
        project, k = self.project, state.k
        project.annotations_per_issue = k
        project.resolution_policy = state.policy
        project.save(update_fields=["annotations_per_issue", "resolution_policy"])
        now = timezone.now()
        labeled = state.own == "current"
        if state.status == "open":
            others_labeled = {"fewer": k - 2, "k-1": k - 1, "full": k - 1}[state.slots]
            others_reserved = 1 if state.slots == "full" else 0
        else:
            others_labeled, others_reserved = k - 1 if labeled else k, 0
        codes: list[tuple] = []
        for n, other in enumerate(self.others[:others_labeled]):
            code = DISTINCT_CODES[n] if state.status == "disagreement" else OTHERS_CODE
            codes.append((other, code))
        if labeled:
            codes.append((self.ada, self.own_code(state)))
        for user, code in codes:
            self._store(user, code)
        for other in self.others[others_labeled : others_labeled + others_reserved]:
            Reservation.objects.create(
                project_issue=self.target, annotator=other, expires_at=now + timedelta(minutes=30)
            )
        if state.reservation != "none":
            expires = {
                "active": now + timedelta(minutes=30),
                "expired": now - timedelta(minutes=1),
                "handed back": now - timedelta(minutes=1),
            }[state.reservation]
            skipped = now - timedelta(minutes=1) if state.reservation == "handed back" else None
            Reservation.objects.create(
                project_issue=self.target,
                annotator=self.ada,
                expires_at=expires,
                skipped_at=skipped,
            )
        item = self.target
        item.refresh_from_db()
        item.annotation_count = len(codes)
        item.last_label_at = self.newest_label_time()
        item.save(update_fields=["annotation_count", "last_label_at"])
        with transaction.atomic():
            # The comparison the K-th label ran: it sets the status from the labels.
            resolution.evaluate(item, project)
        item.refresh_from_db()
        assert item.status == state.status, f"built {item.status} for {state}"

    def newest_label_time(self):
        """When the target's newest current label came, as a submission leaves it on the row."""
        return Annotation.objects.filter(
            project=self.project, issue_id=self.target.issue_id, is_current=True
        ).aggregate(newest=Max("created_at"))["newest"]

    @staticmethod
    def own_code(state: State) -> str:
        # A final issue here was decided unanimously, so Ada agreed with the others.
        return OTHERS_CODE if state.status == "final" else OWN_CODE

    def _store(self, user, code: str) -> None:
        label = _label(self.project, code)
        Annotation.objects.create(
            project=self.project,
            issue_id=self.target.issue_id,
            annotator=user,
            **label.fields(),
            **label.notes(),
        )

    def act(self, state: State):
        """Run Ada's action; what it returned, or what it raised."""
        project = self.project
        try:
            with transaction.atomic():
                if state.action == "next issue":
                    return self.next_issue()
                code = {
                    "first label agreeing": OTHERS_CODE,
                    "first label differing": DIFFERING_CODE,
                    "revision": DIFFERING_CODE,  # never Ada's own label
                    "same again": self.own_code(state),
                }[state.action]
                stored = self.submit(_label(project, code), state.naming)
                return ("annotation", self._annotation(stored), stored.pk == self._pk(stored))
        except Exception as exc:  # any refusal or failure is an outcome to compare
            return ("raised", type(exc).__name__, getattr(exc, "field", None), str(exc))

    def _pk(self, annotation: Annotation) -> int | None:
        row = Annotation.objects.filter(
            project=self.project,
            issue_id=annotation.issue_id,
            annotator_id=annotation.annotator_id,
            revision=annotation.revision,
        ).first()
        return row.pk if row else None

    def _annotation(self, a: Annotation) -> tuple:
        return (
            self.who[a.annotator_id],
            self.issue_name[a.issue_id],
            a.revision,
            a.is_current,
            a.is_pilot,
            a.label_code,
            a.summary,
            a.note,
            a.proposed_category,
        )

    def snapshot(self) -> dict[str, list]:
        """Every row the queue or a submission may write, ids replaced by personas."""
        now = timezone.now()
        project = self.project
        annotations = Annotation.objects.filter(project=project).select_related(
            "issue_type", "theme", "sub_theme"
        )
        revision_of = {a.pk: (self.who[a.annotator_id], a.revision) for a in annotations}
        reservations = []
        for r in Reservation.objects.filter(project_issue__project=project):
            if r.skipped_at is not None:
                held = "handed back"
            else:
                held = "active" if r.expires_at > now else "expired"
            minutes = round((r.expires_at - now).total_seconds() / 60)
            reservations.append(
                (self.who[r.annotator_id], self.item_name[r.project_issue_id], held, minutes)
            )
        return {
            "annotations": sorted(self._annotation(a) for a in annotations),
            "reservations": sorted(reservations),
            "project issues": sorted(
                (
                    self.item_name[pi.pk],
                    pi.status,
                    pi.annotation_count,
                    pi.disagreement_level,
                    pi.split,
                )
                for pi in ProjectIssue.objects.filter(project=project)
            ),
            # Whose label the row's `last_label_at` is the time of (the labels' times differ
            # between the paths' runs), and whether it is the issue's newest current label.
            "last labels": sorted(
                self._last_label(pi) for pi in ProjectIssue.objects.filter(project=project)
            ),
            "resolutions": sorted(
                (
                    self.issue_name[r.issue_id],
                    r.method,
                    r.label_code,
                    r.is_current,
                    tuple(sorted(revision_of[pk] for pk in r.based_on)),
                )
                for r in Resolution.objects.filter(project=project).select_related(
                    "issue_type", "theme", "sub_theme"
                )
            ),
            "queue frontiers": sorted(
                (self.who[f.annotator_id], f.position)
                for f in QueueFrontier.objects.filter(project=project)
            ),
        }

    def _last_label(self, item: ProjectIssue) -> tuple:
        labels = Annotation.objects.filter(project=self.project, issue_id=item.issue_id)
        newest = labels.filter(is_current=True).aggregate(newest=Max("created_at"))["newest"]
        of = sorted(
            (self.who[a.annotator_id], a.revision)
            for a in labels.filter(created_at=item.last_label_at)
        )
        return (self.item_name[item.pk], tuple(of), item.last_label_at == newest)

    def run_both(self, state: State, settings) -> dict[str, tuple]:
        """The action's outcome and the rows after it, on each path, from the same state."""
        results = {}
        with transaction.atomic():
            self.build(state)
            for name, functions in (("pg-functions", True), ("python-only", False)):
                settings.DB_FUNCTIONS = functions
                with transaction.atomic():
                    outcome = self.act(state)
                    results[name] = (outcome, self.snapshot())
                    transaction.set_rollback(True)
            transaction.set_rollback(True)
        return results


def differences(results: dict[str, tuple]) -> list[str]:
    """Where the two paths' outcomes or rows differ; empty when they are identical."""
    (pg_outcome, pg_rows), (py_outcome, py_rows) = results["pg-functions"], results["python-only"]
    found = []
    if pg_outcome != py_outcome:
        found.append(f"outcome: pg-functions {pg_outcome!r} != python-only {py_outcome!r}")
    for table in pg_rows:
        if pg_rows[table] != py_rows[table]:
            found.append(
                f"{table}: pg-functions {pg_rows[table]!r} != python-only {py_rows[table]!r}"
            )
    return found


def stale_last_labels(state, results: dict[str, tuple]) -> list[str]:
    """Where a path left an item's `last_label_at` other than its newest current label's time,
    or a label Ada stored is not the one it names; empty when every row is right."""
    found = []
    for path, (outcome, rows) in results.items():
        found += [f"{state} ({path}): {entry}" for entry in rows["last labels"] if not entry[2]]
        stored = outcome[0] == "annotation" and not state.action.startswith("same")
        if stored and outcome[1][3]:  # a label stored, current: the newest
            target = next(entry for entry in rows["last labels"] if entry[0] == "target")
            if target[1] != (("ada", outcome[1][2]),):
                found.append(f"{state} ({path}): names {target[1]}, not Ada's new label")
    return found


@pytest.fixture
def study(project, annotator, other_annotator, third_annotator, repository) -> Study:
    fourth = make_user("fay-annotator")
    Membership.objects.create(project=project, user=fourth, role=Role.ANNOTATOR)
    return Study(project, annotator, repository, [other_annotator, third_annotator, fourth])


def _function_calls() -> dict[str, int]:
    names = [queue._reserve_next_function().name, submission._submit_first_function().name]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT funcname, coalesce(sum(calls), 0) FROM pg_stat_xact_user_functions"
            " WHERE funcname = ANY(%s) GROUP BY funcname",
            [names],
        )
        counted = dict(cursor.fetchall())
    return {name: counted.get(name, 0) for name in names}


def test_every_impossible_state_says_why_and_every_action_and_status_is_reached():
    assert len(TABLE) == 3 * 2 * 4 * 3 * 2 * 2 * 5 * 2
    reached = {(s.action, s.status) for s in POSSIBLE}
    assert reached == set(itertools.product(ACTIONS, STATUSES))
    # Every submission's state is reached by both namings of the issue.
    by_naming = {n: {replace(s, naming="") for s in POSSIBLE if s.naming == n} for n in NAMINGS}
    asked = {replace(s, naming="") for s in POSSIBLE if s.action == "next issue"}
    assert by_naming["row id"] == by_naming["public id"] - asked
    for state in TABLE:
        reason = why_impossible(state)
        assert reason is None or len(reason) > 20, state


@pytest.mark.slow  # the sweep: every state of the table on both paths
@pytest.mark.parametrize("k", KS, ids=[f"K={k}" for k in KS])
@pytest.mark.parametrize("policy", POLICIES)
def test_both_paths_decide_every_state_alike(study, settings, monkeypatch, k, policy):
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL track_functions = 'pl'")
    before = _function_calls()
    # Which states the one-call path stored a label in (it declines the others).
    taken_in_one_call: list[State] = []
    real_submit_first = submission._submit_first
    state = None  # the state in play; the loop below rebinds it

    def submit_first_watched(*args):
        stored = real_submit_first(*args)
        if stored is not None:
            taken_in_one_call.append(state)
        return stored

    monkeypatch.setattr(submission, "_submit_first", submit_first_watched)
    disagreeing = []
    outcomes = set()
    stale: list[str] = []
    for state in [s for s in POSSIBLE if s.k == k and s.policy == policy]:
        results = study.run_both(state, settings)
        disagreeing += [f"{state}: {d}" for d in differences(results)]
        stale += stale_last_labels(state, results)
        outcomes.add(results["python-only"][0][0])
        served = results["pg-functions"][0]
        if served[0] == "issue" and served[1] is not None:
            # The public id the queue gave is the served issue's own.
            assert served[1] == served[2], f"{state}: {served}"
    assert disagreeing == [], "\n".join(disagreeing)
    assert stale == [], "\n".join(stale)
    # The comparison was not vacuous: both functions ran, the submission function stored the
    # first labels below K that it exists for, and the states led to issues, stored labels
    # and refusals alike.
    after = _function_calls()
    assert all(after[name] > before[name] for name in after), (before, after)
    assert any(
        s.action.startswith("first label") and s.reservation == "active" for s in taken_in_one_call
    )
    assert all(s.status == "open" and s.own == "none" for s in taken_in_one_call)
    assert outcomes == {"issue", "annotation", "raised"}


def test_the_comparison_reports_a_path_that_stores_something_else(study, settings, monkeypatch):
    real_submit_first = submission._submit_first

    def submit_first_miscounting(user, project, item_id, label, public=False):
        stored = real_submit_first(user, project, item_id, label, public)
        if stored is not None:  # the one-call path took it: count one label too many
            ProjectIssue.objects.filter(pk=item_id).update(annotation_count=99)
        return stored

    monkeypatch.setattr(submission, "_submit_first", submit_first_miscounting)
    state = State("open", "none", "active", "fewer", Project.Policy.LEAD_DECIDES, 3, ACTIONS[1])
    found = differences(study.run_both(state, settings))
    assert len(found) == 1 and found[0].startswith("project issues:"), found
    assert "99" in found[0]


def test_the_comparison_reports_a_path_that_leaves_the_last_label_time_behind(
    study, settings, monkeypatch
):
    real_submit_first = submission._submit_first

    def submit_first_undated(user, project, item_id, label, public=False):
        stored = real_submit_first(user, project, item_id, label, public)
        if stored is not None:  # the one-call path took it: as if it wrote the count only
            before = Annotation.objects.filter(issue_id=stored.issue_id).exclude(pk=stored.pk)
            ProjectIssue.objects.filter(pk=item_id).update(
                last_label_at=before.aggregate(newest=Max("created_at"))["newest"]
            )
        return stored

    monkeypatch.setattr(submission, "_submit_first", submit_first_undated)
    state = State("open", "none", "active", "fewer", Project.Policy.LEAD_DECIDES, 3, ACTIONS[1])
    results = study.run_both(state, settings)
    found = differences(results)
    assert len(found) == 1 and found[0].startswith("last labels:"), found
    assert stale_last_labels(state, results) == [
        f"{state} (pg-functions): ('target', (('otto-annotator', 1),), False)",
        f"{state} (pg-functions): names (('otto-annotator', 1),), not Ada's new label",
    ]


def test_a_revision_that_leaves_the_last_label_time_behind_is_reported(
    study, settings, monkeypatch
):
    """Revisions take the Python path either way: what holds them to the newest label is
    `stale_last_labels`, which a revision that does not move the time on fails."""
    monkeypatch.setattr(
        submission,
        "_SET_LAST_LABEL_SQL",
        f"UPDATE {ProjectIssue._meta.db_table} SET last_label_at = last_label_at"
        " WHERE id = %(item)s",
    )
    state = State("open", "current", "none", "fewer", Project.Policy.LEAD_DECIDES, 3, "revision")
    results = study.run_both(state, settings)
    assert differences(results) == []  # both paths alike, and both wrong
    assert stale_last_labels(state, results) == [
        f"{state} ({path}): {line}"
        for path in ("pg-functions", "python-only")
        for line in ("('target', (('ada', 1),), False)", "names (('ada', 1),), not Ada's new label")
    ]


def test_the_comparison_reports_a_path_that_answers_something_else(study, settings, monkeypatch):
    real_next = queue.next_item_for

    def next_ignoring_the_queue_with_functions(user, project):
        got = real_next(user, project)
        return None if settings.DB_FUNCTIONS else got

    monkeypatch.setattr(queue, "next_item_for", next_ignoring_the_queue_with_functions)
    state = State(
        "open", "none", "none", "fewer", Project.Policy.MAJORITY, 2, "next issue", "public id"
    )
    found = differences(study.run_both(state, settings))
    assert found == [
        "outcome: pg-functions ('issue', None) != python-only ('issue', 'target', 'target')"
    ]


def test_the_comparison_reports_a_path_that_gives_another_public_id(study, settings, monkeypatch):
    real_next = queue.next_item_for

    def next_with_the_spare_public_id(user, project):
        got = real_next(user, project)
        if got is None or not settings.DB_FUNCTIONS:
            return got
        return got._replace(public_id=study.spare.public_id)

    monkeypatch.setattr(queue, "next_item_for", next_with_the_spare_public_id)
    state = State(
        "open", "none", "none", "fewer", Project.Policy.MAJORITY, 2, "next issue", "public id"
    )
    found = differences(study.run_both(state, settings))
    assert found == [
        "outcome: pg-functions ('issue', 'target', 'spare')"
        " != python-only ('issue', 'target', 'target')"
    ]


# The adaptive stopping rule (labeling.stopping): the same comparison, from states of an
# adaptive project. Ada meets the target issue (queue position 2, behind the fresh spare one at
# position 1) with the others' labels already in it, in order, and the others' reservations;
# she holds a reservation, an expired one, or a label of her own, and asks for her next issue,
# sends a first label, or revises hers. Every state is open and undecided (the others' labels
# came one by one, each looked at under the rule), except where a revision made the labels
# meet the rule, which no revision ever acts on. `expect` is the target's status after the
# action, or the issue Ada is served, worked out by hand from the rule.


@dataclass(frozen=True)
class AdaptiveState:
    name: str
    others: tuple[str, ...]  # the others' current labels, oldest first
    action: str  # "next issue", "label <code>" (a first label) or "revise <code>"
    expect: str  # the target's status afterwards, or the issue Ada is served
    ada: str = "active"  # her reservation ("active", "expired", "none") or her own label's code
    reserved: int = 0  # others' active reservations of the target
    k: int = 5
    min_labels: int = 2
    lead: int = 2
    policy: str = Project.Policy.LEAD_DECIDES
    needs_more_first: bool = True
    revised: bool = False  # the others' labels meet the rule only after a revision
    # A machine rater's label on the target (code, confidence), the rater's threshold, and
    # whether the rater is enlisted, the label valid and current, the rater another project's.
    machine: tuple[str, float] | None = None
    enlisted: bool = True
    threshold: float | None = 0.5
    valid: bool = True
    current: bool = True
    elsewhere: bool = False

    def __str__(self) -> str:
        return f"{self.name}: {self.action} after {self.others}"


ADAPTIVE_TABLE = [
    AdaptiveState("fewer than min", ("C.1",), "label C.1", "open", min_labels=3),
    AdaptiveState("decided at min, agreeing", ("C.1",), "label C.1", "final"),
    AdaptiveState("decided at min, sub-themes differ", ("C.1.i",), "label C.1.ii", "final"),
    AdaptiveState("not decided at min", ("C.1",), "label C.2", "open"),
    AdaptiveState("one ahead, not two", ("C.1", "C.2"), "label C.1", "open"),
    AdaptiveState("three against one", ("C.1", "C.2", "C.1"), "label C.1", "final"),
    AdaptiveState("level again", ("C.1", "C.2", "C.1"), "label C.2", "open"),
    AdaptiveState("exclusion unanimous", ("FP",), "label FP", "final"),
    AdaptiveState("exclusion not unanimous", ("C.1", "FP", "FP"), "label FP", "open"),
    AdaptiveState("at K, lead decides", ("C.1", "C.2", "C.1", "C.2"), "label C.1", "disagreement"),
    AdaptiveState(
        "at K, majority",
        ("C.1", "C.2", "C.1", "C.2"),
        "label C.1",
        "final",
        policy=Project.Policy.MAJORITY,
    ),
    AdaptiveState("at K, exclusion", ("C.1", "FP", "FP", "FP"), "label FP", "disagreement"),
    AdaptiveState("min 1, lead 1", (), "label C.1", "final", k=3, min_labels=1, lead=1),
    AdaptiveState("expired reservation", ("C.1",), "label C.1", "final", ada="expired"),
    AdaptiveState("no reservation", ("C.1",), "label C.1", "raised", ada="none"),
    AdaptiveState("beside another's reservation", ("C.1", "C.2"), "label C.3", "open", reserved=1),
    AdaptiveState("revision below min", ("C.1",), "revise C.1", "open", ada="C.2", min_labels=3),
    # From the minimum on an open issue tells its annotators the labels differ: locked.
    AdaptiveState("revision at min", ("C.1",), "revise C.1", "raised", ada="C.2"),
    AdaptiveState("revision past min", ("C.1", "C.2"), "revise C.1", "raised", ada="C.3"),
    AdaptiveState(
        "first label after a revision", ("C.1", "C.1"), "label C.1", "final", revised=True
    ),
    AdaptiveState("needs more first", ("C.1", "C.2"), "next issue", "target", ada="none"),
    AdaptiveState(
        "queue order",
        ("C.1", "C.2"),
        "next issue",
        "spare",
        ada="none",
        needs_more_first=False,
    ),
    AdaptiveState(
        "one more at a time", ("C.1", "C.2"), "next issue", "spare", ada="none", reserved=1
    ),
    AdaptiveState(
        "both below min in flight", ("C.1",), "next issue", "spare", ada="none", reserved=1
    ),
    AdaptiveState("second below min", ("C.1",), "next issue", "target", ada="none"),
    AdaptiveState("fresh behind fresh", (), "next issue", "spare", ada="none", reserved=1),
    AdaptiveState("her own reservation", ("C.1", "C.2"), "next issue", "target"),
    # An enlisted machine rater: one vote, beside at least one human, below K in all.
    AdaptiveState("machine agrees", (), "label C.1", "final", machine=("C.1", 0.9)),
    AdaptiveState("machine differs", (), "label C.1", "open", machine=("C.2", 0.9)),
    AdaptiveState("machine unsure", (), "label C.1", "open", machine=("C.1", 0.3)),
    AdaptiveState(
        "machine not enlisted", (), "label C.1", "open", machine=("C.1", 0.9), enlisted=False
    ),
    AdaptiveState("machine and human exclude", (), "label FP", "final", machine=("FP", 0.9)),
    AdaptiveState("machine excludes alone", (), "label C.1", "open", machine=("FP", 0.9), lead=1),
    AdaptiveState("machine is one vote", ("C.2",), "label C.1", "open", machine=("C.1", 0.99)),
    AdaptiveState(
        "machine makes three of K",
        ("C.2",),
        "label C.1",
        "open",
        machine=("C.1", 0.9),
        k=3,
        lead=1,
    ),
    AdaptiveState("machine beside two", ("C.2", "C.1"), "label C.1", "final", machine=("C.1", 0.9)),
    # Which machine labels vote: at or above the rater's threshold, valid, current, this
    # project's rater (`MachineLabel.objects.enlisted_votes`, and its SQL copy in submission).
    AdaptiveState("machine at its threshold", (), "label C.1", "final", machine=("C.1", 0.5)),
    AdaptiveState(
        "machine without a threshold", (), "label C.1", "open", machine=("C.1", 0.9), threshold=None
    ),
    AdaptiveState(
        "machine output invalid", (), "label C.1", "open", machine=("C.1", 0.9), valid=False
    ),
    AdaptiveState(
        "machine label superseded", (), "label C.1", "open", machine=("C.1", 0.9), current=False
    ),
    AdaptiveState(
        "machine of another project", (), "label C.1", "open", machine=("C.1", 0.9), elsewhere=True
    ),
]


class AdaptiveStudy(Study):
    def build(self, state) -> None:
        project, item = self.project, self.target
        project.annotations_per_issue = state.k
        project.resolution_policy = state.policy
        project.stopping_rule = Project.StoppingRule.ADAPTIVE
        project.min_labels = state.min_labels
        project.lead_margin = state.lead
        project.needs_more_first = state.needs_more_first
        project.save()
        ProjectIssue.objects.filter(pk=item.pk).update(position=2)
        rule = AdaptiveRule.of(project)
        assert rule is not None
        machine = None
        if state.machine:
            code, confidence = state.machine
            owner = project
            if state.elsewhere:
                owner = Project.objects.create(
                    name="elsewhere", taxonomy_version=project.taxonomy_version
                )
            rater = MachineRater.objects.create(
                project=owner,
                name="clf",
                kind="classifier",
                enlisted=state.enlisted,
                confidence_threshold=state.threshold,
            )
            MachineLabel.objects.create(
                rater=rater, issue_id=item.issue_id, confidence=confidence,
                valid=state.valid, is_current=state.current, **label_fields(project, code),
            )  # fmt: skip
            if self.votes(state):
                machine = deciding_key(_label(project, code))
        keys = []
        for other, code in zip(self.others, state.others, strict=False):
            self._store(other, code)
            keys.append(deciding_key(_label(project, code)))
            # Each label was looked at when it came (a revision is not).
            decided = early_decision(keys, rule, machine=machine)
            assert decided is None or (state.revised and len(keys) == len(state.others)), state
        assert len(state.others) + state.reserved < len(self.others), "not enough others"
        now = timezone.now()
        for other in self.others[len(state.others) : len(state.others) + state.reserved]:
            Reservation.objects.create(
                project_issue=item, annotator=other, expires_at=now + timedelta(minutes=30)
            )
        own = 0
        if state.ada in ("active", "expired"):
            minutes = 30 if state.ada == "active" else -1
            Reservation.objects.create(
                project_issue=item, annotator=self.ada, expires_at=now + timedelta(minutes=minutes)
            )
        elif state.ada != "none":
            self._store(self.ada, state.ada)
            own = 1
        ProjectIssue.objects.filter(pk=item.pk).update(
            annotation_count=len(state.others) + own, last_label_at=self.newest_label_time()
        )

    @staticmethod
    def votes(state) -> bool:
        """The state's machine label votes, worked out by hand from the rule."""
        if not state.machine or state.threshold is None:
            return False
        usable = state.enlisted and state.valid and state.current and not state.elsewhere
        return usable and state.machine[1] >= state.threshold

    def act(self, state):
        project = self.project
        try:
            with transaction.atomic():
                if state.action == "next issue":
                    return self.next_issue()
                _, code = state.action.split()
                # As the labeling page sends it: by the public id.
                stored = self.submit(_label(project, code), "public id")
                return ("annotation", self._annotation(stored), stored.pk == self._pk(stored))
        except Exception as exc:
            return ("raised", type(exc).__name__, getattr(exc, "field", None), str(exc))


@pytest.fixture
def adaptive_study(project, annotator, other_annotator, third_annotator, repository):
    others = [other_annotator, third_annotator]
    for name in ("fay-annotator", "gus-annotator", "hal-annotator", "ivy-annotator"):
        user = make_user(name)
        Membership.objects.create(project=project, user=user, role=Role.ANNOTATOR)
        others.append(user)
    return AdaptiveStudy(project, annotator, repository, others)


@pytest.mark.slow  # the sweep: every adaptive state on both paths
def test_both_paths_decide_every_adaptive_state_alike(adaptive_study, settings, monkeypatch):
    study = adaptive_study
    taken_in_one_call: list[str] = []
    real_submit_first = submission._submit_first
    state = None

    def submit_first_watched(*args):
        stored = real_submit_first(*args)
        if stored is not None:
            taken_in_one_call.append(state.name)
        return stored

    monkeypatch.setattr(submission, "_submit_first", submit_first_watched)
    disagreeing, unexpected = [], []
    stale: list[str] = []
    for state in ADAPTIVE_TABLE:
        results = study.run_both(state, settings)
        disagreeing += [f"{state}: {d}" for d in differences(results)]
        stale += stale_last_labels(state, results)
        outcome, rows = results["python-only"]
        if state.action == "next issue":
            got = outcome[1] if outcome[0] == "issue" else outcome
        elif outcome[0] == "raised":
            got = "raised"
        else:
            got = next(status for name, status, *_ in rows["project issues"] if name == "target")
        if got != state.expect:
            unexpected.append(f"{state}: expected {state.expect}, got {got} ({outcome})")
    assert disagreeing == [], "\n".join(disagreeing)
    assert stale == [], "\n".join(stale)
    assert unexpected == [], "\n".join(unexpected)
    # The one-call path took the labels that leave the issue open and declined every label that
    # decides it (the Python path finalizes those) and every revision.
    decided = {s.name for s in ADAPTIVE_TABLE if s.expect in ("final", "disagreement")}
    assert {"fewer than min", "not decided at min", "exclusion not unanimous"} <= set(
        taken_in_one_call
    )
    assert not decided & set(taken_in_one_call)
    assert not any(name.startswith("revision") for name in taken_in_one_call)
    # Its SQL copy of the machine vote reads the labels the Python path reads: it declined
    # every label of an issue with a vote and took the others that leave the issue open.
    machine_states = [s for s in ADAPTIVE_TABLE if s.machine]
    assert not {s.name for s in machine_states if study.votes(s)} & set(taken_in_one_call)
    silent = {s.name for s in machine_states if not study.votes(s) and s.expect == "open"}
    assert {"machine unsure", "machine output invalid", "machine of another project"} <= silent
    assert silent <= set(taken_in_one_call)


def test_the_machine_vote_reads_the_same_labels_in_sql_and_python(adaptive_study):
    """`submission._ENLISTED_MACHINE_SQL` (the PL/pgSQL path's) and
    `MachineLabel.objects.enlisted_votes` (the Python path's) find a vote in the same states,
    and the states the table works out by hand."""
    study = adaptive_study
    project, item = study.project, study.target
    found = {}
    for state in (s for s in ADAPTIVE_TABLE if s.machine):
        with transaction.atomic():
            study.build(state)
            params = {"issue": item.issue_id, "project": project.pk}
            (in_sql,) = sql.first_row(submission._ENLISTED_MACHINE_SQL, params)
            in_python = (
                MachineLabel.objects.enlisted_votes(project.pk)
                .filter(issue_id=item.issue_id)
                .exists()
            )
            found[state.name] = (in_sql, in_python, study.votes(state))
            transaction.set_rollback(True)
    assert {name: got for name, got in found.items() if len(set(got)) > 1} == {}
    voting = {name for name, (in_sql, _, _) in found.items() if in_sql}
    assert {"machine agrees", "machine at its threshold"} <= voting
    assert {"machine unsure", "machine without a threshold", "machine label superseded"}.isdisjoint(
        voting
    )
