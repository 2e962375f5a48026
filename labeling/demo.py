"""A small demo project so a newcomer has something to label at once.

The issues are invented (the forges are out of reach offline) but shaped like real reports to
LLM frameworks: environment, code blocks, tracebacks, maintainers' replies. Each carries in the
data file (`demo_data/issues.json`) the `label` its volunteers give it in the demo's history (a
sub-theme code, or `FP:<reason>` for an issue that is not LLM-related), and the issues of a theme
are written with that theme's own words, so that a classifier rater trained on the history's
final issues learns something. The demo accounts fill every labeling role, and demo-lead may
create projects; they share one generated password kept in DATA_DIR, never in code.
"""

from __future__ import annotations

import json
import random
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import Permission, User
from django.db import transaction
from django.utils import timezone

from annotator.models import Membership, Project, Role
from ingest.models import Comment, Issue, Repository
from labeling import queue, submission
from labeling.labels import Label
from labeling.models import Annotation, ProjectIssue, Resolution
from taxonomy.loader import load_study_taxonomy
from taxonomy.models import TaxonomyNode

DATA_FILE = Path(__file__).resolve().parent / "demo_data" / "issues.json"
DEMO_PROJECT = "Demo: LLM issues in DL frameworks"
# The demo's guideline, as a lead would write one: annotators see it above every issue.
DEMO_GUIDELINE = """\
**Read the whole issue first**, the maintainers' replies included: they often say what the
problem really was.

1. **Not LLM-related** (`n`) only when nothing in the issue is about a large language model:
   a small CNN, a keyword in a user name or file path, a component named like an LLM part.
2. **Type**: a *Question* (`q`) asks how to do something; a *Requirement* (`r`) asks for
   something that does not exist yet; a *Bug* (`b`) reports behaviour that is wrong.
3. **Theme and sub-theme**: the panel on the right shows each one's description and examples
   for the type and theme you chose. When two fit, choose the one the reporter is blocked by.
4. Write a one-line **summary** of the symptom, intent or expectation in your own words.

Unsure? Label your best guess and say why in the note; the lead reads notes on disagreements.
"""
DEMO_ACCOUNTS = [
    ("demo-lead", Role.LEAD),
    ("demo-annotator-1", Role.ANNOTATOR),
    ("demo-annotator-2", Role.ANNOTATOR),
    ("demo-annotator-3", Role.ANNOTATOR),
    ("demo-researcher", Role.RESEARCHER),
]
# The demo account an admin gave `annotator.add_project`, so a newcomer can try *New project*
# (annotator.permissions.may_create_project) without the admin account.
DEMO_PROJECT_CREATOR = "demo-lead"


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
def load_demo(seed: int = 7, history: bool = False) -> DemoResult:
    """Create the demo project with its repositories, issues, comments and accounts (idempotent);
    with `history`, some labels already given (see `add_history`)."""
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
        guideline=DEMO_GUIDELINE,
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
        if username == DEMO_PROJECT_CREATOR:
            user.user_permissions.add(
                Permission.objects.get(content_type__app_label="annotator", codename="add_project")
            )
    if history:
        add_history(project, seed)
    return DemoResult(project, True, password_file)


# The demo's history: the three volunteers have labeled the first issues of the queue over the
# last weeks, enough final issues for a classifier rater to train and validate on
# (`raters.classifier.MIN_FINALS`; cross-fitted, so each final is labeled by a model that did
# not see it). A few complete issues wait in the lead's disagreement queue, and on the next few
# two volunteers have labeled, so demo-annotator-1's first labels complete issues. The rest of
# the queue is open.
HISTORY_COMPLETE = 76
HISTORY_WAITING = 6
HISTORY_ISSUES = HISTORY_COMPLETE + HISTORY_WAITING
HISTORY_DAYS = 21
# Of the complete issues, these (by queue position) get a dissenting label.
HISTORY_DISAGREEMENTS = (1, 4, 6, 23, 41, 58)
# Who labels a history issue: the volunteers who came first, then demo-annotator-1.
_HISTORY_LABELERS = ("demo-annotator-2", "demo-annotator-3", "demo-annotator-1")


