"""The labeling queue: which issue an annotator gets next, reservations, skipping.

Correctness under concurrency rests on one rule: every write that changes how many of an issue's
K slots are taken (a reservation, an annotation) happens while holding the row lock of its
`ProjectIssue`. `next_issue_for` locks candidate rows with `FOR UPDATE SKIP LOCKED`, so two
annotators asking at once never wait on each other, and re-counts the slots of a locked row
before reserving it, because the candidate filter ran on a snapshot that may be stale. Only
when every candidate is locked by others for a moment does a request wait, on those row locks
(bounded by `lock_timeout`), never by sleeping.

On PostgreSQL one such try is one call of a PL/pgSQL function built from the same statements
(labeling.pg_functions). Each annotator's search starts at their `QueueFrontier`, behind which
every open issue is one they labeled or handed back.

Under the adaptive stopping rule (labeling.stopping) an issue's first `min_labels` slots may be
taken at once and later ones one at a time (`_slot_free`), and with `needs_more_first` the
issues that already have labels are looked at before fresh ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import NamedTuple

from django.conf import settings
from django.contrib.auth.models import User
from django.db import OperationalError, connection, transaction
from django.utils import timezone

from annotator.models import Project
from labeling import pg_functions
from labeling.models import Annotation, ProjectIssue, QueueFrontier, Reservation
from labeling.stopping import AdaptiveRule
from lib import sql

# Table names from the models (`Meta.db_table`), never spelled out in the SQL below.
_ANNOTATION_TABLE = Annotation._meta.db_table
_PROJECTISSUE_TABLE = ProjectIssue._meta.db_table
_RESERVATION_TABLE = Reservation._meta.db_table
_QUEUEFRONTIER_TABLE = QueueFrontier._meta.db_table

# Candidates locked per round; a few spare rows make a busy queue front cheap to step past.
CANDIDATES_PER_ROUND = 4
# Rounds to wait out rows that are only locked for a moment by other annotators, and how long
# one round may wait for those locks (they are held for the few ms of a reservation).
LOCKED_RETRIES = 5
LOCK_WAIT = "200ms"

# Conditions on a queue row `pi` for the user: not labeled by them, not handed back by them.
_NOT_LABELED_BY_USER = f"""
  NOT EXISTS (
    SELECT 1 FROM {_ANNOTATION_TABLE} a
    WHERE a.project_id = pi.project_id AND a.issue_id = pi.issue_id
      AND a.annotator_id = %(user)s AND a.is_current
    -- OFFSET keeps this a probe of the unique index per queue row; as an anti-join the
    -- planner compared every queue row with every annotation of the user (quadratic).
    -- (LIMIT before OFFSET: SQLite wants both.)
    LIMIT 1 OFFSET 0)"""
_NOT_HANDED_BACK_BY_USER = f"""
  NOT EXISTS (
    SELECT 1 FROM {_RESERVATION_TABLE} own
    WHERE own.project_issue_id = pi.id AND own.annotator_id = %(user)s
      AND own.skipped_at IS NOT NULL)"""
# Where the user's part of the queue begins (`QueueFrontier`): 0 when handed-back issues are
# wanted too, since those lie behind it.
_FRONTIER = f"""
  coalesce((SELECT f.position FROM {_QUEUEFRONTIER_TABLE} f
            WHERE f.project_id = %(project)s AND f.annotator_id = %(user)s), 0)"""


# Whether an issue with `labels` current labels and `reserved` active reservations has a free
# slot: fewer than K taken, and fewer than %(min_slots)s taken or none in flight. Under the
# fixed rule %(min_slots)s is K: just the K slots. Under the adaptive rule it is `min_labels`:
# the first `min_labels` labels may be in flight together, since each is needed; after those
# the issue returns to the queue for one more label at a time, so no one labels an issue that
# another's label in flight may decide. (Plain SQL, no least/greatest: SQLite runs it too.)
def _slot_free(labels: str, reserved: str) -> str:
    return (
        f"{labels} + {reserved} < %(k)s"
        f" AND ({labels} + {reserved} < %(min_slots)s OR {reserved} = 0)"
    )


_CANDIDATES_WHERE = f"""
WHERE pi.project_id = %(project)s AND pi.status = 'open'{{needs_more}}
  AND pi.position >= CASE WHEN %(with_skipped)s THEN 0 ELSE {_FRONTIER} END
  AND {_NOT_LABELED_BY_USER}
  AND (%(with_skipped)s OR {_NOT_HANDED_BACK_BY_USER})
  AND (SELECT {_slot_free("pi.annotation_count", "count(*)")} FROM {_RESERVATION_TABLE} r
       WHERE r.project_issue_id = pi.id AND r.skipped_at IS NULL AND r.expires_at > %(now)s)
