"""Releases: a project's final dataset frozen under a semantic version, with standard metadata.

A lead or admin asks for a release (`create_release`: the version is X.Y.Z and greater than the
project's latest release); `build_release` writes it once — the page and the API queue it as a
Celery task (`start_release`), `manage.py release` runs it inline. The ZIP holds the final
issues only (what a researcher sees), in the export's formats (`dataset.exports`
writers) plus:

- `final_labels.csv`: one row per issue with its final label and the resolution behind it;
  the next release's diff is read from it, so a diff never depends on today's database;
- `changes.csv`: the diff against the previous release (`diff_releases`);
- `machine_labels.csv` (the export's) and `machine_raters.json` (`raters.describe`): the machine
  raters' current labels and what each rater is (header / empty list without raters);
- `datapackage.json` (Frictionless Data Package, a Table Schema per CSV with the taxonomy's
  codes as enums), `croissant.json` (ML Croissant 1.0), `CITATION.cff`, `DATASHEET.md`
  (`dataset.datasheet`), `README.md` (a HuggingFace dataset card whose `configs` are the tables
  with rows: `datasets.load_dataset` refuses a header-only file);
- `manifest.json`: every other file with its SHA-256 and size.

Immutability: the files are built in a private directory, zipped to a temporary name and
linked to the final name with `os.link`, which refuses to replace an existing file; nothing
rebuilds a release that is done, and the model refuses changes to its frozen fields. The build
reads the database in one REPEATABLE READ transaction (on PostgreSQL), so every file describes
the same moment even while volunteers keep labeling; progress goes through the cache.
"""

from __future__ import annotations

import csv
import glob
import hashlib
import io
import json
import os
import re
import shutil
import zipfile
from collections import Counter
from collections.abc import Callable
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any, TextIO

from django.conf import settings
from django.contrib.auth.models import User
from django.core.cache import cache
from django.db import connection, transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone, translation
from django.utils.translation import gettext

from agreement.measures import agreement_report, report_rows
from annotator import outbox
from annotator.models import Project
from annotator.pseudonyms import pseudonyms, unnamed
from dataset import datasheet, metadata
from dataset.exports import (
    CHUNK,
    ExportContext,
    cell_code,
    chunks,
    rater_columns,
    repositories,
    study_filename,
    type_codes,
    unmapped_labels,
    write_agreement_csv,
    write_jsonl,
    write_machine_labels_csv,
    write_study_csv,
    write_table_one,
)
from dataset.models import Release
from dataset.release_diff import ReleaseDiff, diff_labels, write_changes
from labeling.labels import KEY_FIELDS, LABEL_FIELDS
from labeling.models import Annotation, DiscussionMessage, ProjectIssue, Resolution
from lib import csvsafe, diskspace, jobclaim
from lib.refusal import Refusal
from raters.describe import describe_raters
from taxonomy.detail_files import (
    BOM,
    DETAIL_COLUMNS,
    detail_cells,
    file_order,
    study_file_name,
    summary_item,
)

SEMVER = re.compile(r"(0|[1-9][0-9]{0,5})\.(0|[1-9][0-9]{0,5})\.(0|[1-9][0-9]{0,5})")
Progress = Callable[[str, int, int], None]

FINAL_LABELS = "final_labels.csv"
CHANGES = "changes.csv"
MACHINE_LABELS = "machine_labels.csv"
MACHINE_RATERS = "machine_raters.json"
# The HuggingFace dataset card: which tables `datasets.load_dataset` reads (`metadata`).
DATASET_CARD = "README.md"
FINAL_COLUMNS = [
    "issue_url",
    "repository",
    "number",
    "final_label",
    "issue_type",
    "theme",
    "sub_theme",
    "is_false_positive",
    "false_positive_reason",
    "is_pilot",
    # A dropped issue drawn to measure the keyword filter's recall (dataset.recall).
    "recall_probe",
    "resolution_method",
    "decided_by",
    "decided_at",
]


def parse_version(text: str) -> tuple[int, int, int]:
    """X.Y.Z as three integers; Refusal naming `version` otherwise."""
    match = SEMVER.fullmatch((text or "").strip())
    if match is None:
        raise Refusal(
            "version",
            gettext(
                "“%(version)s” is not a semantic version MAJOR.MINOR.PATCH such as 1.0.0 "
                "(numbers without leading zeros)"
            )
            % {"version": (text or "")[:40]},
        )
    major, minor, patch = (int(g) for g in match.groups())
    return major, minor, patch


