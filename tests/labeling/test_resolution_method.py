"""Scenario: how a final label was decided is what happened (issue #28).

Lena, the lead, settles a disagreement of Ada, Otto and Tia. The method has no default: she
says whether the label is "consensus after discussion" or her own "lead decision", and the
first is refused on an issue nobody discussed — by the service, so by the page and every other
path. The page shows each method with its key. Finals recorded before the rule keep their method,
and the release's datasheet says what each method means and how many "consensus" finals had no
discussion.
"""

from __future__ import annotations

import inspect
import re
from html.parser import HTMLParser
from types import SimpleNamespace

import pytest
from django.db import connection
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.operations.special import RunPython, RunSQL
from django.urls import reverse
from django.utils import translation

from dataset import datasheet
from dataset.exports import ExportContext
from dataset.releases import release_counts
from labeling import resolution, submission
from labeling.forms import LeadActionForm
from labeling.models import Annotation, DiscussionMessage, ProjectIssue, Resolution
from lib.refusal import Refusal
from taxonomy.models import TaxonomyNode
from tests.labeling.conftest import label_data, label_item

pytestmark = pytest.mark.django_db

CONSENSUS = "consensus after discussion"


@pytest.fixture
def disputed(project, items, annotator, other_annotator, third_annotator) -> ProjectIssue:
    """Ada says C.1, Otto and Tia C.2: a disagreement at the theme, waiting for Lena."""
    for user, code in [(annotator, "C.1"), (other_annotator, "C.2"), (third_annotator, "C.2")]:
        label_item(user, project, items[0], code)
    items[0].refresh_from_db()
    assert items[0].status == ProjectIssue.Status.DISAGREEMENT
    return items[0]


def _otto(item: ProjectIssue, other_annotator) -> Annotation:
    return Annotation.objects.get(issue=item.issue, annotator=other_annotator, is_current=True)


class _Inputs(HTMLParser):
    """The resolve page's method inputs (attributes), the text of each method's label, and
    the errors shown beside the method."""

    def __init__(self) -> None:
        super().__init__()
        self.methods: list[dict[str, str | None]] = []
        self.labels: list[str] = []
        self.kbds: list[list[str]] = []
        self._label = False
        self._kbd = False
        self.method_error: dict[str, str | None] | None = None
        self.sources: dict[str, bool] = {}

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "label" and "method" in (a.get("class") or "").split():
            self._label = True
            self.labels.append("")
            self.kbds.append([])
        elif tag == "input" and a.get("name") == "method":
            self.methods.append(a)
        elif tag == "input" and a.get("name") == "source":
            self.sources[a["value"] or ""] = "checked" in a
        elif tag == "kbd" and self._label:
            self._kbd = True
        elif tag == "ul" and a.get("id") == "method-error":
            self.method_error = a

    def handle_endtag(self, tag):
        if tag == "label":
            self._label = False
        elif tag == "kbd":
            self._kbd = False

    def handle_data(self, data):
        if self._label:
            self.labels[-1] += data
            if self._kbd:
                self.kbds[-1].append(data)


def _inputs(html: str) -> _Inputs:
    parser = _Inputs()
    parser.feed(html)
    return parser


# --- the service: one rule for every path ---------------------------------------------------


def test_consensus_without_a_discussion_is_refused_and_a_message_makes_it_possible(
    project, disputed, lead, other_annotator
):
    otto = _otto(disputed, other_annotator)
    with pytest.raises(Refusal) as refused:
        resolution.resolve(disputed, lead, otto, Resolution.Method.CONSENSUS)
    assert refused.value.field == "method"
    assert str(refused.value).startswith("method: ")
    assert f"“{CONSENSUS}” needs a discussion" in str(refused.value)
    disputed.refresh_from_db()
    assert disputed.status == ProjectIssue.Status.DISAGREEMENT
    assert not Resolution.objects.filter(issue=disputed.issue).exists()
    # The same through the lead's action, as the page and a script carry it out.
    action = resolution.LeadAction("resolve", method="consensus", annotation_id=otto.pk)
    with pytest.raises(Refusal, match="needs a discussion"):
        resolution.apply_lead_action(disputed, lead, action)
    assert resolution.method_refusal("consensus", disputed)
    assert resolution.method_refusal("lead_decision", disputed) == ""

    # Otto's change request is a message in the issue's discussion: now there was one.
    resolution.request_change(disputed, other_annotator, "C.2 is what the log shows.")
    assert resolution.method_refusal("consensus", disputed) == ""
    resolution.apply_lead_action(disputed, lead, action)
    final = Resolution.objects.get(issue=disputed.issue, is_current=True)
    assert (final.label_code, final.method, final.decided_by) == ("C.2", "consensus", lead)


