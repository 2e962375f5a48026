"""Export a project's dataset in the study's shapes, streaming, and bundle it as a ZIP.

Formats: (a) per repository `Issue_URL,Label1..LabelK,Final_Label` (UTF-8 with BOM, rows in
queue order, which is the file order for an imported study); (b) JSON Lines, one issue per line
with its text, comments, every annotation revision and the final label; (c) the taxonomy
detail CSVs `rootcause,subcategory,symptoms` with annotators' summaries under each sub-theme;
(d) Table I; (e) the agreement table. Every writer takes a text stream and reads the database
in chunks, so memory stays flat however large the project is.

Annotators appear under their membership pseudonyms (stable: stored on the membership), unless
an admin asks for real names.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import zipfile
from collections import defaultdict
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import IO, TextIO

from django.conf import settings
from django.db import connection
from django.db.models import CharField, F, Func, Q, Value
from django.utils import timezone

from agreement.measures import agreement_report, report_rows
from agreement.table_one import TYPE_COLUMNS, YEARS, table_one
from annotator.models import Membership, Project
from dataset.models import ExportJob
from ingest.models import Comment, Issue, Repository
from labeling.models import Annotation, ProjectIssue, Resolution
from taxonomy.loader import TYPE_FILES
from taxonomy.models import TaxonomyNode

BOM = "\ufeff"
CHUNK = 2000
Progress = Callable[[str, int, int], None]


def pseudonyms(project: Project, real_names: bool = False) -> dict[int, str]:
    """How each member appears in exports: the stored pseudonym (or the username for admins)."""
    out = {}
    for user_id, username, pseudonym in Membership.objects.filter(project=project).values_list(
        "user_id", "user__username", "pseudonym"
    ):
        out[user_id] = username if real_names else (pseudonym or f"annotator-{user_id}")
    return out


def _natural(text: str) -> tuple:
    head, _, tail = text.rpartition("-")
    return (head, int(tail)) if tail.isdigit() else (text, 0)


def rater_columns(project: Project) -> list[int]:
    """User ids of the project's annotators in Label-column order (rater-1, rater-2, …)."""
    names = pseudonyms(project)
    labeled = set(
        Annotation.objects.filter(project=project, is_current=True)
        .order_by()
        .values_list("annotator_id", flat=True)
        .distinct()
    )
    return sorted(labeled, key=lambda u: _natural(names.get(u, f"annotator-{u}")))


def _node_codes(project: Project) -> dict[int, str]:
    return dict(
        TaxonomyNode.objects.filter(version_id=project.taxonomy_version_id).values_list(
            "pk", "code"
        )
    )


def _code(codes: dict[int, str], fp: bool, type_id, theme_id, sub_id) -> str:
    if fp:
        return "FP"
    node = sub_id or theme_id or type_id
    return codes[node] if node else ""


def repositories(project: Project) -> list[Repository]:
    return list(
        Repository.objects.filter(issues__project_issues__project=project)
        .distinct()
        .order_by("owner", "name")
    )


def study_filename(repository: Repository, taken: set[str]) -> str:
    """`<name>.csv` as the study named its files, qualified by owner when names collide."""
    name = f"{repository.name}.csv"
    if name in taken:
        name = f"{repository.owner}-{repository.name}.csv"
    taken.add(name)
    return name


def write_study_csv(
    project: Project, repository: Repository, out: TextIO, raters: list[int] | None = None
) -> int:
    """Write one repository's rows in the study's format; return the number of rows."""
    raters = rater_columns(project) if raters is None else raters
    column = {user_id: i for i, user_id in enumerate(raters)}
    codes = _node_codes(project)
    out.write(BOM)
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["Issue_URL", *(f"Label{i}" for i in range(1, len(raters) + 1)), "Final_Label"])
    # (id, url) pairs of one repository are small; a server-side cursor would cost more.
    scope = list(
        ProjectIssue.objects.filter(project=project, issue__repository=repository)
        .order_by("position", "pk")
        .values_list("issue_id", "issue__url")
    )
    rows = 0
    for chunk in _chunks(iter(scope), CHUNK):
        ids = [issue_id for issue_id, _ in chunk]
        labels: dict[int, list[str]] = defaultdict(lambda: [""] * len(raters))
        for issue_id, user_id, *fields in (
            Annotation.objects.filter(project=project, is_current=True, issue_id__in=ids)
            .order_by()
            .values_list(
                "issue_id",
                "annotator_id",
                "is_false_positive",
                "issue_type_id",
                "theme_id",
                "sub_theme_id",
            )
        ):
            if user_id in column:
                labels[issue_id][column[user_id]] = _code(codes, *fields)
        finals = {
            issue_id: _code(codes, *fields)
            for issue_id, *fields in Resolution.objects.filter(
                project=project, is_current=True, issue_id__in=ids
            )
            .order_by()
            .values_list(
                "issue_id", "is_false_positive", "issue_type_id", "theme_id", "sub_theme_id"
            )
        }
        for issue_id, url in chunk:
            writer.writerow([url, *labels[issue_id], finals.get(issue_id, "")])
            rows += 1
    return rows


