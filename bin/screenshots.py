"""Saves screenshots of the lead's and the annotator's main pages on the demo project (the
labeling page and the lead's project page also in Chinese; the raters page after the lead trained
a classifier, with its reliability diagram).

Usage (from bin/screenshots): python bin/screenshots.py BASE_URL DEMO_PASSWORD OUT_DIR
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from playwright.sync_api import Page, sync_playwright

WIDTH, HEIGHT = 1280, 900


def log_in(page: Page, base: str, username: str, password: str) -> str:
    """Log in and return the demo project's URL path (/projects/<id>/)."""
    page.goto(f"{base}/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("form:has(#id_password) [type=submit]")  # not the language switcher
    page.goto(f"{base}/")
    link = page.locator("a[href^='/projects/']").first
    href = link.get_attribute("href") or ""
    match = re.match(r"/projects/\d+/", href)
    if not match:
        raise SystemExit(f"no project link on the home page for {username}")
    return match.group(0)


def visit(page: Page, url: str) -> None:
    response = page.goto(url)
    if response is None or response.status >= 400:
        raise SystemExit(f"{url}: {response.status if response else 'no response'}")


def shot(page: Page, out: Path, name: str) -> None:
    page.wait_for_load_state("networkidle")
    page.screenshot(path=str(out / f"{name}.png"), full_page=True)
    print(f"saved {out / name}.png")


def raters(page: Page, base: str, project: str, out: Path) -> None:
    """The raters page with a classifier's reliability diagram: the lead adds a classifier (once)
    and runs it over every issue (in the request, on the embedded setup), then the page is
    taken with the validation, the coverage table and the diagram."""
    visit(page, f"{base}{project}raters/")
    if page.locator("#rater-figures tr[data-rater='tfidf']").count() == 0:
        page.fill("#id_name", "tfidf")
        page.select_option("#id_kind", "classifier")
        page.click("#add-rater-button")
        page.wait_for_load_state("load")
    row = page.locator("#rater-figures tr[data-rater='tfidf']")
    runs = page.locator("#runs .job")
    before = runs.count()
    row.locator("select[name=only]").select_option("all")
    row.locator("button.run-rater").click()
    runs.nth(before).wait_for(state="attached")  # one more run in the list
    run = f"#{runs.first.get_attribute('id')}"  # htmx puts the new run first
    page.wait_for_selector(f"{run} .badge.ok, {run} .badge.bad", timeout=300_000)
    if page.locator(f"{run} .badge.bad").count():
        error = page.locator(f"{run} .error").inner_text()
        raise SystemExit(f"raters: the classifier's run failed: {error}")
    visit(page, f"{base}{project}raters/")
    page.wait_for_selector("svg.reliability-chart")
    shot(page, out, "raters")


def main(base: str, password: str, out_dir: str) -> None:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium")
        lead = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
        project = log_in(lead, base, "demo-lead", password)
        visit(lead, f"{base}{project}")
        shot(lead, out, "project")
        visit(lead, f"{base}{project}dashboard/")
        shot(lead, out, "dashboard")
        visit(lead, f"{base}{project}issues/?q=memory")
        shot(lead, out, "issue-list")
        visit(lead, f"{base}{project}disagreements/")
        shot(lead, out, "disagreements")
        lead.locator("a[href*='/resolve/']").first.click()
        shot(lead, out, "resolve")
        visit(lead, f"{base}{project}agreement/")
        shot(lead, out, "agreement")
        visit(lead, f"{base}{project}audit/")
        shot(lead, out, "audit")
        visit(lead, f"{base}{project}simulate/")
        lead.locator("#simulator button[type=submit]").click()
        lead.wait_for_selector("#tradeoff-chart circle", timeout=60_000)
        shot(lead, out, "simulator")

        annotator = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
        log_in(annotator, base, "demo-annotator-1", password)
        visit(annotator, f"{base}{project}label/")
        shot(annotator, out, "labeling")
        small = browser.new_page(viewport={"width": 360, "height": 780})
        log_in(small, base, "demo-annotator-1", password)
        visit(small, f"{base}{project}label/")
        shot(small, out, "labeling-360px")
        # A browser that asks for Chinese gets the interface in Simplified Chinese.
        chinese = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT}, locale="zh-CN")
        log_in(chinese, base, "demo-annotator-1", password)
        visit(chinese, f"{base}{project}label/")
        shot(chinese, out, "labeling-zh-hans")
        # The lead's project page in Chinese: its pages grouped by what a lead does.
        chinese_lead = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT}, locale="zh-CN")
        log_in(chinese_lead, base, "demo-lead", password)
        visit(chinese_lead, f"{base}{project}")
        shot(chinese_lead, out, "project-zh-hans")
        # Last: the classifier trains on the demo's final issues (20 at least), and a run that
        # fails stops the script with its reason after every other page was saved.
        raters(lead, base, project, out)
        browser.close()


if __name__ == "__main__":
    main(*sys.argv[1:4])