ORDER BY pi.position, pi.id
LIMIT %(limit)s
"""
# Each candidate with its public id, which the labeling page's URL names it by: the caller
# redirects there without looking it up again.
_CANDIDATE_COLUMNS = "pi.id, pi.issue_id, pi.position, pi.public_id"
_CANDIDATES_SQL = f"SELECT {_CANDIDATE_COLUMNS} FROM {_PROJECTISSUE_TABLE} pi" + (
    _CANDIDATES_WHERE.format(needs_more="")
)
# With the project's `needs_more_first`: the open issues that already have labels, which are
# looked at before fresh ones (the partial index `projectissue_needs_more` holds just them).
_NEEDS_MORE_CANDIDATES_SQL = (
    f"SELECT {_CANDIDATE_COLUMNS} FROM {_PROJECTISSUE_TABLE} pi"
    + _CANDIDATES_WHERE.format(needs_more=" AND pi.annotation_count > 0")
)
_LOCK = "FOR UPDATE OF pi SKIP LOCKED"
_WAIT_LOCK = "FOR UPDATE OF pi"

# The user's active reservation, if any; else the candidates, locked. One round trip for what
# most requests need (a volunteer who just submitted holds no reservation).
_EXISTING_OR_CANDIDATES_SQL = f"""
WITH existing AS (
  SELECT r.project_issue_id, ep.public_id FROM {_RESERVATION_TABLE} r
  JOIN {_PROJECTISSUE_TABLE} ep ON ep.id = r.project_issue_id
  WHERE r.annotator_id = %(user)s AND ep.project_id = %(project)s AND ep.status = 'open'
    AND r.skipped_at IS NULL AND r.expires_at > %(now)s
  ORDER BY r.created_at LIMIT 1)
SELECT project_issue_id AS id, NULL AS issue_id, NULL AS position, public_id, 1 AS existing
FROM existing
UNION ALL
SELECT c.id, c.issue_id, c.position, c.public_id, 0 FROM ({{candidates}} {{lock}}) c
WHERE NOT EXISTS (SELECT 1 FROM existing)
"""
# The fresh candidates' second look under `needs_more_first`, shaped as the rows above.
_MORE_CANDIDATES_SQL = (
    "SELECT c.id, c.issue_id, c.position, c.public_id, 0 AS existing FROM ({candidates} {lock}) c"
)


def reservation_minutes() -> int:
    return settings.RESERVATION_MINUTES


def active_reservation(user: User, project: Project) -> Reservation | None:
    """The user's unexpired, unskipped reservation in the project, if any."""
    return (
        Reservation.objects.select_related("project_issue")
        .filter(
            project_issue__project=project,
            project_issue__status=ProjectIssue.Status.OPEN,
            annotator=user,
            skipped_at__isnull=True,
            expires_at__gt=timezone.now(),
        )
        .order_by("created_at")
        .first()
    )


# Others' active reservations of an issue: unexpired, unskipped, and not of someone who has
# since labeled it (such a row is about to be deleted by their submission).
_OTHERS_RESERVED = f"""
  (SELECT count(*) FROM {_RESERVATION_TABLE} r
   WHERE r.project_issue_id = %(item)s AND r.skipped_at IS NULL AND r.expires_at > %(now)s
     AND r.annotator_id <> %(user)s
     AND NOT EXISTS (SELECT 1 FROM {_ANNOTATION_TABLE} a
                     WHERE a.project_id = %(project)s AND a.issue_id = %(issue)s
                       AND a.is_current AND a.annotator_id = r.annotator_id))
"""

_SLOTS_SQL = f"""
SELECT
  (SELECT a.id FROM {_ANNOTATION_TABLE} a
   WHERE a.project_id = %(project)s AND a.issue_id = %(issue)s AND a.is_current
     AND a.annotator_id = %(user)s),
  (SELECT r.skipped_at IS NULL FROM {_RESERVATION_TABLE} r
   WHERE r.project_issue_id = %(item)s AND r.annotator_id = %(user)s),
  (SELECT count(*) FROM {_ANNOTATION_TABLE} a
   WHERE a.project_id = %(project)s AND a.issue_id = %(issue)s AND a.is_current),
  {_OTHERS_RESERVED}
"""


@dataclass
class Slots:
    """Where the user and an issue's K slots stand (exact under the issue's row lock)."""

    own_annotation_id: int | None  # the user's current annotation
    reservation: bool | None  # None: no reservation row; False: handed back (skipped)
    annotations: int  # current annotations
    reserved: int  # others' active reservations


