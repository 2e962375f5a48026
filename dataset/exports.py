"""Export a project's dataset in the study's shapes, streaming, and bundle it as a ZIP.

Formats: (a) per repository `Issue_URL,Label1..LabelK,Final_Label` (UTF-8 with BOM, rows in
queue order, which is the file order for an imported study); (b) JSON Lines, one issue per line
with its text, comments, every annotation revision and the final label; (c) the taxonomy
detail CSVs `rootcause,subcategory,symptoms` with annotators' summaries under each sub-theme;
(d) Table I; (e) the agreement table; (f) the machine raters' current labels
(`machine_labels.csv`, never counted in any of the above). Every writer takes a text stream and
reads the database in chunks, so memory stays flat however large the project is.

Labels are written in the project's current taxonomy version, read through the lineage
(`taxonomy.lineage.Translator`): a label made before a rename, move, merge or split comes out
as its counterpart today (a merged theme as its target). A label whose node has no counterpart
keeps its original code and is listed in the manifest. The JSON Lines carry both codes.

Scope: by default only final issues (what the API shows a researcher); a lead or admin may ask
for every issue, and the study CSVs then gain a `Status` column.

Spreadsheet safety: every CSV goes through `lib.csvsafe`. The study-format label files are the
exception that must round-trip byte for byte, so their cells are validated instead: an
`Issue_URL` that is not a forge issue URL naming that very issue is replaced by the issue's
canonical URL, and a label that is not a code is neutralised; both are listed in the manifest.

Annotators appear under their membership pseudonyms (stable: stored on the membership), unless
an admin asks for real names.
"""

from __future__ import annotations

import csv
import glob
import hashlib
import io
import json
import os
import re
import zipfile
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import IO, TextIO

from django.conf import settings
from django.contrib.auth.models import User
from django.db import connection, transaction
from django.db.models import CharField, F, Func, Q, QuerySet, Value
from django.utils import timezone, translation

from agreement.measures import agreement_report, report_rows
from agreement.table_one import COUNT_ISSUES, TYPE_COLUMNS, YEARS, table_one
from annotator import outbox
from annotator.models import Project
from annotator.pseudonyms import natural_order, pseudonyms, unnamed
from dataset.forges import study_issue_url
from dataset.models import ExportJob
from ingest.models import Comment, Issue, Repository
from labeling.labels import KEY_FIELDS, LABEL_FIELDS, NODE_FIELDS
from labeling.models import Annotation, MachineLabel, ProjectIssue, Resolution
from lib import csvsafe, diskspace
from taxonomy.detail_files import study_file_name, write_detail_csv
from taxonomy.lineage import LabelInVersion, Translator
from taxonomy.models import TaxonomyNode, TaxonomyVersion

BOM = "\ufeff"
CHUNK = 2000
Progress = Callable[[str, int, int], None]


def rater_columns(project: Project) -> list[int]:
    """User ids of the project's annotators in Label-column order (rater-1, rater-2, …)."""
    names = pseudonyms(project)
    labeled = set(
        Annotation.objects.filter(project=project, is_current=True)
        .order_by()
        .values_list("annotator_id", flat=True)
        .distinct()
    )
    return sorted(labeled, key=lambda u: natural_order(names.get(u) or unnamed(u)))


# A label cell of the study's files: "FP" or a code such as A, C.5, C.5.ii (letters and digits
# between dots). Anything else (a code imported from a hostile taxonomy file) is neutralised.
STUDY_CODE = re.compile(r"FP|[A-Za-z0-9]+(?:\.[A-Za-z0-9]+)*")


