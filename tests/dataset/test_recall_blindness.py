"""Recall probes are labeled blind: Ada (annotator) cannot tell a probe from an ordinary issue.

Two issues with the same text, author and dates: #90001 the keyword filter kept (in the
project's scope), #90002 it dropped (drawn by Lena as a recall probe). Every route of the URL
conf that takes an issue is requested for each, and the issue lists (the API, "My progress")
are read for both rows; once each issue's own number, URL and ids are replaced by the same
placeholder, the responses must be byte for byte the same — before Ada labels them, and after.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.utils import timezone

from dataset.models import RecallProbe
from dataset.recall import draw_probes
from ingest.models import Issue, KeywordSet, Repository
from labeling import submission
from labeling.models import ProjectIssue, Reservation
from labeling.setup import Scope, apply_scope
from taxonomy.models import TaxonomyNode
from tests.conftest import make_issue
from tests.labeling.test_blindness_sweep import _routes

pytestmark = pytest.mark.django_db

TITLE = "Gradient all-reduce stalls under pipeline parallelism"
BODY = "After 300 steps the job stops; NCCL_DEBUG shows nothing."
CREATED = datetime(2024, 3, 5, 10, 0, tzinfo=UTC)
# Django's masked CSRF tokens (64 letters and digits) differ on every response.
CSRF = re.compile(r"\b[A-Za-z0-9]{64}\b")


def _restart(model, value: int) -> None:
    """Ids far from any other number on a page, so replacing them cannot touch anything else."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT setval(pg_get_serial_sequence(%s, 'id'), %s)", [model._meta.db_table, value]
        )


@pytest.fixture
def twins(project, lead, annotator):
    keyword_set = KeywordSet.objects.create(name="LLM words", keywords=["llm"])
    repo = Repository.objects.create(
        forge=Repository.Forge.GITHUB,
        api_url="https://api.github.com",
        owner="pytorch",
        name="pytorch",
        is_framework=True,
        keyword_set=keyword_set,
    )
    _restart(Issue, 81000)
    _restart(ProjectIssue, 71000)
    same = {"title": TITLE, "body": BODY, "author": "sam", "created_at": CREATED}
    # A few more kept issues, so the queue has an order to hide the probe in.
    make_issue(repo, 90001, filter_status="kept", matched_keywords=["llm"], **same)
    for n in range(5):
        make_issue(repo, 95000 + n, filter_status="kept", title=f"LLM other {n}")
    make_issue(repo, 90002, filter_status="filtered_out", **same)
    apply_scope(project, Scope(repository_ids=[repo.pk], filter_statuses=["kept"]), 0, 5)
    draw_probes(project, sample_size=1, seed=3, drawn_by=lead)
    ordinary = ProjectIssue.objects.get(project=project, issue__number="90001")
    probe = ProjectIssue.objects.get(project=project, issue__number="90002")
    assert RecallProbe.objects.get().project_issue == probe
    assert not hasattr(ordinary, "recall_probe")
    # Ada is handed both (as the queue would), with the same expiry.
    expires = timezone.now() + timedelta(minutes=30)
    for item in (ordinary, probe):
        Reservation.objects.create(project_issue=item, annotator=annotator, expires_at=expires)
    return ordinary, probe


def _own(item: ProjectIssue) -> list[tuple[str, str]]:
    """The tokens that belong to the issue itself: its ids, number and URL (the public id
    first: it is long and random, and could contain one of the others)."""
    return [
        (str(item.public_id), "PUBLIC-ID"),
        (item.issue.url, "ISSUE-URL"),
        (str(item.issue.number), "NUMBER"),
        (str(item.pk), "ITEM-ID"),
        (str(item.issue_id), "ISSUE-ID"),
    ]


def _normalised(text: str, item: ProjectIssue) -> str:
    text = CSRF.sub("CSRF", text)
    for token, placeholder in _own(item):
        text = text.replace(token, placeholder)
    return text


