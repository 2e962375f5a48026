"""Machine labels from outside: a file of `Issue_URL,label,confidence` becomes the current
labels of a rater of kind `external` (a team's own model run on its own machines, another
team's rater).

`label` is a code of the project's taxonomy version at any level ("C", "C.3", "C.3.ii") or
"FP" (a false positive), as `machine_labels.csv` of an export writes it; `confidence` is a
number in [0, 1] or empty. Every row must name an issue of the project (by its URL, in any
spelling the one URL reader accepts) once. Reading collects every bad row with its line and
stores nothing if there is any; otherwise the rater's current labels are replaced in one
transaction by the file's, as a new version (`MachineRater.version`), with a `RaterRun` that
records the file's name and SHA-256. What the command, the page and the API call.
"""

from __future__ import annotations

import hashlib
import io
import math
from dataclasses import dataclass, field

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext

from annotator.models import Project
from ingest.issue_urls import parse_issue_url, read_issue_url
from labeling.models import MachineLabel, MachineRater, ProjectIssue
from lib import csvread
from raters.alt_test import retest_enlisted
from raters.backends import FP_CODE
from raters.models import RaterRun
from taxonomy.models import TaxonomyNode

COLUMNS = ("Issue_URL", "label", "confidence")
MAX_BYTES = 50 * 1024 * 1024


class LabelFileError(Exception):
    """The file was refused: nothing was stored. `problems` are line-numbered messages."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


@dataclass
class ImportResult:
    rater: MachineRater
    labels: int
    replaced: int
    version: int
    sha256: str
    problems: list[str] = field(default_factory=list)


def _at(name: str, line: int) -> str:
    return gettext("%(file)s, line %(line)s") % {"file": name, "line": line}


def _issue_keys(project: Project) -> dict[str, int]:
    """Every spelling of the project's issues a file may use: the stored URL and, for a forge
    URL, its canonical form."""
    out: dict[str, int] = {}
    for issue_id, url in ProjectIssue.objects.filter(project=project).values_list(
        "issue_id", "issue__url"
    ):
        out[url] = issue_id
        ref = parse_issue_url(url)
        if ref is not None:
            out.setdefault(ref.url, issue_id)
    return out


def _label_fields(code: str, nodes: dict[str, TaxonomyNode]) -> dict | None:
    if code == FP_CODE:
        return {"is_false_positive": True}
    node = nodes.get(code)
    if node is None:
        return None
    parts = code.split(".")
    return {
        "issue_type": nodes[parts[0]],
        "theme": nodes[".".join(parts[:2])] if len(parts) > 1 else None,
        "sub_theme": node if len(parts) > 2 else None,
    }


def read_labels(
    project: Project, name: str, data: bytes
) -> tuple[list[tuple[int, dict, float | None]], list[str]]:
    """The file's rows as (issue id, label fields, confidence), and every problem by line."""
    problems: list[str] = []
    if len(data) > MAX_BYTES:
        return [], [gettext("%(file)s: larger than 50 MB") % {"file": name}]
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return [], [gettext("%(file)s: not UTF-8 (%(why)s)") % {"file": name, "why": exc.reason}]
    if "\x00" in text:
        return [], [gettext("%(file)s: a NUL character; not a CSV file") % {"file": name}]
    rows = csvread.records(io.StringIO(text, newline=""))
    header = next(rows, None)
    if header is None:
        return [], [gettext("%(file)s: the file is empty") % {"file": name}]
    line, cells, why = header
    if cells is None or [c.strip() for c in cells] != list(COLUMNS):
        return [], [
            _at(name, line)
            + ": "
            + gettext("the header must be %(columns)s") % {"columns": ",".join(COLUMNS)}
        ]
    nodes = {n.code: n for n in TaxonomyNode.objects.filter(version=project.taxonomy_version)}
    issues = _issue_keys(project)
    seen: dict[int, int] = {}
    out = []
    for line, cells, why in rows:
        at = _at(name, line)
        if cells is None:
            problems.append(f"{at}: {gettext('not readable as CSV')}: {why}")
            continue
        if not any(c.strip() for c in cells):
            continue  # a blank line
        if len(cells) != len(COLUMNS):
            problems.append(
                f"{at}: "
                + gettext("expected %(n)s cells, got %(got)s")
                % {"n": len(COLUMNS), "got": len(cells)}
            )
            continue
        url, code, confidence_text = (c.strip() for c in cells)
        ref = read_issue_url(url)
        issue_id = issues.get(url) or (issues.get(ref.url) if not isinstance(ref, str) else None)
        if issue_id is None:
            reason = ref if isinstance(ref, str) else gettext("not an issue of this project")
            problems.append(f"{at}: Issue_URL: {reason}")
            continue
        if issue_id in seen:
            problems.append(
                f"{at}: Issue_URL: "
                + gettext("the same issue as line %(line)s") % {"line": seen[issue_id]}
            )
            continue
        seen[issue_id] = line
        fields = _label_fields(code, nodes)
        if fields is None:
            problems.append(
                f"{at}: label: "
                + gettext("%(code)s is not a code of the project's taxonomy, nor FP")
                % {"code": repr(code[:40])}
            )
            continue
        confidence: float | None = None
        if confidence_text:
            try:
                confidence = float(confidence_text)
            except ValueError:
                confidence = math.nan
            if not 0.0 <= confidence <= 1.0:  # NaN fails this too
                problems.append(f"{at}: confidence: " + gettext("a number from 0 to 1, or empty"))
                continue
        out.append((issue_id, fields, confidence))
    if not out and not problems:
        problems.append(gettext("%(file)s: no labels after the header") % {"file": name})
    return out, problems