def test_there_is_no_default_method_and_no_automatic_one(project, disputed, lead, other_annotator):
    otto = _otto(disputed, other_annotator)
    for method in ("", "unanimous", "majority", "imported"):
        with pytest.raises(Refusal) as refused:
            resolution.resolve(disputed, lead, otto, method)
        assert refused.value.field == "method", method
    form = LeadActionForm({"action": "resolve", "source": str(otto.pk)}, project=project)
    assert not form.is_valid()
    assert form.errors["method"] == ["choose how the final label was decided; there is no default"]
    # The probe: with a method the same form is valid.
    chosen = {"action": "resolve", "source": str(otto.pk), "method": "lead_decision"}
    assert LeadActionForm(chosen, project=project).is_valid()
    assert not Resolution.objects.filter(issue=disputed.issue).exists()


# --- the page -------------------------------------------------------------------------------


def test_the_page_offers_no_default_and_refuses_a_form_without_a_method(
    client, project, disputed, lead, other_annotator
):
    client.force_login(lead)
    url = reverse("resolve_issue", args=[project.pk, disputed.pk])
    page = _inputs(client.get(url).content.decode())
    assert [m["value"] for m in page.methods] == ["consensus", "lead_decision"]
    assert not any("checked" in m for m in page.methods)
    assert all("required" in m for m in page.methods)
    assert page.method_error is not None and "hidden" in page.method_error

    otto = _otto(disputed, other_annotator)
    posted = {"action": "resolve", "source": str(otto.pk), "note": "Otto's reading holds"}
    response = client.post(url, posted)
    assert response.status_code == 400
    html = response.content.decode()
    assert "Not saved: method: choose how the final label was decided; there is no default" in html
    refused = _inputs(html)
    # The error stands beside the method, and what Lena chose is still chosen.
    assert refused.method_error is not None and "hidden" not in refused.method_error
    assert "there is no default" in html.split('id="method-error"', 1)[1].split("</ul>", 1)[0]
    assert refused.sources == {
        str(a.pk): a == otto for a in resolution.current_annotations(disputed)
    } | {"new": False}
    assert "Otto&#x27;s reading holds</textarea>" in html
    assert not Resolution.objects.filter(issue=disputed.issue).exists()

    # The probe: with a method the same post records the final label.
    response = client.post(url, posted | {"method": "lead_decision"})
    assert response.status_code == 302
    final = Resolution.objects.get(issue=disputed.issue, is_current=True)
    assert (final.label_code, final.method, final.note) == (
        "C.2",
        "lead_decision",
        "Otto's reading holds",
    )


def test_the_page_refuses_consensus_until_someone_writes_in_the_discussion(
    client, project, disputed, lead
):
    client.force_login(lead)
    url = reverse("resolve_issue", args=[project.pk, disputed.pk])
    page = _inputs(client.get(url).content.decode())
    consensus, decision = page.methods
    assert "disabled" in consensus and "disabled" not in decision
    new_label = {"action": "resolve", "source": "new", "method": "consensus"}
    new_label |= label_data(project, "C.2")
    response = client.post(url, new_label)  # past the disabled option, as a script could
    assert response.status_code == 400
    html = response.content.decode()
    assert f"Not saved: method: “{CONSENSUS}” needs a discussion" in html
    assert "needs a discussion" in html.split('id="method-error"', 1)[1].split("</ul>", 1)[0]
    assert _inputs(html).sources["new"]  # the new label is kept
    assert not Resolution.objects.filter(issue=disputed.issue).exists()

    assert client.post(url, {"action": "message", "body": "C.2, agreed."}).status_code == 302
    consensus, _decision = _inputs(client.get(url).content.decode()).methods
    assert "disabled" not in consensus
    assert client.post(url, new_label).status_code == 302
    final = Resolution.objects.get(issue=disputed.issue, is_current=True)
    assert (final.label_code, final.method) == ("C.2", "consensus")


