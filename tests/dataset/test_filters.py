"""The browsable API's filter forms list only what the caller may see, bounded, with no query
per row (issue #20, F1: the annotations page listed every issue in the database, a private
repository of another project included, with a query per option).

Every API route of the URL conf that answers GET with at most a project id is requested as a
browser does (Accept: text/html) by each persona, before and after the data grows: the number
of queries must not change, no page may name the other project's repository or issues, and no
`<select>` may list more than `MAX_SELECT_CHOICES` options. New routes are covered unedited.
"""

from __future__ import annotations

import re

import django_filters
import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from rest_framework.mixins import ListModelMixin
from rest_framework.views import APIView

from annotator.models import Membership, Project, Role
from dataset.filters import MAX_SELECT_CHOICES, ScopedFilterSet
from dataset.models import ExportJob, Release
from ingest.models import Issue, Repository
from labeling.models import Annotation, ProjectIssue, Resolution
from taxonomy.models import TaxonomyNode
from tests.conftest import make_issue, make_user

pytestmark = pytest.mark.django_db

PERSONAS = ["lead", "annotator", "researcher", "outsider"]
SECRETS = ("hidden-corp", "secret-engine", "CONFIDENTIAL")  # the other project's names


def api_routes() -> dict[str, tuple[type, bool]]:
    """Name -> (view class, takes a project id) of every DRF route that takes no argument but
    `project_id`."""
    found: dict[str, tuple[type, bool]] = {}

    def walk(patterns) -> None:
        for p in patterns:
            if isinstance(p, URLResolver):
                walk(p.url_patterns)
                continue
            assert isinstance(p, URLPattern)
            view_class = getattr(p.callback, "view_class", None) or getattr(p.callback, "cls", None)
            if view_class is None or not issubclass(view_class, APIView) or not p.name:
                continue
            arguments = set(p.pattern.converters)
            if arguments <= {"project_id"}:
                found[p.name] = (view_class, bool(arguments))

    walk(get_resolver().url_patterns)
    return found


def test_the_sweep_finds_every_list_endpoint():
    lists = {name for name, (view, _) in api_routes().items() if issubclass(view, ListModelMixin)}
    expected = {"api_projects", "api_issues", "api_annotations", "api_resolutions"}
    assert expected | {"api_exports", "api_releases"} <= lists


class World:
    """Project 1 (the personas') and another project with a private repository, both labeled;
    `grow()` adds labeled issues, exports and releases to both."""

    def __init__(self, project: Project, lead, annotator, other_annotator) -> None:
        self.project, self.lead = project, lead
        self.annotators = [annotator, other_annotator]
        self.nodes = {
            n.code: n for n in TaxonomyNode.objects.filter(version=project.taxonomy_version)
        }
        self.mine = Repository.objects.create(
            forge="github", api_url="https://api.github.com", owner="acme", name="engine"
        )
        self.other = Project.objects.create(
            name="Partner study", taxonomy_version=project.taxonomy_version
        )
        stranger = make_user("stella-stranger")
        Membership.objects.create(project=self.other, user=stranger, role=Role.LEAD)
        self.other_annotators = [make_user("sam-secret"), make_user("sue-secret")]
        for user in self.other_annotators:
            Membership.objects.create(project=self.other, user=user, role=Role.ANNOTATOR)
        self.hidden = Repository.objects.create(
            forge="github",
            api_url="https://api.github.com",
            owner="hidden-corp",
            name="secret-engine",
        )
        self.count = 0
        self.grow(3)

    def grow(self, n: int) -> None:
        for _ in range(n):
            self.count += 1
            i = self.count
            self._labeled(self.project, self.mine, i, f"Engine issue {i}", self.annotators)
            self._labeled(
                self.other, self.hidden, i, f"CONFIDENTIAL issue {i}", self.other_annotators
            )
            for project, user in [(self.project, self.lead), (self.other, None)]:
                ExportJob.objects.create(project=project, requested_by=user)
                Release.objects.create(project=project, version=f"1.{i}.0", requested_by=user)

    def _labeled(self, project, repository, i, title, annotators) -> None:
        issue = make_issue(repository, i, title=title)
        final = i % 2 == 1  # every other issue final, the rest open with one label
        ProjectIssue.objects.create(
            project=project, issue=issue, position=i, status="final" if final else "open"
        )
        theme = self.nodes["C.5"]
        for user in annotators if final else annotators[:1]:
            Annotation.objects.create(
                project=project,
                issue=issue,
                annotator=user,
                theme=theme,
                issue_type=theme.parent,
            )
        if final:
            Resolution.objects.create(
                project=project,
                issue=issue,
                method="unanimous",
                theme=theme,
                issue_type=theme.parent,
                decided_by=self.lead,
            )

    def other_issue_ids(self) -> set[str]:
        hidden = Issue.objects.filter(repository=self.hidden)
        return {str(pk) for pk in hidden.values_list("pk", flat=True)}


