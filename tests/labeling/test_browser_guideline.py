"""In Chromium: Lee (lead) writes the guideline with its preview; Ada (annotator) finds it above
her task and in the Keys dialog, open the first time a text is shown and closed after that
unless she opens it again; the taxonomy panel beside her form
follows the type and theme she picks by keyboard or mouse; at 360 px the panel fits the screen."""

import pytest
from django.urls import reverse

from annotator.models import Project
from tests.conftest import log_in
from tests.labeling.conftest import node

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

GUIDELINE = "# How we label\n\nPick the **deepest theme** that fits; when unsure, write a note.\n"
# A word longer than a phone's screen is wide: the panel must wrap it.
LONG_WORD = "model-runtime-" * 30
# Taxonomy text is data: the panel shows it as text, never as markup.
HOSTILE_DESCRIPTION = '<img src="x" onerror="window.pwned = 1"> <b>not bold</b>'


def _watch(page) -> list[str]:
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    return problems


def _open_task(page, live_server, project, item) -> None:
    page.goto(live_server.url + reverse("label_next", args=[project.pk]))
    page.wait_for_url(f"**/label/{item.public_id}/")
    page.locator("body[data-labeling-ready]").wait_for(state="attached")


def _describe(project: Project) -> dict[str, str]:
    """Descriptions on bug type C, its theme C.2 and C.2's sub-themes (the study has none)."""
    texts = {
        "C": "Bugs: the software misbehaves.",
        "C.1": HOSTILE_DESCRIPTION,
        "C.2": f"Theme two of bugs. {LONG_WORD}",
    }
    for code, text in texts.items():
        found = node(project, code)
        found.description = text
        found.save(update_fields=["description"])
    for sub in node(project, "C.2").children.all():
        texts[sub.code] = f"What {sub.name} covers."
        sub.description = texts[sub.code]
        sub.save(update_fields=["description"])
    return texts


def test_a_lead_writes_the_guideline_and_an_annotator_reads_it_above_the_task_and_in_help(
    browser, live_server, project, items, lead, annotator
):
    lead_context = browser.new_context()
    page = lead_context.new_page()
    page.set_default_timeout(10_000)
    problems = _watch(page)
    try:
        log_in(page, live_server, lead.username)
        page.goto(live_server.url + reverse("project_guideline", args=[project.pk]))
        page.locator("#guideline-empty").wait_for()
        page.locator("#id_guideline").fill(GUIDELINE)
        # The preview follows the typing (htmx), rendered by the server's sanitiser.
        page.locator("#guideline-preview strong", has_text="deepest theme").wait_for()
        page.click("#save-guideline")
        page.locator("#guideline-text h1", has_text="How we label").wait_for()
        assert Project.objects.get(pk=project.pk).guideline == GUIDELINE.rstrip()
        assert problems == []
    finally:
        lead_context.close()

    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(10_000)
    problems = _watch(page)
    try:
        log_in(page, live_server, annotator.username)
        _open_task(page, live_server, project, items[0])
        guideline = page.locator("#guideline")
        # Open the first time, at the top: above the issue.
        assert guideline.evaluate("d => d.open") is True
        text = guideline.locator(".guideline-text strong", has_text="deepest theme")
        assert text.is_visible()
        top, issue = guideline.bounding_box(), page.locator("#issue").bounding_box()
        assert top is not None and issue is not None and top["y"] + top["height"] <= issue["y"]

        # The Keys dialog holds it too.
        help_text = page.locator("#help-guideline strong", has_text="deepest theme")
        assert not help_text.is_visible()
        page.keyboard.press("?")
        help_text.wait_for(state="visible")
        page.keyboard.press("Escape")
        page.locator("#help").wait_for(state="hidden")

        # Read once, it is closed on the next page, without being closed by hand: the task
        # comes first.
        _open_task(page, live_server, project, items[0])
        assert guideline.evaluate("d => d.open") is False
        assert not text.is_visible()
        page.keyboard.press("?")
        help_text.wait_for(state="visible")  # still there to read
        page.keyboard.press("Escape")
        # Opened by hand, it stays open; closed again, it stays closed.
        page.click("#guideline > summary")
        page.wait_for_function("() => document.getElementById('guideline').open")
        _open_task(page, live_server, project, items[0])
        assert guideline.evaluate("d => d.open") is True
        page.click("#guideline > summary")
        page.wait_for_function("() => !document.getElementById('guideline').open")
        _open_task(page, live_server, project, items[0])
        assert guideline.evaluate("d => d.open") is False

        # A changed guideline opens again.
        changed = Project.objects.get(pk=project.pk)
        changed.guideline = GUIDELINE + "\nNew: read the comments too.\n"
        changed.save(update_fields=["guideline"])
        _open_task(page, live_server, project, items[0])
        assert guideline.evaluate("d => d.open") is True
        assert page.locator("#guideline", has_text="read the comments too").is_visible()
        # ... once: the new text is read, so it is closed again on the next page.
        _open_task(page, live_server, project, items[0])
        assert guideline.evaluate("d => d.open") is False
        assert problems == []
    finally:
        context.close()


