"""Import labels published in the study's format into a project.

A file is `Issue_URL,Label1..LabelN,Final_Label` (UTF-8, usually with a BOM), one row per issue,
labels being theme codes such as `C.5` (sub-theme codes such as `C.5.ii` are accepted too).
Each Label column becomes one pseudonymous rater of the project (`rater-1` … `rater-N`), each
cell an annotation, the final label the issue's resolution (method "imported").

Reading is pure and collects every problem with its file and line before anything is written;
writing is one transaction of bulk inserts. A file is hostile input: a cell over the csv module's
field limit (128 KiB), a NUL character, or an owner, name, issue number or URL longer than the
column it is stored in is a line-numbered problem, found before the database could fail on it.
Running the same import twice changes nothing: rows already present with the same labels are
counted as unchanged, and rows present with other labels are reported as conflicts and left
alone (a published file never silently overwrites labels).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from annotator.models import Membership, Project, Role
from dataset.bulk import analyze_if_large, foreign_keys_validated_at_end, insert_rows
from dataset.forges import IssueRef, parse_issue_url
from dataset.models import PublishedRepeat
from ingest.models import Issue, Repository
from labeling.labels import NODE_FIELDS
from labeling.models import Annotation, ProjectIssue, Resolution
from labeling.taxonomy_history import global_version  # the study's or a published version
from lib import csvread, inputlimits
from taxonomy.models import TaxonomyNode, TaxonomyVersion

URL_COLUMN = "Issue_URL"
FINAL_COLUMN = "Final_Label"
LABEL_PREFIX = "Label"
BATCH = 5000
# The labeling queue (annotator/, in progress) keeps a per-issue count of annotators; set it
# when the field exists so imported issues look complete to the queue too.
_COUNTS_ANNOTATORS = any(f.name == "annotation_count" for f in ProjectIssue._meta.fields)

Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class Problem:
    path: str
    line: int | None
    message: str

    def __str__(self) -> str:
        return (
            f"{self.path}, line {self.line}: {self.message}"
            if self.line
            else (f"{self.path}: {self.message}")
        )


@dataclass(frozen=True)
class Repeat:
    url: str
    path: str
    line: int
    first_path: str
    first_line: int
    differs: bool

    def __str__(self) -> str:
        first = f"line {self.first_line}" + (
            f" of {self.first_path}" if self.first_path != self.path else ""
        )
        what = "labels differ" if self.differs else "same labels"
        return f"{self.path}, line {self.line}: {self.url} repeats {first} ({what}); kept the first"


@dataclass(slots=True)
class LabelRow:
    path: str
    line: int
    url: str
    ref: IssueRef
    labels: list[str]  # one code per rater column, in column order
    final: str


@dataclass
class ImportReport:
    project: str = ""
    files: list[str] = field(default_factory=list)
    rows_read: int = 0
    raters: int = 0
    problems: list[Problem] = field(default_factory=list)
    repeats: list[Repeat] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    created_repositories: int = 0
    created_issues: int = 0
    added_to_project: int = 0
    created_annotations: int = 0
    created_resolutions: int = 0
    unchanged_rows: int = 0
    imported: bool = False

    def lines(self) -> list[str]:
        out = [
            f"{self.rows_read} row(s) read from {len(self.files)} file(s), {self.raters} rater(s)",
            f"created: {self.created_repositories} repositories, {self.created_issues} issues, "
            f"{self.added_to_project} added to project {self.project!r}, "
            f"{self.created_annotations} annotations, {self.created_resolutions} final labels",
            f"unchanged rows (already imported): {self.unchanged_rows}",
        ]
        if self.problems:
            head = "skipped" if self.imported else "problems (nothing imported)"
            out.append(f"{head}: {len(self.problems)}")
            out += [f"  {p}" for p in self.problems]
        if self.repeats:
            out.append(f"repeated URLs: {len(self.repeats)}")
            out += [f"  {r}" for r in self.repeats]
        if self.conflicts:
            out.append(
                f"conflicts with labels already in the project (left alone): {len(self.conflicts)}"
            )
            out += [f"  {c}" for c in self.conflicts]
        return out


class LabelImportError(Exception):
    """Invalid input and no --skip-invalid: nothing was imported; the report says why."""

    def __init__(self, report: ImportReport) -> None:
        self.report = report
        super().__init__("\n".join(str(p) for p in report.problems))


def code_index(version: TaxonomyVersion) -> dict[str, TaxonomyNode]:
    """Theme and sub-theme nodes of a taxonomy version by code, parents loaded."""
    nodes = {n.pk: n for n in version.nodes.all()}
    for node in nodes.values():
        if node.parent_id:
            node.parent = nodes[node.parent_id]  # avoid a query per node later
    return {n.code: n for n in nodes.values() if n.level != TaxonomyNode.Level.TYPE}


# Parts of an issue URL and the model columns they are stored in.
STORED_LENGTHS = (
    ("URL", Issue, "url"),
    ("owner", Repository, "owner"),
    ("repository name", Repository, "name"),
    ("issue number", Issue, "number"),
)


def _records(
    reading: csvread.Records, name: str, problems: list[Problem]
) -> Iterator[tuple[int, list[str]]]:
    """The readable records with their line numbers; a record the csv module cannot read (a
    cell over its field limit) is a problem on its line, and reading goes on after it."""
    for line, row, why in reading:
        if row is None:
            problems.append(Problem(name, line, f"not readable as CSV: {why}"))
            continue
        yield line, row


def read_label_file(
    path: Path, codes: dict[str, TaxonomyNode], problems: list[Problem]
) -> tuple[int, list[LabelRow]]:
    """Parse one file; append every problem found; return the rater count and the valid rows."""
    name = str(path)
    try:
        handle = open(path, encoding="utf-8-sig", newline="")  # noqa: SIM115 - closed below
    except OSError as exc:
        problems.append(Problem(name, None, f"cannot open: {exc.strerror}"))
        return 0, []
    rows: list[LabelRow] = []
    with handle:
        reading = csvread.records(handle)
        records = _records(reading, name, problems)
        try:
            _, header = next(records)
            header = [h.strip() for h in header]
        except StopIteration:
            if not problems or problems[-1].path != name:
                problems.append(Problem(name, 1, "the file is empty"))
            return 0, []
        except UnicodeDecodeError as exc:
            problems.append(Problem(name, None, f"not UTF-8 ({exc.reason})"))
            return 0, []
        label_numbers = sorted(
            int(h[len(LABEL_PREFIX) :])
            for h in header
            if h.startswith(LABEL_PREFIX) and h[len(LABEL_PREFIX) :].isdigit()
        )
        expected = [
            URL_COLUMN,
            *(
                f"{LABEL_PREFIX}{i}"
                for i in range(1, (label_numbers[-1] if label_numbers else 1) + 1)
            ),
            FINAL_COLUMN,
        ]
        missing = [c for c in expected if c not in header]
        if missing:
            problems.append(Problem(name, 1, f"missing column(s): {', '.join(missing)}"))
            return 0, []
        url_col, final_col = header.index(URL_COLUMN), header.index(FINAL_COLUMN)
        label_cols = [header.index(c) for c in expected[1:-1]]
        try:
            for line, row in records:
                if not any(cell.strip() for cell in row):
                    continue
                if len(row) < len(header):
                    problems.append(
                        Problem(name, line, f"expected {len(header)} cells, got {len(row)}")
                    )
                    continue
                bad = False
                for col, cell in enumerate(row):
                    if inputlimits.NUL in cell:
                        column = header[col] if col < len(header) else f"cell {col + 1}"
                        problems.append(
                            Problem(name, line, f"NUL character (\\x00) in column {column}")
                        )
                        bad = True
                if bad:
                    continue
                for col in (url_col, *label_cols, final_col):
                    if not row[col].strip():
                        problems.append(Problem(name, line, f"empty cell in column {header[col]}"))
                        bad = True
                for col in (*label_cols, final_col):
                    code = row[col].strip()
                    if code and code not in codes:
                        problems.append(
                            Problem(
                                name, line, f"unknown code {code[:40]!r} in column {header[col]}"
                            )
                        )
                        bad = True
                url = row[url_col].strip()
                ref = parse_issue_url(url) if url else None
                if url and ref is None:
                    shown = url if len(url) <= 200 else f"{url[:200]}…"
                    problems.append(
                        Problem(
                            name,
                            line,
                            f"{shown!r} is not an issue URL of a known forge "
                            "(github.com, gitee.com, gitlab.com)",
                        )
                    )
                    bad = True
                if ref is not None:
                    parts = {"URL": url, "owner": ref.owner, "repository name": ref.name}
                    parts["issue number"] = ref.number
                    for what, model, field_name in STORED_LENGTHS:
                        message = inputlimits.length_error(model, field_name, parts[what])
                        if message:
                            message = f"{URL_COLUMN}: the {what} is too long, {message}"
                            problems.append(Problem(name, line, message))
                            bad = True
                if bad or ref is None:
                    continue
                # Interned: a code is one string however many cells hold it (ten times the
                # study is 3 million cells).
                rows.append(
                    LabelRow(
                        name,
                        line,
                        url,
                        ref,
                        [sys.intern(row[c].strip()) for c in label_cols],
                        sys.intern(row[final_col].strip()),
                    )
                )
        except UnicodeDecodeError as exc:
            problems.append(Problem(name, reading.line_num + 1, f"not UTF-8 ({exc.reason})"))
            return 0, []
    return len(label_cols), rows


def _label_fields(node: TaxonomyNode) -> dict:
    """issue_type/theme/sub_theme ids for a theme or sub-theme node."""
    if node.level == TaxonomyNode.Level.SUB_THEME:
        assert node.parent is not None  # a sub-theme's theme
        return {
            "issue_type_id": node.parent.parent_id,
            "theme_id": node.parent_id,
            "sub_theme_id": node.pk,
        }
    return {"issue_type_id": node.parent_id, "theme_id": node.pk, "sub_theme_id": None}


def get_or_create_project(name: str) -> Project:
    """The named project; created on the global taxonomy version (study's or published)."""
    project = Project.objects.filter(name=name).first()
    if project:
        return project
    from taxonomy.loader import load_study_taxonomy

    version = global_version()
    if version is None:
        version = load_study_taxonomy(only_if_missing=True)
    return Project.objects.create(name=name, taxonomy_version=version)


def rater_memberships(project: Project, count: int) -> list[Membership]:
    """The membership of the imported rater of each Label column i, created if missing.

    An imported rater is its own account (`imported-<project>-rater-<i>`, which never logs in),
    found by that account, not by pseudonym: every member has a pseudonym, and a person who
    joined the project first may already be rater-i. The new rater is `rater-i` when that is
    free, else the project's next rater-N."""
    out = []
    for i in range(1, count + 1):
        user, _ = User.objects.get_or_create(username=f"imported-{project.pk}-rater-{i}")
        if user.has_usable_password():
            user.set_unusable_password()  # an imported rater never logs in
            user.save(update_fields=["password"])
        membership = Membership.objects.filter(project=project, user=user).first()
        if membership is None:
            pseudonym = f"rater-{i}"
            if Membership.objects.filter(project=project, pseudonym=pseudonym).exists():
                pseudonym = ""  # Membership.save gives the next free rater-N
            membership = Membership.objects.create(
                project=project, user=user, role=Role.ANNOTATOR, pseudonym=pseudonym
            )
        out.append(membership)
    return out


def _dedupe(
    rows: Iterable[LabelRow], report: ImportReport
) -> tuple[list[LabelRow], list[LabelRow]]:
    """(the first row of each URL, the rows that repeat one): an issue gets the first row's
    labels; a repeat is kept as a `PublishedRepeat` so that Table I can count published rows."""
    first: dict[str, LabelRow] = {}
    repeated: list[LabelRow] = []
    for row in rows:
        seen = first.get(row.url)
        if seen is None:
            first[row.url] = row
            continue
        differs = seen.labels != row.labels or seen.final != row.final
        report.repeats.append(Repeat(row.url, row.path, row.line, seen.path, seen.line, differs))
        repeated.append(row)
    return list(first.values()), repeated


def import_labels(
    project_name: str,
    paths: Iterable[str | Path],
    skip_invalid: bool = False,
    progress: Progress | None = None,
) -> ImportReport:
    """Read the files, then import them in one transaction (see the module docstring)."""
    report = ImportReport(project=project_name)
    project = Project.objects.filter(name=project_name).select_related("taxonomy_version").first()
    version = project.taxonomy_version if project is not None else global_version()
    if version is None:
        # Only the study's taxonomy can be assumed; load it to validate codes against it.
        from taxonomy.loader import load_study_taxonomy

        version = load_study_taxonomy(only_if_missing=True)
    codes = code_index(version)

    rows: list[LabelRow] = []
    paths = list(paths)
    for n, path in enumerate(paths, start=1):
        report.files.append(str(path))
        raters, file_rows = read_label_file(Path(path), codes, report.problems)
        report.raters = max(report.raters, raters)
        rows.extend(file_rows)
        if progress:
            progress("files read", n, len(paths))
    report.rows_read = len(rows) + len({(p.path, p.line) for p in report.problems if p.line})
    if report.problems and not skip_invalid:
        raise LabelImportError(report)
    rows, repeated = _dedupe(rows, report)
    with transaction.atomic():
        project = get_or_create_project(project_name)
        if project.annotations_per_issue < report.raters and not project.annotations.exists():
            project.annotations_per_issue = report.raters
            project.save(update_fields=["annotations_per_issue"])
        issue_of = _write(project, rows, codes, report, progress)
        _write_repeats(project, issue_of, repeated, codes)
    report.imported = True
    return report


def _write_repeats(
    project: Project,
    issue_of: dict[str, int],
    repeated: list[LabelRow],
    codes: dict[str, TaxonomyNode],
) -> None:
    """One `PublishedRepeat` per repeated row, with its own final label; a second import of
    the same files adds none (one row per project, file name and line)."""
    if not repeated:
        return
    PublishedRepeat.objects.bulk_create(
        [
            PublishedRepeat(
                project=project,
                issue_id=issue_of[row.url],
                file_name=Path(row.path).name,
                line=row.line,
                **_label_fields(codes[row.final]),
            )
            for row in repeated
            if row.url in issue_of
        ],
        ignore_conflicts=True,
    )


def _write(
    project: Project,
    rows: list[LabelRow],
    codes: dict[str, TaxonomyNode],
    report: ImportReport,
    progress: Progress | None,
) -> dict[str, int]:
    """Write the rows; return the issue id of each row's URL."""
    members = rater_memberships(project, report.raters)
    now = timezone.now()

    # Repositories, then issues by (repository, number): the canonical identity of an issue.
    repos: dict[tuple[str, str, str], Repository] = {}
    for repo_key in dict.fromkeys(r.ref.repo_key for r in rows):
        forge, owner, name = repo_key
        repos[repo_key], created = Repository.objects.get_or_create(
            forge=forge,
            api_url=Repository.DEFAULT_API_URLS[forge],
            owner=owner,
            name=name,
        )
        report.created_repositories += created
    issue_ids: dict[tuple[int, str], int] = {}
    for repo in repos.values():
        issue_ids.update(
            ((repo.pk, n), pk)
            for n, pk in Issue.objects.filter(repository=repo).values_list("number", "pk")
        )
    new_issues: list[tuple] = []
    for row in rows:
        key = (repos[row.ref.repo_key].pk, row.ref.number)
        if key not in issue_ids:
            issue_ids[key] = -1  # placeholder: a repeat within this import is one issue
            new_issues.append((key[0], row.ref.number, row.url))
    if new_issues:
        report.created_issues = insert_rows(Issue, ["repository_id", "number", "url"], new_issues)
        for repo_id in {r for r, _, _ in new_issues}:
            issue_ids.update(
                ((repo_id, n), pk)
                for n, pk in Issue.objects.filter(repository_id=repo_id).values_list("number", "pk")
            )
        if progress:
            progress("issues", len(new_issues), len(new_issues))

    row_issue = [issue_ids[(repos[r.ref.repo_key].pk, r.ref.number)] for r in rows]

    # What the project already holds, to make a second run a no-op.
    in_project = dict(
        ProjectIssue.objects.filter(project=project).values_list("issue_id", "status")
    )
    existing_ann = {
        (issue_id, user_id): (theme_id, sub_id)
        for issue_id, user_id, theme_id, sub_id in Annotation.objects.filter(
            project=project, is_current=True
        ).values_list("issue_id", "annotator_id", "theme_id", "sub_theme_id")
    }
    existing_res = {
        issue_id: (theme_id, sub_id)
        for issue_id, theme_id, sub_id in Resolution.objects.filter(
            project=project, is_current=True
        ).values_list("issue_id", "theme_id", "sub_theme_id")
    }
    next_position = (
        ProjectIssue.objects.filter(project=project).aggregate(m=Max("position"))["m"] or 0
    ) + 1

    fields_of: dict[str, dict] = {}  # a code's label fields, computed once per code

    def label_fields(code: str) -> dict:
        fields = fields_of.get(code)
        if fields is None:
            fields = fields_of[code] = _label_fields(codes[code])
        return fields

    # The new annotations as (issue, annotator, code), their rows made as they are copied: a
    # list of full rows held ~330 MB at ten times the study (2.7 million labels, issue #30).
    new_ann: list[tuple[int, int, str]] = []
    new_pi, make_final, new_res = [], [], []
    for n, (row, issue_id) in enumerate(zip(rows, row_issue, strict=True)):
        changed = False
        if issue_id not in in_project:
            # Position keeps the file's row order, which the study export gives back.
            pi = (project.pk, issue_id, next_position + n, ProjectIssue.Status.FINAL.value)
            # The count of labels and when the newest came (this import: its labels' time).
            counts = (len(row.labels), now if row.labels else None)
            new_pi.append((*pi, *counts) if _COUNTS_ANNOTATORS else pi)
            changed = True
        elif in_project[issue_id] != ProjectIssue.Status.FINAL and issue_id not in existing_res:
            make_final.append(issue_id)
        for member, code in zip(members, row.labels, strict=False):
            fields = label_fields(code)
            old = existing_ann.get((issue_id, member.user_id))
            if old is None:
                new_ann.append((issue_id, member.user_id, code))
                changed = True
            elif old != (fields["theme_id"], fields["sub_theme_id"]):
                report.conflicts.append(
                    f"{row.path}, line {row.line}: {member.pseudonym} already labeled "
                    f"{row.url} differently"
                )
        final = label_fields(row.final)
        old = existing_res.get(issue_id)
        if old is None:
            new_res.append(
                (
                    project.pk,
                    issue_id,
                    Resolution.Method.IMPORTED.value,
                    now,
                    f"imported from {Path(row.path).name}, line {row.line}",
                    *(final[name] for name in NODE_FIELDS),
                )
            )
            changed = True
        elif old != (final["theme_id"], final["sub_theme_id"]):
            report.conflicts.append(
                f"{row.path}, line {row.line}: {row.url} already has another final label"
            )
        report.unchanged_rows += not changed

    pi_columns = ["project_id", "issue_id", "position", "status"]
    with foreign_keys_validated_at_end(ProjectIssue, len(new_pi)):
        insert_rows(
            ProjectIssue,
            pi_columns + ["annotation_count", "last_label_at"] * _COUNTS_ANNOTATORS,
            new_pi,
        )
    if make_final:
        ProjectIssue.objects.filter(project=project, issue_id__in=make_final).update(
            status=ProjectIssue.Status.FINAL
        )
    report.added_to_project = len(new_pi)
    label_columns = list(NODE_FIELDS)
    ann_columns = ["project_id", "issue_id", "annotator_id", "created_at", *label_columns]
    with foreign_keys_validated_at_end(Annotation, len(new_ann)):
        for start in range(0, len(new_ann), BATCH * 10):
            insert_rows(
                Annotation,
                ann_columns,
                (
                    (project.pk, issue_id, user_id, now, *map(label_fields(code).get, NODE_FIELDS))
                    for issue_id, user_id, code in new_ann[start : start + BATCH * 10]
                ),
            )
            if progress:
                progress("annotations", min(start + BATCH * 10, len(new_ann)), len(new_ann))
    # Issues already in the project that got labels here: their newest label is this import's.
    relabeled = sorted({issue_id for issue_id, _, _ in new_ann if issue_id in in_project})
    for start in range(0, len(relabeled), BATCH):
        ProjectIssue.objects.filter(
            project=project, issue_id__in=relabeled[start : start + BATCH]
        ).update(last_label_at=now)
    res_columns = ["project_id", "issue_id", "method", "decided_at", "note", *label_columns]
    with foreign_keys_validated_at_end(Resolution, len(new_res)):
        insert_rows(Resolution, res_columns, new_res)
    # Planner statistics for what was just loaded, before anything reads it.
    analyze_if_large(len(new_ann), Issue, ProjectIssue, Annotation, Resolution)
    report.created_annotations, report.created_resolutions = len(new_ann), len(new_res)
    return {row.url: issue_id for row, issue_id in zip(rows, row_issue, strict=True)}
