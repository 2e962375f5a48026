"""The first look (`bin/serve` without DATABASE_URL or REDIS_URL): a volunteer labels three
demo issues on the embedded SQLite database. Run as a separate process by
tests/annotator/test_first_look.py, since the test suite itself runs on PostgreSQL; exits
non-zero, saying what went wrong, if labeling does not work there."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.embedded import start

start(sys.argv[1])  # migrates and loads the demo

from django.test import Client  # noqa: E402

from annotator.models import Membership  # noqa: E402
from labeling.models import Annotation  # noqa: E402
from taxonomy.models import TaxonomyNode  # noqa: E402

membership = Membership.objects.select_related("project", "user").filter(role="annotator").first()
project, volunteer = membership.project, membership.user
theme = TaxonomyNode.objects.filter(version_id=project.taxonomy_version_id, level=2).first()
client = Client()
client.force_login(volunteer)
seen = []
for _ in range(3):
    reply = client.get(f"/projects/{project.pk}/label/")
    assert reply.status_code == 302, f"next issue: {reply.status_code}"
    item_url = reply["Location"]
    assert item_url not in seen, f"{item_url} handed out twice"
    seen.append(item_url)
    page = client.get(item_url)
    assert page.status_code == 200, f"labeling page: {page.status_code}"
    label = {"issue_type": theme.parent_id, "theme": theme.pk, "summary": "first look"}
    reply = client.post(item_url, label)
    assert reply.status_code == 302, f"submit: {reply.status_code} {reply.content[:300]!r}"
labeled = Annotation.objects.filter(annotator=volunteer, summary="first look").count()
assert labeled == 3, f"{labeled} annotations stored"
assert client.get(f"/projects/{project.pk}/my-progress/").status_code == 200
print("first look: 3 issues labeled on SQLite")
