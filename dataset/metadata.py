"""The standard metadata of a release: `datapackage.json`, `croissant.json`, `CITATION.cff`.

- Frictionless Data Package (https://specs.frictionlessdata.io/): one resource per data file
  with its SHA-256 and size; every CSV gets a Table Schema — label columns are strings whose
  allowed values are the taxonomy version's codes (plus "FP", plus any original code kept for a
  label with no counterpart in the version, which the manifest lists), counts are integers,
  figures numbers — inferred from the written file for the tables whose columns vary (Table I's
  years, the agreement table), and declared for the rest.
- ML Croissant 1.0 (https://docs.mlcommons.org/croissant/docs/croissant-spec.html): the data
  files as FileObjects with SHA-256, a RecordSet per table whose fields map to its columns.
- Machine raters (#23): `machine_labels.csv` is a table of both (its key: issue URL and rater);
  `machine_raters.json` (`raters.describe`) describes every rater, and datapackage.json carries
  the same list as its `machine_raters` property (each rater's alternative annotator test under
  `validation.alt_test`, its estimates of the project's shares under `estimates`, #29);
  croissant.json's machine-labels record set names each rater, model, version, whether it is
  enlisted, its alt-test and its estimates' human sample, and both files' descriptions say when
  shares were estimated with machine help.
- A HuggingFace dataset card (`README.md`): its YAML `configs` make `datasets.load_dataset(
  <release directory>, <config>)` read every CSV table, one config per table with rows (its name
  the Data Package resource name; `final-labels` the default). A table without rows (a header
  alone: no machine rater, no change since the previous release) is left out of the configs,
  since `load_dataset` refuses a file with no data ("corresponds to no data"), and the card names
  it as empty; datapackage.json and croissant.json still describe its columns. `datasets` reads
  every config of a directory with the one builder it infers from the first config's files (the
  csv builder here), so `issues.jsonl` is no config: the card shows how to load it with the json
  builder.
- CITATION.cff 1.2.0: title, version, date, authors and licence as the release was made with
  them (`Release.title`, `.authors`, `.licence`, prefilled from the project). Authors one per
  line: "Family, Given[, ORCID]" is a person, "Name[, ORCID]" an organisation
  (`parse_authors`); several people on a line are separated by ";" (stored one per line), and
  a name without a comma among them is refused, naming its line. A release without authors
  invents none: CITATION.cff's message says "Citation incomplete" and its one author entry
  says that no author was named (the format requires one), croissant.json and
  datapackage.json list no creator.

Every file is derived from the data files already written in the release's directory, so the
schemas describe what is there, not what was meant to be.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import yaml
from django.utils.translation import gettext

from dataset.exports import BOM, ExportContext
from labeling.models import Resolution
from taxonomy.models import TaxonomyNode

if TYPE_CHECKING:
    from annotator.models import Project
    from dataset.models import Release
    from dataset.release_diff import ReleaseDiff

CROISSANT_CONTEXT: dict[str, Any] = {
    "@language": "en",
    "@vocab": "https://schema.org/",
    "citeAs": "cr:citeAs",
    "column": "cr:column",
    "conformsTo": "dct:conformsTo",
    "cr": "http://mlcommons.org/croissant/",
    "rai": "http://mlcommons.org/croissant/RAI/",
    "data": {"@id": "cr:data", "@type": "@json"},
    "dataType": {"@id": "cr:dataType", "@type": "@vocab"},
    "dct": "http://purl.org/dc/terms/",
    "equivalentProperty": "cr:equivalentProperty",
    "examples": {"@id": "cr:examples", "@type": "@json"},
    "extract": "cr:extract",
    "field": "cr:field",
    "fileProperty": "cr:fileProperty",
    "fileObject": "cr:fileObject",
    "fileSet": "cr:fileSet",
    "format": "cr:format",
    "includes": "cr:includes",
    "isLiveDataset": "cr:isLiveDataset",
    "jsonPath": "cr:jsonPath",
    "key": "cr:key",
    "md5": "cr:md5",
    "parentField": "cr:parentField",
    "path": "cr:path",
    "recordSet": "cr:recordSet",
    "references": "cr:references",
    "regex": "cr:regex",
    "repeated": "cr:repeated",
    "replace": "cr:replace",
    "samplingRate": "cr:samplingRate",
    "sc": "https://schema.org/",
    "separator": "cr:separator",
    "source": "cr:source",
    "subField": "cr:subField",
    "transform": "cr:transform",
}

MEDIA_TYPES = {".csv": "text/csv", ".jsonl": "application/jsonlines", ".json": "application/json"}
CROISSANT_TYPES = {
    "string": "sc:Text",
    "integer": "sc:Integer",
    "number": "sc:Float",
    "boolean": "sc:Boolean",
    "datetime": "sc:Text",
}
# Columns whose cells are label codes, by file kind.
LABEL_COLUMN = re.compile(r"Label\d+|Final_Label|final_label|issue_type|theme|sub_theme|label")
# Tables with one row per issue and something else (a machine rater): their key is both.
COMPOSITE_KEYS = {"machine-labels": ["Issue_URL", "rater"]}
INTEGER = re.compile(r"-?[0-9]+")
NUMBER = re.compile(r"-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?")


@dataclass
class ReleaseFacts:
    """Everything the metadata writers need to know about a release being built."""

    release: Release
    context: ExportContext
    counts: dict[str, Any]
    agreement: list[dict[str, Any]]
    files: list[dict[str, Any]]  # data files: name, sha256, bytes
    label_files: list[str]
    detail_files: list[str]
    previous: Release | None
    diff: ReleaseDiff
    released_at: datetime
    # `raters.describe.describe_raters`: every machine rater (empty: the project has none).
    machine_raters: list[dict[str, Any]] = field(default_factory=list)

    @property
    def project(self) -> Project:
        return self.release.project

    def file(self, name: str) -> dict[str, Any]:
        return next(f for f in self.files if f["name"] == name)


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "dataset"


def resource_name(path: str) -> str:
    """A Data Package resource name (lower-case letters, digits, `-._`) for a file path."""
    return slug(path.rsplit(".", 1)[0].replace("/", "-"))


ORCID = re.compile(r"(?:https?://orcid\.org/)?([0-9]{4}-[0-9]{4}-[0-9]{4}-[0-9]{3}[0-9X])")
CITATION_INCOMPLETE = "Citation incomplete"
NO_AUTHOR = "no author named (citation incomplete)"


class CitationError(Exception):
    """An author line that cannot be cited; `line` counts from 1."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(gettext("line %(line)s: %(problem)s") % {"line": line, "problem": message})
        self.line = line
        self.message = message