@pytest.fixture
def world(project, lead, annotator, other_annotator, settings, tmp_path):
    settings.EXPORT_ROOT = tmp_path / "exports"
    return World(project, lead, annotator, other_annotator)


def browse(client, url: str) -> tuple[int, str, int]:
    """Status, HTML and query count of a page of the browsable API."""
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url, HTTP_ACCEPT="text/html")
    return response.status_code, response.content.decode(errors="replace"), len(queries)


@pytest.mark.parametrize("persona", PERSONAS)
def test_browsable_api_pages_list_nothing_of_another_project_and_no_row_costs_a_query(
    request, client, world, persona
):
    user = request.getfixturevalue(persona)
    client.force_login(user)
    routes = {
        name: reverse(name, args=[world.project.pk] if takes_project else [])
        for name, (_, takes_project) in api_routes().items()
    }
    assert len(routes) >= 10

    def sweep() -> dict[str, tuple[int, str, int]]:
        return {name: browse(client, url) for name, url in routes.items()}

    # Each count after a warm-up sweep: first-request caches (the agreement report, cached
    # until a label changes; the taxonomy) are not per row.
    sweep()
    before = sweep()
    world.grow(6)  # three times the rows, in both projects
    sweep()
    after = sweep()

    other_ids = world.other_issue_ids()
    for name, (status, html, queries) in after.items():
        assert status < 500, (name, status)
        for secret in SECRETS:
            assert secret not in html, (persona, name, secret)
        for select in re.findall(r"<select\b.*?</select>", html, flags=re.S):
            options = re.findall(r'<option value="([^"]*)"', select)
            assert len(options) <= MAX_SELECT_CHOICES, (persona, name, len(options))
            if re.search(r'name="issue"', select):
                assert not other_ids & set(options), (persona, name)
        assert queries == before[name][2], (persona, name, before[name][2], queries)
    # The probes see something: the project's own issues reach the lead and researcher.
    if persona in ("lead", "researcher"):
        assert after["api_issues"][0] == 200 and "Engine issue 9" in after["api_issues"][1]
        assert 'name="issue"' in after["api_annotations"][1]  # the id input, not a select
        assert '<select name="issue"' not in after["api_annotations"][1]
    if persona == "outsider":
        assert after["api_issues"][0] == 404


def test_the_issue_filter_takes_an_id_and_a_bad_one_is_a_400_naming_it(client, world, lead):
    client.force_login(lead)
    url = reverse("api_annotations", args=[world.project.pk])
    mine = Issue.objects.filter(repository=world.mine).order_by("pk").first()
    assert mine is not None
    data = client.get(url, {"issue": mine.pk}).json()
    assert data["count"] == 2 and {a["issue"] for a in data["results"]} == {mine.pk}
    hidden = world.other_issue_ids().pop()
    assert client.get(url, {"issue": hidden}).json()["count"] == 0
    for bad in ["abc", "1.5", "-3", "0", str(2**63)]:
        response = client.get(url, {"issue": bad})
        assert response.status_code == 400, bad
        assert "issue" in response.json(), bad


# -- the guard for filters to come ------------------------------------------------------------


def test_a_model_choice_filter_over_a_fixed_queryset_is_refused(world):
    class EveryIssue(ScopedFilterSet):
        issue = django_filters.ModelChoiceFilter(queryset=Issue.objects.all())

        class Meta:
            model = Annotation
            fields = ["issue"]

    with pytest.raises(ImproperlyConfigured, match=r"EveryIssue\.issue: .* callable"):
        EveryIssue(data={}, queryset=Annotation.objects.all()).form  # noqa: B018


def test_a_scoped_choice_filter_is_a_select_when_short_and_a_text_input_when_long(rf, world):
    def project_issues(request):
        return Issue.objects.filter(project_issues__project=world.project).order_by("pk")

    class ByIssue(ScopedFilterSet):
        issue = django_filters.ModelChoiceFilter(queryset=project_issues)

        class Meta:
            model = Annotation
            fields = ["issue"]

    request = rf.get("/")
    short = str(ByIssue(request=request, queryset=Annotation.objects.all()).form["issue"])
    assert short.startswith("<select") and "CONFIDENTIAL" not in short
    issues = Issue.objects.bulk_create(
        Issue(repository=world.mine, number=str(n), title="more", url=f"{world.mine.web_url}/{n}")
        for n in range(1000, 1000 + MAX_SELECT_CHOICES)
    )
    ProjectIssue.objects.bulk_create(
        ProjectIssue(project=world.project, issue=issue, position=1000 + i)
        for i, issue in enumerate(issues)
    )
    long = ByIssue(request=request, queryset=Annotation.objects.all()).form
    assert str(long["issue"]).startswith('<input type="text"')
    # Still checked against the scoped queryset: the other project's issue is not a choice.
    hidden = world.other_issue_ids().pop()
    bound = ByIssue(data={"issue": hidden}, request=request, queryset=Annotation.objects.all())
    assert not bound.is_valid() and "issue" in bound.errors