def version_key(release: Release) -> tuple[int, int, int]:
    return parse_version(release.version)


def latest_release(project: Project, done_only: bool = False) -> Release | None:
    """The project's release with the greatest version (failed builds do not count)."""
    releases = Release.objects.filter(project=project).exclude(status=Release.Status.FAILED)
    if done_only:
        releases = releases.filter(status=Release.Status.DONE)
    return max(releases, key=version_key, default=None)


def previous_release(release: Release) -> Release | None:
    """The done release of the same project with the greatest version below this one's."""
    mine = version_key(release)
    earlier = [
        r
        for r in Release.objects.filter(project_id=release.project_id, status=Release.Status.DONE)
        if r.pk != release.pk and version_key(r) < mine
    ]
    return max(earlier, key=version_key, default=None)


LICENCE = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+-]{0,99}")
MAX_TITLE = 300


def citation_defaults(project: Project) -> dict[str, str]:
    """What a new release is cited as unless the lead says otherwise: the project's name,
    default authors (`Project.citation_authors`) and licence. The release form, the API and
    `manage.py release` all start from these."""
    return {
        "title": project.name,
        "authors": project.citation_authors or "",
        "licence": project.licence or "",
    }


def clean_citation(title: str, authors: str, licence: str) -> dict[str, str]:
    """The citation fields checked (Refusal naming the field, and the author's line)."""
    title = " ".join((title or "").split())
    if not title:
        raise Refusal("title", gettext("a release needs a title"))
    if len(title) > MAX_TITLE:
        raise Refusal("title", gettext("at most %(limit)s characters") % {"limit": MAX_TITLE})
    licence = (licence or "").strip()
    if not LICENCE.fullmatch(licence):
        raise Refusal("licence", gettext("an SPDX licence identifier such as CC-BY-4.0"))
    try:
        metadata.parse_authors(authors)
    except metadata.CitationError as exc:
        raise Refusal("authors", str(exc)) from exc
    # Stored one author a line, as CITATION.cff lists them ("a; b" on a line becomes two).
    lines = [entry for _, entry in metadata.author_entries(authors)]
    return {"title": title, "authors": "\n".join(lines), "licence": licence}


def create_release(
    project: Project,
    user: Any,
    version: str,
    note: str = "",
    title: str | None = None,
    authors: str | None = None,
    licence: str | None = None,
) -> Release:
    """Record a release to build: validates the version against the project's releases and
    the citation (title, authors one per line, licence; each left out is the project's, see
    `citation_defaults`; no authors is allowed and leaves the citation incomplete).

    Refused (Refusal naming the field) when the version is not X.Y.Z, is not greater than
    the latest release, another release is still being built, or no issue is final yet.
    """
    parsed = parse_version(version)
    version = ".".join(map(str, parsed))
    defaults = citation_defaults(project)
    citation = clean_citation(
        defaults["title"] if title is None else title,
        defaults["authors"] if authors is None else authors,
        defaults["licence"] if licence is None else licence,
    )
    with transaction.atomic():
        # One release request of a project at a time decides what "latest" is.
        Project.objects.select_for_update().filter(pk=project.pk).first()
        if Release.objects.filter(
            project=project, status__in=[Release.Status.PENDING, Release.Status.RUNNING]
        ).exists():
            raise Refusal(
                "version",
                gettext("another release of this project is being built; wait until it is done"),
            )
        latest = latest_release(project)
        if latest is not None and version_key(latest) >= parsed:
            raise Refusal(
                "version",
                gettext("%(version)s is not greater than the latest release, %(latest)s")
                % {"version": version, "latest": latest.version},
            )
        if not ProjectIssue.objects.filter(
            project=project, status=ProjectIssue.Status.FINAL
        ).exists():
            raise Refusal("version", gettext("the project has no final issue to release yet"))
        return Release.objects.create(
            project=project,
            version=version,
            note=(note or "").strip(),
            requested_by=user if getattr(user, "is_authenticated", False) else None,
            **citation,
        )


def citation_complete(release: Release) -> bool:
    """Whether the release names an author (else its citation says it is incomplete)."""
    return bool(release.authors.strip())


