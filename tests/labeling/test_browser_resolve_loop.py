"""In Chromium: a lead works through three disagreements by keyboard alone with "Record and
next", in the queue's order and filters, watching the count of what is left, and says with a
key how each final label was decided (no default; consensus only after a discussion)."""

import pytest
from django.urls import reverse

from labeling import resolution
from labeling.models import ProjectIssue, Resolution
from tests.conftest import log_in
from tests.labeling.conftest import label_item

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_lead_resolves_three_disagreements_by_keyboard_and_says_how_each_was_decided(
    page, live_server, project, items, lead, annotator, other_annotator, third_annotator
):
    """Lena works through three disagreements with the keys alone. The method has no default:
    Enter before she says how the label was decided records nothing and says why. Only the
    second issue was discussed, so only there does `c` choose "consensus after discussion";
    elsewhere `c` chooses nothing and `d` (lead decision) is what happened (issue #28: `1` +
    `Enter` had recorded 14 "consensus" finals with an empty discussion)."""
    disputed = items[:3]
    for item in disputed:
        for user, code in [(annotator, "C.1"), (other_annotator, "C.2"), (third_annotator, "B.1")]:
            label_item(user, project, item, code)
    resolution.add_message(disputed[1], lead, "C.10: we agreed on the call.")
    assert ProjectIssue.objects.filter(project=project, status="disagreement").count() == 3
    problems: list[str] = []
    page.on("pageerror", lambda e: problems.append(str(e)))
    log_in(page, live_server, lead.username)
    queue = live_server.url + reverse("disagreement_queue", args=[project.pk])
    page.goto(queue + "?sort=position")
    page.locator("#queue-table").get_by_text("Resolve").first.click()

    seen = []
    plan = [(3, "b2", "C.2", "d"), (2, "b10", "C.10", "c"), (1, "q1", "A.1", "d")]
    for left, code_keys, theme, method_key in plan:
        page.locator("body[data-labeling-ready]").wait_for(state="attached")
        # The issue comes first, then the annotations; the count says what is left.
        order = page.evaluate(
            "() => [...document.querySelectorAll('#issue, #annotations')].map(e => e.id)"
        )
        assert order == ["issue", "annotations"]
        assert page.locator("#left-count").inner_text().startswith(f"{left} disagreement")
        assert "sort=position" in page.url  # the queue's filters ride along
        seen.append(page.url.split("?")[0])
        # Each method shows its key; none is chosen when the page opens.
        assert page.locator("#method kbd").all_inner_texts() == ["c", "d"]
        assert page.locator("#method input:checked").count() == 0
        for key in code_keys:
            page.keyboard.press(key)
        assert page.locator("#id_theme option:checked").inner_text().startswith(f"{theme} ")
        assert page.locator("#source-new").is_checked()
        consensus = page.locator("#method input[value=consensus]")
        if left == 3:
            # Enter without a method: refused on the page, nothing recorded, the label kept.
            assert page.locator("#method-error").is_hidden()  # the probe can fire:
            page.keyboard.press("Enter")
            page.locator("#method-error").wait_for(state="visible")
            assert "no default" in page.locator("#method-error").inner_text()
            assert page.url.split("?")[0] == seen[-1]
            assert not Resolution.objects.filter(project=project).exists()
            # No discussion here: `c` cannot claim one, and the reason is beside the option.
            page.locator("#resolve-form").focus()  # the browser's bubble took the focus
            page.keyboard.press("c")
            assert consensus.is_disabled() and not consensus.is_checked()
            refusal = page.locator("#method-consensus-refusal")
            assert "needs a discussion" in refusal.inner_text()
            assert "flash" in (refusal.get_attribute("class") or "")
        page.keyboard.press(method_key)
        assert page.locator(f"#method input[data-key='{method_key}']").is_checked()
        assert page.locator("#method-error").is_hidden()
        assert page.locator("#id_theme option:checked").inner_text().startswith(f"{theme} ")
        page.keyboard.press("Enter")
        if left > 1:
            page.wait_for_url(lambda url, before=seen[-1]: url.split("?")[0] != before)

    # Nothing left: back on the queue, with the filters, and a word about it.
    page.wait_for_url("**/disagreements/**")
    assert "No disagreement left" in page.content()
    finals = {
        r.issue_id: (r.label_code, r.method, r.decided_by_id)
        for r in Resolution.objects.filter(project=project, is_current=True)
    }
    assert finals == {
        disputed[0].issue_id: ("C.2", "lead_decision", lead.pk),
        disputed[1].issue_id: ("C.10", "consensus", lead.pk),
        disputed[2].issue_id: ("A.1", "lead_decision", lead.pk),
    }
    # In the queue's order (sort=position): the three pages were the three issues in turn.
    assert [u.rstrip("/").rsplit("/", 1)[-1] for u in seen] == [str(i.pk) for i in disputed]
    assert problems == []


