"""No input makes a 500: every form and API field of the site, fuzzed.

A project mid-study (an issue handed to Ada, one she labeled, one in disagreement, one final, a
proposal, detail summaries, a codebook, an export, a sync run, an invite). Then:

* every route of the URL conf is requested by every persona (anonymous, Lena the lead, Ada and
  Otto the annotators, Rita the researcher), and each path parameter in turn is replaced by a
  hostile value (a NUL, a 3,000-character string, a look-alike, an integer past bigint);
* every `<form>` a persona finds on a page it may see is posted (or sent, for a GET form) once
  per field per probe: NUL, overlong, deeply nested, Unicode look-alikes, out-of-range numbers;
  file fields get the site's own CSV and JSON downloads, mutated; the query parameters the
  page's links use are probed the same way;
* every API operation of the OpenAPI schema gets its query parameters probed, and its request
  body as JSON and as a form, NUL inside JSON strings and nesting past MAX_JSON_DEPTH included.

No response may be a 5xx; a NUL must be refused with a 400 that names where it was; and a
refused request (a 4xx, an error message, a form shown again) must leave every table as it was.
The routes and fields come from the URL conf and the pages, so a new form is fuzzed without
editing this test. `-rP` prints the counts.
"""

from __future__ import annotations

import json
import logging
import re
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import path
from django.utils import timezone

from annotator.models import Invite, Membership, Role
from dataset.models import ExportJob
from ingest.models import SyncRun
from interviews import codebook
from labeling import details, proposals
from labeling.models import ProjectIssue, Reservation
from tests.labeling.conftest import label_item
from tests.security import fuzz

pytestmark = pytest.mark.django_db

PERSONAS = ("anonymous", "lead", "annotator", "other_annotator", "researcher")

CODEBOOK = (
    "Participant,Type,Experience Level,Framework Context,Prompt Category,Thematic Quote,"
    "Linked Taxonomy Node(s),Research Insight\n"
    'U1,User,Beginner (<1 year),PyTorch,Setup,"Install fails on CUDA 12",C.1,Docs lag\n'
)


@pytest.fixture(autouse=True)
def _quiet(caplog):
    # Thousands of refused requests are logged as warnings; the findings say what matters.
    caplog.set_level(logging.CRITICAL, logger="django.request")
    caplog.set_level(logging.CRITICAL, logger="django.security")


@pytest.fixture(autouse=True)
def _fast_and_small(settings, tmp_path):
    settings.EXPORT_ROOT = tmp_path / "exports"
    # The limit is what is tested, not the size: 1 MB keeps the oversized uploads quick.
    settings.MAX_UPLOAD_BYTES = 1_000_000
    from django.core.cache import cache

    cache.clear()


@pytest.fixture
def study(project, issues_in_project, lead, annotator, other_annotator, researcher, repository):
    """The project mid-study, and the ids its routes take."""
    project.annotations_per_issue = 2
    project.save()
    items = list(ProjectIssue.objects.filter(project=project).order_by("position"))
    handed, labeled, disputed, final = items[:4]
    Reservation.objects.create(
        project_issue=handed,
        annotator=annotator,
        expires_at=timezone.now() + timedelta(minutes=30),
    )
    label_item(annotator, project, labeled, "A.1", summary="Where is the config documented?")
    label_item(annotator, project, disputed, "A.1", summary="Asks how to shard")
    label_item(other_annotator, project, disputed, "C.1", summary="Sharding crashes")
    label_item(annotator, project, final, "C.2", summary="NCCL timeout at step 0")
    label_item(other_annotator, project, final, "C.2", summary="Hangs in all-reduce")
    details.sync_entries(project)
    proposal = proposals.propose(
        project, annotator, name="Licensing questions", parent_code="A", description="Who may"
    )
    codebook.import_csv(project, CODEBOOK)
    job = ExportJob.objects.create(project=project, requested_by=lead)
    run = SyncRun.objects.create(repository=repository)
    _, token = Invite.issue_for(project, Role.ANNOTATOR, lead)
    values = {
        "project_id": [project.pk],
        "item_id": [i.pk for i in (handed, labeled, disputed, final)],
        "public_id": [i.public_id for i in (handed, labeled, disputed, final)],
        "proposal_id": [proposal.pk],
        "version_id": [project.taxonomy_version_id],
        "type_code": ["A"],
        "job_id": [job.pk],
        "pk": [job.pk],
        "run_id": [run.pk],
        "repository_id": [repository.pk],
        "member_id": [Membership.objects.filter(project=project).first().pk],
        "token": [token],
    }
    users = {
        "lead": lead,
        "annotator": annotator,
        "other_annotator": other_annotator,
        "researcher": researcher,
    }
    return values, users


