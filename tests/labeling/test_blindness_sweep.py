"""Blindness sweep: every URL of the site, as another annotator, cannot tell what Ada chose.

For an issue in each state before final — open with Ada's label, in the disagreement queue,
with a proposal made from Ada's label — Otto (another annotator of the project) requests every
route of the URL conf (pages, fragments, the API, with query variants). Two checks:

* nothing of Ada's appears: her user name, pseudonym, summary, note or proposal text;
* nothing depends on her label: Ada's label (and the proposal's place) is changed in the
  database and every response is requested again; each must be byte for byte the same (after
  the per-request CSRF tokens). A count, an ordering or an error that moved would show here.

The routes come from the URL conf, so a new page is swept without editing this test.
"""

from __future__ import annotations

import re

import pytest
from django.urls import URLPattern, URLResolver, get_resolver

from annotator.models import Membership, Project
from labeling.models import Annotation, ProjectIssue, Proposal
from tests.labeling.conftest import label_item, node

ADA_SUMMARY = "ada-secret-summary"
ADA_NOTE = "ada-secret-note"
ADA_PROPOSAL = "Ada secret category: for what no theme covers"

# Path parameters filled from the scenario; a route with another parameter is skipped (and
# counted, so a new kind of parameter cannot silently drop routes from the sweep).
_QUERY_VARIANTS = ("", "?status=open", "?status=disagreement", "?status=final", "?page=1")


def _routes(patterns=None, prefix: str = ""):
    for p in patterns if patterns is not None else get_resolver().url_patterns:
        if isinstance(p, URLResolver):
            if str(p.pattern).startswith("admin"):
                continue  # Django's admin: staff only, Otto is redirected to its login
            yield from _routes(p.url_patterns, prefix + str(p.pattern))
        elif isinstance(p, URLPattern):
            yield prefix + str(p.pattern)


def _urls(values: dict[str, object]) -> tuple[list[str], list[str]]:
    urls, skipped = [], []
    for route in _routes():
        names = re.findall(r"<(?:\w+:)?(\w+)>", route)
        if any(n not in values for n in names) or route.startswith("^"):
            skipped.append(route)
            continue
        if route == "metrics":
            # The operators' Prometheus endpoint: no member reaches it, whatever their role (an
            # allowlist of addresses or a token: tests/test_observability.py); the test client
            # comes from 127.0.0.1, which the default allowlist admits.
            continue
        path = "/" + re.sub(r"<(?:\w+:)?(\w+)>", lambda m: str(values[m.group(1)]), route)
        # The API's filters are query strings; pages get one plain request each.
        urls.extend(path + q for q in _QUERY_VARIANTS) if path.startswith("/api/") else urls.append(
            path
        )
    return urls, skipped


# Django's masked CSRF tokens (64 letters and digits) differ on every response.
_CSRF = re.compile(rb"\b[A-Za-z0-9]{64}\b")


def _normalised(response) -> bytes:
    body = response.content if not getattr(response, "streaming", False) else b"<stream>"
    body = _CSRF.sub(b"CSRF", body)
    location = response.get("Location", "")
    return f"{response.status_code} {location}\n".encode() + body


def _first_difference(a: bytes, b: bytes) -> tuple[str, str]:
    for line_a, line_b in zip(a.splitlines(), b.splitlines(), strict=False):
        if line_a != line_b:
            return line_a.decode(errors="replace")[:200], line_b.decode(errors="replace")[:200]
    return "(length differs)", ""


def _sweep(client, urls: list[str]) -> dict[tuple[str, bool], bytes]:
    seen = {}
    for url in urls:
        for htmx in (False, True) if not url.startswith("/api/") else (False,):
            extra = {"HTTP_HX_REQUEST": "true"} if htmx else {}
            response = client.get(url, **extra)
            assert response.status_code < 500, (url, response.status_code)
            seen[(url, htmx)] = _normalised(response)
    return seen


