"""Theme rankings aggregated per group, checked against a case computed by hand."""

import pytest
from django.utils import translation

from interviews.models import Participant
from interviews.rankings import (
    RankingError,
    aggregate,
    aggregate_rankings,
    export_rankings_csv,
    import_rankings_csv,
    record_ranking,
)
from labeling.models import ProjectIssue
from taxonomy import edits
from tests.builders import final_issue

pytestmark = pytest.mark.django_db


def participant(project, code, kind, experience):
    return Participant.objects.create(project=project, code=code, kind=kind, experience=experience)


@pytest.fixture
def ranked(project):
    """Question type A has four themes (n = 4).

    U1 (user, beginner)      full order  A.3 > A.1 > A.2 > A.4
    U2 (user, experienced)   top three   A.3 > A.2 > A.1
    D1 (developer)           top three   A.1 > A.3 > A.4
    """
    a = project.taxonomy_version.types().get(code="A")
    u1 = participant(project, "U1", "user", "beginner")
    u2 = participant(project, "U2", "user", "experienced")
    d1 = participant(project, "D1", "developer", "experienced")
    record_ranking(u1, a, ["A.3", "A.1", "A.2", "A.4"])
    record_ranking(u2, a, ["A.3", "A.2", "A.1"])
    record_ranking(d1, a, ["A.1", "A.3", "A.4"])
    return a


def cells(agg, group):
    return {
        row.theme.code: (row.groups[group]["mean_rank"], row.groups[group]["borda"])
        for row in agg.rows
    }


def test_hand_computed_mean_ranks_and_borda(project, ranked):
    agg = aggregate(project, ranked)
    # Users: U1 full order, U2 top three (A.4 left out: tied for place (3 + 1 + 4) / 2 = 4).
    #   A.3: ranks 1, 1 → mean 1.0;  Borda (4-1) + (4-1) = 6
    #   A.1: ranks 2, 3 → mean 2.5;  Borda 2 + 1 = 3
    #   A.2: ranks 3, 2 → mean 2.5;  Borda 1 + 2 = 3
    #   A.4: ranks 4, 4 → mean 4.0;  Borda 0 + 0 = 0
    assert cells(agg, "users") == {
        "A.1": (2.5, 3),
        "A.2": (2.5, 3),
        "A.3": (1.0, 6),
        "A.4": (4.0, 0),
    }
    # Developers: D1 alone; A.2 left out → 4.0 and 0 points.
    assert cells(agg, "developers") == {
        "A.1": (1.0, 3),
        "A.2": (4.0, 0),
        "A.3": (2.0, 2),
        "A.4": (3.0, 1),
    }
    # Experienced: U2 and D1.
    #   A.1: 3, 1 → 2.0, Borda 1 + 3 = 4;  A.2: 2, 4 → 3.0, 2 + 0 = 2
    #   A.3: 1, 2 → 1.5, 3 + 2 = 5;        A.4: 4, 3 → 3.5, 0 + 1 = 1
    assert cells(agg, "experienced") == {
        "A.1": (2.0, 4),
        "A.2": (3.0, 2),
        "A.3": (1.5, 5),
        "A.4": (3.5, 1),
    }
    assert cells(agg, "beginners")["A.3"] == (1.0, 3)
    assert agg.participants == {
        "all": 3,
        "users": 2,
        "developers": 1,
        "beginners": 1,
        "experienced": 2,
    }
    users = {row.theme.code: row.groups["users"]["priority_rank"] for row in agg.rows}
    assert users == {"A.3": 1, "A.1": 2, "A.2": 2, "A.4": 4}


def test_pure_aggregation_with_no_rankings():
    assert aggregate_rankings([], [1, 2]) == {
        1: {"mean_rank": None, "borda": 0, "listed": 0},
        2: {"mean_rank": None, "borda": 0, "listed": 0},
    }