def release_path(release: Release) -> Path:
    """Where a release's ZIP lives: derived from ids, never from user input."""
    return Path(settings.EXPORT_ROOT) / str(release.project_id) / "releases" / release.filename


def progress_key(release_id: int) -> str:
    return f"release-progress:{release_id}"


def progress_of(release: Release) -> tuple[int, str]:
    """(percent, step) of a build: from the cache while it runs, from the row otherwise."""
    if release.status == Release.Status.RUNNING:
        value = cache.get(progress_key(release.pk))
        if value:
            return int(value[0]), str(value[1])
    return release.progress, release.step


# -- Final labels and the diff between releases -----------------------------------------------


def write_final_labels(ctx: ExportContext, out: TextIO) -> int:
    """One row per final issue: its final label in the release's version and the current
    resolution (method, who decided under their pseudonym, when)."""
    names = pseudonyms(ctx.project)
    writer = csvsafe.writer(out)
    writer.writerow(FINAL_COLUMNS)
    rows = 0
    scope = (
        ctx.scope()
        .order_by("position", "pk")
        .values_list(
            "issue_id",
            "issue__url",
            "issue__repository__owner",
            "issue__repository__name",
            "issue__number",
            "is_pilot",
            "recall_probe",
        )
        .iterator(chunk_size=CHUNK)
    )
    # The final labels per chunk of issues, not all at once: a dict of every resolution grew
    # with the project (~400 MB at ten times the study, issue #30).
    for chunk in chunks(scope, CHUNK):
        finals = {
            row["issue_id"]: row
            for row in Resolution.objects.filter(
                project=ctx.project, is_current=True, issue_id__in=[c[0] for c in chunk]
            )
            .order_by()
            .values("issue_id", "method", "decided_by_id", "decided_at", *LABEL_FIELDS)
        }
        rows += _write_final_rows(ctx, writer, names, chunk, finals)
    return rows


def _write_final_rows(
    ctx: ExportContext,
    writer: Any,
    names: dict[int, str],
    chunk: list[tuple],
    finals: dict[int, dict[str, Any]],
) -> int:
    """`write_final_labels`' rows for one chunk of issues and their current resolutions."""
    rows = 0
    for issue_id, url, owner, name, number, is_pilot, probe in chunk:
        final = finals.get(issue_id)
        label = None if final is None else ctx.label(*(final[k] for k in KEY_FIELDS))
        decider = final["decided_by_id"] if final else None
        writer.writerow(
            [
                url,
                f"{owner}/{name}",
                number,
                cell_code(label) if label else "",
                label.issue_type.code if label and label.issue_type else "",
                label.theme.code if label and label.theme else "",
                label.sub_theme.code if label and label.sub_theme else "",
                "true" if label and label.is_false_positive else "false",
                final["false_positive_reason"] if final else "",
                "true" if is_pilot else "false",
                "true" if probe is not None else "false",
                final["method"] if final else "",
                names.get(decider) or unnamed(decider) if decider else "",
                final["decided_at"].isoformat() if final and final["decided_at"] else "",
            ]
        )
        rows += 1
    return rows


def read_final_labels(release: Release) -> dict[str, dict[str, str]]:
    """A done release's `final_labels.csv`, by issue URL, read from its ZIP."""
    with zipfile.ZipFile(release_path(release)) as zf, zf.open(FINAL_LABELS) as fh:
        reader = csv.DictReader(io.TextIOWrapper(fh, encoding="utf-8", newline=""))
        return {row["issue_url"]: row for row in reader}


def diff_releases(old: Release | None, new: Release) -> ReleaseDiff:
    """The diff between two done releases, read from their files."""
    before = read_final_labels(old) if old is not None else {}
    return diff_labels(
        before,
        read_final_labels(new),
        old.version if old else None,
        new.version,
        old.taxonomy_version if old else None,
        new.taxonomy_version,
    )


def write_release_details(ctx: ExportContext, type_code: str, out: TextIO) -> int:
    """One type's taxonomy details as the export writes them (`rootcause,subcategory,symptoms`,
    with the annotators' summaries), except that a row the study's file spilled over several
    cells is written as one cell: every row then has the three columns its Table Schema
    declares (the items, joined by commas, are the same)."""
    summaries = ctx.summaries()
    out.write(BOM)
    writer = csvsafe.writer(out)
    writer.writerow(DETAIL_COLUMNS)
    pairs = file_order(ctx.version, type_code)
    for theme, sub in pairs:
        extra = [summary_item(t) for t in summaries.get(sub.code, []) if t.strip()]
        writer.writerow([theme.name, sub.name, ",".join(detail_cells(sub, extra, True))])
    return len(pairs)


