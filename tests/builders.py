"""Test data built the way the app builds it: labels through the real submission, final labels
through the real comparison and the lead's resolution (`labeling.submission`,
`labeling.resolution`), never rows written by hand, which can drift from what the app writes
(the status, the counts, the comparison, the resolution's `based_on`).

`final_issue(project, item, "C.3", "C.3", "C.3")` has the project's annotators label the issue
one code each; labels that do not finalize it (a disagreement under the project's policy) are
resolved by a lead with `final`, by default the most common code.
"""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.auth.models import User
from django.contrib.sessions.backends.db import SessionStore
from django.utils import timezone

from annotator.models import Membership, Project, Role
from ingest.models import Issue, Repository
from labeling import resolution, submission
from labeling.models import Annotation, ProjectIssue, Reservation, Resolution
from labeling.setup import order_queue
from taxonomy.models import TaxonomyNode


def node(project: Project, code: str) -> TaxonomyNode:
    return TaxonomyNode.objects.get(version_id=project.taxonomy_version_id, code=code)


def label_data(project: Project, code: str, **extra) -> dict:
    """Form data for a label given by its most specific code ("C.3", "C.3.i") or "FP"."""
    if code == "FP":
        return {"is_false_positive": "1", "false_positive_reason": "keyword_in_names", **extra}
    parts = code.split(".")
    data = {"issue_type": str(node(project, parts[0]).pk)}
    data["theme"] = str(node(project, ".".join(parts[:2])).pk)
    if len(parts) > 2:
        data["sub_theme"] = str(node(project, code).pk)
    data.update(extra)
    return data


def label_item(user, project: Project, item: ProjectIssue, code: str, **extra) -> Annotation:
    """The user labels this particular issue (reserving it first, as the queue would)."""
    Reservation.objects.get_or_create(
        project_issue=item,
        annotator=user,
        defaults={"expires_at": timezone.now() + timedelta(minutes=30)},
    )
    return submission.submit(
        user, project, item, submission.parse_label(project, label_data(project, code, **extra))
    )


def _members(project: Project, role: str) -> list[User]:
    return [
        m.user
        for m in Membership.objects.filter(project=project, role=role)
        .select_related("user")
        .order_by("user_id")
    ]


def final_issue(
    project: Project, item: ProjectIssue, *codes: str, final: str | None = None
) -> Resolution:
    """The issue made final through the app: each of the project's first annotators (by id)
    submits one of `codes`; if the issue is not final then, a lead resolves it with `final`."""
    annotators = _members(project, Role.ANNOTATOR)
    if not codes or len(codes) > len(annotators):
        raise ValueError(f"{len(codes)} codes for {len(annotators)} annotators of {project}")
    for user, code in zip(annotators, codes, strict=False):
        item.refresh_from_db()
        if item.status == ProjectIssue.Status.FINAL:
            break  # the adaptive rule decided before everyone labeled
        label_item(user, project, item, code)
    item.refresh_from_db()
    if item.status != ProjectIssue.Status.FINAL:
        leads = _members(project, Role.LEAD)
        if not leads:
            raise ValueError(f"{project} has no lead to resolve {item}")
        chosen = final or Counter(codes).most_common(1)[0][0]
        label = submission.parse_label(project, label_data(project, chosen))
        resolution.resolve(item, leads[0], label, Resolution.Method.LEAD_DECISION)
        item.refresh_from_db()
    found = resolution.current_resolution(item)
    assert found is not None and item.status == ProjectIssue.Status.FINAL, item
    return found


def http_labeling_study(
    taxonomy_version, name: str, k: int, issues: int, annotators: int, seed: int
) -> tuple[int, dict[str, str], list[dict[str, str]]]:
    """A project of `issues` open issues with K = `k` in a seeded queue and `annotators`
    volunteers already signed in, for tests that label over HTTP from other processes (a
    gunicorn the test starts): the project's id, each volunteer's session key by username,
    and three theme labels as form data."""
    project = Project.objects.create(
        name=name, taxonomy_version=taxonomy_version, annotations_per_issue=k
    )
    slug = name.lower().replace(" ", "-")
    repo = Repository.objects.create(
        forge="github", api_url="https://api.github.com", owner="drill", name=slug
    )
    made = Issue.objects.bulk_create(
        Issue(
            repository=repo,
            number=str(n),
            url=f"https://github.com/drill/{slug}/issues/{n}",
            title=f"Training hangs at step {n}",
            body="NCCL timeout after the checkpoint.",
            state="open",
        )
        for n in range(1, issues + 1)
    )
    ProjectIssue.objects.bulk_create(ProjectIssue(project=project, issue=i) for i in made)
    order_queue(project, pilot_size=0, seed=seed)
    sessions = {}
    for n in range(annotators):
        user = User.objects.create_user(f"volunteer-{n:02d}", password="!")
        Membership.objects.create(project=project, user=user, role=Role.ANNOTATOR)
        store = SessionStore()
        store[SESSION_KEY] = str(user.pk)
        store[BACKEND_SESSION_KEY] = settings.AUTHENTICATION_BACKENDS[-1]
        store[HASH_SESSION_KEY] = user.get_session_auth_hash()
        store.create()
        sessions[user.username] = str(store.session_key)
    themes = TaxonomyNode.objects.filter(version=taxonomy_version, level=2).order_by("pk")[:3]
    labels = [{"issue_type": str(t.parent_id), "theme": str(t.pk)} for t in themes]
    return project.pk, sessions, labels