AUTHOR_SEPARATOR = ";"


def author_entries(text: str) -> list[tuple[int, str]]:
    """(line number, entry) of each author: one per line, or several on a line separated by
    ";" ("Lovelace, Ada; Hopper, Grace"); blank entries left out."""
    return [
        (number, entry.strip())
        for number, raw in enumerate((text or "").splitlines(), start=1)
        for entry in raw.split(AUTHOR_SEPARATOR)
        if entry.strip()
    ]


def parse_authors(text: str) -> list[dict[str, str]]:
    """Author lines as CFF authors: "Family, Given[, ORCID]" is a person, "Name[, ORCID]" an
    organisation (an ORCID is 0000-0002-1825-0097, with or without https://orcid.org/).
    Several authors on one line are separated by ";", each of them a person written
    "Family, Given": a name without a comma there ("Ada Lovelace; Grace Hopper") cannot be
    told from an organisation's and is refused, naming its line."""
    out: list[dict[str, str]] = []
    entries = author_entries(text)
    several = {n for n, _ in entries if sum(1 for m, _ in entries if m == n) > 1}
    for number, entry in entries:
        parts = [p.strip() for p in entry.split(",")]
        orcid = None
        found = ORCID.fullmatch(parts[-1])
        if found:
            orcid = f"https://orcid.org/{found.group(1)}"
            parts = parts[:-1]
        elif len(parts) > 2:
            raise CitationError(
                number,
                gettext(
                    "“%(author)s”: write “Family, Given” and, optionally, an ORCID such as "
                    "0000-0002-1825-0097"
                )
                % {"author": entry[:80]},
            )
        if not parts or not all(parts):
            raise CitationError(
                number, gettext("“%(author)s” has an empty name") % {"author": entry[:80]}
            )
        if number in several and len(parts) == 1:
            raise CitationError(
                number,
                gettext(
                    "“%(author)s” is one of several authors on this line: write each person "
                    "“Family, Given” (Lovelace, Ada; Hopper, Grace), or one author per line "
                    "(an organisation on a line of its own)"
                )
                % {"author": entry[:80]},
            )
        author = (
            {"family-names": parts[0], "given-names": parts[1]}
            if len(parts) == 2
            else {"name": parts[0]}
        )
        if orcid:
            author["orcid"] = orcid
        out.append(author)
    return out