def test_frequencies_of_final_labels_sit_beside_the_ranks(project, lead, ranked, issues_in_project):
    items = list(ProjectIssue.objects.filter(project=project).order_by("position"))
    for item, code in zip(items, ["A.1.i", "A.1.ii", "A.3.i", "A.1.i", "C.1.i"], strict=False):
        final_issue(project, item, code, code)
    final_issue(project, items[5], "FP", "FP")  # a false positive counts for no theme
    agg = aggregate(project, ranked)
    freq = {row.theme.code: (row.frequency, row.frequency_rank) for row in agg.rows}
    assert freq == {"A.1": (3, 1), "A.2": (0, 3), "A.3": (1, 2), "A.4": (0, 3)}
    assert agg.total_labels == 4
    # Users put A.3, A.1 and A.2 first (Borda 6, 3, 3); labels show only A.1 and A.3 at all,
    # so A.2 is where users' priorities and the issue data disagree.
    flags = {row.theme.code: row.groups["users"]["disagrees"] for row in agg.rows}
    assert flags == {"A.1": False, "A.2": True, "A.3": False, "A.4": False}

    # After A.4 is merged into A.3, rankings and labels read under the new version.
    v1 = project.taxonomy_version
    edits.merge(project, lead, v1.nodes.get(code="A.4"), v1.nodes.get(code="A.3"))
    a = project.taxonomy_version.types().get(code="A")
    agg = aggregate(project, a)
    assert [row.theme.code for row in agg.rows] == ["A.1", "A.2", "A.3"]
    assert {r.theme.code: r.frequency for r in agg.rows} == {"A.1": 3, "A.2": 0, "A.3": 1}


def test_bad_rankings_are_refused(project):
    a = project.taxonomy_version.types().get(code="A")
    u1 = participant(project, "U1", "user", "beginner")
    with pytest.raises(RankingError, match=r"'B\.1' is not a theme of A"):
        record_ranking(u1, a, ["A.1", "B.1"])
    with pytest.raises(RankingError, match=r"A\.1 is listed twice"):
        record_ranking(u1, a, ["A.1", "A.1"])
    with pytest.raises(RankingError, match="at least one"):
        record_ranking(u1, a, [])


RANKINGS_CSV = (
    "Participant,Type,Experience Level,Issue Type,Ranked Themes\n"
    "D1,Developer,Senior (8 years),C,C.2 > C.3 > C.4\n"
    "U1,User,Beginner (<1 year),A,A.1 > A.3 > A.2 > A.4\n"
    "U1,User,Beginner (<1 year),C,C.1 > C.6 > C.10\n"
)


def test_rankings_csv_round_trip(project):
    assert import_rankings_csv(project, RANKINGS_CSV) == 3
    assert export_rankings_csv(project) == RANKINGS_CSV
    u1 = Participant.objects.get(code="U1")
    assert (u1.kind, u1.experience) == ("user", "beginner")
    agg = aggregate(project, project.taxonomy_version.types().get(code="C"))
    beginners = {r.theme.code: r.groups["beginners"]["borda"] for r in agg.rows}
    # Ten bug themes: first place earns 9 points, second 8, third 7.
    assert (beginners["C.1"], beginners["C.6"], beginners["C.10"], beginners["C.2"]) == (9, 8, 7, 0)


def test_a_bad_ranking_row_is_named_and_nothing_is_stored(project):
    bad = RANKINGS_CSV + "U2,User,Beginner,A,A.1 > C.1\n"
    with pytest.raises(RankingError, match=r"line 5, 'Ranked Themes': 'C\.1' is not a theme"):
        import_rankings_csv(project, bad)
    assert not Participant.objects.exists()


def test_a_chinese_readers_rankings_export_is_the_studys_file(project):
    import_rankings_csv(project, RANKINGS_CSV)
    with translation.override("zh-hans"):
        assert export_rankings_csv(project) == RANKINGS_CSV