def _relabel(annotation: Annotation, code: str) -> None:
    """Change Ada's stored label in place (as if she had chosen `code`), nothing else."""
    project = annotation.project
    parts = code.split(".")
    Annotation.objects.filter(pk=annotation.pk).update(
        issue_type=node(project, parts[0]),
        theme=node(project, ".".join(parts[:2])),
        sub_theme=node(project, code) if len(parts) > 2 else None,
    )
    Proposal.objects.filter(source_annotation=annotation).update(
        parent=node(project, ".".join(parts[:2]))
    )


@pytest.fixture
def tia(third_annotator):
    return third_annotator


def _state_open(project, item, ada, otto, tia):
    project.annotations_per_issue = 3
    project.save()
    return label_item(ada, project, item, "A.1", summary=ADA_SUMMARY, note=ADA_NOTE)


def _state_disagreement(project, item, ada, otto, tia):
    project.annotations_per_issue = 3
    project.save()
    ada_label = label_item(ada, project, item, "A.1", summary=ADA_SUMMARY, note=ADA_NOTE)
    label_item(tia, project, item, "C.2")
    label_item(otto, project, item, "C.1")
    item.refresh_from_db()
    assert item.status == ProjectIssue.Status.DISAGREEMENT
    return ada_label


def _state_proposal(project, item, ada, otto, tia):
    project.annotations_per_issue = 3
    project.save()
    ada_label = label_item(
        ada, project, item, "A.1", summary=ADA_SUMMARY, proposed_category=ADA_PROPOSAL
    )
    assert Proposal.objects.filter(source_annotation=ada_label).exists()
    return ada_label


def _state_adaptive(project, item, ada, otto, tia):
    """Under the adaptive rule: Ada's and Tia's labels differ, so the issue needs one more
    (and Otto is served it first); Ada's label changed to B.1 still differs from Tia's."""
    project.annotations_per_issue = 5
    project.stopping_rule = Project.StoppingRule.ADAPTIVE
    project.min_labels = 2
    project.lead_margin = 2
    project.needs_more_first = True
    project.save()
    ada_label = label_item(ada, project, item, "A.1", summary=ADA_SUMMARY, note=ADA_NOTE)
    label_item(tia, project, item, "C.2")
    item.refresh_from_db()
    assert (item.status, item.annotation_count) == (ProjectIssue.Status.OPEN, 2)
    return ada_label


@pytest.mark.slow  # every route of the site, once per state
@pytest.mark.parametrize(
    "state", [_state_open, _state_disagreement, _state_proposal, _state_adaptive]
)
def test_another_annotator_cannot_tell_what_ada_chose(
    client, project, items, annotator, other_annotator, tia, state
):
    ada, otto, item = annotator, other_annotator, items[0]
    ada_label = state(project, item, ada, otto, tia)
    proposal = Proposal.objects.filter(project=project).first()
    values = {
        "project_id": project.pk,
        "item_id": item.pk,
        "public_id": item.public_id,
        "version_id": project.taxonomy_version_id,
        "type_code": "A",
        "proposal_id": proposal.pk if proposal else 0,
        "member_id": Membership.objects.get(project=project, user=ada).pk,
        # Releases (dataset.release_views / release_api): an id and two versions to compare.
        "release_id": 1,
        "pk": 1,
        "a": "1.0.0",
        "b": "1.0.1",
        # Machine raters (raters.urls): a rater and a run.
        "rater_id": 1,
        "run_id": 1,
    }
    urls, skipped = _urls(values)
    # The sweep reaches the labeling, proposal and API routes (a guard against an empty sweep).
    assert any("/label/" in u for u in urls) and any(u.startswith("/api/projects/") for u in urls)
    assert len(urls) >= 50, skipped

    client.force_login(otto)
    _sweep(client, urls)  # first pass: reservations and other side effects of GETs settle
    before = _sweep(client, urls)

    ada_pseudonym = Membership.objects.get(project=project, user=ada).pseudonym
    for key, body in before.items():
        for leak in (ada.username, ADA_SUMMARY, ADA_NOTE, ADA_PROPOSAL, ada_pseudonym):
            assert leak.encode() not in body, (key, leak)

    item_before = ProjectIssue.objects.values().get(pk=item.pk)
    _relabel(ada_label, "B.1")
    # The stored comparison is the same for A.1 and B.1 against the others' C.x labels.
    assert ProjectIssue.objects.values().get(pk=item.pk) == item_before
    after = _sweep(client, urls)

    changed = [key for key in before if before[key] != after[key]]
    assert not changed, [(key, _first_difference(before[key], after[key])) for key in changed[:3]]