def slot_state(project_issue: ProjectIssue, user: User) -> Slots:
    """One round trip; call it under the issue's row lock for an exact answer."""
    params = {
        "project": project_issue.project_id,
        "issue": project_issue.issue_id,
        "item": project_issue.pk,
        "user": user.pk,
        "now": timezone.now(),
    }
    own, reservation, annotations, reserved = sql.first_row(_SLOTS_SQL, params)
    return Slots(own, None if reservation is None else bool(reservation), annotations, reserved)


# The re-count of `_SLOTS_SQL` and the reservation in one statement (one round trip): a row
# is written only when the user has not labeled the issue and a slot is still free.
_RESERVE_IF_FREE_SQL = f"""
INSERT INTO {_RESERVATION_TABLE}
  (project_issue_id, annotator_id, created_at, expires_at, skipped_at)
SELECT %(item)s, %(user)s, %(now)s, %(expires)s, NULL
WHERE NOT EXISTS (SELECT 1 FROM {_ANNOTATION_TABLE} a
                  WHERE a.project_id = %(project)s AND a.issue_id = %(issue)s AND a.is_current
                    AND a.annotator_id = %(user)s)
  AND (SELECT {_slot_free("labels.n", "others.n")}
       FROM (SELECT count(*) AS n FROM {_ANNOTATION_TABLE} a
             WHERE a.project_id = %(project)s AND a.issue_id = %(issue)s AND a.is_current) labels,
            (SELECT {_OTHERS_RESERVED.strip()} AS n) others)
ON CONFLICT (project_issue_id, annotator_id)
DO UPDATE SET created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at,
              skipped_at = NULL
"""


# After the user reserved the issue at %(position)s: the open issues between their frontier and
# it were stepped past as labeled or handed back by them, or as full. The frontier moves up to
# the first full one (its slot may free again), else to the reserved issue. A handed-back
# issue taken again (second round) lies behind the frontier and is no longer handed back: the
# frontier moves back to it, since its reservation may yet expire unlabeled.
_ADVANCE_FRONTIER_SQL = f"""
INSERT INTO {_QUEUEFRONTIER_TABLE} (project_id, annotator_id, position)
SELECT %(project)s, %(user)s, coalesce(min(pi.position), %(position)s)
FROM {_PROJECTISSUE_TABLE} pi
WHERE pi.project_id = %(project)s AND pi.status = 'open'
  AND pi.position >= {_FRONTIER} AND pi.position < %(position)s
  AND {_NOT_LABELED_BY_USER} AND {_NOT_HANDED_BACK_BY_USER}
ON CONFLICT (project_id, annotator_id) DO UPDATE SET position = EXCLUDED.position
WHERE {_QUEUEFRONTIER_TABLE}.position <> EXCLUDED.position
"""


def _advance_frontier(project: Project, user: User, position: int) -> None:
    sql.execute(
        _ADVANCE_FRONTIER_SQL, {"project": project.pk, "user": user.pk, "position": position}
    )


def _reserve_if_free(
    project: Project, item_id: int, issue_id: int, user: User, expires: datetime
) -> bool:
    """Re-count the locked issue's slots and reserve one if free; whether it was reserved."""
    params = {
        "project": project.pk,
        "issue": issue_id,
        "item": item_id,
        "user": user.pk,
        "now": timezone.now(),
        "expires": expires,
        "k": project.annotations_per_issue,
        "min_slots": min_slots(project),
    }
    return sql.execute(_RESERVE_IF_FREE_SQL, params) > 0


def min_slots(project: Project) -> int:
    """Slots an issue may have taken at once before it is handed out one label at a time (see
    `_slot_free`): K under the fixed rule, `min_labels` under the adaptive one."""
    rule = AdaptiveRule.of(project)
    return project.annotations_per_issue if rule is None else rule.min_labels


def needs_more_first(project: Project) -> bool:
    """Whether the queue serves issues that already have labels before fresh ones."""
    return AdaptiveRule.of(project) is not None and project.needs_more_first


def _params(user: User, project: Project, with_skipped: bool) -> dict:
    return {
        "project": project.pk,
        "user": user.pk,
        "with_skipped": with_skipped,
        "now": timezone.now(),
        "k": project.annotations_per_issue,
        "min_slots": min_slots(project),
        "limit": CANDIDATES_PER_ROUND,
    }


def _lock_clause(wait: bool = False) -> str:
    # SQLite (the laptop default) has no row locks; it serializes writers instead.
    if connection.vendor != "postgresql":
        return ""
    return _WAIT_LOCK if wait else _LOCK


