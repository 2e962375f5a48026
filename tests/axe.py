"""axe-core on a page open in Playwright: the accessibility violations that fail a test.

The engine's JavaScript ships inside `axe-playwright-python` (no network). Its default rule set
(WCAG 2.0-2.2 A and AA, and best practices) runs; a violation of impact serious or critical is
one that a test refuses.
"""

from __future__ import annotations

from axe_playwright_python.sync_playwright import Axe

BLOCKING = {"serious", "critical"}


def blocking_violations(page, axe: Axe, where: str) -> list[str]:
    """axe-core's serious and critical violations on the open page, one line per node."""
    results = axe.run(page)
    found = []
    for violation in results.response["violations"]:
        if violation["impact"] in BLOCKING:
            for node in violation["nodes"]:
                found.append(
                    f"{violation['id']} ({violation['impact']}) on {where}: {node['target']}"
                    f" {node.get('failureSummary', '')[:200]!r}"
                )
    return found