@dataclass
class ExportContext:
    """What every writer of one export shares: the scope, the labels' reader and the notes
    that end up in the manifest."""

    project: Project
    everything: bool = False
    # How table_one.csv counts: "issues" (each once) or "rows" (each published row, as the
    # paper; `agreement.table_one`).
    count: str = COUNT_ISSUES
    translator: Translator = field(init=False)
    version: TaxonomyVersion = field(init=False)
    replaced_urls: list[dict] = field(default_factory=list)
    neutralised_cells: list[dict] = field(default_factory=list)
    _version_names: dict[int, str] = field(default_factory=dict, repr=False)
    _summaries: dict[str, list[str]] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.version = TaxonomyVersion.objects.get(pk=self.project.taxonomy_version_id)
        self.translator = Translator(self.version)
        # Every node any label of the project points at, in one query per table.
        ids: set[int] = set()
        for model in (Annotation, Resolution):
            for row in (
                model.objects.filter(project=self.project)
                .order_by()
                .values_list(*NODE_FIELDS)
                .distinct()
            ):
                ids.update(pk for pk in row if pk)
        self.translator.load(ids)

    def scope(self) -> QuerySet[ProjectIssue]:
        """The project's issues this export holds: final ones unless everything was asked."""
        issues = ProjectIssue.objects.filter(project=self.project)
        if not self.everything:
            issues = issues.filter(status=ProjectIssue.Status.FINAL)
        return issues

    def label(
        self, is_false_positive: bool, type_id: int | None, theme_id: int | None, sub_id: int | None
    ) -> LabelInVersion:
        return self.translator.label_from_ids(is_false_positive, type_id, theme_id, sub_id)

    def version_name(self, version_id: int) -> str:
        if version_id not in self._version_names:
            self._version_names[version_id] = str(TaxonomyVersion.objects.get(pk=version_id))
        return self._version_names[version_id]

    def summaries(self) -> dict[str, list[str]]:
        """Current sub-theme code → the annotators' summaries of the export's issues labeled
        with it (read under the project's version; a label without counterpart has none)."""
        if self._summaries is None:
            self._summaries = defaultdict(list)
            for summary, *ids in (
                Annotation.objects.filter(
                    project=self.project,
                    is_current=True,
                    is_false_positive=False,
                    issue_id__in=self.scope().values("issue_id"),
                )
                .exclude(summary="")
                .order_by("pk")
                .values_list("summary", *KEY_FIELDS)
                .iterator(chunk_size=CHUNK)
            ):
                label = self.label(*ids)
                if label.sub_theme is not None and not label.unmapped:
                    self._summaries[label.sub_theme.code].append(summary)
        return self._summaries


def cell_code(label: LabelInVersion) -> str:
    """What a label cell holds: the current version's code, or the original one when the label
    has no counterpart in it (listed in the manifest, never dropped)."""
    return label.original_code if label.unmapped else label.code


def _context(project_or_context: Project | ExportContext) -> ExportContext:
    if isinstance(project_or_context, ExportContext):
        return project_or_context
    return ExportContext(project_or_context)