def authors(facts_or_project: Any) -> list[dict[str, str]]:
    """The release's authors (or, given a project, its default authors), parsed; lines that
    cannot be parsed were refused when the release was made."""
    release = getattr(facts_or_project, "release", None)
    text = release.authors if release is not None else facts_or_project.citation_authors
    try:
        return parse_authors(text)
    except CitationError:
        return []


def title_of(facts: ReleaseFacts) -> str:
    return facts.release.title or facts.project.name


def licence_of(facts: ReleaseFacts) -> str:
    return facts.release.licence or facts.project.licence


def author_display(author: dict[str, str]) -> str:
    if "name" in author:
        return author["name"]
    return f"{author['given-names']} {author['family-names']}"


def licence_url(licence: str) -> str:
    return f"https://spdx.org/licenses/{licence}.html"


def read_csv(path: Path) -> tuple[list[str], Iterator[list[str]], bool]:
    """(header, rows, has_bom) of a written CSV. The rows are parsed as they are iterated: a
    table ten times the study's (387,000 final labels) held as lists of cells took ~400 MB."""
    raw = path.read_bytes()
    bom = raw.startswith(BOM.encode())
    reader = csv.reader(raw.decode("utf-8-sig").splitlines())
    return next(reader, []), reader, bom


def allowed_codes(ctx: ExportContext) -> list[str]:
    """The codes of the release's taxonomy version, types first, then "FP"."""
    codes = list(
        TaxonomyNode.objects.filter(version=ctx.version)
        .order_by("level", "position", "pk")
        .values_list("code", flat=True)
    )
    return [*codes, "FP"]


@dataclass
class ColumnValues:
    """What a table's schema needs of one column's values, gathered row by row."""

    present: bool = False  # a non-empty value
    integer: bool = True  # every non-empty value an integer
    number: bool = True  # every non-empty value a number
    outside: set[str] = field(default_factory=set)  # non-empty values not among the codes


def infer_type(values: ColumnValues) -> str:
    if values.present and values.integer:
        return "integer"
    if values.present and values.number:
        return "number"
    return "string"


def _column_kind(table: str, column: str) -> str:
    """How `table_schema` describes `column` of the table named `table`."""
    if column in ("Issue_URL", "issue_url"):
        return "url"
    if LABEL_COLUMN.fullmatch(column) and not table.startswith("changes"):
        return "label"
    if column in ("is_false_positive", "is_pilot", "recall_probe"):
        return "boolean"
    if column == "resolution_method":
        return "method"
    if column == "decided_at":
        return "datetime"
    if table.startswith(("changes", "final-labels")) or table.startswith("taxonomy"):
        return "string"
    return "inferred"


def column_values(
    rows: Iterable[list[str]], kinds: list[str], codes: set[str]
) -> list[ColumnValues]:
    """Each column's `ColumnValues`, reading `rows` once. As a transposition of the rows would
    (`zip`), a column past the shortest row has no values."""
    seen = [ColumnValues() for _ in kinds]
    labels = [i for i, kind in enumerate(kinds) if kind == "label"]
    inferred = [i for i, kind in enumerate(kinds) if kind == "inferred"]
    shortest: int | None = None
    for row in rows:
        n = len(row)
        shortest = n if shortest is None else min(shortest, n)
        for i in labels:
            if i < n and row[i] and row[i] not in codes:
                seen[i].outside.add(row[i])
        for i in inferred:
            if i < n and row[i] != "":
                values, value = seen[i], row[i]
                values.present = True
                if values.integer and not INTEGER.fullmatch(value):
                    values.integer = False
                if values.number and not NUMBER.fullmatch(value):
                    values.number = False
    return [v if i < (shortest or 0) else ColumnValues() for i, v in enumerate(seen)]


