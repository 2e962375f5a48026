"""The issue list on the embedded SQLite database (`bin/serve` without DATABASE_URL): the
search migrations (index, stored document) do nothing there, and the search reads the search
box's syntax (phrases, -not, or) as substrings of the title or body. Run as a separate process
by tests/labeling/test_issue_list.py (the suite runs on PostgreSQL); exits non-zero, saying
what went wrong."""

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.embedded import start

start(sys.argv[1])  # migrates (ingest 0006 must pass over SQLite without a word) and loads the demo

from django.test import Client  # noqa: E402

from annotator.models import Membership  # noqa: E402
from ingest.models import Issue  # noqa: E402
from labeling import issue_list  # noqa: E402
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

# The placeholder's promises (#21): a phrase, -not, or. Beside the demo's issues, four whose
# text says what each search must find; what it finds is checked against the words of every
# issue of the project, read here in Python.
made = {}
for number, title, body in [
    ("424243", "Expert parallel hangs", "All-to-all stalls: a deadlock in expert parallel."),
    ("424244", "Parallel expert sharding", "The expert is parallel; quantization is fine."),
    ("424245", "Quantization drift", "int4 quantization of the zebra model loses accuracy."),
    ("424246", "Quantization skips a layer", "Weights quantized except the last checkpoint."),
]:
    made[number] = ProjectIssue.objects.create(
        project=project,
        issue=Issue.objects.create(
            repository=repository,
            number=number,
            url=f"{repository.web_url}/issues/{number}",
            title=title,
            body=body,
        ),
        position=int(number),
    )


def has(item, text):
    return any(text.lower() in (f or "").lower() for f in (item.issue.title, item.issue.body))


every = list(ProjectIssue.objects.filter(project=project).select_related("issue"))
expected = {
    '"expert parallel"': {i.pk for i in every if has(i, "expert parallel")},
    "quantization -zebra": {i.pk for i in every if has(i, "quantization") and not has(i, "zebra")},
    "checkpoint OR deadlock": {i.pk for i in every if has(i, "checkpoint") or has(i, "deadlock")},
}
# The four issues make each answer what the search syntax means, not a substring of the whole.
assert made["424243"].pk in expected['"expert parallel"']
assert made["424244"].pk not in expected['"expert parallel"']
assert made["424244"].pk in expected["quantization -zebra"]
assert made["424245"].pk not in expected["quantization -zebra"]
assert {made["424243"].pk, made["424246"].pk} <= expected["checkpoint OR deadlock"]
for q, want in expected.items():
    response = client.get(url, {"q": q})
    assert response.status_code == 200, f"{q}: {response.status_code}"
    page = response.content.decode()
    count = int(re.search(r'id="issue-count">(\d+) issue', page).group(1))
    assert count == len(want), f"{q}: {count} found, {len(want)} expected"
    rows = {int(pk) for pk in re.findall(r'<tr data-item="(\d+)"', page)}
    assert rows == want or (len(rows) == 50 and rows < want), f"{q}: found {rows}, not {want}"
refused = client.get(url, {"q": "-zebra"})
assert refused.status_code == 400, f"-zebra alone: {refused.status_code}"
assert "q: a word to find is needed" in refused.content.decode()

# By number: SQLite keeps no repository copy on the queue rows (labeling migration 0009's
# triggers are PostgreSQL's), so the list sorts in one query: shorter numbers first.
by_number = issue_list.issue_page(
    project, issue_list.IssueFilters(sort="number", descending=False, repository_id=repository.pk)
)
numbers = [row.item.issue.number for row in by_number.object_list]
assert numbers and numbers == sorted(numbers, key=lambda n: (len(n), n)), numbers

detail = client.get(f"{url}{item.pk}/")
assert detail.status_code == 200, f"issue page: {detail.status_code}"
print("issue list: search and filters work on SQLite")
print(", ".join(f"{q}: {len(want)}" for q, want in expected.items()))