def write_machine_raters(raters: list[dict[str, Any]], out: TextIO) -> None:
    """`machine_raters.json`: every machine rater as `raters.describe` describes it."""
    json.dump({"machine_raters": raters}, out, indent=2, ensure_ascii=False)
    out.write("\n")


# -- Building ----------------------------------------------------------------------------------


def _sha256(path: Path) -> str:
    sha = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            sha.update(block)
    return sha.hexdigest()


def release_counts(ctx: ExportContext) -> dict[str, Any]:
    """What the release holds, for its listing and its datasheet."""
    scope = ctx.scope()
    finals = Resolution.objects.filter(
        project=ctx.project, is_current=True, issue_id__in=scope.values("issue_id")
    )
    types: Counter[str] = Counter()
    for ids, n in Counter(finals.order_by().values_list(*KEY_FIELDS)).items():
        label = ctx.label(*ids)
        key = (
            "FP" if label.is_false_positive else (label.issue_type.code if label.issue_type else "")
        )
        types[key or "unlabeled"] += n
    by_repo = Counter(
        f"{o}/{n}"
        for o, n in scope.values_list("issue__repository__owner", "issue__repository__name")
    )
    annotations = Annotation.objects.filter(
        project=ctx.project, is_current=True, issue_id__in=scope.values("issue_id")
    )
    return {
        "issues": scope.count(),
        "repositories": dict(sorted(by_repo.items())),
        "types": dict(sorted(types.items())),
        "false_positives": types.get("FP", 0),
        "annotations": annotations.count(),
        "annotators": annotations.order_by().values("annotator_id").distinct().count(),
        "pilot_issues": scope.filter(is_pilot=True).count(),
        "resolution_methods": dict(
            sorted(Counter(finals.order_by().values_list("method", flat=True)).items())
        ),
        # "Consensus after discussion" with no message before the decision: recorded before
        # the tool asked for a discussion (issue #28); they keep their stored method, and the
        # datasheet says how many.
        "consensus_without_discussion": finals.filter(method=Resolution.Method.CONSENSUS)
        .exclude(
            Exists(
                DiscussionMessage.objects.filter(
                    project_issue__project_id=OuterRef("project_id"),
                    project_issue__issue_id=OuterRef("issue_id"),
                    created_at__lte=OuterRef("decided_at"),
                )
            )
        )
        .count(),
    }


def _write(directory: Path, name: str, write: Callable[[TextIO], object]) -> None:
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    # newline="" keeps the csv module's line endings byte for byte.
    with open(path, "w", encoding="utf-8", newline="") as out:
        write(out)


def _file_entry(directory: Path, name: str) -> dict[str, Any]:
    path = directory / name
    return {"name": name, "sha256": _sha256(path), "bytes": path.stat().st_size}