def _clients(users) -> dict[str, Client]:
    # A view's exception comes back as the 500 a browser would get, recorded as a finding.
    clients = {"anonymous": Client(raise_request_exception=False)}
    for persona, user in users.items():
        clients[persona] = Client(raise_request_exception=False)
        clients[persona].force_login(user)
    return clients


def _sweep(prober: fuzz.Prober, values: dict) -> tuple[list, dict, dict, dict]:
    """GET every route as every persona: the forms found, the files served, the pages seen."""
    forms: dict[tuple, tuple[str, fuzz.Form]] = {}
    seeds: dict[str, bytes] = {}
    shapes: set[str] = set()
    pages: dict[str, tuple[str, set[str]]] = {}
    route_list = list(fuzz.routes())
    prober.stats.routes = len(route_list)
    for route in route_list:
        for url in fuzz.expand(route, values):
            prober.stats.urls += 1
            for persona in PERSONAS:
                response = prober.get(persona, url)
                if response.status_code != 200 or getattr(response, "streaming", False):
                    continue
                kind = response.get("Content-Type", "")
                if kind.startswith("text/html"):
                    parsed = fuzz.parse_page(url, response.content.decode())
                    pages.setdefault(url, (persona, parsed.link_params))
                    new = [f for f in parsed.forms if f.key() not in forms]
                    for form in new:
                        forms[form.key()] = (persona, form)
                    prober.stats.pages_with_forms += bool(new)
                elif not url.startswith("/api/") and ("csv" in kind or "json" in kind):
                    _add_seed(seeds, shapes, url, response.content, kind)
    return route_list, forms, seeds, pages


def _add_seed(seeds: dict[str, bytes], shapes: set[str], url: str, content: bytes, kind: str):
    """One file per shape (a CSV's header, a JSON document's top-level keys)."""
    text = content.decode("utf-8-sig", errors="replace")
    if "csv" in kind:
        shape, name = "csv:" + text.split("\n", 1)[0], "file.csv"
    else:
        try:
            doc = json.loads(text)
        except ValueError:
            return
        shape = "json:" + ",".join(sorted(doc)) if isinstance(doc, dict) else "json:list"
        name = "file.json"
    if shape not in shapes:
        shapes.add(shape)
        seeds[f"{len(seeds)}-{name}"] = content


def _fuzz_paths(prober: fuzz.Prober, route_list: list[str], values: dict) -> None:
    for route in route_list:
        for url, _name, probe in fuzz.path_probes(route, values):
            for persona in ("lead", "annotator"):
                prober.get(persona, url, where="address", probe=probe)


def _fuzz_links(prober: fuzz.Prober, pages: dict) -> None:
    """The query parameters a page's own links use (pagination, filters)."""
    for url, (persona, params) in pages.items():
        for name in sorted(params):
            for probe, value in fuzz.VALUE_PROBES:
                prober.send(persona, "GET", url, name, probe, data={name: value})


def _fuzz_api(prober: fuzz.Prober, route_list: list[str], values: dict) -> None:
    """Each operation of the OpenAPI schema, as the lead (who may use every endpoint)."""
    schema = prober.get("lead", "/api/schema/?format=json").json()
    for route in route_list:
        for method, query, body in fuzz.api_operations(schema, route):
            prober.stats.api_operations += 1
            prober.stats.api_fields += len(query) + len(body)
            for url in fuzz.expand(route, values):
                for name in query:
                    for probe, value in fuzz.VALUE_PROBES:
                        prober.send("lead", "GET", url, name, probe, data={name: value})
                if method not in ("POST", "PUT", "PATCH"):
                    continue
                for where, probe, text in fuzz.json_bodies(body):
                    prober.send(
                        "lead",
                        method,
                        url,
                        where,
                        probe,
                        data=text,
                        content_type="application/json",
                    )
                for name in body:
                    for probe, value in fuzz.VALUE_PROBES:
                        prober.send("lead", method, url, name, probe, data={name: value})


