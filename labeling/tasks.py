"""Celery wrappers of the labeling app: they take ids and call `labeling` functions that tests
also call directly.

`refresh_dashboard` is queued by `labeling.dashboard.snapshot_figures`, by its name
(`dashboard.REFRESH_TASK`), when a lead's page finds the project's figures older than a poll
and claims their refresh; a delivery that comes twice, or after a reader computed them, finds
them fresh and does nothing.
"""

from __future__ import annotations

from celery import shared_task

from labeling import dashboard


@shared_task(acks_late=True)
def refresh_dashboard(project_id: int, younger_than: float = dashboard.REFRESH_SECONDS) -> bool:
    """Compute and store the project's dashboard figures unless they are younger than
    `younger_than` seconds (True if it computed)."""
    return dashboard.refresh_if_stale(project_id, younger_than)