def _item_routes(project, item: ProjectIssue) -> list[str]:
    values = {
        "project_id": project.pk,
        # Labeling routes name an item by its public id; lead routes (404 for Ada) by its row id.
        "public_id": item.public_id,
        "item_id": item.pk,
        "version_id": project.taxonomy_version_id,
    }
    urls = []
    for route in _routes():
        names = re.findall(r"<(?:\w+:)?(\w+)>", route)
        if {"item_id", "public_id"} & set(names) and all(n in values for n in names):
            urls.append("/" + re.sub(r"<(?:\w+:)?(\w+)>", lambda m: str(values[m.group(1)]), route))
    return urls


def _pages(client, project, item: ProjectIssue) -> dict[tuple[int, bool], str]:
    seen = {}
    for i, url in enumerate(_item_routes(project, item)):
        for htmx in (False, True):
            extra = {"HTTP_HX_REQUEST": "true"} if htmx else {}
            response = client.get(url, **extra)
            body = f"{response.status_code} {response.get('Location', '')}\n"
            body += response.content.decode()
            seen[(i, htmx)] = _normalised(body, item)
    return seen


def _api_rows(client, project, path: str, item: ProjectIssue, key: str) -> list[str]:
    data = client.get(f"/api/projects/{project.pk}/{path}/").json()
    rows = data["results"] if isinstance(data, dict) else data
    mine = [r for r in rows if str(r.get(key, "")).endswith(str(item.issue.number))]
    if path == "annotations":
        # Ada's own label: its id and time are the annotation's (she labels one after the other).
        mine = [{k: v for k, v in r.items() if k not in ("id", "created_at")} for r in mine]
    return [_normalised(json.dumps(r, sort_keys=True), item) for r in mine]