def import_machine_labels(
    project: Project,
    rater_name: str,
    name: str,
    data: bytes,
    model: str = "",
    user: User | None = None,
) -> ImportResult:
    """Replace the external rater's current labels by the file's (creating the rater if the
    project has none of that name). Raises `LabelFileError` with every problem, storing nothing."""
    rater_name = rater_name.strip()
    if not rater_name:
        raise LabelFileError([gettext("rater: a rater needs a name")])
    existing = MachineRater.objects.filter(project=project, name=rater_name).first()
    if existing is not None and existing.kind != MachineRater.Kind.EXTERNAL:
        raise LabelFileError(
            [
                gettext("rater: %(name)s is a %(kind)s rater; labels are imported only into an "
                        "external one") % {"name": rater_name, "kind": existing.kind}
            ]
        )  # fmt: skip
    rows, problems = read_labels(project, name, data)
    if problems:
        raise LabelFileError(problems)
    digest = hashlib.sha256(data).hexdigest()
    with transaction.atomic():
        # get_or_create: two imports of a new name at once make one rater, not an error.
        rater, _ = MachineRater.objects.get_or_create(
            project=project,
            name=rater_name,
            defaults={"kind": MachineRater.Kind.EXTERNAL, "model": model, "created_by": user},
        )
        rater = MachineRater.objects.select_for_update().get(pk=rater.pk)
        if rater.kind != MachineRater.Kind.EXTERNAL:
            raise LabelFileError(
                [
                    gettext("rater: %(name)s is a %(kind)s rater; labels are imported only into "
                            "an external one") % {"name": rater_name, "kind": rater.kind}
                ]
            )  # fmt: skip
        now = timezone.now()
        run = RaterRun.objects.create(
            rater=rater,
            status=RaterRun.Status.DONE,
            total=len(rows),
            done=len(rows),
            requested_by=user,
            started_at=now,
            finished_at=now,
            error="",
        )
        replaced = MachineLabel.objects.filter(rater=rater, is_current=True).update(
            is_current=False
        )
        rater.version += 1
        if model:
            rater.model = model
        rater.trained_at = now
        rater.save(update_fields=["version", "model", "trained_at"])
        parameters = {"source": name[:200], "sha256": digest, "version": rater.version}
        MachineLabel.objects.bulk_create(
            [
                MachineLabel(
                    rater=rater,
                    issue_id=issue_id,
                    run=run,
                    model=rater.model,
                    model_version=str(rater.version),
                    prompt_hash=digest,
                    parameters=parameters,
                    confidence=confidence,
                    created_at=now,
                    **fields,
                )
                for issue_id, fields, confidence in rows
            ],
            batch_size=5000,
        )
    retest_enlisted(rater.pk)  # a new version counts only once it passes the test itself
    return ImportResult(rater, len(rows), replaced, rater.version, digest)
