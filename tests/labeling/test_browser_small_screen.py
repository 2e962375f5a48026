"""In Chromium at 360 px wide (a small phone): the project page, the labeling page and the
disagreement queue fit the screen, with no horizontal scroll, and "Log out" is reachable."""

import pytest
from django.urls import reverse

from tests.conftest import log_in
from tests.labeling.conftest import label_item

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

OVERFLOW = """() => {
  const wide = [...document.querySelectorAll('body *')].filter(e => {
    const r = e.getBoundingClientRect();
    return r.width > 0 && r.right > document.documentElement.clientWidth + 1;
  }).slice(0, 3).map(e => e.tagName + (e.id ? '#' + e.id : '') + '.' + e.className);
  return {scroll: document.documentElement.scrollWidth,
          client: document.documentElement.clientWidth, wide};
}"""


def _fits(page) -> dict:
    found = page.evaluate(OVERFLOW)
    found["fits"] = found["scroll"] <= found["client"]
    return found


def test_pages_fit_a_360_pixel_screen(
    browser, live_server, project, items, lead, annotator, other_annotator, third_annotator
):
    for user, code in [(annotator, "C.1"), (other_annotator, "C.2"), (third_annotator, "B.1")]:
        label_item(user, project, items[0], code)
    context = browser.new_context(viewport={"width": 360, "height": 740})
    page = context.new_page()
    page.set_default_timeout(10_000)
    try:
        log_in(page, live_server, lead.username)
        # The probe fires: a page made wider than the screen is seen to scroll sideways.
        page.goto(live_server.url + reverse("project_detail", args=[project.pk]))
        page.evaluate(
            """() => {
              const probe = document.createElement('div');
              probe.id = 'probe';
              probe.style.width = '900px';
              probe.style.height = '10px';
              document.body.append(probe);
            }"""
        )
        probe = _fits(page)
        assert not probe["fits"], probe

        for url in (
            reverse("project_detail", args=[project.pk]),
            reverse("label_next", args=[project.pk]),
            reverse("disagreement_queue", args=[project.pk]),
            reverse("resolve_issue", args=[project.pk, items[0].pk]),
        ):
            page.goto(live_server.url + url)
            found = _fits(page)
            assert found["fits"], (url, found)
            logout = page.get_by_role("button", name="Log out")
            box = logout.bounding_box()
            assert box is not None and box["x"] + box["width"] <= 360, (url, box)
    finally:
        context.close()


SAVE_BOX = """() => {
  const r = document.getElementById('submit-label').getBoundingClientRect();
  return {top: r.top, bottom: r.bottom, height: window.innerHeight};
}"""


def test_on_a_phone_the_issue_comes_before_the_form_and_save_stays_in_reach(
    browser, live_server, project, items, annotator
):
    """At 360 px Ada reads the issue before she chooses: the guideline and the issue come
    first, the form below them; once she is in the form, *Save & next* stays on the screen
    (sticky at its bottom). At 1280 px the form is beside the issue, as before."""
    project.guideline = "# Guideline\n\n" + "Read the whole issue before labeling.\n\n" * 40
    project.save(update_fields=["guideline"])
    issue = items[0].issue
    issue.body = "The loss spikes after resume.\n\n" * 60  # longer than a phone's screen
    issue.save(update_fields=["body"])
    for width, one_column in ((1280, False), (360, True)):
        context = browser.new_context(viewport={"width": width, "height": 640})
        page = context.new_page()
        page.set_default_timeout(10_000)
        try:
            log_in(page, live_server, annotator.username)
            page.goto(live_server.url + reverse("label_next", args=[project.pk]))
            page.locator("body[data-labeling-ready]").wait_for(state="attached")
            boxes = {
                name: page.locator(selector).bounding_box()
                for name, selector in (
                    ("form", "#label-form"),
                    ("guideline", "#guideline"),
                    ("issue", "#issue-body"),
                )
            }
            assert all(boxes.values()), boxes
            form, guideline, issue_box = boxes["form"], boxes["guideline"], boxes["issue"]
            assert guideline["y"] < issue_box["y"], boxes
            if not one_column:
                assert form["x"] > issue_box["x"] + issue_box["width"] - 1, boxes  # beside it
                continue
            # The issue's text is above the form.
            assert issue_box["y"] + issue_box["height"] <= form["y"], boxes
            assert _fits(page)["fits"]
            # Ada scrolls to where the form begins: Save is on the screen.
            page.evaluate("document.getElementById('label-form').scrollIntoView({block: 'start'})")
            # The probe: without the sticky rule Save is below the screen there.
            page.evaluate(
                "document.querySelector('#label-form .form-actions').style.position = 'static'"
            )
            unstuck = page.evaluate(SAVE_BOX)
            assert unstuck["bottom"] > unstuck["height"], unstuck
            page.evaluate("document.querySelector('#label-form .form-actions').style.position = ''")
            save = page.evaluate(SAVE_BOX)
            assert save["top"] >= 0 and save["bottom"] <= save["height"], save
            # And she saves from there with a click.
            page.keyboard.press("q")
            page.keyboard.press("1")
            with page.expect_navigation():
                page.locator("#submit-label").click()
            assert page.url != live_server.url + reverse(
                "label_issue", args=[project.pk, items[0].public_id]
            )
        finally:
            context.close()