def repositories(project_or_context: Project | ExportContext) -> list[Repository]:
    """The repositories of the issues an export holds, by owner and name."""
    ctx = _context(project_or_context)
    return list(
        Repository.objects.filter(issues__project_issues__in=ctx.scope())
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


def _study_code(ctx: ExportContext, label: LabelInVersion | None, url: str, column: str) -> str:
    """A label cell of the study format, validated: a code, "FP" or empty; anything else is
    neutralised for spreadsheets and listed in the manifest."""
    if label is None:
        return ""
    code = cell_code(label)
    if code and not STUDY_CODE.fullmatch(code):
        ctx.neutralised_cells.append({"issue": url, "column": column, "value": code})
        return csvsafe.neutralise(code)
    return code


def write_study_csv(
    project_or_context: Project | ExportContext,
    repository: Repository,
    out: TextIO,
    raters: list[int] | None = None,
) -> int:
    """Write one repository's rows in the study's format; return the number of rows.

    Study format: the file must round-trip exactly, so its cells are validated rather than
    passed through `lib.csvsafe` (see the module docstring).
    """
    ctx = _context(project_or_context)
    project = ctx.project
    raters = rater_columns(project) if raters is None else raters
    column = {user_id: i for i, user_id in enumerate(raters)}
    out.write(BOM)
    writer = csv.writer(out, lineterminator="\n")
    label_columns = [f"Label{i}" for i in range(1, len(raters) + 1)]
    writer.writerow(
        ["Issue_URL", *label_columns, "Final_Label", *(["Status"] if ctx.everything else [])]
    )
    # (id, url, number, status) of one repository are small; a server-side cursor costs more.
    scope = list(
        ctx.scope()
        .filter(issue__repository=repository)
        .order_by("position", "pk")
        .values_list("issue_id", "issue__url", "issue__number", "status")
    )
    rows = 0
    for chunk in chunks(iter(scope), CHUNK):
        ids = [row[0] for row in chunk]
        labels: dict[int, list[LabelInVersion | None]] = defaultdict(lambda: [None] * len(raters))
        for issue_id, user_id, *label_ids in (
            Annotation.objects.filter(project=project, is_current=True, issue_id__in=ids)
            .order_by()
            .values_list("issue_id", "annotator_id", *KEY_FIELDS)
        ):
            if user_id in column:
                labels[issue_id][column[user_id]] = ctx.label(*label_ids)
        finals = {
            issue_id: ctx.label(*label_ids)
            for issue_id, *label_ids in Resolution.objects.filter(
                project=project, is_current=True, issue_id__in=ids
            )
            .order_by()
            .values_list("issue_id", *KEY_FIELDS)
        }
        for issue_id, url, number, status in chunk:
            written = url
            replacement = study_issue_url(url, repository, number)
            if replacement is not None:
                ctx.replaced_urls.append({"issue": replacement, "stored_url": url})
                written = replacement
            cells = [
                _study_code(ctx, label, written, name)
                for label, name in zip(labels[issue_id], label_columns, strict=True)
            ]
            final = _study_code(ctx, finals.get(issue_id), written, "Final_Label")
            writer.writerow([written, *cells, final, *([status] if ctx.everything else [])])
            rows += 1
    return rows


def unmapped_labels(project_or_context: Project | ExportContext) -> list[dict]:
    """Current labels of the export's issues whose node has no counterpart in the project's
    version: exported with their original code, and listed here for the manifest."""
    ctx = _context(project_or_context)
    out: list[dict] = []
    names = pseudonyms(ctx.project)
    scope = ctx.scope().values("issue_id")
    for model, who in ((Annotation, "annotator_id"), (Resolution, None)):
        current = model.objects.filter(project=ctx.project, is_current=True, issue_id__in=scope)
        # Few distinct labels however many rows: find the unmapped ones first.
        unmapped = [
            ids
            for ids in current.order_by().values_list(*KEY_FIELDS).distinct()
            if ctx.label(*ids).unmapped
        ]
        if not unmapped:
            continue
        match = Q()
        for ids in unmapped:
            match |= Q(**dict(zip(KEY_FIELDS, ids, strict=True)))
        fields = ["issue__url", *KEY_FIELDS, *([who] if who else [])]
        for row in current.filter(match).order_by("issue_id", "pk").values_list(*fields):
            label = ctx.label(*row[1:5])
            assert label.original is not None  # an unmapped label has its own node
            out.append(
                {
                    "issue": row[0],
                    "label": names.get(row[5]) or unnamed(row[5]) if who else "final",
                    "original_code": label.original_code,
                    "original_version": ctx.version_name(label.original.version_id),
                }
            )
    return out


def chunks(iterator: Iterator, size: int) -> Iterator[list]:
    """Lists of `size` items from `iterator` in order (the last one shorter)."""
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


def _iso_sql(field: str) -> F | Func:
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


def _code_of(node: TaxonomyNode | None) -> str | None:
    return node.code if node is not None else None


def _label_values(ctx: ExportContext, row: dict) -> dict:
    """A label as the JSON Lines write it: in the export's version, with the original beside."""
    label = ctx.label(*(row[name] for name in KEY_FIELDS))
    original = label.original
    return {
        "code": cell_code(label),
        "type": _code_of(label.issue_type),
        "theme": _code_of(label.theme),
        "sub_theme": _code_of(label.sub_theme),
        "is_false_positive": row["is_false_positive"],
        "false_positive_reason": row["false_positive_reason"],
        "in_current_version": not label.unmapped,
        "original_code": label.original_code,
        "original_version": ctx.version_name(original.version_id) if original else None,
    }


def write_jsonl(
    project_or_context: Project | ExportContext,
    out: TextIO,
    real_names: bool = False,
    progress: Progress | None = None,
) -> int:
    """One JSON object per issue of the export: everything known about it.

    Plain value queries per chunk of issues (no model instances): a full study's 270,000
    annotations would otherwise dominate the export's time.
    """
    ctx = _context(project_or_context)
    project = ctx.project
    names = pseudonyms(project, real_names)
    scope = ctx.scope().order_by("position", "pk")
    total = scope.count()
    done = 0
    rows = scope.values_list("issue_id", "status", "is_pilot", "recall_probe")
    for chunk in chunks(iter(list(rows)), CHUNK):
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
                *LABEL_FIELDS,
                created=_iso_sql("created_at"),
            )
        ):
            annotations[row["issue_id"]].append(
                {
                    "annotator": names.get(row["annotator_id"]) or unnamed(row["annotator_id"]),
                    "revision": row["revision"],
                    "is_current": row["is_current"],
                    **_label_values(ctx, row),
                    "summary": row["summary"],
                    "created_at": _iso(row["created"]),
                }
            )
        resolutions: dict[int, list] = defaultdict(list)
        for row in (
            Resolution.objects.filter(project=project, issue_id__in=ids)
            .order_by("issue_id", "decided_at", "pk")
            .values("issue_id", "is_current", "method", "decided_at", "note", *LABEL_FIELDS)
        ):
            resolutions[row["issue_id"]].append(row)
        for issue_id, status, is_pilot, probe in chunk:
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
                # A dropped issue drawn to measure the keyword filter's recall (dataset.recall).
                "recall_probe": probe is not None,
                "comments": comments.get(issue_id, []),
                "annotations": annotations.get(issue_id, []),
                "resolution": None,
                "resolution_history": [],
            }
            for r in resolutions.get(issue_id, []):
                entry = {
                    **_label_values(ctx, r),
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


def type_codes(project_or_context: Project | ExportContext) -> list[str]:
    """The issue types of the export's taxonomy version, in order: one detail file each."""
    ctx = _context(project_or_context)
    return list(
        ctx.version.nodes.filter(level=TaxonomyNode.Level.TYPE)
        .order_by("position", "pk")
        .values_list("code", flat=True)
    )


def write_taxonomy_details(
    project_or_context: Project | ExportContext, type_code: str, out: TextIO
) -> int:
    """`rootcause,subcategory,symptoms` for one type, one row per sub-theme of the project's
    version, in the study's file shape (`taxonomy.detail_files.write_detail_csv`, spreadsheet-safe):
    the version's details, then the annotators' summaries of the export's issues labeled with
    that sub-theme (read through the lineage, so a summary follows its sub-theme's moves)."""
    ctx = _context(project_or_context)
    return write_detail_csv(out, ctx.version, type_code, ctx.summaries())


def write_table_one(project_or_context: Project | ExportContext, out: TextIO) -> int:
    """Table I as CSV, counted as the context asks (`count`). "screened finals" is the rate's
    denominator: the finals that could carry a false-positive mark (not imported;
    `agreement.table_one`); where there is none, the false positives and the rate are empty
    cells, never 0."""
    ctx = _context(project_or_context)
    rows, total = table_one(ctx.project, ctx.count)
    writer = csvsafe.writer(out)
    writer.writerow(
        [
            "repository",
            *map(str, YEARS),
            "other years",
            *(n for _, n in TYPE_COLUMNS),
            "final",
            "screened finals",
            "false positives",
            "false positive rate",
        ]
    )
    for row in [*rows, total]:
        rate = row.average_rate if row is total else row.false_positive_rate
        false_positives = row.known_false_positives
        writer.writerow(
            [
                row.name,
                *(row.years[y] for y in YEARS),
                row.other_years,
                *(row.types[c] for c, _ in TYPE_COLUMNS),
                row.final,
                row.screened,
                "" if false_positives is None else false_positives,
                "" if rate is None else f"{rate:.4f}",
            ]
        )
    return len(rows) + 1


MACHINE_LABEL_COLUMNS = [
    "Issue_URL",
    "rater",
    "kind",
    "model",
    "label",
    "confidence",
    "confidence_from",
    "created_at",
]


def confidence_source(kind: str, confidence: float | None, stored: object) -> str:
    """Where a machine label's confidence comes from: an llm label's own record ("logprobs",
    "samples"; "agreement" in labels stored before it was called "samples"), "probability"
    for the classifier's class probability, "" for no confidence."""
    if confidence is None:
        return ""
    if kind == "classifier":
        return "probability"
    return "samples" if stored == "agreement" else str(stored or "")


def write_machine_labels_csv(project_or_context: Project | ExportContext, out: TextIO) -> int:
    """`machine_labels.csv`: one row per issue of the export and machine rater, with the rater's
    current label (a code under the project's version, or "FP"; empty for an invalid output).
    A final issue's label is the out-of-sample one (`raters.classifier`)."""
    ctx = _context(project_or_context)
    writer = csvsafe.writer(out)
    writer.writerow(MACHINE_LABEL_COLUMNS)
    rows = (
        MachineLabel.objects.filter(
            rater__project=ctx.project,
            is_current=True,
            issue_id__in=ctx.scope().values("issue_id"),
        )
        .order_by("issue_id", "rater__name")
        .values_list(
            "issue__url",
            "rater__name",
            "rater__kind",
            "model",
            "valid",
            *KEY_FIELDS,
            "confidence",
            "created_at",
            "parameters__confidence_from",
        )
    )
    # The nodes the labels point at (a label made before a taxonomy edit, in an older version).
    nodes: set[int] = set()
    for row in rows.values_list(*NODE_FIELDS).distinct():
        nodes.update(pk for pk in row if pk)
    ctx.translator.load(nodes)
    n = 0
    for url, name, kind, model, valid, *rest in rows.iterator(chunk_size=CHUNK):
        ids, confidence, created_at, source = rest[:4], rest[4], rest[5], rest[6]
        code = cell_code(ctx.label(*ids)) if valid else ""
        writer.writerow(
            [url, name, kind, model, code, "" if confidence is None else round(confidence, 6),
             confidence_source(kind, confidence, source), _iso(created_at)]
        )  # fmt: skip
        n += 1
    return n


# Figures in agreement.csv: six decimals, as the study reported its kappas.
AGREEMENT_DECIMALS = 6


def write_agreement_csv(project_or_context: Project | ExportContext, out: TextIO) -> int:
    ctx = _context(project_or_context)
    rows = report_rows(agreement_report(ctx.project))
    writer = csvsafe.writer(out)
    if not rows:
        return 0
    writer.writerow(list(rows[0]))
    for row in rows:
        writer.writerow(
            [
                "" if v is None else round(v, AGREEMENT_DECIMALS) if isinstance(v, float) else v
                for v in row.values()
            ]
        )
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
    project: Project,
    path: Path,
    real_names: bool = False,
    progress: Progress | None = None,
    everything: bool = False,
    count: str = COUNT_ISSUES,
) -> dict:
    """Write every format into a ZIP at `path` with a manifest; return the manifest.

    `everything`: every issue of the project with its status (for leads and admins), instead of
    the final issues only. `count`: how table_one.csv counts ("issues" or "rows").
    """
    ctx = ExportContext(project, everything=everything, count=count)
    steps: list[tuple[str, Callable[[TextIO], object]]] = []
    taken: set[str] = set()
    raters = rater_columns(project)
    for repo in repositories(ctx):
        name = study_filename(repo, taken)
        steps.append((f"labels/{name}", partial(write_study_csv, ctx, repo, raters=raters)))
    steps.append(("issues.jsonl", lambda out: write_jsonl(ctx, out, real_names)))
    for code in type_codes(ctx):
        steps.append(
            (
                f"taxonomy/{study_file_name(code)}",
                partial(write_taxonomy_details, ctx, code),
            )
        )
    steps.append(("table_one.csv", lambda out: write_table_one(ctx, out)))
    steps.append(("agreement.csv", lambda out: write_agreement_csv(ctx, out)))
    steps.append(("machine_labels.csv", lambda out: write_machine_labels_csv(ctx, out)))

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
            "taxonomy_version": str(ctx.version),
            "taxonomy_version_id": ctx.version.pk,
            "exported_at": timezone.now().isoformat(),
            "pseudonymous": not real_names,
            "scope": "all issues, with their status" if everything else "final issues",
            "issues": ctx.scope().count(),
            "table_one_counts": ctx.count,
            # Labels written with their original code: no counterpart in taxonomy_version.
            "labels_without_counterpart": unmapped_labels(ctx),
            # Study-format cells validated instead of neutralised, and what was changed.
            "replaced_issue_urls": ctx.replaced_urls,
            "neutralised_label_cells": ctx.neutralised_cells,
            "files": files,
        }
        zf.writestr("manifest.json", json.dumps(manifest, indent=2, ensure_ascii=False))
    if progress:
        progress("done", len(steps), len(steps))
    return manifest