def _write_files(
    release: Release, directory: Path, progress: Progress
) -> tuple[ExportContext, dict[str, Any], list[dict[str, Any]]]:
    """Every file of the release into `directory`; returns the context, counts and agreement."""
    project = release.project
    ctx = ExportContext(project)  # final issues only: the researcher's view
    raters = rater_columns(project)
    steps: list[tuple[str, Callable[[TextIO], object]]] = []
    taken: set[str] = set()
    label_files = []
    for repo in repositories(ctx):
        name = f"labels/{study_filename(repo, taken)}"
        label_files.append((name, repo))
        steps.append((name, partial(write_study_csv, ctx, repo, raters=raters)))
    steps.append((FINAL_LABELS, lambda out: write_final_labels(ctx, out)))
    steps.append(("issues.jsonl", lambda out: write_jsonl(ctx, out)))
    detail_files = []
    for code in type_codes(ctx):
        name = f"taxonomy/{study_file_name(code)}"
        detail_files.append(name)
        steps.append((name, partial(write_release_details, ctx, code)))
    steps.append(("table_one.csv", lambda out: write_table_one(ctx, out)))
    steps.append(("agreement.csv", lambda out: write_agreement_csv(ctx, out)))
    # Every machine rater described once; the datasheet and datapackage.json say the same.
    machine_raters = describe_raters(project)
    steps.append((MACHINE_LABELS, lambda out: write_machine_labels_csv(ctx, out)))
    steps.append((MACHINE_RATERS, lambda out: write_machine_raters(machine_raters, out)))
    total = len(steps) + 6
    for n, (name, write) in enumerate(steps):
        progress(name, n, total)
        _write(directory, name, write)

    previous = previous_release(release)
    progress(CHANGES, len(steps), total)
    # A first release has nothing to differ from: its changes.csv is the header alone.
    diff = ReleaseDiff(None, release.version)
    if previous is not None:
        with open(directory / FINAL_LABELS, encoding="utf-8", newline="") as fh:
            now = {row["issue_url"]: row for row in csv.DictReader(fh)}
        diff = diff_labels(
            read_final_labels(previous),
            now,
            previous.version,
            release.version,
            previous.taxonomy_version,
            ctx.version,
        )
    _write(directory, CHANGES, lambda out: write_changes(diff, out))

    counts = release_counts(ctx)
    agreement = report_rows(agreement_report(project))
    data_files = [_file_entry(directory, name) for name, _ in steps] + [
        _file_entry(directory, CHANGES)
    ]
    facts = metadata.ReleaseFacts(
        release=release,
        context=ctx,
        counts=counts,
        agreement=agreement,
        files=data_files,
        label_files=[name for name, _ in label_files],
        detail_files=detail_files,
        previous=previous,
        diff=diff,
        released_at=timezone.now(),
        machine_raters=machine_raters,
    )
    progress("datapackage.json", len(steps) + 1, total)
    _write(
        directory, "datapackage.json", lambda out: metadata.write_datapackage(facts, directory, out)
    )
    progress("croissant.json", len(steps) + 2, total)
    _write(directory, "croissant.json", lambda out: metadata.write_croissant(facts, out, directory))
    progress("CITATION.cff", len(steps) + 3, total)
    _write(directory, "CITATION.cff", lambda out: metadata.write_citation(facts, out))
    progress("DATASHEET.md", len(steps) + 4, total)
    _write(directory, "DATASHEET.md", lambda out: datasheet.write_datasheet(facts, out))
    progress(DATASET_CARD, len(steps) + 5, total)
    _write(directory, DATASET_CARD, lambda out: metadata.write_dataset_card(facts, directory, out))

    files = data_files + [
        _file_entry(directory, name)
        for name in (
            "datapackage.json",
            "croissant.json",
            "CITATION.cff",
            "DATASHEET.md",
            DATASET_CARD,
        )
    ]
    manifest = {
        "project": project.name,
        "version": release.version,
        "released_at": facts.released_at.isoformat(),
        "taxonomy_version": str(ctx.version),
        "taxonomy_version_id": ctx.version.pk,
        "pseudonymous": True,
        "scope": "final issues",
        "issues": counts["issues"],
        "previous_release": previous.version if previous else None,
        "labels_without_counterpart": unmapped_labels(ctx),
        "replaced_issue_urls": ctx.replaced_urls,
        "neutralised_label_cells": ctx.neutralised_cells,
        "files": files,
    }
    with open(directory / "manifest.json", "w", encoding="utf-8") as out:
        json.dump(manifest, out, indent=2, ensure_ascii=False)
    return ctx, counts, agreement


def _zip_directory(directory: Path, target: Path) -> None:
    names = sorted(p.relative_to(directory).as_posix() for p in directory.rglob("*") if p.is_file())
    with zipfile.ZipFile(target, "x", compression=zipfile.ZIP_DEFLATED, compresslevel=5) as zf:
        for name in names:
            zf.write(directory / name, name)


def build_release(release_id: int, progress: Progress | None = None) -> Release:
    """Build a release's ZIP once; safe to run twice (a done release is left as it is).

    Its files are English whatever the language of the request that asked for it (without a
    broker the task runs inside that request): a frozen, checksummed file must not depend on
    who clicked."""
    with translation.override("en"):
        return _build_release(release_id, progress)