# The test runs as independent chunks, so that pytest-xdist spreads it over its workers (as one
# test it was 1-2 min): the pages chunks each sweep every route (~590 requests, about half of a
# chunk's: so two, not more) and fuzz their share of the forms found; the addresses chunk
# probes every route's path parameters and every API operation, which needs no sweep. Each
# pages chunk checks that the shares cover every form once.
PAGE_CHUNKS = 2
CHUNKS = [f"pages-{i}" for i in range(PAGE_CHUNKS)] + ["addresses-api"]


def form_cost(form: fuzz.Form, file_probes: list) -> int:
    """The requests `fuzz.fuzz_form` sends for the form (a GET form: no defaults, no NUL key)."""
    names = [n for n in form.fields if n != "csrfmiddlewaretoken"]
    if form.method != "post":
        return len(names) * len(fuzz.VALUE_PROBES)
    cost = 2  # the defaults, and a NUL in a field name
    for name in names:
        if form.fields[name].kind == "file":
            cost += sum(form.fields[name].accepts(filename) for _, _, filename in file_probes)
        else:
            cost += len(fuzz.VALUE_PROBES)
    return cost


def shares(costs: dict[str, int], n: int) -> list[list[str]]:
    """The keys split into `n` shares of about equal cost (the costliest first, each to the
    share with least so far; ties by key, so every chunk computes the same split)."""
    parts: list[list[str]] = [[] for _ in range(n)]
    loads = [0] * n
    for key in sorted(costs, key=lambda k: (-costs[k], k)):
        i = loads.index(min(loads))
        parts[i].append(key)
        loads[i] += costs[key]
    return parts


@pytest.mark.slow  # every form and endpoint, with every hostile value
@pytest.mark.timeout(
    900
)  # a chunk is 10-30 s on a quiet host; the suite's 300 s is tight under load
@pytest.mark.parametrize("chunk", CHUNKS)
def test_no_input_makes_a_500_and_a_refusal_writes_nothing(study, settings, chunk):
    values, users = study
    stats = fuzz.Stats()
    prober = fuzz.Prober(_clients(users), stats)

    if chunk == "addresses-api":
        route_list = list(fuzz.routes())
        stats.routes = len(route_list)
        _fuzz_paths(prober, route_list, values)
        _fuzz_api(prober, route_list, values)
        print(f"\nfuzz {chunk}: {stats.summary()}")
        assert stats.routes > 30 and stats.api_operations >= 5, stats.summary()
    else:
        route_list, forms, seeds, pages = _sweep(prober, values)
        # Guards against an empty sweep: the labeling, taxonomy, interview pages and their files.
        actions = {form.action for _, form in forms.values()}
        assert any("/label/" in a for a in actions), actions
        assert any("/interviews/" in a for a in actions), actions
        assert any("/taxonomy/import/" in a for a in actions), actions
        assert any(name.endswith(".csv") for name in seeds) and any(
            name.endswith(".json") for name in seeds
        ), list(seeds)

        file_probes = fuzz.file_probes(seeds, settings.MAX_UPLOAD_BYTES)
        # Shared out by the form's name with its digits blanked: the chunks run on different
        # workers, whose rows have other primary keys (`member-<pk>-pseudonym`), and must still
        # split the same forms the same way.
        groups: dict[str, list] = {}
        for key in forms:
            groups.setdefault(re.sub(r"\d+", "N", repr(key)), []).append(key)
        split = shares(
            {
                name: sum(form_cost(forms[key][1], file_probes) for key in keys)
                for name, keys in groups.items()
            },
            PAGE_CHUNKS,
        )
        # Every form is fuzzed by exactly one chunk.
        assert sorted(k for share in split for k in share) == sorted(groups)
        mine = {repr(key) for name in split[int(chunk.rsplit("-", 1)[1])] for key in groups[name]}
        all_fields = sum(
            len([n for n in form.fields if n != "csrfmiddlewaretoken"])
            for _, form in forms.values()
        )
        assert len(forms) >= 15 and all_fields >= 40, (len(forms), all_fields)
        for key, (persona, form) in forms.items():
            if repr(key) not in mine:
                continue
            stats.forms += 1
            if persona in users:  # a form may have logged the persona out (or changed its session)
                prober.clients[persona].force_login(users[persona])
            fuzz.fuzz_form(prober, persona, form, file_probes)
        if chunk == "pages-0":
            _fuzz_links(prober, pages)
        print(f"\nfuzz {chunk}: {stats.summary()}")
        assert stats.forms >= 1, stats.summary()

    assert not prober.findings, "\n".join(map(str, prober.findings[:25])) + (
        f"\n… {len(prober.findings)} findings; {stats.summary()}"
    )