def export_path(job: ExportJob) -> Path:
    return Path(settings.EXPORT_ROOT) / str(job.project_id) / job.filename


def run_export_job(job_id: int) -> ExportJob:
    """Build the job's ZIP; safe to run twice (a finished job is left as it is). In English
    whatever the language of the request that queued it (see `build_release`)."""
    with translation.override("en"):
        return _run_export_job(job_id)


def _run_export_job(job_id: int) -> ExportJob:
    """Built by the delivery that claims the job (`lib.jobs.Job.run_claimed`), so a redelivered
    task never builds it twice at once; a done job is left as it is. Raises `jobclaim.Busy`
    while another live process builds it. A failed job is built again; one `running` under a
    worker that is gone (killed mid-build; its task delivered again) is taken over."""
    job = ExportJob.objects.select_related("project__taxonomy_version").get(pk=job_id)
    return job.run_claimed(_build)


def _build(job: ExportJob) -> ExportJob:
    progress = job.report

    path = export_path(job)
    # Written beside its final name and renamed when complete: a download never sees a
    # half-written file.
    partial = path.with_name(f"{path.name}.part-{os.getpid()}")
    # What a worker killed mid-build left beside the name (this job is ours now).
    for left in path.parent.glob(f"{glob.escape(path.name)}.part-*"):
        left.unlink(missing_ok=True)
    sha = hashlib.sha256()
    try:
        build_zip(job.project, partial, job.real_names, progress, job.everything)
        with open(partial, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                sha.update(block)
        # Renamed to its name only by the worker that still owns the job (`Job.end`): one taken
        # over meanwhile never replaces the file of the worker that took it over.
        ended = job.end(
            ExportJob.Status.DONE,
            publish=lambda: os.replace(partial, path),
            step="done",
            file_path=str(path.relative_to(settings.EXPORT_ROOT)),
            size=partial.stat().st_size,
            sha256=sha.hexdigest(),
        )
    except Exception as exc:
        partial.unlink(missing_ok=True)
        job.end(ExportJob.Status.FAILED, error=diskspace.job_error(exc))
        raise
    if not ended:
        partial.unlink(missing_ok=True)
    return job


# -- asking for an export --------------------------------------------------------------------

# The export's task is named by its Celery name (`ExportJob.TASK`): dataset.tasks calls this
# module, never the reverse, so a page that asks for an export imports no Celery
# (annotator.outbox).


def start_export(
    project: Project, user: User, real_names: bool = False, everything: bool = False
) -> ExportJob:
    """Create a job and queue it once the transaction commits (through the outbox, so a
    broker that is away leaves it waiting for a worker, not lost)."""
    with transaction.atomic():
        job = ExportJob.objects.create(
            project=project, requested_by=user, real_names=real_names, everything=everything
        )
        outbox.enqueue(job.TASK, job.task_args())
    return job