def test_lead_adopts_an_annotation_by_its_number_and_records_it(
    page, live_server, project, items, lead, annotator, other_annotator, third_annotator
):
    item = items[0]
    for user, code in [(annotator, "C.1"), (other_annotator, "C.2.i"), (third_annotator, "B.1")]:
        label_item(user, project, item, code)
    problems: list[str] = []
    page.on("pageerror", lambda e: problems.append(str(e)))
    log_in(page, live_server, lead.username)
    page.goto(live_server.url + reverse("resolve_issue", args=[project.pk, item.pk]))
    page.locator("body[data-labeling-ready]").wait_for(state="attached")
    # The hint says so, and the cards carry their numbers.
    assert page.locator("#adopt-hint").is_visible()
    assert page.locator(".annotation-card[data-adopt='2'] h3").inner_text().startswith("2")
    # The probe: before any key, nothing of Otto's is in the form.
    assert page.locator("#id_theme").input_value() == ""

    page.keyboard.press("2")  # Otto's, the second card
    otto = page.locator(".annotation-card[data-adopt='2']")
    assert otto.get_attribute("data-annotator") == other_annotator.username
    assert "adopted" in (otto.get_attribute("class") or "")
    assert page.locator("#id_issue_type option:checked").inner_text().startswith("C ")
    assert page.locator("#id_theme option:checked").inner_text().startswith("C.2 ")
    assert page.locator("#id_sub_theme option:checked").inner_text().startswith("C.2.i ")
    assert page.locator("input[name=source][data-adopt='2']").is_checked()
    assert not page.locator("#source-new").is_checked()
    # Another number adopts another card; a number past the last one changes nothing.
    page.keyboard.press("3")
    assert page.locator("#id_theme option:checked").inner_text().startswith("B.1 ")
    page.keyboard.press("9")
    assert page.locator("input[name=source][data-adopt='3']").is_checked()
    page.keyboard.press("2")
    page.keyboard.press("d")  # lead decision: there is no discussion
    page.keyboard.press("Enter")
    page.wait_for_url("**/disagreements/**")  # nothing left
    final = Resolution.objects.get(project=project, issue=item.issue, is_current=True)
    assert (final.label_code, final.method, final.decided_by) == ("C.2.i", "lead_decision", lead)
    assert problems == []


def test_a_type_key_after_adopting_starts_a_new_label_where_digits_pick_themes(
    page, live_server, project, items, lead, annotator, other_annotator, third_annotator
):
    item = items[0]
    for user, code in [(annotator, "C.1"), (other_annotator, "C.2"), (third_annotator, "B.1")]:
        label_item(user, project, item, code)
    log_in(page, live_server, lead.username)
    page.goto(live_server.url + reverse("resolve_issue", args=[project.pk, item.pk]))
    page.locator("body[data-labeling-ready]").wait_for(state="attached")
    page.keyboard.press("1")
    assert page.locator("input[name=source][data-adopt='1']").is_checked()
    for key in "q3":
        page.keyboard.press(key)
    assert page.locator("#source-new").is_checked()
    assert page.locator("#id_theme option:checked").inner_text().startswith("A.3 ")
    page.keyboard.press("d")
    page.keyboard.press("Enter")
    page.wait_for_url("**/disagreements/**")
    final = Resolution.objects.get(project=project, issue=item.issue, is_current=True)
    assert final.label_code == "A.3"