def test_the_taxonomy_panel_follows_the_type_and_theme_by_keyboard_and_mouse(
    browser, live_server, project, items, annotator
):
    texts = _describe(project)
    theme = node(project, "C.2")
    subs = list(theme.children.order_by("position", "code"))
    with_details = next(s for s in subs if s.details)
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    page.set_default_timeout(10_000)
    problems = _watch(page)
    try:
        log_in(page, live_server, annotator.username)
        _open_task(page, live_server, project, items[0])
        panel = page.locator("#taxonomy-guide-body")
        assert page.locator("#taxonomy-guide").evaluate("d => d.open") is True
        assert "Choose a type" in panel.inner_text()

        page.keyboard.press("b")
        # The type's description (fetched with the details), and its themes to pick from.
        panel.get_by_text(texts["C"]).wait_for()
        assert panel.locator(".guide-themes > li").count() == node(project, "C").children.count()

        page.keyboard.press("2")
        panel.locator("#guide-theme").get_by_text("Theme two of bugs.").wait_for()
        for sub in subs:
            assert panel.get_by_text(texts[sub.code]).is_visible(), sub.code
        first_example = next(d for d in with_details.details if d.strip()).strip()
        item = panel.locator(f'li[data-code="{with_details.code}"]')
        assert first_example in item.inner_text()

        # Wide screen: the panel is a column beside the form, not below it.
        form = page.locator("#label-form").bounding_box()
        box = page.locator("#taxonomy-guide").bounding_box()
        assert form is not None and box is not None and box["x"] >= form["x"] + form["width"]

        # By mouse: another theme, then a sub-theme (marked as chosen).
        page.select_option("#id_theme", label=f"C.1 {node(project, 'C.1').name}")
        panel.locator('#guide-theme[data-code="C.1"]').wait_for()
        assert "Theme two of bugs." not in panel.inner_text()
        assert HOSTILE_DESCRIPTION in panel.inner_text()
        assert panel.locator("img, b").count() == 0
        assert page.evaluate("() => window.pwned") is None
        c1_subs = list(node(project, "C.1").children.order_by("position", "code"))
        chosen = c1_subs[0]
        page.select_option("#id_sub_theme", value=str(chosen.pk))
        panel.locator(f'li.chosen[data-code="{chosen.code}"]').wait_for()

        # Or from the panel itself: the form follows, and the keys still work after the click.
        other = c1_subs[1]
        panel.get_by_role("button", name=f"Choose {other.code} {other.name}", exact=True).click()
        panel.locator(f'li.chosen[data-code="{other.code}"]').wait_for()
        assert page.input_value("#id_sub_theme") == str(other.pk)
        assert panel.locator("li.chosen").count() == 1
        page.keyboard.press("q")
        assert page.input_value("#id_issue_type") == str(node(project, "A").pk)
        panel.get_by_text(node(project, "A").name).first.wait_for()

        # Collapsed, it stays collapsed.
        page.click("#taxonomy-guide > summary")
        page.wait_for_function("() => !document.getElementById('taxonomy-guide').open")
        _open_task(page, live_server, project, items[0])
        assert page.locator("#taxonomy-guide").evaluate("d => d.open") is False
        assert problems == []
    finally:
        context.close()


# Wider than its box, each of: the page, the form's column (which scrolls on its own), the panel.
OVERFLOW = """() => [document.documentElement, document.querySelector('.label-panel'),
                     document.getElementById('taxonomy-guide')]
  .filter(e => e.scrollWidth > e.clientWidth)
  .map(e => `${e.tagName}.${e.className}: ${e.scrollWidth} > ${e.clientWidth}`)"""


def test_the_panel_fits_a_360_pixel_screen(browser, live_server, project, items, annotator):
    _describe(project)
    project.guideline = f"Read the whole issue. {LONG_WORD}"
    project.save(update_fields=["guideline"])
    context = browser.new_context(viewport={"width": 360, "height": 740})
    page = context.new_page()
    page.set_default_timeout(10_000)
    try:
        log_in(page, live_server, annotator.username)
        _open_task(page, live_server, project, items[0])
        page.keyboard.press("b")
        page.keyboard.press("2")
        panel = page.locator("#taxonomy-guide")
        panel.get_by_text("Theme two of bugs.").wait_for()
        # Small screen: the panel comes below the form.
        form = page.locator("#label-form").bounding_box()
        box = panel.bounding_box()
        assert form is not None and box is not None and box["y"] >= form["y"] + form["height"]
        assert box["x"] >= 0 and box["x"] + box["width"] <= 360, box
        assert page.evaluate(OVERFLOW) == []

        # The probe fires: a description that cannot wrap is seen to overflow.
        page.evaluate(
            """() => {
              const probe = document.querySelector('#guide-theme .guide-description');
              probe.style.overflowWrap = 'normal';
              probe.style.wordBreak = 'normal';
              probe.style.whiteSpace = 'nowrap';
            }"""
        )
        assert page.evaluate(OVERFLOW) != []
    finally:
        context.close()