def test_the_shares_hold_every_key_once_and_balance_the_cost():
    costs = {"a": 40, "b": 30, "c": 20, "d": 10, "e": 10, "f": 5}
    split = shares(costs, 3)
    assert sorted(k for share in split for k in share) == sorted(costs)
    loads = [sum(costs[k] for k in share) for share in split]
    assert max(loads) - min(loads) <= 10, split
    assert shares(costs, 3) == split  # the same split in every chunk


# --- the probes can fire -----------------------------------------------------------------------


def _careless_page(request):
    """A page with two bugs the fuzzer is for: it trusts `isdigit()`, and writes before it
    refuses."""
    from django.contrib import messages
    from django.http import HttpResponse
    from django.shortcuts import redirect

    from taxonomy.models import Taxonomy

    if request.method == "POST":
        name = request.POST.get("name", "")
        if name.isdigit():
            name = f"{int(name):04d}"  # "²".isdigit() is true, and int("²") raises
        Taxonomy.objects.create(name=name[:200])
        if len(name) > 100:
            messages.error(request, "name: at most 100 characters")
        return redirect(request.path)
    return HttpResponse('<form method="post"><input name="name" value="Pilot"></form>')


urlpatterns = [path("careless/", _careless_page)]


def test_the_fuzzer_notices_a_500_and_a_partial_write(settings, lead):
    """A page that stores overlong text (a 500) and writes before refusing (a partial write)."""
    settings.ROOT_URLCONF = __name__
    stats = fuzz.Stats()
    prober = fuzz.Prober({"lead": Client(raise_request_exception=False)}, stats)
    prober.clients["lead"].force_login(lead)
    forms = fuzz.parse_page("/careless/", prober.get("lead", "/careless/").content.decode()).forms
    assert [f.action for f in forms] == ["/careless/"]

    fuzz.fuzz_form(prober, "lead", forms[0], [])

    problems = {(f.problem, f.probe) for f in prober.findings}
    assert ("5xx", "superscript digit") in problems
    assert ("refused but written", "overlong") in problems
    # A short look-alike is stored, and that is no finding: the page took it.
    assert not any(probe == "look-alike code" for _, probe in problems)


def test_a_nul_in_a_label_summary_is_refused_with_a_400_naming_it(
    client, project, issues_in_project, annotator
):
    """The case of the security issue: Ada's summary with a NUL was a 500."""
    item = ProjectIssue.objects.filter(project=project).order_by("position").first()
    Reservation.objects.create(
        project_issue=item, annotator=annotator, expires_at=timezone.now() + timedelta(minutes=5)
    )
    client.force_login(annotator)
    response = client.post(
        f"/projects/{project.pk}/label/{item.public_id}/",
        {"is_false_positive": "1", "false_positive_reason": "keyword_in_names", "summary": NUL},
    )
    assert response.status_code == 400
    assert "summary" in response.content.decode()
    assert not item.issue.annotations.exists()


NUL = "Hangs\x00 at step 0"