def _machine_labels(project, items) -> None:
    """A classifier rater with a run and a label on every issue, Ada's included (the resolve
    page shows them to a lead, so the probe below can fire)."""
    from labeling.models import MachineLabel, MachineRater
    from raters.models import RaterRun

    rater = MachineRater.objects.create(project=project, name="machine-secret", kind="classifier")
    run = RaterRun.objects.create(rater=rater, status="done", total=len(items), done=len(items))
    theme = node(project, "C.3")
    for item in items:
        MachineLabel.objects.create(
            rater=rater,
            issue_id=item.issue_id,
            run=run,
            issue_type=theme.parent,
            theme=theme,
            confidence=0.93,
            model="tfidf-logreg",
            model_version="v1",
        )


@pytest.mark.slow  # every route of the site, with and without machine labels
def test_machine_labels_change_nothing_an_annotator_sees(
    client, project, items, annotator, other_annotator, lead, tia
):
    """Every route, as Ada and as Otto, byte for byte the same with and without a machine
    rater's labels on every issue; the lead's resolve page does change (the probe fires)."""
    ada, otto, item = annotator, other_annotator, items[0]
    _state_disagreement(project, item, ada, otto, tia)
    values = {
        "project_id": project.pk,
        "item_id": item.pk,
        "version_id": project.taxonomy_version_id,
        "type_code": "A",
        "proposal_id": 0,
        "member_id": Membership.objects.get(project=project, user=ada).pk,
        "release_id": 1,
        "pk": 1,
        "a": "1.0.0",
        "b": "1.0.1",
        "rater_id": 1,
        "run_id": 1,
    }
    urls, skipped = _urls(values)
    assert any("/raters/" in u for u in urls), skipped
    before = {}
    for who in (ada, otto):
        client.force_login(who)
        _sweep(client, urls)
        before[who.pk] = _sweep(client, urls)
    client.force_login(lead)
    resolve_url = f"/projects/{project.pk}/resolve/{item.pk}/"
    lead_before = _sweep(client, [resolve_url])

    _machine_labels(project, items)

    lead_after = _sweep(client, [resolve_url])
    assert lead_after != lead_before  # the lead sees the second opinion, after the humans'
    page = lead_after[(resolve_url, False)]
    assert b"machine-secret" in page and page.index(b'id="annotations"') < page.index(
        b'id="machine-labels"'
    )
    for who in (ada, otto):
        client.force_login(who)
        after = _sweep(client, urls)
        for body in after.values():
            assert b"machine-secret" not in body
        changed = [key for key in before[who.pk] if before[who.pk][key] != after[key]]
        assert not changed, [
            (key, _first_difference(before[who.pk][key], after[key])) for key in changed[:3]
        ]


def test_the_sweep_notices_a_leak(client, project, items, annotator, other_annotator, tia):
    """The probe can fire: a response that does depend on Ada's label is caught."""
    ada_label = _state_open(project, items[0], annotator, other_annotator, tia)
    client.force_login(annotator)  # Ada herself sees her own label: it must differ
    url = f"/projects/{project.pk}/my-progress/"
    before = _sweep(client, [url])
    _relabel(ada_label, "B.1")
    after = _sweep(client, [url])
    assert before != after
