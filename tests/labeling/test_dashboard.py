"""Scenario: Lena (lead) watches her project's dashboard while Ada, Otto and Tia label.

The project (K = 3) holds seven issues in two repositories; every label, final label and
reservation is written with a known time, and the clock is held at NOW. Each figure the test
expects is worked out by hand from that table below, not read from the code:

    issue         status        pilot  Ada            Otto        Tia         final
    Megatron m1   final                C.1  today     C.1 -3d     C.2 -50d    C.1 (-1d; an
                                                                               older C.3 reopened)
    Megatron m2   final                FP   today     B.1 -3d     A.1 -50d    FP (today)
    Megatron m3   disagreement         A.1  -2d       A.2 -15d    C.1 -50d
    Megatron m4   open (1 label)       B.2  -20d, revised -1d
    DeepSpeed d1  final         yes    B.2  -40d      B.1 -40d    B.1 -50d    B.1 (-30d)
    DeepSpeed d2  open (0)             reservations: Ada active, Otto expired, Tia skipped
    DeepSpeed d3  open (2 labels)                     C.3 -29d    C.3 -50d
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotator.models import Membership, Role
from ingest.models import Repository
from labeling import dashboard, issue_list
from labeling.models import (
    Annotation,
    DashboardSnapshot,
    ProjectIssue,
    Reservation,
    Resolution,
)
from tests.conftest import make_issue, make_user
from tests.labeling.conftest import node

pytestmark = [pytest.mark.django_db, pytest.mark.one_path]

NOW = datetime(2026, 3, 20, 12, 0, tzinfo=UTC)
TODAY_9, TODAY_10 = NOW - timedelta(hours=3), NOW - timedelta(hours=2)


def days_ago(n: int) -> datetime:
    return NOW - timedelta(days=n)


def _label_fields(project, code: str) -> dict:
    if code == "FP":
        return {"is_false_positive": True, "false_positive_reason": "keyword_in_names"}
    type_code, _ = code.split(".")
    return {"issue_type": node(project, type_code), "theme": node(project, code)}


def _label(project, user, item, code, at, *, revision=1, current=True):
    return Annotation.objects.create(
        project=project,
        issue=item.issue,
        annotator=user,
        revision=revision,
        is_current=current,
        is_pilot=item.is_pilot,
        created_at=at,
        **_label_fields(project, code),
    )


def _final(project, item, code, at, *, current=True):
    return Resolution.objects.create(
        project=project,
        issue=item.issue,
        method=Resolution.Method.LEAD_DECISION,
        decided_at=at,
        is_current=current,
        **_label_fields(project, code),
    )


@pytest.fixture
def deepspeed(db):
    return Repository.objects.create(
        forge=Repository.Forge.GITHUB,
        api_url="https://api.github.com",
        owner="deepspeedai",
        name="DeepSpeed",
    )


@pytest.fixture
def scenario(project, repository, deepspeed, annotator, other_annotator, third_annotator):
    ada, otto, tia = annotator, other_annotator, third_annotator
    project.annotations_per_issue = 3
    project.save()

    def item(repo, number, position, status, count, pilot=False):
        return ProjectIssue.objects.create(
            project=project,
            issue=make_issue(repo, number),
            position=position,
            status=status,
            annotation_count=count,
            is_pilot=pilot,
        )

    S = ProjectIssue.Status
    m1 = item(repository, 1, 1, S.FINAL, 3)
    m2 = item(repository, 2, 2, S.FINAL, 3)
    m3 = item(repository, 3, 3, S.DISAGREEMENT, 3)
    m3.disagreement_level = "type"
    m3.save()
    m4 = item(repository, 4, 4, S.OPEN, 1)
    d1 = item(deepspeed, 1, 0, S.FINAL, 3, pilot=True)
    d2 = item(deepspeed, 2, 5, S.OPEN, 0)
    d3 = item(deepspeed, 3, 6, S.OPEN, 2)

    _label(project, ada, m1, "C.1", TODAY_9)
    _label(project, otto, m1, "C.1", days_ago(3))
    _label(project, tia, m1, "C.2", days_ago(50))
    _label(project, ada, m2, "FP", TODAY_10)
    _label(project, otto, m2, "B.1", days_ago(3))
    _label(project, tia, m2, "A.1", days_ago(50))
    _label(project, ada, m3, "A.1", days_ago(2))
    _label(project, otto, m3, "A.2", days_ago(15))
    _label(project, tia, m3, "C.1", days_ago(50))
    _label(project, ada, m4, "B.1", days_ago(20), current=False)
    _label(project, ada, m4, "B.2", days_ago(1), revision=2)
    _label(project, ada, d1, "B.2", days_ago(40))
    _label(project, otto, d1, "B.1", days_ago(40))
    _label(project, tia, d1, "B.1", days_ago(50))
    _label(project, otto, d3, "C.3", days_ago(29))
    _label(project, tia, d3, "C.3", days_ago(50))

    _final(project, m1, "C.3", days_ago(35), current=False)  # reopened: history only
    _final(project, m1, "C.1", days_ago(1))
    _final(project, m2, "FP", TODAY_10)
    _final(project, d1, "B.1", days_ago(30))

    Reservation.objects.create(
        project_issue=d2,
        annotator=ada,
        created_at=NOW - timedelta(minutes=5),
        expires_at=NOW + timedelta(minutes=25),
    )
    Reservation.objects.create(
        project_issue=d2,
        annotator=otto,
        created_at=NOW - timedelta(hours=2),
        expires_at=NOW - timedelta(hours=1),
    )
    Reservation.objects.create(
        project_issue=d2,
        annotator=tia,
        created_at=NOW - timedelta(hours=1),
        expires_at=NOW + timedelta(hours=1),
        skipped_at=NOW - timedelta(minutes=30),
    )
    return {"ada": ada, "otto": otto, "tia": tia, "m": repository, "d": deepspeed, "m3": m3}


def _url(project) -> str:
    return reverse("lead_dashboard", args=[project.pk])


# --- who may open it -------------------------------------------------------------------------


def test_the_lead_and_an_admin_open_the_dashboard(client, project, lead):
    admin = make_user("adam-admin")
    Membership.objects.create(project=project, user=admin, role=Role.ADMIN)
    for user in (lead, admin):
        client.force_login(user)
        response = client.get(_url(project))
        assert response.status_code == 200
        assert b'id="annotator-figures"' in response.content


@pytest.mark.parametrize("persona", ["annotator", "researcher", "outsider"])
def test_anyone_else_gets_404(client, project, persona, request):
    client.force_login(request.getfixturevalue(persona))
    assert client.get(_url(project)).status_code == 404
    assert client.get(_url(project), HTTP_HX_REQUEST="true").status_code == 404


def test_a_visitor_who_is_not_logged_in_is_sent_to_log_in(client, project):
    response = client.get(_url(project))
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


# --- the figures -----------------------------------------------------------------------------


def _rows(project):
    board = dashboard.dashboard(project, now=NOW)
    return board, {row.username: row for row in board.annotators}


def test_every_member_who_labels_is_listed_with_pseudonym_and_username(scenario, project, lead):
    _, rows = _rows(project)
    # Leads label too; the researcher does not.
    assert set(rows) == {"lena-lead", "ada-annotator", "otto-annotator", "tia-annotator"}
    ada = Membership.objects.get(project=project, user=scenario["ada"])
    assert rows["ada-annotator"].pseudonym == ada.pseudonym != ""
    assert rows["lena-lead"].total == 0 and rows["lena-lead"].last_active is None


def test_labels_count_current_labels_with_the_pilot_apart(scenario, project):
    _, rows = _rows(project)
    # Ada: m1 m2 m3 m4 (m4 revised: still one label), d1 on the pilot.
    assert (rows["ada-annotator"].labels, rows["ada-annotator"].pilot_labels) == (4, 1)
    assert (rows["otto-annotator"].labels, rows["otto-annotator"].pilot_labels) == (4, 1)
    assert (rows["tia-annotator"].labels, rows["tia-annotator"].pilot_labels) == (4, 1)


def test_pace_and_the_daily_line_count_each_label_on_the_day_it_was_first_given(scenario, project):
    _, rows = _rows(project)
    ada = rows["ada-annotator"]
    # Last 14 days: m1 and m2 today, m3 two days ago (m4's revision is not a new label).
    assert ada.recent == 3 and ada.pace == round(3 / 14, 1)
    expected = [0] * 30
    expected[29] = 2  # today
    expected[27] = 1  # m3
    expected[9] = 1  # m4's first revision, 20 days ago
    assert ada.daily == expected
    otto = rows["otto-annotator"]
    assert otto.recent == 2  # m3 at 15 days is outside the 14
    expected = [0] * 30
    expected[26] = 2
    expected[14] = 1
    expected[0] = 1  # d3, 29 days ago: the first day of the line
    assert otto.daily == expected
    assert rows["tia-annotator"].daily == [0] * 30 and rows["tia-annotator"].pace == 0


def test_the_sparklines_share_one_scale(scenario, project):
    board, rows = _rows(project)
    assert board.spark_max == 2
    points = [tuple(map(float, p.split(","))) for p in rows["ada-annotator"].sparkline.split()]
    assert len(points) == 30
    ys = [y for _, y in points]
    # Two labels (today) reach the top, one label half-way, none the baseline.
    assert ys[29] < ys[27] < ys[0]
    assert ys[27] == pytest.approx((ys[29] + ys[0]) / 2)
    tia_ys = {float(p.split(",")[1]) for p in rows["tia-annotator"].sparkline.split()}
    assert tia_ys == {ys[0]}


def test_agreement_with_the_final_labels_at_theme_and_type_level(scenario, project):
    _, rows = _rows(project)
    # Final issues: m1 (C.1), m2 (FP), d1 (B.1). The reopened C.3 on m1 does not count.
    ada, otto, tia = rows["ada-annotator"], rows["otto-annotator"], rows["tia-annotator"]
    # Ada: C.1 = C.1, FP = FP, B.2 vs B.1 (type only).
    assert (ada.compared, ada.matched_theme, ada.matched_type) == (3, 2, 3)
    assert (ada.theme_share, ada.type_share) == (67, 100)
    # Otto: C.1 = C.1, B.1 vs FP (neither), B.1 = B.1.
    assert (otto.compared, otto.matched_theme, otto.matched_type) == (3, 2, 2)
    # Tia: C.2 vs C.1 (type only), A.1 vs FP (neither), B.1 = B.1.
    assert (tia.compared, tia.matched_theme, tia.matched_type) == (3, 1, 2)
    assert (tia.theme_share, tia.type_share) == (33, 67)
    assert rows["lena-lead"].theme_share is None


def test_open_reservations_and_last_activity(scenario, project):
    _, rows = _rows(project)
    ada, otto, tia = rows["ada-annotator"], rows["otto-annotator"], rows["tia-annotator"]
    # Only Ada's reservation holds: Otto's expired, Tia handed hers back.
    assert (ada.open_reservations, otto.open_reservations, tia.open_reservations) == (1, 0, 0)
    # Asking for an issue and handing one back are activity, as labeling is.
    assert ada.last_active == NOW - timedelta(minutes=5)
    assert otto.last_active == NOW - timedelta(hours=2)
    assert tia.last_active == NOW - timedelta(minutes=30)


def test_issues_per_repository_with_a_totals_row(scenario, project):
    board, _ = _rows(project)
    assert [code for code, _ in board.final_columns] == ["A", "B", "C", "FP"]
    rows = {row.name: row for row in board.repositories}
    assert list(rows) == ["deepspeedai/DeepSpeed", "NVIDIA/Megatron-LM"]
    m, d = rows["NVIDIA/Megatron-LM"], rows["deepspeedai/DeepSpeed"]
    # Open = no label yet, in progress = some labels (the issue list's words): never both.
    #                                      total final  A  B  C  FP  disp. open in progress
    assert (m.total, m.final, m.final_cells, m.disagreement, m.open, m.in_progress) == (
        4, 2, [0, 0, 1, 1], 1, 0, 1,
    )  # fmt: skip
    assert (d.total, d.final, d.final_cells, d.disagreement, d.open, d.in_progress) == (
        3, 1, [0, 1, 0, 0], 0, 1, 1,
    )  # fmt: skip
    t = board.totals
    assert (t.total, t.final, t.final_cells, t.disagreement, t.open, t.in_progress) == (
        7, 3, [0, 1, 1, 1], 1, 1, 2,
    )  # fmt: skip


def test_the_dashboard_and_the_issue_list_count_open_and_in_progress_alike(
    client, scenario, project, lead, repository, deepspeed
):
    """Lena reads "open" and "in progress" on the dashboard and filters the issue list by the
    same words: the numbers agree, per repository and in total."""
    board, _ = _rows(project)
    by_repo = {row.repository_id: row for row in board.repositories}
    for status, attribute in (("open", "open"), ("in_progress", "in_progress")):
        listed = issue_list.issue_list(project, issue_list.IssueFilters(status=status))
        assert listed.count() == getattr(board.totals, attribute), status
        for repo in (repository, deepspeed):
            in_repo = issue_list.issue_list(
                project, issue_list.IssueFilters(status=status, repository_id=repo.pk)
            )
            assert in_repo.count() == getattr(by_repo[repo.pk], attribute), (status, repo)
    # The page says what the words mean.
    client.force_login(lead)
    with time_machine.travel(NOW, tick=False):
        page = client.get(_url(project)).content.decode()
    assert "open: no label yet" in page


def test_links_into_the_disagreement_queue(client, scenario, project, lead):
    board, _ = _rows(project)
    types = {t.code: n for t, n in board.types}
    # m3, the one disputed issue: Ada chose A, Otto A, Tia C.
    assert types == {"A": 1, "B": 0, "C": 1}
    assert ("type", "type", 1) in board.levels
    client.force_login(lead)
    with time_machine.travel(NOW, tick=False):
        page = client.get(_url(project)).content.decode()
    queue = reverse("disagreement_queue", args=[project.pk])
    assert f'href="{queue}?repository={scenario["m"].pk}"' in page
    assert f'href="{queue}?type={node(project, "A").pk}"' in page
    assert f'href="{queue}?level=type"' in page
    # Each link opens the queue with m3 in it.
    for query in (f"repository={scenario['m'].pk}", f"type={node(project, 'A').pk}", "level=type"):
        rows = client.get(f"{queue}?{query}").content.decode()
        assert re.findall(r'data-item="(\d+)"', rows) == [str(scenario["m3"].pk)]


def test_progress_over_time(scenario, project):
    series = dashboard.progress_series(project, now=NOW)
    first_day = days_ago(50).date()
    assert series[0] == (first_day, 5, 0)  # Tia's five labels, 50 days ago
    assert series[-1] == (NOW.date(), 15, 3)  # 15 labels (first revisions), 3 final issues
    assert len(series) == 51
    by_day = {day: (labels, finals) for day, labels, finals in series}
    # 30 days ago: Tia's 5, Ada's and Otto's d1 (40 days ago); d1's final that day.
    assert by_day[days_ago(30).date()] == (7, 1)
    assert by_day[days_ago(29).date()] == (8, 1)  # Otto's d3


def test_the_page_shows_the_figures_without_inline_styles(client, scenario, project, lead):
    client.force_login(lead)
    with time_machine.travel(NOW, tick=False):
        response = client.get(_url(project))
    page = response.content.decode()
    ada_row = page.split('data-user="ada-annotator"', 1)[1].split("</tr>", 1)[0]
    assert re.search(r'class="num labels-count">4<', ada_row)
    assert re.search(r'class="num reservations">1<', ada_row)
    assert "67%" in ada_row and "100%" in ada_row
    assert ada_row.count("<polyline") == 1
    assert page.count('class="line-chart"') == 2
    assert "style=" not in page.split("<body", 1)[1]


def test_htmx_gets_the_figures_alone(client, scenario, project, lead):
    client.force_login(lead)
    with time_machine.travel(NOW, tick=False):
        response = client.get(_url(project), HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert body.lstrip().startswith('<div id="dashboard-figures"')
    assert "<html" not in body and 'hx-trigger="every 30s"' in body


def test_the_number_of_queries_does_not_grow_with_the_project(client, scenario, project, lead):
    """Aggregates, not a loop per issue: many more issues and labels, the same queries, both
    when the page computes the figures and when it reads them from their snapshot."""
    client.force_login(lead)

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert client.get(_url(project)).status_code == 200
        return len(captured)

    def computing_and_reading() -> tuple[int, int]:
        # No snapshot: the page computes the figures; then it reads the one it stored.
        DashboardSnapshot.objects.filter(project=project).delete()
        return queries(), queries()

    before = computing_and_reading()
    repo = scenario["d"]
    for n in range(10, 40):
        item = ProjectIssue.objects.create(
            project=project, issue=make_issue(repo, n), position=n, status="final"
        )
        for user in (scenario["ada"], scenario["otto"]):
            _label(project, user, item, "C.4", days_ago(n % 30))
        _final(project, item, "C.4", days_ago(n % 30))
    assert computing_and_reading() == before
    assert before[1] < before[0]  # the snapshot spares queries


def test_a_disputed_issue_whose_labels_agree_is_counted_as_reopened(scenario, project, deepspeed):
    # A lead reopened d3 into the disagreement queue: its labels (C.3, C.3) do not differ.
    d3 = ProjectIssue.objects.get(project=project, issue__repository=deepspeed, issue__number=3)
    d3.status = ProjectIssue.Status.DISAGREEMENT
    d3.save()
    board, _ = _rows(project)
    assert board.levels[-1] == ("", "reopened", 1)
    assert ("type", "type", 1) in board.levels
    # The issue list names the issue's level in the same words.
    assert d3.level_name == "reopened"


def test_a_progress_chart_spans_the_plot_from_its_first_day_to_its_last():
    """The lead's cumulative chart over three days, 0 → 3 → 8 labels: the first day at the
    plot's left edge (x 64 of the 560-wide drawing, 12 right margin), the last at its right
    (548); 0 on the bottom edge (220 - 36 = 184) and 8, the axis's top, on the top edge (12);
    3 at 3/8 of the height. One day alone is drawn as a flat segment across the plot."""
    days = [datetime(2026, 3, d, tzinfo=UTC).date() for d in (1, 2, 3)]
    chart = dashboard.line_chart("Labels given", days, [0, 3, 8])
    assert chart.points == "64.0,184.0 306.0,119.5 548.0,12.0"
    assert [label for _, label, _ in chart.x_ticks] == ["2026-03-01", "2026-03-02", "2026-03-03"]

    alone = dashboard.line_chart("Labels given", days[:1], [5])
    assert alone.points == "64.0,12.0 548.0,12.0"