class QueueItem(NamedTuple):
    """An item the queue handed out: its row id, and the public id its labeling page is named
    by (`ProjectIssue.public_id`)."""

    id: int
    public_id: int


# A locked candidate: id, issue id, position, public id.
_Candidate = tuple[int, int, int, int]


def _existing_or_candidates(
    user: User, project: Project, with_skipped: bool, wait: bool = False, more_first: bool = False
) -> tuple[QueueItem | None, list[_Candidate]]:
    """(the user's reserved issue, or None; else the locked candidates: id, issue, position,
    public id). With `more_first`, the candidates are the issues that already have labels."""
    if wait and connection.vendor == "postgresql":
        sql.execute(f"SET LOCAL lock_timeout = '{LOCK_WAIT}'", {})
    candidates = _NEEDS_MORE_CANDIDATES_SQL if more_first else _CANDIDATES_SQL
    found = sql.rows(
        _EXISTING_OR_CANDIDATES_SQL.format(candidates=candidates, lock=_lock_clause(wait)),
        _params(user, project, with_skipped),
    )
    if found and found[0][4]:
        return QueueItem(found[0][0], found[0][3]), []
    return None, [row[:4] for row in found]


def _fresh_candidates(
    user: User, project: Project, with_skipped: bool, wait: bool = False
) -> list[_Candidate]:
    """The locked candidates in queue order, after the issues needing more were looked at."""
    found = sql.rows(
        _MORE_CANDIDATES_SQL.format(candidates=_CANDIDATES_SQL, lock=_lock_clause(wait)),
        _params(user, project, with_skipped),
    )
    return [row[:4] for row in found]


@pg_functions.register
def _reserve_next_function() -> pg_functions.Function:
    """`_reserve_round` as one PL/pgSQL call: the same statements in one round trip."""

    def existing_or(candidates: str) -> str:
        return pg_functions.plpgsql(
            _EXISTING_OR_CANDIDATES_SQL.format(candidates=candidates, lock=_LOCK)
        )

    fresh = pg_functions.plpgsql(
        _MORE_CANDIDATES_SQL.format(candidates=_CANDIDATES_SQL, lock=_LOCK)
    )
    reserve = pg_functions.plpgsql(_RESERVE_IF_FREE_SQL)
    advance = pg_functions.plpgsql(_ADVANCE_FRONTIER_SQL)
    # One look at a list of candidates: the user's reservation, or reserve the first free one.
    try_each = f"""LOOP
    IF found_row.existing = 1 THEN
      RETURN QUERY SELECT found_row.id, found_row.public_id, 0;
      RETURN;
    END IF;
    locked := locked + 1;
    arg_item := found_row.id;
    arg_issue := found_row.issue_id;
    arg_position := found_row.position;
    {reserve};
    IF FOUND THEN
      {advance};
      RETURN QUERY SELECT arg_item, found_row.public_id, locked;
      RETURN;
    END IF;
  END LOOP;"""
    return pg_functions.Function(
        "annotator_reserve_next",
        arguments=(
            ("project", "bigint"),
            ("user", "integer"),
            ("with_skipped", "boolean"),
            ("now", "timestamptz"),
            ("expires", "timestamptz"),
            ("k", "integer"),
            ("min_slots", "integer"),
            ("limit", "integer"),
            ("more_first", "boolean"),
        ),
        returns="TABLE(out_item bigint, out_public_id bigint, out_candidates integer)",
        body=f"""
DECLARE
  found_row record;
  arg_item bigint;
  arg_issue bigint;
  arg_position integer;
  locked integer := 0;
BEGIN
  IF arg_more_first THEN
    FOR found_row IN {existing_or(_NEEDS_MORE_CANDIDATES_SQL)} {try_each}
    FOR found_row IN {fresh} {try_each}
  ELSE
    FOR found_row IN {existing_or(_CANDIDATES_SQL)} {try_each}
  END IF;
  RETURN QUERY SELECT NULL::bigint, NULL::bigint, locked;
END""",
    )