def _chunks(iterator: Iterator, size: int) -> Iterator[list]:
    chunk = []
    for item in iterator:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _iso(value: datetime | str | None) -> str | None:
    if isinstance(value, str):
        return value
    return value.isoformat() if value else None


def _iso_sql(field: str):
    """The timestamp as ISO 8601 text from the database: parsing 270,000 datetimes in Python
    only to format them again was a fifth of the JSON Lines export."""
    if connection.vendor != "postgresql":
        return F(field)
    in_utc = Func(Value("UTC"), F(field), function="timezone")
    return Func(
        in_utc,
        Value('YYYY-MM-DD"T"HH24:MI:SS.US"+00:00"'),
        function="to_char",
        output_field=CharField(),
    )


LABEL_VALUES = (
    "is_false_positive",
    "false_positive_reason",
    "issue_type_id",
    "theme_id",
    "sub_theme_id",
)


def _label_values(codes: dict[int, str], row: dict) -> dict:
    return {
        "code": _code(
            codes,
            row["is_false_positive"],
            row["issue_type_id"],
            row["theme_id"],
            row["sub_theme_id"],
        ),
        "type": codes.get(row["issue_type_id"]),
        "theme": codes.get(row["theme_id"]),
        "sub_theme": codes.get(row["sub_theme_id"]),
        "is_false_positive": row["is_false_positive"],
        "false_positive_reason": row["false_positive_reason"],
    }


def write_jsonl(
    project: Project, out: TextIO, real_names: bool = False, progress: Progress | None = None
) -> int:
    """One JSON object per issue of the project: everything known about it.

    Plain value queries per chunk of issues (no model instances): a full study's 270,000
    annotations would otherwise dominate the export's time.
    """
    codes = _node_codes(project)
    names = pseudonyms(project, real_names)
    scope = ProjectIssue.objects.filter(project=project).order_by("position", "pk")
    total = scope.count()
    done = 0
    for chunk in _chunks(iter(list(scope.values_list("issue_id", "status", "is_pilot"))), CHUNK):
        ids = [c[0] for c in chunk]
        issues = {
            row["id"]: row
            for row in Issue.objects.filter(pk__in=ids).values(
                "id",
                "url",
                "repository__forge",
                "repository__owner",
                "repository__name",
                "number",
                "title",
                "body",
                "author",
                "state",
                "labels",
                "created_at",
                "updated_at",
                "closed_at",
            )
        }
        comments: dict[int, list] = defaultdict(list)
        for row in (
            Comment.objects.filter(issue_id__in=ids)
            .order_by("issue_id", "created_at", "pk")
            .values("issue_id", "author", "body", "created_at")
        ):
            comments[row["issue_id"]].append(
                {
                    "author": row["author"],
                    "body": row["body"],
                    "created_at": _iso(row["created_at"]),
                }
            )
        annotations: dict[int, list] = defaultdict(list)
        for row in (
            Annotation.objects.filter(project=project, issue_id__in=ids)
            .order_by("issue_id", "annotator_id", "revision")
            .values(
                "issue_id",
                "annotator_id",
                "revision",
                "is_current",
                "summary",
                *LABEL_VALUES,
                created=_iso_sql("created_at"),
            )
        ):
            annotations[row["issue_id"]].append(
                {
                    "annotator": names.get(row["annotator_id"], f"annotator-{row['annotator_id']}"),
                    "revision": row["revision"],
                    "is_current": row["is_current"],
                    **_label_values(codes, row),
                    "summary": row["summary"],
                    "created_at": _iso(row["created"]),
                }
            )
        resolutions: dict[int, list] = defaultdict(list)
        for row in (
            Resolution.objects.filter(project=project, issue_id__in=ids)
            .order_by("issue_id", "decided_at", "pk")
            .values("issue_id", "is_current", "method", "decided_at", "note", *LABEL_VALUES)
        ):
            resolutions[row["issue_id"]].append(row)
        for issue_id, status, is_pilot in chunk:
            issue = issues[issue_id]
            record = {
                "url": issue["url"],
                "forge": issue["repository__forge"],
                "repository": f"{issue['repository__owner']}/{issue['repository__name']}",
                "number": issue["number"],
                "title": issue["title"],
                "body": issue["body"],
                "author": issue["author"],
                "state": issue["state"],
                "labels": issue["labels"],
                "created_at": _iso(issue["created_at"]),
                "updated_at": _iso(issue["updated_at"]),
                "closed_at": _iso(issue["closed_at"]),
                "status": status,
                "is_pilot": is_pilot,
                "comments": comments.get(issue_id, []),
                "annotations": annotations.get(issue_id, []),
                "resolution": None,
                "resolution_history": [],
            }
            for r in resolutions.get(issue_id, []):
                entry = {
                    **_label_values(codes, r),
                    "method": r["method"],
                    "decided_at": _iso(r["decided_at"]),
                    "note": r["note"],
                }
                if r["is_current"]:
                    record["resolution"] = entry
                else:
                    record["resolution_history"].append(entry)
            out.write(json.dumps(record, ensure_ascii=False))
            out.write("\n")
            done += 1
        if progress:
            progress("jsonl", done, total)
    return done


