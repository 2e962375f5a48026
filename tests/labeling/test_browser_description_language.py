"""In Chromium: a volunteer who reads Simplified Chinese, in a project whose lead chose to show
taxonomy descriptions in the reader's language, reads the study's Chinese descriptions in the
labeling page's taxonomy panel beside the English names; the sub-theme search finds a sub-theme
by its Chinese description."""

import pytest
from django.urls import reverse

from annotator.models import Project
from tests.conftest import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize("chosen", [True, False])
def test_the_panel_shows_the_chinese_descriptions_when_the_project_chose_them(
    browser, live_server, project, items, annotator, chosen
):
    Project.objects.filter(pk=project.pk).update(translated_descriptions=chosen)
    context = browser.new_context(locale="zh-CN", extra_http_headers={"Accept-Language": "zh-hans"})
    page = context.new_page()
    page.set_default_timeout(10_000)
    problems: list[str] = []
    page.on("pageerror", lambda e: problems.append(str(e)))
    try:
        log_in(page, live_server, annotator.username)
        page.goto(live_server.url + reverse("label_next", args=[project.pk]))
        page.wait_for_url(f"**/label/{items[0].public_id}/")
        page.locator("body[data-labeling-ready]").wait_for(state="attached")
        panel = page.locator("#taxonomy-guide-body")
        page.keyboard.press("b")  # Bug: the type, and its themes to pick from
        c3 = panel.locator('.guide-themes > li[data-code="C.3"]')
        c3.wait_for()
        assert "C.3 Distributed and Parallel Execution" in c3.inner_text()
        if chosen:
            c3.get_by_text("分布式与并行执行", exact=True).wait_for()
            assert panel.locator('section[data-code="C"] .guide-description').inner_text() == "缺陷"
        page.keyboard.press("3")
        # The theme's sub-themes with their examples: the details (and descriptions) are in.
        panel.locator('#guide-theme[data-code="C.3"] .guide-examples').first.wait_for()
        sub = panel.locator('li[data-code="C.3.i"]')
        assert "C.3.i Distributed Communication and Initialization Bugs" in sub.inner_text()
        if chosen:
            assert "分布式通信与初始化缺陷" in sub.inner_text()
            # Found by its Chinese description in the sub-theme search.
            page.fill("#subtheme-search", "算子编译")
            page.locator("#subtheme-hits").get_by_text("C.1.ii").first.wait_for()
        else:
            assert panel.locator(".guide-description").count() == 0
            assert "分布式" not in panel.inner_text()
        assert problems == []
    finally:
        context.close()
