"""A small demo project so a newcomer has something to label at once.

The issues are invented (the forges are out of reach offline) but shaped like real reports to
LLM frameworks: environment, code blocks, tracebacks, maintainers' replies. The demo accounts fill
every labeling role; they share one generated password kept in DATA_DIR, never in code.
"""

from __future__ import annotations

import json
import random
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from annotator.models import Membership, Project, Role
from ingest.models import Comment, Issue, Repository
from labeling.models import ProjectIssue
from taxonomy.loader import load_study_taxonomy

DATA_FILE = Path(__file__).resolve().parent / "demo_data" / "issues.json"
DEMO_PROJECT = "Demo: LLM issues in DL frameworks"
DEMO_ACCOUNTS = [
    ("demo-lead", Role.LEAD),
    ("demo-annotator-1", Role.ANNOTATOR),
    ("demo-annotator-2", Role.ANNOTATOR),
    ("demo-annotator-3", Role.ANNOTATOR),
    ("demo-researcher", Role.RESEARCHER),
]


@dataclass
class DemoResult:
    project: Project
    created: bool
    password_file: Path


def _secret_file(name: str) -> tuple[Path, str]:
    """A generated password kept in DATA_DIR (mode 600), created on first use."""
    path = Path(settings.DATA_DIR) / name
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(secrets.token_urlsafe(12) + "\n")
        path.chmod(0o600)
    return path, path.read_text().strip()


def ensure_admin(username: str = "admin") -> tuple[User, Path | None]:
    """Create a superuser with a generated password; return it and the password file if new."""
    user = User.objects.filter(username=username).first()
    if user is not None:
        return user, None
    path, password = _secret_file("admin-password.txt")
    user = User.objects.create_superuser(username=username, email="", password=password)
    return user, path


def _parse_time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(UTC)


@transaction.atomic
def load_demo(seed: int = 7) -> DemoResult:
    """Create the demo project with its repositories, issues, comments and accounts (idempotent)."""
    password_file, password = _secret_file("demo-password.txt")
    existing = Project.objects.filter(name=DEMO_PROJECT).first()
    if existing:
        return DemoResult(existing, False, password_file)

    data = json.loads(DATA_FILE.read_text(encoding="utf-8"))
    repos = {}
    for spec in data["repositories"]:
        forge = spec["forge"]
        repo, _ = Repository.objects.get_or_create(
            forge=forge,
            api_url=Repository.DEFAULT_API_URLS[forge],
            owner=spec["owner"],
            name=spec["name"],
            defaults={"group": spec["group"], "is_framework": spec["is_framework"]},
        )
        repos[f"{spec['owner']}/{spec['name']}"] = repo

    version = load_study_taxonomy(only_if_missing=True)
    project = Project.objects.create(
        name=DEMO_PROJECT,
        taxonomy_version=version,
        annotations_per_issue=3,
        description="Invented issue reports shaped like the study's, to try labeling, "
        "resolving disagreements and exporting. Not real forge data.",
    )
    issues = []
    for spec in data["issues"]:
        repo = repos[spec["repo"]]
        created = _parse_time(spec["created"])
        issue = Issue.objects.create(
            repository=repo,
            number=spec["number"],
            url=f"{repo.web_url}/issues/{spec['number']}",
            title=spec["title"],
            body=spec["body"],
            author="demo-reporter",
            state="open",
            labels=spec["labels"],
            created_at=created,
            updated_at=created,
            comments_count=len(spec["comments"]),
            filter_status=(
                Issue.FilterStatus.KEPT if repo.is_framework else Issue.FilterStatus.NOT_FILTERED
            ),
            fetched_at=timezone.now(),
        )
        for n, comment in enumerate(spec["comments"], start=1):
            Comment.objects.create(
                issue=issue,
                forge_id=f"demo-{spec['number']}-{n}",
                author=comment["author"],
                body=comment["body"],
                created_at=created,
                updated_at=created,
            )
        issues.append(issue)

    # A seeded shuffle so repositories interleave in the queue, as in a real project.
    random.Random(seed).shuffle(issues)
    ProjectIssue.objects.bulk_create(
        ProjectIssue(project=project, issue=issue, position=i) for i, issue in enumerate(issues)
    )
    for n, (username, role) in enumerate(DEMO_ACCOUNTS, start=1):
        user = User.objects.filter(username=username).first()
        if user is None:
            user = User.objects.create_user(username=username, password=password)
        Membership.objects.get_or_create(
            project=project, user=user, defaults={"role": role, "pseudonym": f"rater-{n}"}
        )
    return DemoResult(project, True, password_file)