def _progress_row(client, project, item: ProjectIssue) -> list[str]:
    page = client.get(f"/projects/{project.pk}/my-progress/").content.decode()
    rows = [r.split("</tr>")[0] for r in page.split("<tr") if f"#{item.issue.number}" in r]
    # When Ada labeled it is hers, not the issue's (she labels one after the other).
    return [re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d", "TIME", _normalised(r, item)) for r in rows]


def _compare(client, project, ordinary, probe) -> int:
    a, b = _pages(client, project, ordinary), _pages(client, project, probe)
    assert a.keys() == b.keys()
    different = [k for k in a if a[k] != b[k]]
    assert not different, [(k, _first_difference(a[k], b[k])) for k in different[:3]]
    for path, key in (("issues", "url"), ("annotations", "issue_url")):
        assert _api_rows(client, project, path, ordinary, key) == _api_rows(
            client, project, path, probe, key
        )
    assert _progress_row(client, project, ordinary) == _progress_row(client, project, probe)
    return len(a)


def _first_difference(a: str, b: str) -> tuple[str, str]:
    for line_a, line_b in zip(a.splitlines(), b.splitlines(), strict=False):
        if line_a != line_b:
            return line_a[:200], line_b[:200]
    return "(length differs)", ""


def test_ada_cannot_tell_a_probe_from_an_ordinary_issue(client, project, annotator, twins):
    ordinary, probe = twins
    client.force_login(annotator)
    # Before she labels them: the labeling page, its fragments and every issue route.
    compared = _compare(client, project, ordinary, probe)
    assert compared >= 8  # label, skip, change request, resolve … each plain and htmx
    assert _api_rows(client, project, "issues", probe, "url")  # the probe is listed
    # After she gives both the same label: the page with her label, My progress, the API.
    theme = TaxonomyNode.objects.get(version_id=project.taxonomy_version_id, code="C.1")
    for item in (ordinary, probe):
        label = submission.parse_label(
            project, {"issue_type": str(theme.parent_id), "theme": str(theme.pk)}
        )
        submission.submit(annotator, project, item, label)
    _compare(client, project, ordinary, probe)
    assert _progress_row(client, project, probe)


def test_the_comparison_notices_a_difference(client, project, annotator, twins):
    """The probe can fire: a probe whose title differs is told apart."""
    ordinary, probe = twins
    Issue.objects.filter(pk=probe.issue_id).update(title=TITLE + " (dropped)")
    client.force_login(annotator)
    with pytest.raises(AssertionError):
        _compare(client, project, ordinary, probe)


# --- F4 of #20: ids and order of probes drawn after labeling started -----------------------

LABEL_URL = re.compile(r"/projects/\d+/label/(\d+)/$")


def _auc(probes: list[int], ordinary: list[int]) -> float:
    """How well a value tells probes from ordinary issues: the chance that a random probe's
    value exceeds a random ordinary issue's (Mann-Whitney U / n1·n2): 0.5 is chance, 1 or 0
    a perfect separation."""
    from scipy.stats import mannwhitneyu

    return float(mannwhitneyu(probes, ordinary).statistic) / (len(probes) * len(ordinary))


# Under chance the AUC of 30 probes against 70 ordinary issues has a standard deviation of
# sqrt(101 / (12·30·70)) = 0.063: 0.25 off is four of them (a false alarm about once in
# 15,000 runs of the random public ids), while a separation like the old ids' is 0.5 off.
TOLERANCE = 0.25


def test_probes_drawn_mid_labeling_look_like_the_rest_in_urls_ids_and_order(
    client, project, lead, annotator
):
    repo = Repository.objects.create(
        forge=Repository.Forge.GITHUB,
        api_url="https://api.github.com",
        owner="huggingface",
        name="transformers",
        is_framework=True,
    )
    for n in range(1, 101):
        make_issue(repo, n, filter_status="kept", title=f"LLM issue {n}")
    for n in range(1001, 1061):
        make_issue(repo, n, filter_status="filtered_out", title=f"Dropped {n}")
    apply_scope(project, Scope(repository_ids=[repo.pk], filter_statuses=["kept"]), 0, 5)
    client.force_login(annotator)
    data = {"issue_type": "", "is_false_positive": "1", "false_positive_reason": "keyword_in_names"}

    def serve_all(limit: int | None = None) -> list[int]:
        """Ada asks for her next issue and labels it, as the labeling page does: the public ids
        of her URLs, in the order she was served."""
        served: list[int] = []
        while limit is None or len(served) < limit:
            asked = client.get(f"/projects/{project.pk}/label/")
            if asked.status_code == 200:  # nothing left
                break
            found = LABEL_URL.search(asked["Location"])
            assert found, asked["Location"]
            served.append(int(found.group(1)))
            sent = client.post(asked["Location"], data)
            assert sent.status_code == 302, sent.content[:300]
        return served

    def listed() -> list[str]:
        """The issue list of the API as Ada reads it (all pages)."""
        numbers: list[str] = []
        url: str | None = f"/api/projects/{project.pk}/issues/"
        while url:
            data = client.get(url).json()
            numbers += [row["number"] for row in data["results"]]
            url = data["next"]
        return numbers

    before = serve_all(limit=30)
    listed_before = listed()
    # Lena draws 30 probes after Ada labeled 30 issues.
    draw_probes(project, sample_size=30, seed=3, drawn_by=lead)
    # The API lists Ada only the issues handed to her: a draw adds nothing she can diff.
    assert sorted(listed_before) == sorted(listed()) and len(listed_before) == 30
    after = serve_all()
    assert len(listed()) == 130
    items = {i.public_id: i for i in ProjectIssue.objects.filter(project=project)}
    probe_ids = set(
        RecallProbe.objects.filter(project=project).values_list(
            "project_issue__public_id", flat=True
        )
    )
    assert len(before) == 30 and not probe_ids & set(before)
    assert len(after) == 100 and probe_ids <= set(after)  # 70 ordinary issues and 30 probes
    probes = [p for p in after if p in probe_ids]
    ordinary = [p for p in after if p not in probe_ids]

    # The ids in her URLs: the probes' no higher or lower than the others'.
    assert abs(_auc(probes, ordinary) - 0.5) < TOLERANCE
    # The check can fire: the row ids, which the URLs carried before, separate them fully.
    assert _auc([items[p].pk for p in probes], [items[p].pk for p in ordinary]) == 1.0
    # The order she is served them in: the probes are spread among the others.
    rank = {p: i for i, p in enumerate(after)}
    assert abs(_auc([rank[p] for p in probes], [rank[p] for p in ordinary]) - 0.5) < TOLERANCE
    # The check can fire: probes appended behind the queue would be told apart.
    appended = ordinary + probes
    at = {p: i for i, p in enumerate(appended)}
    assert _auc([at[p] for p in probes], [at[p] for p in ordinary]) == 1.0
