"""In Chromium: a volunteer labels by keyboard, a lead resolves a disagreement, and hostile
issue text stays inert."""

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from labeling.models import Annotation, ProjectIssue, Resolution
from tests.conftest import log_in
from tests.labeling.conftest import label_item

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _watch(page) -> list[str]:
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.on("dialog", lambda d: (problems.append(f"dialog: {d.message}"), d.dismiss()))
    return problems


def test_volunteer_labels_three_issues_by_keyboard_alone(
    page, live_server, project, items, annotator
):
    problems = _watch(page)
    traffic: list[str] = []
    page.on("request", lambda r: traffic.append(f"{r.method} {r.url}"))
    page.on("response", lambda r: traffic.append(f"-> {r.status} {r.url}"))
    page.on("requestfailed", lambda r: traffic.append(f"failed {r.url} {r.failure}"))
    log_in(page, live_server, annotator.username)
    page.goto(live_server.url + reverse("label_next", args=[project.pk]))

    def wait_for_item(n: int) -> None:
        try:
            page.wait_for_url(f"**/label/{items[n].public_id}/")
        except Exception as exc:
            # Say where the page is and what it shows instead of a bare timeout.
            errors = page.locator(".errorlist, .error, .messages").all_inner_texts()
            raise AssertionError(
                f"expected item {n} ({items[n].pk}), page is at {page.url}; "
                f"focus on {page.evaluate('document.activeElement.outerHTML.slice(0, 120)')}; "
                f"errors: {errors}; console: {problems}; last responses: {traffic[-6:]}"
            ) from exc
        # Keys pressed before labeling.js is listening would be lost.
        page.locator("body[data-labeling-ready]").wait_for(state="attached")

    wait_for_item(0)
    page.keyboard.press("?")
    assert page.locator("#help").is_visible()
    page.keyboard.press("Escape")
    page.locator("#help").wait_for(state="hidden", timeout=3000)
    page.keyboard.press("b")
    page.keyboard.press("3")
    assert page.locator("#id_theme option:checked").inner_text().startswith("C.3 ")
    page.keyboard.press("Enter")

    wait_for_item(1)
    page.keyboard.press("q")
    page.keyboard.press("1")
    page.keyboard.press("w")
    page.keyboard.type("How to shard a 70B checkpoint")
    page.keyboard.press("Escape")
    page.keyboard.press("Enter")

    wait_for_item(2)
    page.keyboard.press("s")  # skip: items[2] goes back, items[3] comes
    wait_for_item(3)
    page.keyboard.press("n")
    page.keyboard.press("2")
    page.keyboard.press("Enter")
    wait_for_item(4)

    labels = {
        a.issue_id: a for a in Annotation.objects.filter(annotator=annotator, is_current=True)
    }
    assert labels[items[0].issue_id].label_code == "C.3"
    assert labels[items[1].issue_id].label_code == "A.1"
    assert labels[items[1].issue_id].summary == "How to shard a 70B checkpoint"
    fp = labels[items[3].issue_id]
    assert (fp.is_false_positive, fp.false_positive_reason) == (True, "keyword_in_names")
    assert items[2].issue_id not in labels
    assert problems == []


def test_lead_resolves_a_disagreement(
    page, live_server, project, items, lead, annotator, other_annotator, third_annotator
):
    for user, code in [(annotator, "C.1"), (other_annotator, "C.2"), (third_annotator, "C.2")]:
        label_item(user, project, items[0], code, summary=f"{user.username} says {code}")
    problems = _watch(page)
    log_in(page, live_server, lead.username)
    page.goto(live_server.url + reverse("project_detail", args=[project.pk]))
    page.click("text=Disagreements")
    page.locator("#queue-table").get_by_text("Resolve").click()
    # The click starts a navigation: wait for the resolve page, not the queue still on screen.
    expect(page.locator(".annotation-card")).to_have_count(3)
    assert "otto-annotator says C.2" in page.locator("#annotations").inner_text()
    page.fill("#id_message", "Two of three see a theme C.2 symptom.")
    page.click("#post-message")
    page.locator("#discussion").get_by_text("Two of three").wait_for()
    page.locator("#resolve-form").get_by_label("as otto-annotator", exact=False).check()
    page.locator("#resolve-form").get_by_label("consensus after discussion").check()
    page.click("#resolve")
    page.locator("#final-label").wait_for()
    assert "consensus" in page.locator("#final-label").inner_text()
    final = Resolution.objects.get(is_current=True)
    assert (final.label_code, final.method, final.decided_by_id) == ("C.2", "consensus", lead.pk)
    assert ProjectIssue.objects.get(pk=items[0].pk).status == "final"
    assert problems == []


HOSTILE = """Before the payloads.

<script>window.__pwned = "script"</script>

<img src="x" onerror="window.__pwned = 'onerror'">

[innocent link](javascript:window.__pwned='js-link') <a href="javascript:window.__pwned='a'">a</a>

<svg onload="window.__pwned = 'svg'"><script>window.__pwned = 'svg-script'</script></svg>

<iframe src="javascript:parent.__pwned='iframe'"></iframe>

<details open ontoggle="window.__pwned = 'ontoggle'"><summary>log</summary>details</details>

```python
print("the code block survives")
```
"""


def test_hostile_issue_text_executes_nothing(page, live_server, project, items, annotator):
    issue = items[0].issue
    issue.body = HOSTILE
    issue.save()
    issue.comments.create(forge_id="c1", body="<img src=y onerror=\"window.__pwned='comment'\">")
    problems = _watch(page)
    log_in(page, live_server, annotator.username)
    page.goto(live_server.url + reverse("label_next", args=[project.pk]))
    page.locator("#issue-body pre code").wait_for()
    assert "the code block survives" in page.locator("#issue-body pre code").inner_text()
    # Click everything a volunteer might click in the issue text.
    for link in page.locator("#issue-body a").all():
        link.click(modifiers=["Alt"], no_wait_after=True)
    page.locator("#issue-body summary").click()
    page.wait_for_timeout(300)
    assert page.evaluate("window.__pwned") is None
    assert page.locator("#issue-body script, #issue-body svg, #issue-body iframe").count() == 0
    assert [p for p in problems if "Content Security Policy" not in p] == []