def write_taxonomy_details(project: Project, type_code: str, out: TextIO) -> int:
    """`rootcause,subcategory,symptoms` for one type, one row per sub-theme.

    The third cell lists the taxonomy's details then the annotators' summaries of issues
    labeled with that sub-theme, comma-separated as the study did; an ASCII comma inside an
    item becomes the Chinese comma `、`, as in the study's files, so the list still splits.
    """
    version = project.taxonomy_version_id
    nodes = list(
        TaxonomyNode.objects.filter(version_id=version).order_by("level", "position", "pk")
    )
    children: dict[int | None, list[TaxonomyNode]] = defaultdict(list)
    for node in nodes:
        children[node.parent_id].append(node)
    type_node = next((n for n in children[None] if n.code == type_code), None)
    summaries: dict[int, list[str]] = defaultdict(list)
    for sub_id, summary in (
        Annotation.objects.filter(project=project, is_current=True, sub_theme__isnull=False)
        .exclude(summary="")
        .order_by("sub_theme_id", "pk")
        .values_list("sub_theme_id", "summary")
        .iterator(chunk_size=CHUNK)
    ):
        summaries[sub_id].append(summary)
    out.write(BOM)
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["rootcause", "subcategory", "symptoms"])
    rows = 0
    if type_node is None:
        return rows
    for theme in children[type_node.pk]:
        for sub in children[theme.pk]:
            items = list(
                dict.fromkeys(
                    " ".join(item.replace(",", "、").split())
                    for item in [*sub.details, *summaries.get(sub.pk, [])]
                    if item.strip()
                )
            )
            writer.writerow([theme.name, sub.name, ",".join(items)])
            rows += 1
    return rows


def write_table_one(project: Project, out: TextIO) -> int:
    rows, total = table_one(project)
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(
        [
            "repository",
            *map(str, YEARS),
            "other years",
            *(n for _, n in TYPE_COLUMNS),
            "final",
            "false positives",
            "false positive rate",
        ]
    )
    for row in [*rows, total]:
        rate = getattr(row, "average_rate", None) if row is total else row.false_positive_rate
        writer.writerow(
            [
                row.name,
                *(row.years[y] for y in YEARS),
                row.other_years,
                *(row.types[c] for c, _ in TYPE_COLUMNS),
                row.final,
                row.false_positives,
                "" if rate is None else f"{rate:.4f}",
            ]
        )
    return len(rows) + 1


def write_agreement_csv(project: Project, out: TextIO) -> int:
    rows = report_rows(agreement_report(project))
    writer = csv.writer(out, lineterminator="\n")
    if not rows:
        return 0
    writer.writerow(list(rows[0]))
    for row in rows:
        writer.writerow(["" if v is None else v for v in row.values()])
    return len(rows)


class _HashingWriter(io.RawIOBase):
    """A binary sink that hashes and counts what passes through to the ZIP member."""

    def __init__(self, target: IO[bytes]) -> None:
        self.target, self.sha, self.size = target, hashlib.sha256(), 0

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        self.sha.update(data)
        self.size += len(data)
        self.target.write(data)
        return len(data)


