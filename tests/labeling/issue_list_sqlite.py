"""The issue list on the embedded SQLite database (`bin/serve` without DATABASE_URL): the
search index migration does nothing there, and the search falls back to a substring of the
title or body. Run as a separate process by tests/labeling/test_issue_list.py (the suite runs
on PostgreSQL); exits non-zero, saying what went wrong."""

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.embedded import start

start(sys.argv[1])  # migrates (ingest 0006 must pass over SQLite without a word) and loads the demo

from django.test import Client  # noqa: E402

from annotator.models import Membership  # noqa: E402
from ingest.models import Issue  # noqa: E402
from labeling.models import ProjectIssue  # noqa: E402

lead = Membership.objects.select_related("project", "user").filter(role="lead").first()
project = lead.project
repository = ProjectIssue.objects.filter(project=project).first().issue.repository
issue = Issue.objects.create(
    repository=repository,
    number="424242",
    url=f"{repository.web_url}/issues/424242",
    title="Loss spikes",
    body="The loss spikes after the Zanzibar scheduler warm-up.",
)
item = ProjectIssue.objects.create(project=project, issue=issue, position=9999)
client = Client()
client.force_login(lead.user)
url = f"/projects/{project.pk}/issues/"
everything = client.get(url)
assert everything.status_code == 200, f"issue list: {everything.status_code}"
total = ProjectIssue.objects.filter(project=project).count()
rows = re.findall(r'<tr data-item="(\d+)"', everything.content.decode())
assert len(rows) == min(total, 50), f"{len(rows)} rows of {total}"
found = client.get(url, {"q": "ZANZIBAR"})
assert found.status_code == 200, f"search: {found.status_code}"
rows = re.findall(r'<tr data-item="(\d+)"', found.content.decode())
assert rows == [str(item.pk)], f"search for a word of the body found {rows}"
none = client.get(url, {"q": "zanzibars"})  # no stemming on SQLite: a substring or nothing
assert re.findall(r'<tr data-item="(\d+)"', none.content.decode()) == []
filtered = client.get(url, {"q": "zanzibar", "status": "final"})
assert re.findall(r'<tr data-item="(\d+)"', filtered.content.decode()) == []
assert client.get(url, {"status": "bogus"}).status_code == 400
detail = client.get(f"{url}{item.pk}/")
assert detail.status_code == 200, f"issue page: {detail.status_code}"
print("issue list: search and filters work on SQLite")