def table_schema(name: str, header: list[str], rows: Iterable[list[str]], codes: list[str]) -> dict:
    """The Table Schema of one written CSV (its rows read once, as they come)."""
    fields: list[dict[str, Any]] = []
    kinds = [_column_kind(name, column) for column in header]
    for column, kind, values in zip(
        header, kinds, column_values(rows, kinds, set(codes)), strict=True
    ):
        spec: dict[str, Any] = {"name": column}
        if kind == "url":
            spec.update(
                type="string",
                format="uri",
                constraints={"required": True, "unique": name not in COMPOSITE_KEYS},
                description="the issue's URL on its forge",
            )
        elif kind == "label":
            # The version's codes, plus any original code kept for a label without counterpart.
            spec.update(
                type="string",
                constraints={"enum": [*codes, *sorted(values.outside)]},
                description="a label code of the taxonomy version, or FP (false positive)",
            )
        elif kind == "boolean":
            spec.update(type="boolean", trueValues=["true"], falseValues=["false"])
        elif kind == "method":
            spec.update(type="string", constraints={"enum": list(Resolution.Method.values)})
        elif kind == "datetime":
            spec.update(type="datetime", format="any")
        elif kind == "string":
            spec.update(type="string")
        else:
            spec.update(type=infer_type(values))
        fields.append(spec)
    schema: dict[str, Any] = {"fields": fields, "missingValues": [""]}
    if name in COMPOSITE_KEYS:
        schema["primaryKey"] = COMPOSITE_KEYS[name]
    elif header and header[0] in ("Issue_URL", "issue_url"):
        schema["primaryKey"] = [header[0]]
    return schema


JSONL_SCHEMA: dict[str, Any] = {
    "fields": [
        {"name": "url", "type": "string", "format": "uri"},
        {"name": "forge", "type": "string"},
        {"name": "repository", "type": "string"},
        {"name": "number", "type": "string"},
        {"name": "title", "type": "string"},
        {"name": "body", "type": "string"},
        {"name": "author", "type": "string"},
        {"name": "state", "type": "string"},
        {"name": "labels", "type": "array"},
        {"name": "created_at", "type": "string"},
        {"name": "updated_at", "type": "string"},
        {"name": "closed_at", "type": "string"},
        {"name": "status", "type": "string"},
        {"name": "is_pilot", "type": "boolean"},
        {"name": "recall_probe", "type": "boolean"},
        {"name": "comments", "type": "array"},
        {"name": "annotations", "type": "array"},
        {"name": "resolution", "type": "object"},
        {"name": "resolution_history", "type": "array"},
    ],
    "missingValues": [""],
}


def _description(name: str) -> str:
    if name.startswith("labels/"):
        return "the study's format: each rater's label (pseudonymous columns) and the final label"
    if name.startswith("taxonomy/"):
        return "taxonomy details: one row per sub-theme with its details and annotators' summaries"
    return {
        "final_labels.csv": "one row per issue: its final label and the resolution behind it",
        "issues.jsonl": "one issue per line: text, comments, every annotation and resolution",
        "table_one.csv": "Table I: issues per repository, year and type, false-positive rates",
        "agreement.csv": "Fleiss' kappa and Krippendorff's alpha per type and level",
        "changes.csv": "what changed since the previous release",
        "machine_labels.csv": "one row per issue and machine rater: the rater's current label "
        "(out of sample on final issues), its confidence and where the confidence comes from "
        "(confidence_from: logprobs, samples, probability); never part of the final labels",
        "machine_raters.json": "every machine rater: model, version, prompt template or "
        "configuration and its SHA-256, parameters, dates, validation figures and the "
        "alternative annotator test, enlisted or not, and the project's shares estimated with "
        "its help (PPI++) from the human sample",
    }.get(name, "")


def data_package(facts: ReleaseFacts, directory: Path) -> dict[str, Any]:
    project, release = facts.project, facts.release
    codes = allowed_codes(facts.context)
    resources = []
    for entry in facts.files:
        name = entry["name"]
        suffix = Path(name).suffix
        resource: dict[str, Any] = {
            "name": resource_name(name),
            "path": name,
            "title": name,
            "description": _description(name),
            "format": suffix.lstrip("."),
            "mediatype": MEDIA_TYPES.get(suffix, "application/octet-stream"),
            "bytes": entry["bytes"],
            "hash": f"sha256:{entry['sha256']}",
        }
        if suffix == ".csv":
            header, rows, bom = read_csv(directory / name)
            if not header:
                continue  # an empty table (no agreement figures yet) has nothing to describe
            resource.update(
                profile="tabular-data-resource",
                encoding="utf-8-sig" if bom else "utf-8",
                schema=table_schema(resource_name(name), header, rows, codes),
            )
        elif suffix == ".jsonl":
            resource.update(profile="tabular-data-resource", encoding="utf-8", schema=JSONL_SCHEMA)
        resources.append(resource)
    people = authors(facts)
    licence = licence_of(facts)
    return {
        "profile": "data-package",
        "name": slug(project.name),
        "title": title_of(facts),
        "description": dataset_description(facts),
        "version": release.version,
        "created": facts.released_at.isoformat(),
        "licenses": [{"name": licence, "path": licence_url(licence), "title": licence}],
        "contributors": [{"title": author_display(a), "role": "author"} for a in people],
        "keywords": ["issue reports", "labeled dataset", "taxonomy"],
        "taxonomy_version": str(facts.context.version),
        "machine_raters": facts.machine_raters,
        # Each rater's estimates in brief; the figures are under machine_raters[].estimates.
        "estimates_with_machine_help": estimated_with_machine_help(facts),
        "resources": resources,
    }


