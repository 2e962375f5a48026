"""In Chromium: a volunteer proposes a sub-theme from the labeling page, the other approves,
and the new sub-theme is offered on the next issue."""

import pytest
from django.urls import reverse

from labeling.models import Proposal
from tests.conftest import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

NAME = "Tokenizer and Vocabulary Mismatch"


def test_proposal_from_the_labeling_page_is_offered_once_approved(
    browser, live_server, project, items, annotator, other_annotator
):
    volunteer = browser.new_context().new_page()
    log_in(volunteer, live_server, annotator.username)
    volunteer.goto(live_server.url + reverse("label_next", args=[project.pk]))
    volunteer.locator("body[data-labeling-ready]").wait_for(state="attached")
    volunteer.keyboard.press("b")
    volunteer.keyboard.press("6")  # C.6 Data Pipeline and IO Management
    volunteer.click("text=Propose a new category")
    volunteer.fill("#id_proposed_category", NAME)
    volunteer.click("#submit-label")
    volunteer.wait_for_url(f"**/label/{items[1].public_id}/")
    assert Proposal.objects.get().status == Proposal.Status.PENDING

    other = browser.new_context().new_page()
    log_in(other, live_server, other_annotator.username)
    other.goto(f"{live_server.url}/projects/{project.pk}/taxonomy/proposals/")
    other.click("#pending-proposals .proposal button.approve")
    # The vote is a form post (or an htmx request): wait for it to land rather than race it.
    for _ in range(50):
        if Proposal.objects.get().status == Proposal.Status.ACCEPTED:
            break
        other.wait_for_timeout(100)
    assert Proposal.objects.get().status == Proposal.Status.ACCEPTED

    # The volunteer's next issue: the sub-theme list under C.6 now holds the new one.
    volunteer.goto(live_server.url + reverse("label_next", args=[project.pk]))
    volunteer.locator("body[data-labeling-ready]").wait_for(state="attached")
    volunteer.keyboard.press("b")
    volunteer.keyboard.press("6")
    options = volunteer.locator("#id_sub_theme option").all_inner_texts()
    assert any(NAME in text for text in options), options