def test_each_method_has_its_key_on_the_page_in_english_and_in_chinese(
    client, project, disputed, lead
):
    client.force_login(lead)
    url = reverse("resolve_issue", args=[project.pk, disputed.pk])
    html = client.get(url).content.decode()
    page = _inputs(html)
    keys = [m["data-key"] for m in page.methods]
    # One key each, shown in the method's own label.
    assert len(set(keys)) == len(keys) == len(resolution.LEAD_METHODS)
    assert page.kbds == [[k] for k in keys]
    assert CONSENSUS in page.labels[0] and "lead decision" in page.labels[1]
    # No key another part of the loop uses: the type keys (a type's first letter), n, w, s,
    # p, /, ?, the digits.
    types = TaxonomyNode.objects.filter(version=project.taxonomy_version, level=1)
    taken = {t.name[0].lower() for t in types} | set("nwsp/?0123456789")
    assert not set(keys) & taken, (keys, taken)
    # The Keys dialog lists them.
    dialog = html.split('id="help"', 1)[1]
    for key, label in zip(keys, (CONSENSUS, "lead decision"), strict=True):
        assert f"<kbd>{key}</kbd></dt><dd>method: {label}</dd>" in dialog

    chinese = client.get(url, HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    with translation.override("zh-hans"):
        names = [translation.gettext(CONSENSUS), translation.gettext("lead decision")]
    assert names[0] != CONSENSUS and names[1] != "lead decision"
    labels = _inputs(chinese).labels
    assert names[0] in labels[0] and names[1] in labels[1]
    assert CONSENSUS not in chinese


# --- finals made before the rule --------------------------------------------------------------


def test_finals_recorded_before_the_rule_keep_their_method_and_the_datasheet_counts_them(
    client, project, items, disputed, lead, annotator, other_annotator, third_annotator
):
    """A "consensus" final recorded with an empty discussion (as the old default did) is not
    rewritten: it reads back, shows and exports as consensus; the datasheet names the method,
    what it means, and how many consensus finals had no message before their decision."""
    for user, code in [(annotator, "A.1"), (other_annotator, "B.1"), (third_annotator, "B.1")]:
        label_item(user, project, items[1], code)
    talked = ProjectIssue.objects.get(pk=items[1].pk)
    for item, code in [(disputed, "C.2"), (talked, "B.1")]:
        resolution.add_message(item, lead, f"{code}, agreed.")
        label = submission.parse_label(project, label_data(project, code))
        resolution.resolve(item, lead, label, Resolution.Method.CONSENSUS)
    # What a final of the old default looks like: consensus, and no message at all.
    DiscussionMessage.objects.filter(project_issue=disputed).delete()
    old = Resolution.objects.get(issue=disputed.issue, is_current=True)
    assert old.method == "consensus"

    client.force_login(lead)
    html = client.get(reverse("resolve_issue", args=[project.pk, disputed.pk])).content.decode()
    final_line = html.split('id="final-label"', 1)[1].split("</p>", 1)[0]
    assert CONSENSUS in final_line

    ctx = ExportContext(project)
    counts = release_counts(ctx)
    assert counts["resolution_methods"] == {"consensus": 2}
    assert counts["consensus_without_discussion"] == 1
    with translation.override("en"):
        lines = datasheet.annotation_process(
            SimpleNamespace(project=project, counts=counts, context=ctx)
        )
    text = "\n".join(lines)
    assert f"`consensus` ({CONSENSUS}): 2; a lead recorded the label a discussion" in text
    assert re.search(r"Of the 2 `consensus` finals, 1 have? no message", text), text
    # Reopened and recorded again, it takes the method Lena gives now; the old one stays.
    resolution.reopen(disputed, lead, "no discussion took place")
    label = submission.parse_label(project, label_data(project, "C.2"))
    resolution.resolve(disputed, lead, label, Resolution.Method.LEAD_DECISION)
    assert [r.method for r in resolution.resolution_history(disputed)] == [
        "lead_decision",
        "consensus",
    ]
    assert release_counts(ExportContext(project))["consensus_without_discussion"] == 0


def test_no_migration_rewrites_stored_methods():
    """The data migrations of every app: none reads or writes the resolutions, so a stored
    method stays what was recorded."""
    loader = MigrationLoader(connection, ignore_no_migrations=True)
    table = Resolution._meta.db_table
    checked = 0
    for migration in loader.disk_migrations.values():
        for operation in migration.operations:
            if isinstance(operation, RunPython):
                text = inspect.getsource(operation.code)
            elif isinstance(operation, RunSQL):
                text = str(operation.sql)
            else:
                continue
            checked += 1
            assert "Resolution" not in text and table not in text, migration
    assert checked > 0  # the probe: there are data migrations to read