def _reserve_round(
    user: User, project: Project, with_skipped: bool, expires: datetime, wait: bool = False
) -> tuple[QueueItem | None, int]:
    """One try: the user's active reservation or a newly reserved issue (or None), and
    how many candidates this try locked. With `wait`, it waits (up to LOCK_WAIT) for rows other
    annotators hold instead of skipping them."""
    more_first = needs_more_first(project)
    function = None if wait else pg_functions.usable(_reserve_next_function)
    if function is not None:
        params = {
            **_params(user, project, with_skipped),
            "expires": expires,
            "more_first": more_first,
        }
        try:
            row = pg_functions.first(function, params)
            assert row is not None  # the function returns exactly one row
            item, public_id, locked = row
            return (None if item is None else QueueItem(item, public_id)), locked
        except pg_functions.Missing:
            pass
    with transaction.atomic():
        reserved, candidates = _existing_or_candidates(
            user, project, with_skipped, wait, more_first
        )
        if reserved is not None:
            return reserved, 0
        locked = 0
        # Under `needs_more_first`: the issues that have labels, then (if none was free) all.
        for round_ in ("first", "fresh") if more_first else ("first",):
            if round_ == "fresh":
                candidates = _fresh_candidates(user, project, with_skipped, wait)
            for pk, issue_id, position, public_id in candidates:
                locked += 1
                # The filter above ran on a snapshot; re-count now that the row is ours.
                if _reserve_if_free(project, pk, issue_id, user, expires):
                    _advance_frontier(project, user, position)
                    return QueueItem(pk, public_id), locked
        return None, locked


def _any_candidate(user: User, project: Project, with_skipped: bool) -> bool:
    return bool(sql.rows(_CANDIDATES_SQL, _params(user, project, with_skipped)))


def next_item_for(user: User, project: Project) -> QueueItem | None:
    """Reserve the next issue the user should label; its ids (row and public), or None when
    nothing is left.

    Asking again while a reservation is active returns the same issue, so a reload never
    takes a second slot.
    """
    expires = timezone.now() + timedelta(minutes=reservation_minutes())
    # Skipped issues come back only when nothing else is left for this annotator.
    for with_skipped in (False, True):
        wait = False
        for _ in range(LOCKED_RETRIES):
            try:
                item, locked = _reserve_round(user, project, with_skipped, expires, wait)
            except OperationalError:  # lock_timeout: the rows stayed locked; look again
                item, locked = None, 0
            if item is not None:
                return item
            # No row was taken: either nothing is left, or the rows were full on a fresh look,
            # or locked for a moment by other annotators (who may leave a slot for this one):
            # then the next round waits for their locks.
            if not _any_candidate(user, project, with_skipped):
                break
            wait = not locked
    return None


def next_issue_id_for(user: User, project: Project) -> int | None:
    """Like `next_item_for`: the reserved issue's `ProjectIssue` id, or None."""
    item = next_item_for(user, project)
    return None if item is None else item.id


def next_issue_for(user: User, project: Project) -> ProjectIssue | None:
    """Like `next_issue_id_for`, with the issue loaded."""
    pk = next_issue_id_for(user, project)
    return None if pk is None else ProjectIssue.objects.select_related("issue").get(pk=pk)


def skip(user: User, project_issue: ProjectIssue) -> bool:
    """Hand a reserved issue back: its slot frees at once and it moves behind for this user."""
    updated = Reservation.objects.filter(
        project_issue=project_issue, annotator=user, skipped_at__isnull=True
    ).update(skipped_at=timezone.now(), expires_at=timezone.now())
    return updated > 0


def _has_annotated(user: User, project_issue: ProjectIssue) -> bool:
    return Annotation.objects.filter(
        project_id=project_issue.project_id,
        issue_id=project_issue.issue_id,
        annotator=user,
        is_current=True,
    ).exists()


def can_open(user: User, project_issue: ProjectIssue) -> bool:
    """Whether the user may see this issue's labeling page: reserved by them or labeled by them."""
    if _has_annotated(user, project_issue):
        return True
    return has_reservation(user, project_issue)


_RESERVATION_SQL = (
    f"SELECT {sql.columns(Reservation, 'r')} FROM {_RESERVATION_TABLE} r"
    " WHERE r.project_issue_id = %(item)s AND r.annotator_id = %(user)s"
)


def reservation_of(user: User, project_issue: ProjectIssue) -> Reservation | None:
    """The user's reservation row of the issue (active, expired or handed back), if any."""
    row = sql.first(_RESERVATION_SQL, {"item": project_issue.pk, "user": user.pk})
    return None if row is None else sql.model_from_row(Reservation, row)[0]


def was_handed(reservation: Reservation | None) -> bool:
    """Whether a reservation row still lets its annotator open the issue: not handed back,
    or handed back only a moment ago."""
    return reservation is not None and (
        reservation.skipped_at is None or reservation.expires_at > timezone.now()
    )


def has_reservation(user: User, project_issue: ProjectIssue) -> bool:
    """Whether the issue was handed to the user (and not handed back long ago)."""
    return was_handed(reservation_of(user, project_issue))