def build_zip(
    project: Project, path: Path, real_names: bool = False, progress: Progress | None = None
) -> dict:
    """Write every format into a ZIP at `path` with a manifest; return the manifest."""
    steps: list[tuple[str, Callable[[TextIO], object]]] = []
    taken: set[str] = set()
    raters = rater_columns(project)
    for repo in repositories(project):
        name = study_filename(repo, taken)
        steps.append(
            (f"labels/{name}", lambda out, repo=repo: write_study_csv(project, repo, out, raters))
        )
    steps.append(("issues.jsonl", lambda out: write_jsonl(project, out, real_names)))
    for code, _, filename in TYPE_FILES:
        steps.append(
            (
                f"taxonomy/{filename}",
                lambda out, code=code: write_taxonomy_details(project, code, out),
            )
        )
    steps.append(("table_one.csv", lambda out: write_table_one(project, out)))
    steps.append(("agreement.csv", lambda out: write_agreement_csv(project, out)))

    files = []
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=5) as zf:
        for n, (name, write) in enumerate(steps):
            if progress:
                progress(name, n, len(steps))
            with zf.open(name, "w", force_zip64=True) as member:
                sink = _HashingWriter(member)
                # newline="" keeps the csv module's line endings byte for byte.
                text = io.TextIOWrapper(
                    io.BufferedWriter(sink, 1 << 16), encoding="utf-8", newline=""
                )
                write(text)
                text.flush()
                text.detach().flush()
            files.append({"name": name, "sha256": sink.sha.hexdigest(), "bytes": sink.size})
        manifest = {
            "project": project.name,
            "taxonomy_version": str(project.taxonomy_version),
            "taxonomy_version_id": project.taxonomy_version_id,
            "exported_at": timezone.now().isoformat(),
            "pseudonymous": not real_names,
            "files": files,
        }
        zf.writestr("manifest.json", json.dumps(manifest, indent=2, ensure_ascii=False))
    if progress:
        progress("done", len(steps), len(steps))
    return manifest


# A job "running" for longer than this died with its worker and may be run again.
STALE_EXPORT = timedelta(minutes=30)


def export_path(job: ExportJob) -> Path:
    return Path(settings.EXPORT_ROOT) / str(job.project_id) / job.filename


def run_export_job(job_id: int) -> ExportJob:
    """Build the job's ZIP; safe to run twice (a finished job is left as it is)."""
    now = timezone.now()
    # Claim the job, so a redelivered task never builds it twice at once; a run that has been
    # "running" for long is taken to have died with its worker and may be claimed again.
    claimed = (
        ExportJob.objects.filter(pk=job_id)
        .filter(
            Q(status__in=[ExportJob.Status.PENDING, ExportJob.Status.FAILED])
            | Q(status=ExportJob.Status.RUNNING, started_at__lt=now - STALE_EXPORT)
        )
        .update(status=ExportJob.Status.RUNNING, started_at=now, error="")
    )
    job = ExportJob.objects.select_related("project__taxonomy_version").get(pk=job_id)
    if not claimed:
        return job

    def progress(step: str, done: int, total: int) -> None:
        ExportJob.objects.filter(pk=job.pk).update(
            step=step, progress=min(99, 100 * done // max(total, 1))
        )

    path = export_path(job)
    # Written beside its final name and renamed when complete: a download never sees a
    # half-written file.
    partial = path.with_name(f"{path.name}.part-{os.getpid()}")
    sha = hashlib.sha256()
    try:
        build_zip(job.project, partial, job.real_names, progress)
        with open(partial, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                sha.update(block)
        os.replace(partial, path)
    except Exception as exc:
        partial.unlink(missing_ok=True)
        job.status, job.error = ExportJob.Status.FAILED, f"{type(exc).__name__}: {exc}"
        job.finished_at = timezone.now()
        job.save(update_fields=["status", "error", "finished_at"])
        raise
    job.status, job.progress, job.step = ExportJob.Status.DONE, 100, "done"
    job.file_path = str(path.relative_to(settings.EXPORT_ROOT))
    job.size, job.sha256, job.finished_at = path.stat().st_size, sha.hexdigest(), timezone.now()
    job.save()
    return job


def start_export(project: Project, user, real_names: bool = False) -> ExportJob:
    """Create a job and queue it once the transaction commits."""
    from django.db import transaction

    from dataset.tasks import run_export

    job = ExportJob.objects.create(project=project, requested_by=user, real_names=real_names)
    transaction.on_commit(lambda: run_export.delay(job.pk))
    return job