def write_datapackage(facts: ReleaseFacts, directory: Path, out: TextIO) -> None:
    json.dump(data_package(facts, directory), out, indent=2, ensure_ascii=False)
    out.write("\n")


# -- The HuggingFace dataset card ---------------------------------------------------------------

DEFAULT_CONFIG = "final_labels.csv"
ISSUES = "issues.jsonl"


def data_rows(path: Path) -> int:
    """The data rows of a written table: a CSV's rows after its header (none without a header),
    a JSON Lines file's non-blank lines."""
    if path.suffix == ".jsonl":
        with open(path, encoding="utf-8") as fh:
            return sum(1 for line in fh if line.strip())
    _, rows, _ = read_csv(path)
    return sum(1 for _ in rows)


def hf_configs(facts: ReleaseFacts, directory: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """(the dataset card's `configs`, the tables left out because they have no rows): one
    config per CSV table with rows, named as its Data Package resource, the final labels first
    and the default (`datasets` reads all configs with the builder of the first)."""
    configs: list[dict[str, Any]] = []
    empty: list[str] = []
    for entry in facts.files:
        name = entry["name"]
        if Path(name).suffix != ".csv":
            continue
        if data_rows(directory / name) == 0:
            empty.append(name)
            continue
        config: dict[str, Any] = {
            "config_name": resource_name(name),
            "data_files": [{"split": "train", "path": name}],
        }
        if name == DEFAULT_CONFIG:
            config["default"] = True
        configs.append(config)
    configs.sort(key=lambda c: not c.get("default", False))
    return configs, empty


def _empty_reason(name: str, facts: ReleaseFacts) -> str:
    if name == "machine_labels.csv":
        return "no machine rater has labeled an issue of this release"
    if name == "changes.csv":
        return "first release" if facts.previous is None else "no change since the last release"
    return "no rows in this release"


def dataset_card(facts: ReleaseFacts, directory: Path) -> str:
    """`README.md`: a HuggingFace dataset card whose YAML says which files `load_dataset` reads."""
    configs, empty = hf_configs(facts, directory)
    header: dict[str, Any] = {
        "pretty_name": f"{title_of(facts)} {facts.release.version}",
        "license": licence_of(facts).lower(),
        "tags": ["issue reports", "labeled dataset", "taxonomy"],
        "configs": configs,
    }
    default = next(
        (c["config_name"] for c in configs if c.get("default")), configs[0]["config_name"]
    )
    lines = [
        "---",
        yaml.safe_dump(header, sort_keys=False, allow_unicode=True, width=100).rstrip(),
        "---",
        "",
        f"# {title_of(facts)} {facts.release.version}",
        "",
        facts.project.description or f"The labeled issues of {facts.project.name}.",
        "",
        "`DATASHEET.md` says how the data were made and `CITATION.cff` how to cite them; every "
        "file is described in `datapackage.json` (Frictionless Data Package, with a Table Schema "
        "per table) and `croissant.json` (ML Croissant), and listed with its SHA-256 in "
        "`manifest.json`.",
        "",
        "## Loading",
        "",
        "```python",
        "from datasets import load_dataset",
        "",
        f'table = load_dataset("path/to/this/directory", "{default}", split="train")',
        f'issues = load_dataset("json", data_files="path/to/this/directory/{ISSUES}", '
        'split="train")',
        "```",
        "",
        "Every table with rows is a config (the CSV files; the JSON Lines through the json "
        "builder, as above):",
        "",
        "| config | file | rows | what |",
        "| --- | --- | --- | --- |",
    ]
    for config in configs:
        path = config["data_files"][0]["path"]
        lines.append(
            f"| `{config['config_name']}` | `{path}` | {data_rows(directory / path)} "
            f"| {_description(path)} |"
        )
    if (directory / ISSUES).exists():
        lines.append(
            f"| (json builder) | `{ISSUES}` | {data_rows(directory / ISSUES)} "
            f"| {_description(ISSUES)} |"
        )
    if empty:
        lines += [
            "",
            "Tables without rows in this release hold their header alone; `datapackage.json` and "
            "`croissant.json` describe their columns, but they are not configs, since "
            "`load_dataset` cannot load a file without data:",
            "",
        ]
        lines += [f"- `{name}`: {_empty_reason(name, facts)}" for name in empty]
    return "\n".join(lines) + "\n"


def write_dataset_card(facts: ReleaseFacts, directory: Path, out: TextIO) -> None:
    out.write(dataset_card(facts, directory))


def bibtex(facts: ReleaseFacts) -> str:
    people = authors(facts)
    names = " and ".join(
        f"{{{a['name']}}}" if "name" in a else f"{a['family-names']}, {a['given-names']}"
        for a in people
    )
    key = f"{slug(facts.project.name).replace('-', '_')}_{facts.release.version.replace('.', '_')}"
    parts = [f"title = {{{title_of(facts)}}}"]
    # No author is invented: without one the entry says the citation is incomplete.
    parts.append(f"author = {{{names}}}" if names else f"note = {{{CITATION_INCOMPLETE}}}")
    parts += [
        f"year = {{{facts.released_at.year}}}",
        f"version = {{{facts.release.version}}}",
        f"howpublished = {{Dataset release {facts.release.version}, licence {licence_of(facts)}}}",
    ]
    return f"@misc{{{key},\n  " + ",\n  ".join(parts) + "\n}"


def _alt_test_word(rater: dict[str, Any]) -> str:
    test = (rater.get("validation") or {}).get("alt_test")
    if not test:
        return "alt-test not run"
    if not test["enough_data"]:
        return "alt-test: not enough data"
    return "alt-test passed" if test["passed"] else "alt-test not passed"


def _estimates_words(rater: dict[str, Any]) -> str:
    found = rater.get("estimates") or {}
    if found.get("status") != "estimated":
        return f"estimates: {str(found.get('status', 'none')).replace('_', ' ')}"
    sample = found["type"]["sample"]
    return (
        f"estimates: PPI++ from a human sample of {sample['size']} of "
        f"{found['type']['n_total']} issues (seed {sample['seed']})"
    )


def rater_summary(facts: ReleaseFacts) -> str:
    """One line naming each machine rater: name, kind, model, version, enlisted or not, its
    alternative annotator test and its estimates' human sample."""
    if not facts.machine_raters:
        return "no machine raters"
    return "; ".join(
        f"{r['name']}: {r['kind']}, model {r['model'] or '-'} version {r['version']}, "
        + ("enlisted" if r["enlisted"] else "not enlisted")
        + f", {_alt_test_word(r)}, {_estimates_words(r)}"
        for r in facts.machine_raters
    )


ALT_TEST_BRIEF = ("epsilon", "enough_data", "passed", "winning_rate", "advantage_probability")


def estimated_with_machine_help(facts: ReleaseFacts) -> list[dict[str, Any]]:
    """The raters whose estimates a release carries (`raters.reporting`), in brief: the rater,
    its version and alternative annotator test, the method and the human sample."""
    out = []
    for r in facts.machine_raters:
        found = r.get("estimates") or {}
        if found.get("status") == "estimated":
            overall = found["type"]
            test = (r.get("validation") or {}).get("alt_test") or {}
            out.append(
                {
                    "rater": r["name"],
                    "rater_version": overall["rater_version"],
                    "alt_test": {k: test.get(k) for k in ALT_TEST_BRIEF},
                    "method": overall["method"],
                    "sample": overall["sample"],
                    "n_human": overall["n_human"],
                    "n_total": overall["n_total"],
                }
            )
    return out


def dataset_description(facts: ReleaseFacts) -> str:
    """The project's description; a sentence more when shares were estimated with a rater."""
    text = facts.project.description or f"The labeled issues of {facts.project.name}."
    estimated = estimated_with_machine_help(facts)
    if estimated:
        text += (
            " Shares of the scope estimated with machine help (PPI++, prediction-powered "
            "inference, from a random human sample and a machine rater's labels; rater "
            + ", ".join(e["rater"] for e in estimated)
            + "): see DATASHEET.md, section Estimates with machine help, and machine_raters.json."
        )
    return text


def croissant(facts: ReleaseFacts, directory: Path | None = None) -> dict[str, Any]:
    """ML Croissant 1.0 JSON-LD of the release's data files."""
    project, release = facts.project, facts.release
    package = data_package(facts, directory) if directory is not None else None
    distribution = []
    record_sets = []
    for entry in facts.files:
        name = entry["name"]
        suffix = Path(name).suffix
        distribution.append(
            {
                "@type": "cr:FileObject",
                "@id": name,
                "name": name,
                "description": _description(name),
                "contentUrl": name,
                "contentSize": f"{entry['bytes']} B",
                "encodingFormat": MEDIA_TYPES.get(suffix, "application/octet-stream"),
                "sha256": entry["sha256"],
            }
        )
    resources = package["resources"] if package else []
    for resource in resources:
        if "schema" not in resource:
            continue
        set_id = resource["name"]
        fields = []
        for spec in resource["schema"]["fields"]:
            if resource["path"].endswith(".jsonl") and spec["type"] in ("array", "object"):
                continue  # nested: read them from the JSON Lines themselves
            # A JSON Lines file is read as a table too (mlcroissant: pandas `read_json(lines=
            # True)`, one column per top-level key), so its fields are columns; a `jsonPath`
            # would be looked up as a column named "$.url" and fail (#21).
            extract = {"column": spec["name"]}
            field_name = re.sub(r"[^A-Za-z0-9_]", "_", spec["name"])
            fields.append(
                {
                    "@type": "cr:Field",
                    "@id": f"{set_id}/{field_name}",
                    "name": field_name,
                    "description": spec.get("description", spec["name"]),
                    "dataType": CROISSANT_TYPES.get(spec["type"], "sc:Text"),
                    "source": {"fileObject": {"@id": resource["path"]}, "extract": extract},
                }
            )
        description = resource["description"]
        if resource["path"] == "machine_labels.csv":
            description += f" ({rater_summary(facts)}; every detail in machine_raters.json)"
        record_sets.append(
            {
                "@type": "cr:RecordSet",
                "@id": set_id,
                "name": set_id,
                "description": description,
                "field": fields,
            }
        )
    people = authors(facts)
    return {
        "@context": CROISSANT_CONTEXT,
        "@type": "sc:Dataset",
        "name": slug(project.name),
        "description": dataset_description(facts),
        "conformsTo": "http://mlcommons.org/croissant/1.0",
        "citeAs": bibtex(facts),
        "creator": [
            {
                "@type": "sc:Person" if "family-names" in a else "sc:Organization",
                "name": author_display(a),
            }
            for a in people
        ],
        "datePublished": facts.released_at.date().isoformat(),
        "license": licence_url(licence_of(facts)),
        "version": release.version,
        "keywords": ["issue reports", "labeled dataset", "taxonomy"],
        "distribution": distribution,
        "recordSet": record_sets,
    }


def write_croissant(facts: ReleaseFacts, out: TextIO, directory: Path | None = None) -> None:
    json.dump(croissant(facts, directory), out, indent=2, ensure_ascii=False)
    out.write("\n")


def citation(facts: ReleaseFacts) -> dict[str, Any]:
    project = facts.project
    people = authors(facts)
    message = "If you use this dataset, please cite it as below."
    if not people:
        message = (
            f"{CITATION_INCOMPLETE}: this release names no author, so it cannot be cited in "
            "full. Cite it by title, version and date, and ask its maintainers for the authors."
        )
    data: dict[str, Any] = {
        "cff-version": "1.2.0",
        "message": message,
        "type": "dataset",
        "title": title_of(facts),
        "version": facts.release.version,
        "date-released": facts.released_at.date().isoformat(),
        # The format requires an author: an entry that says none was named, not an invented one.
        "authors": people or [{"name": NO_AUTHOR}],
        "license": licence_of(facts),
    }
    if project.description:
        data["abstract"] = project.description
    data["keywords"] = ["issue reports", "labeled dataset", "taxonomy"]
    return data


def write_citation(facts: ReleaseFacts, out: TextIO) -> None:
    out.write(
        "# This CITATION.cff file was generated with the release; see https://citation-file-format.github.io/\n"
    )
    yaml.safe_dump(citation(facts), out, sort_keys=False, allow_unicode=True, width=100)