def _build_release(release_id: int, progress: Progress | None) -> Release:
    """Built by the delivery that claims the release (`lib.jobs.Job.run_claimed`); one not
    pending or running (done, or failed: a failed version is released again as a new row) is
    left as it is. Raises `jobclaim.Busy` while another live process builds it; a build whose
    worker is gone (killed; its task delivered again) is taken over."""
    release = Release.objects.select_related("project__taxonomy_version").get(pk=release_id)
    return release.run_claimed(lambda claimed: _build(claimed, progress))


def _build(release: Release, progress: Progress | None) -> Release:
    release_id = release.pk

    def report(step: str, done: int, total: int) -> None:
        percent = min(99, 100 * done // max(total, 1))
        cache.set(progress_key(release_id), (percent, step), 3600)
        if progress:
            progress(step, done, total)
        # No heartbeat here: the files are read in one read-only transaction; the heartbeat
        # is written on a connection of its own (`lib.jobs.Heartbeat`).
        jobclaim.step_pause()

    final = release_path(release)
    final.parent.mkdir(parents=True, exist_ok=True)
    work = final.with_name(f".build-{release.pk}-{os.getpid()}")
    partial = final.with_name(f"{final.name}.part-{os.getpid()}")
    try:
        if final.exists():
            raise FileExistsError(f"{final.name} already exists; a release is never overwritten")
        # What a worker killed mid-build left (this build is ours now).
        for left in final.parent.glob(f".build-{release.pk}-*"):
            shutil.rmtree(left, ignore_errors=True)
        for left in final.parent.glob(f"{glob.escape(final.name)}.part-*"):
            left.unlink(missing_ok=True)
        work.mkdir()
        outer = connection.in_atomic_block
        with transaction.atomic():
            # Inside a caller's transaction (a test) the isolation level is no longer ours.
            if connection.vendor == "postgresql" and not outer:
                # Every file reads the same snapshot, however long the build takes.
                with connection.cursor() as cursor:
                    cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            ctx, counts, agreement = _write_files(release, work, report)
        report("zip", 99, 100)
        _zip_directory(work, partial)
        digest = _sha256(partial)
        with zipfile.ZipFile(partial) as zf:
            manifest = json.loads(zf.read("manifest.json"))

        def publish() -> None:
            # os.link fails if the name exists: a release file is written once, never replaced.
            os.link(partial, final)

        # Linked to its name only by the worker that still owns the build (`Job.end`): one
        # taken over meanwhile leaves the name, and the row, to the worker that took it over.
        ended = release.end(
            Release.Status.DONE,
            publish=publish,
            taxonomy_version=ctx.version,
            counts=counts,
            agreement=agreement,
            manifest=manifest,
            file_path=str(final.relative_to(settings.EXPORT_ROOT)),
            size=partial.stat().st_size,
            sha256=digest,
            step="done",
            finished_at=datetime.fromisoformat(manifest["released_at"]),
        )
    except Exception as exc:
        partial.unlink(missing_ok=True)
        shutil.rmtree(work, ignore_errors=True)
        if release.end(Release.Status.FAILED, error=diskspace.job_error(exc), finished_at=None):
            cache.delete(progress_key(release_id))
        raise
    partial.unlink(missing_ok=True)
    shutil.rmtree(work, ignore_errors=True)
    if ended:
        os.chmod(final, 0o444)
        cache.delete(progress_key(release_id))
    return release


def verify_release(release: Release) -> list[str]:
    """Problems with a done release's file: missing, or its checksum no longer matches."""
    path = release_path(release)
    if not path.exists():
        return [f"{path.name} is missing"]
    problems = []
    if _sha256(path) != release.sha256:
        problems.append(f"{path.name}: SHA-256 differs from the recorded one")
    with zipfile.ZipFile(path) as zf:
        for entry in release.manifest.get("files", []):
            if hashlib.sha256(zf.read(entry["name"])).hexdigest() != entry["sha256"]:
                problems.append(f"{entry['name']}: SHA-256 differs from the manifest")
    return problems


# -- asking for a release --------------------------------------------------------------------

# The release's task is named by its Celery name (`Release.TASK`): dataset.tasks calls this
# module, never the reverse.


def start_release(
    project: Project, user: User, version: str, note: str = "", **citation: Any
) -> Release:
    """Validate and record a release (Refusal naming the field), and queue its build once
    the transaction commits. `citation`: title, authors, licence (`create_release`)."""
    with transaction.atomic():
        release = create_release(project, user, version, note, **citation)
        outbox.enqueue(release.TASK, release.task_args())
    return release
