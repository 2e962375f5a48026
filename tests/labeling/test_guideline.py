"""The project guideline: Lee (lead) writes it in Markdown on its page; Ada (annotator) reads it
there and above every issue she labels, rendered through the sanitiser; she cannot change it;
Rita (researcher) and outsiders do not get the page."""

import pytest
from django.urls import reverse

from annotator.models import Project
from labeling.guideline import MAX_GUIDELINE_CHARS
from tests.labeling.conftest import node

pytestmark = pytest.mark.one_path  # neither the queue nor a submission is under test

HOSTILE = (
    "# Rules of labeling\n\n"
    "Pick the **deepest** theme that fits.\n\n"
    "<script>alert('guideline-script')</script>\n\n"
    '<img src="https://example.org/x.png" onerror="alert(\'guideline-onerror\')">\n\n'
    "- one\n- two\n"
)


def _url(project: Project) -> str:
    return reverse("project_guideline", args=[project.pk])


def _stored(project: Project) -> str:
    return Project.objects.get(pk=project.pk).guideline


def test_a_lead_saves_the_guideline_and_an_annotator_reads_it_rendered_and_sanitised(
    client, project, lead, annotator
):
    # The probes can fire: the text the lead saves does hold a script and an event handler.
    assert "<script>" in HOSTILE and "onerror=" in HOSTILE
    client.force_login(lead)
    saved = client.post(_url(project), {"guideline": HOSTILE.replace("\n", "\r\n")})
    assert saved.status_code == 302 and saved.url == _url(project)
    # Stored with plain line ends, as written.
    assert _stored(project) == HOSTILE.rstrip()

    client.force_login(annotator)
    page = client.get(_url(project))
    assert page.status_code == 200
    body = page.content.decode()
    assert "<h1>Rules of labeling</h1>" in body
    assert "<strong>deepest</strong>" in body
    assert "<li>one</li>" in body
    assert "guideline-script" not in body
    assert "onerror" not in body
    # An annotator reads it, without the editing form.
    assert 'id="guideline-form"' not in body


def test_the_lead_sees_the_form_with_the_current_text_escaped(client, project, lead):
    project.guideline = HOSTILE
    project.save(update_fields=["guideline"])
    client.force_login(lead)
    body = client.get(_url(project)).content.decode()
    assert 'id="guideline-form"' in body
    # The raw text is in the textarea, escaped: never as markup.
    assert "&lt;script&gt;alert(" in body
    assert "<script>alert(" not in body


def test_an_annotator_cannot_change_the_guideline(client, project, annotator):
    project.guideline = "Lee's rules"
    project.save(update_fields=["guideline"])
    client.force_login(annotator)
    for data in ({"guideline": "Ada's rules"}, {"guideline": "Ada's rules", "preview": "1"}):
        response = client.post(_url(project), data)
        assert response.status_code == 404
    assert _stored(project) == "Lee's rules"


def test_researchers_and_outsiders_do_not_get_the_page(client, project, researcher, outsider):
    for user in (researcher, outsider):
        client.force_login(user)
        assert client.get(_url(project)).status_code == 404
        assert client.post(_url(project), {"guideline": "x"}).status_code == 404
    assert _stored(project) == ""


def test_the_project_page_links_the_guideline_for_those_who_label_or_lead(
    client, project, lead, annotator, researcher
):
    link = f'href="{_url(project)}"'
    for user, shown in ((lead, True), (annotator, True), (researcher, False)):
        client.force_login(user)
        body = client.get(reverse("project_detail", args=[project.pk])).content.decode()
        assert (link in body) is shown, user.username


def test_a_too_long_guideline_is_refused_with_an_error_naming_the_field(client, project, lead):
    client.force_login(lead)
    response = client.post(_url(project), {"guideline": "x" * (MAX_GUIDELINE_CHARS + 1)})
    assert response.status_code == 400
    body = response.content.decode()
    assert "Guideline: The guideline is too long: at most 20,000 characters (it has 20001)" in (
        body
    )
    assert 'aria-invalid="true"' in body
    assert _stored(project) == ""


def test_line_ends_sent_by_a_browser_count_once_against_the_limit(client, project, lead):
    # 10,000 lines of "a": 20,000 characters as written, 30,000 as a browser sends them.
    text = "a\n" * (MAX_GUIDELINE_CHARS // 2)
    client.force_login(lead)
    response = client.post(_url(project), {"guideline": text.replace("\n", "\r\n")})
    assert response.status_code == 302
    assert _stored(project) == text.rstrip()


def test_a_preview_renders_without_saving(client, project, lead):
    client.force_login(lead)
    response = client.post(_url(project), {"guideline": HOSTILE, "preview": "1"})
    assert response.status_code == 200
    # (The textarea above it holds the raw text, escaped.)
    preview = response.content.decode().split('id="guideline-preview-box"')[1]
    assert 'id="guideline-preview"' in preview and "<strong>deepest</strong>" in preview
    assert "onerror" not in preview and "guideline-script" not in preview
    assert _stored(project) == ""

    # As the lead types (htmx), only the preview comes back.
    fragment = client.post(_url(project), {"guideline": "*soft*"}, HTTP_HX_REQUEST="true")
    assert fragment.status_code == 200
    assert "<em>soft</em>" in fragment.content.decode()
    assert "<html" not in fragment.content.decode()
    too_long = client.post(
        _url(project), {"guideline": "x" * (MAX_GUIDELINE_CHARS + 1)}, HTTP_HX_REQUEST="true"
    )
    # (200: htmx swaps in only successful responses; the preview is where the error shows.)
    assert too_long.status_code == 200
    assert "Guideline: The guideline is too long" in too_long.content.decode()
    assert 'id="guideline-preview-error"' in too_long.content.decode()
    assert _stored(project) == ""


def test_the_labeling_page_shows_the_guideline_above_the_task_and_in_the_help(
    client, project, items, annotator
):
    client.force_login(annotator)
    url = client.get(reverse("label_next", args=[project.pk])).url
    body = client.get(url).content.decode()
    # No guideline yet: neither place shows one.
    assert 'id="guideline"' not in body and 'id="help-guideline"' not in body

    project.guideline = HOSTILE
    project.save(update_fields=["guideline"])
    body = client.get(url).content.decode()
    top, issue = body.index('id="guideline"'), body.index('id="issue"')
    assert top < issue
    help_at = body.index('id="help-guideline"')
    assert body.count("<strong>deepest</strong>") == 2
    assert body.index("<strong>deepest</strong>", help_at) > help_at
    assert "guideline-script" not in body and "onerror" not in body
    # The taxonomy panel is beside the form.
    assert 'id="taxonomy-guide"' in body


def test_the_taxonomy_json_carries_descriptions_and_details(client, project, annotator):
    theme = node(project, "C.2")
    theme.description = "Crashes and hangs of the model runtime"
    theme.save(update_fields=["description"])
    client.force_login(annotator)
    url = reverse("label_taxonomy", args=[project.pk, project.taxonomy_version_id])
    rows = {row["code"]: row for row in client.get(url).json()["nodes"]}
    assert rows["C.2"]["description"] == "Crashes and hangs of the model runtime"
    sub = next(n for n in theme.children.all() if n.details)
    assert rows[sub.code]["details"] == sub.details