def _label(code: str, nodes: dict[str, TaxonomyNode]) -> Label:
    """The label of an issue's `label` in the data file: a sub-theme code, or `FP:<reason>`."""
    if code.startswith("FP:"):
        return Label(is_false_positive=True, false_positive_reason=code.removeprefix("FP:"))
    sub_theme = nodes[code]
    theme = sub_theme.parent
    assert theme is not None and theme.parent_id is not None
    return Label(issue_type_id=theme.parent_id, theme_id=theme.pk, sub_theme_id=sub_theme.pk)


def _dissent(code: str, nodes: dict[str, TaxonomyNode], rng: random.Random) -> str:
    """A plausible other label: a sibling sub-theme if the theme has one, else a sub-theme of
    another theme of the same type (a bug for a false positive)."""
    prefix = "C." if code.startswith("FP:") else code.rsplit(".", 1)[0] + "."
    siblings = sorted(c for c in nodes if c.startswith(prefix) and c.count(".") == 2 and c != code)
    if not siblings:
        kind = code.split(".", 1)[0] + "."
        siblings = sorted(c for c in nodes if c.startswith(kind) and c.count(".") == 2)
        siblings.remove(code)
    return rng.choice(siblings)


def add_history(project: Project, seed: int = 7) -> int:
    """Label the first issues of a fresh demo project through the queue, as volunteers would
    (each issue with the label its data gives, one volunteer dissenting on the
    `HISTORY_DISAGREEMENTS`), and spread the labels over the last days. Returns the number of
    labels given."""
    members = {
        m.user.username: m.user
        for m in Membership.objects.filter(project=project, role=Role.ANNOTATOR).select_related(
            "user"
        )
    }
    labelers = [members[name] for name in _HISTORY_LABELERS]
    nodes = {
        node.code: node
        for node in TaxonomyNode.objects.filter(
            version=project.taxonomy_version, level=TaxonomyNode.Level.SUB_THEME
        ).select_related("parent")
    }
    codes = {
        (spec["repo"], spec["number"]): spec["label"]
        for spec in json.loads(DATA_FILE.read_text(encoding="utf-8"))["issues"]
    }
    rng = random.Random(seed)
    items = list(
        ProjectIssue.objects.filter(project=project)
        .select_related("issue__repository")
        .order_by("position")[:HISTORY_ISSUES]
    )
    given = 0
    for position, item in enumerate(items):
        repo = item.issue.repository
        code = codes[(f"{repo.owner}/{repo.name}", item.issue.number)]
        dissenter = None
        if position in HISTORY_DISAGREEMENTS:
            dissenter = HISTORY_DISAGREEMENTS.index(position) % len(labelers)
        count = len(labelers) if position < HISTORY_COMPLETE else len(labelers) - 1
        for n, user in enumerate(labelers[:count]):
            served = queue.next_issue_id_for(user, project)
            if served != item.pk:
                raise RuntimeError(f"demo history: {user.username} was served {served}")
            label = _label(_dissent(code, nodes, rng) if n == dissenter else code, nodes)
            submission.submit(user, project, item.pk, label)
            given += 1
    _spread_over_days(project, items)
    return given


def _spread_over_days(project: Project, items: list[ProjectIssue]) -> None:
    """Date the labels over the last HISTORY_DAYS (oldest issue first, a few minutes between
    an issue's labels) for the pace and the charts; a final label is decided with the last."""
    now = timezone.now()
    annotations = list(
        Annotation.objects.filter(project=project, issue__in=[item.issue_id for item in items])
        .order_by("id")
        .only("id", "issue_id", "created_at")
    )
    by_issue: dict[int, list[Annotation]] = {}
    for annotation in annotations:
        by_issue.setdefault(annotation.issue_id, []).append(annotation)
    last: dict[int, datetime] = {}
    for position, item in enumerate(items):
        day = now - timedelta(days=HISTORY_DAYS * (len(items) - position) / len(items))
        for n, annotation in enumerate(by_issue.get(item.issue_id, [])):
            annotation.created_at = day + timedelta(minutes=7 * n)
            last[item.issue_id] = annotation.created_at
    Annotation.objects.bulk_update(annotations, ["created_at"], batch_size=500)
    submission.refresh_last_label(item.pk for item in items)
    resolutions = list(
        Resolution.objects.filter(project=project, issue_id__in=list(last)).only(
            "id", "issue_id", "decided_at"
        )
    )
    for resolution in resolutions:
        resolution.decided_at = last[resolution.issue_id]
    Resolution.objects.bulk_update(resolutions, ["decided_at"], batch_size=500)
