"""`DATASHEET.md` of a release, generated from the project (after Gebru et al., "Datasheets for
Datasets"): what it holds, where the issues come from and over which time windows, the keyword
filter and its measured recall, how the labels were made (K or the adaptive stopping rule, the
pilot, the resolution policy), agreement per type and level, the machine raters (model,
version, prompt or configuration and its hash, parameters, dates, validation, the alternative
annotator test, enlisted), the estimates with machine help (`raters.reporting`: per rater the
method, the human sample, the rater's test and a table of type shares with the PPI++ and the
human-only intervals, or why there is nothing to estimate), known limitations and what changed
since the previous release.

The text is Markdown written for people; values that come from users (project description,
release note, keyword lists) are quoted as they are — the file is never rendered by this site.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from typing import TYPE_CHECKING, Any, TextIO

from django.db.models import Count, Max, Min

from annotator.models import Project
from dataset import metadata
from dataset.exports import unmapped_labels
from dataset.recall import format_interval, recall_summary
from ingest.models import Issue, Repository
from labeling.models import RESOLUTION_METHOD_MEANINGS, Resolution

if TYPE_CHECKING:
    from dataset.metadata import ReleaseFacts


def _fmt(value: Any, decimals: int = 3) -> str:
    if value is None or value == "":
        return "-"
    if isinstance(value, float):
        return f"{value:.{decimals}f}"
    return str(value)


def _cell(text: Any) -> str:
    """A Markdown table cell: pipes and line breaks would end the cell."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def recall(project: Project) -> dict[str, Any] | None:
    """The keyword filter's measured recall (`dataset.recall`), or None when not measured."""
    return recall_summary(project)


_interval = format_interval


def sources(facts: ReleaseFacts) -> list[str]:
    ctx = facts.context
    scope = ctx.scope()
    lines = ["## Sources and time windows", ""]
    windows = {
        row["issue__repository"]: row
        for row in scope.values("issue__repository")
        .annotate(
            n=Count("pk"),
            first=Min("issue__created_at"),
            last=Max("issue__created_at"),
            first_year=Min("issue__study_year"),
            last_year=Max("issue__study_year"),
        )
        .order_by()
    }
    lines += [
        "| repository | forge | issues | created from | created to | study years |",
        "| --- | --- | ---: | --- | --- | --- |",
    ]
    for repo in Repository.objects.filter(pk__in=windows).order_by("owner", "name"):
        w = windows[repo.pk]
        years = (
            f"{w['first_year']}-{w['last_year']}"
            if w["first_year"] and w["first_year"] != w["last_year"]
            else _fmt(w["first_year"])
        )
        lines.append(
            f"| {_cell(repo.full_name)} | {repo.get_forge_display()} | {w['n']} | "
            f"{w['first'].date() if w['first'] else '-'} | "
            f"{w['last'].date() if w['last'] else '-'} | {years} |"
        )
    project_scope = facts.project.scope or {}
    if project_scope.get("created_from") or project_scope.get("created_to"):
        lines += [
            "",
            "The project's scope takes issues created from "
            f"{project_scope.get('created_from') or 'the beginning'} to "
            f"{project_scope.get('created_to') or 'today'}.",
        ]
    lines += [
        "",
        "Creation dates are the forges' (empty for issues known only from a published URL list, "
        "whose year is the list's).",
        "",
    ]
    return lines


def keyword_filter(facts: ReleaseFacts) -> list[str]:
    ctx = facts.context
    repo_ids = list(
        ctx.scope().order_by().values_list("issue__repository_id", flat=True).distinct()
    )
    repos = list(
        Repository.objects.filter(pk__in=repo_ids)
        .select_related("keyword_set")
        .order_by("owner", "name")
    )
    status_counts: dict[int, Counter[str]] = defaultdict(Counter)
    for repo_id, status, n in (
        Issue.objects.filter(repository_id__in=repo_ids)
        .values_list("repository_id", "filter_status")
        .annotate(n=Count("pk"))
        .order_by()
    ):
        status_counts[repo_id][status] = n
    lines = ["## The keyword filter", ""]
    sets = {repo.keyword_set for repo in repos if repo.keyword_set is not None}
    if sets:
        for keyword_set in sorted(sets, key=lambda s: s.name):
            words = ", ".join(f"`{w}`" for w in keyword_set.keywords[:200])
            lines.append(
                f"- Keyword set **{keyword_set.name}** ({len(keyword_set.keywords)} keywords): "
                f"{words}"
            )
        lines.append("")
    else:
        lines += ["No keyword set is attached to the released repositories.", ""]
    lines += [
        "| repository | keyword set | kept | dropped | not filtered |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    for repo in repos:
        c = status_counts[repo.pk]
        lines.append(
            f"| {_cell(repo.full_name)} | "
            f"{_cell(repo.keyword_set.name) if repo.keyword_set else '-'} | "
            f"{c[Issue.FilterStatus.KEPT]} | {c[Issue.FilterStatus.FILTERED_OUT]} | "
            f"{c[Issue.FilterStatus.NOT_FILTERED]} |"
        )
    lines += ["", "### Estimated recall of the filter", ""]
    summary = recall(facts.project)
    if summary is None:
        lines += [
            "Not measured: no sample of the issues the filter dropped has been labeled, so the "
            "number of relevant issues the filter lost is unknown.",
            "",
        ]
        return lines
    lines += [
        f"A seeded random sample of {summary.get('sample_size')} of the "
        f"{summary.get('dropped_total')} dropped issues was labeled blind like every other "
        f"issue; {summary.get('labeled')} are labeled so far, {summary.get('llm_related')} of "
        "them relevant.",
        "",
        "- Share of relevant issues among the dropped ones (stratified by repository: "
        f"Σ N_h·p_h / Σ N_h, MOVER-combined Wilson intervals): {_interval(summary.get('share'))}",
        f"- Recall of the filter: {_interval(summary.get('recall'))}",
        "",
    ]
    by_repo = summary.get("by_repository") or []
    if by_repo:
        lines += [
            "| repository | sampled | labeled | relevant | share | recall |",
            "| --- | ---: | ---: | ---: | --- | --- |",
        ]
        for row in by_repo:
            lines.append(
                f"| {_cell(row.get('repository'))} | {_fmt(row.get('sample_size'))} | "
                f"{_fmt(row.get('labeled'))} | {_fmt(row.get('llm_related'))} | "
                f"{_interval(row.get('share'))} | {_interval(row.get('recall'))} |"
            )
        lines.append("")
    suggested = summary.get("suggested_keywords") or []
    if suggested:
        lines += [
            "Words frequent in the titles of missed issues (candidate keywords): "
            + ", ".join(f"`{w}`" for w in suggested),
            "",
        ]
    return lines


def _method_line(method: str, n: int) -> str:
    """One resolution method's count, its name and what it means (`RESOLUTION_METHOD_MEANINGS`,
    in English: the release is built under English)."""
    if method not in Resolution.Method.values:
        return f"`{method}`: {n}"
    value = Resolution.Method(method)
    return f"`{method}` ({value.label}): {n}; {RESOLUTION_METHOD_MEANINGS[value]}."


def annotation_process(facts: ReleaseFacts) -> list[str]:
    project = facts.project
    counts = facts.counts
    lines = ["## Annotation process", ""]
    if project.stopping_rule == Project.StoppingRule.ADAPTIVE:
        lines.append(
            f"- Stopping rule: adaptive. Every issue gets at least {project.min_labels} labels "
            f"and is decided once the leading choice is {project.lead_margin} votes ahead of the "
            f"runner-up, at most K = {project.annotations_per_issue} labels."
        )
    else:
        lines.append(
            f"- Stopping rule: fixed. Every issue gets K = {project.annotations_per_issue} "
            "independent labels."
        )
    lines.append(
        f"- Annotators: {counts.get('annotators', 0)} (pseudonymous in every file), "
        f"{counts.get('annotations', 0)} current labels of the released issues; annotators "
        "do not see each other's labels until an issue is final."
    )
    lines.append(
        f"- Pilot: {project.pilot_size} issues drawn for the pilot "
        f"({counts.get('pilot_issues', 0)} of them in this release)."
        if project.pilot_size
        else "- Pilot: none recorded in the tool."
    )
    policy = str(project.get_resolution_policy_display())  # English: build_release overrides
    if project.resolution_policy == Project.Policy.MAJORITY:
        policy += f" (threshold {project.majority_threshold:.0%} of the votes)"
    lines.append(f"- Resolution policy: {policy}; a false-positive exclusion needs every vote.")
    methods = counts.get("resolution_methods") or {}
    if methods:
        lines.append("- Final labels by how they were decided (`resolution_method`):")
        for method, n in methods.items():
            lines.append(f"  - {_method_line(method, n)}")
        undiscussed = counts.get("consensus_without_discussion") or 0
        if undiscussed:
            lines.append(
                f"  - Of the {methods.get(Resolution.Method.CONSENSUS, 0)} `consensus` finals,"
                f" {undiscussed} have no message in their discussion before the decision: they"
                " were recorded before the tool required one and keep the method stored then."
            )
    lines += [
        f"- Taxonomy: {facts.context.version}; labels made under earlier versions are read "
        "through the lineage of its edits.",
        "",
    ]
    return lines


def agreement(facts: ReleaseFacts) -> list[str]:
    lines = ["## Agreement", ""]
    if not facts.agreement:
        return [*lines, "No agreement figures: no issue has labels from two annotators.", ""]
    lines += [
        "Fleiss' kappa and Krippendorff's alpha per type of the final label and level "
        "(computed when the release was made):",
        "",
        "| type | level | issues | raters | Fleiss' kappa | Krippendorff's alpha | reading |",
        "| --- | --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for row in facts.agreement:
        lines.append(
            f"| {_cell(row['type'])} | {row['level']} | {row['issues_used']} | {row['raters']} | "
            f"{_fmt(row['fleiss_kappa'])} | {_fmt(row['krippendorff_alpha'])} | "
            f"{_cell(row.get('reading') or '')} |"
        )
    return [*lines, ""]


def machine_raters(facts: ReleaseFacts) -> list[str]:
    """Every machine rater as `raters.describe` describes it (the same list as the metadata)."""
    lines = ["## Machine raters", ""]
    if not facts.machine_raters:
        return [*lines, "This project has no machine raters: every label is a person's.", ""]
    lines += [
        "Machine raters label issues beside the annotators; their labels are in "
        "`machine_labels.csv` (on final issues out of sample), never in the final labels. "
        "`machine_raters.json` holds each rater's full description. Figures below are measured "
        "against the final labels on final issues when the release was made.",
        "",
    ]
    for r in facts.machine_raters:
        v = r["validation"]
        versions = ", ".join(r["model_versions_in_labels"]) or "-"
        lines += [
            f"### {_cell(r['name'])}",
            "",
            f"- Kind: {r['kind']}; model: `{_cell(r['model'] or '-')}`; version {r['version']} "
            f"(model versions in its labels: {_cell(versions)}).",
            f"- Enlisted in the stopping rule: {'yes' if r['enlisted'] else 'no'}"
            + (
                f" (confidence threshold {_fmt(r['confidence_threshold'])})"
                if r["confidence_threshold"] is not None
                else ""
            )
            + ".",
            f"- Dates: created {_fmt(r['created_at'])}, trained {_fmt(r['trained_at'])} "
            f"on {r['trained_on']} final issues; current labels {r['current_labels']}, "
            f"from {_fmt(r['first_label_at'])} to {_fmt(r['last_label_at'])}.",
            f"- Validation on {v['n']} final issues: Cohen's kappa against the final label "
            f"{_fmt(v['kappa_type'])} (type), {_fmt(v['kappa_theme'])} (theme); accuracy at "
            f"theme level {_fmt(v['accuracy_theme'])}; invalid outputs "
            f"{_fmt(v['invalid_rate'])}.",
            f"- Calibration of its confidences on those issues: expected calibration error "
            f"{_fmt(v.get('ece'))} (10 equal-width bins; none without confidences).",
            f"- {alt_test_line(v.get('alt_test'))}",
            f"- Parameters: `{_cell(json.dumps(r['parameters'], sort_keys=True))}`",
            f"- {r['prompt']['kind'].capitalize()} (SHA-256 `{r['prompt']['sha256']}`; its "
            f"labels carry {r['distinct_prompt_hashes']} distinct full prompt hashes):",
            "",
            *(f"    {line}" for line in r["prompt"]["text"].splitlines()),
            "",
        ]
    return lines


def alt_test_line(test: dict[str, Any] | None) -> str:
    """The alternative annotator test in one sentence (`agreement.alt_test`'s `as_json`)."""
    if not test:
        return "Alternative annotator test: not run."
    head = f"Alternative annotator test (ε = {_fmt(test['epsilon'], 2)}): "
    if not test["enough_data"]:
        return head + (
            f"not enough data ({test['n_items']} issues with at least "
            f"{test['min_humans_per_item']} human labels, {test['n_annotators']} annotators with "
            f"at least {test['min_items_per_annotator']} of them)."
        )
    verdict = "passed" if test["passed"] else "not passed"
    return head + (
        f"{verdict}; winning rate ω {_fmt(test['winning_rate'])}, advantage probability ρ "  # noqa: RUF001
        f"{_fmt(test['advantage_probability'])}, on {test['n_items']} issues and "
        f"{test['n_annotators']} annotators."
    )


def _interval_cell(low: float, high: float) -> str:
    return f"[{low:.3f}, {high:.3f}]"


def share_table(report: dict[str, Any], grouped: bool) -> list[str]:
    """One `estimate(...).as_json()` as a Markdown table: the PPI++ share and interval beside
    the human sample's alone, and the effective sample size."""
    head = "| repository " if grouped else ""
    rule = "| --- " if grouped else ""
    lines = [
        f"{head}| code | share with the rater | 95 % interval | human sample alone | "
        "95 % interval | effective sample size |",
        f"{rule}| --- | ---: | --- | ---: | --- | ---: |",
    ]
    for row in report["estimates"]:
        group = f"| {_cell(row['by'] or '-')} " if grouped else ""
        code = row["code"] + (" (few in sample)" if row["sparse"] else "")
        effective = "-" if row["effective_n"] is None else f"{row['effective_n']:.0f}"
        lines.append(
            f"{group}| {_cell(code)} | {row['share']:.3f} | "
            f"{_interval_cell(row['ci_low'], row['ci_high'])} | {row['classical_share']:.3f} | "
            f"{_interval_cell(row['classical_ci_low'], row['classical_ci_high'])} | {effective} |"
        )
    return lines


def estimates(facts: ReleaseFacts) -> list[str]:
    """Each rater's estimates of the project's shares (`raters.reporting.release_estimates`,
    the same as `machine_raters.json`'s `estimates`)."""
    lines = ["## Estimates with machine help", ""]
    if not facts.machine_raters:
        return [
            *lines,
            "No machine rater: every share in this release is counted from final labels.",
            "",
        ]
    lines += [
        "With a machine rater, the project's shares can be estimated from a random sample of "
        "issues with human final labels and the rater's labels on every issue in scope: "
        "prediction-powered inference (PPI++; Angelopoulos et al., Science 2023; Angelopoulos, "
        "Duchi & Zrnic 2023), computed by `ppi-python`. A rater that labels badly cannot bias "
        "the estimate, only widen its interval back toward the human sample's alone, shown "
        "beside it. The human sample is the longest front part of the project's seeded random "
        "queue in which every issue is final: an issue in dispute holds it back, because "
        "leaving hard issues out would bias it. The scope is every issue of the project's queue "
        "(recall probes aside), final or not; this release holds the final ones. Computed when "
        "the release was made; every figure is in `machine_raters.json` under `estimates` "
        "(type shares over the scope and per repository, theme shares over the scope).",
        "",
    ]
    for r in facts.machine_raters:
        found = r.get("estimates") or {}
        status = found.get("status")
        lines += [f"### {_cell(r['name'])}", ""]
        if status == "nothing_to_estimate":
            lines += [
                f"Nothing to estimate: every one of the {found['n_total']} issues in scope is "
                "final and in the human sample, so the shares are counted (Table I, "
                "`table_one.csv`), not estimated.",
                "",
            ]
            continue
        if status != "estimated":
            reason = {
                "no_sample": "no human sample yet",
                "no_machine_labels": "the rater has no current valid label",
                "rater_votes": "the rater's votes count in the adaptive stopping rule",
            }.get(str(status), str(status))
            lines += [f"Not estimated: {reason} ({_cell(found.get('note', ''))}).", ""]
            continue
        overall, by_repository = found["type"], found["type_by_repository"]
        sample = overall["sample"]
        validation = r.get("validation") or {}
        lines += [
            f"- Rater: {_cell(r['name'])} ({r['kind']}), version {overall['rater_version']}; "
            f"enlisted: {'yes' if r['enlisted'] else 'no'}.",
            f"- {alt_test_line(validation.get('alt_test'))}",
            f"- Method: {overall['method']}.",
            f"- Human sample: {sample['size']} of the {overall['n_total']} issues in scope; "
            f"{sample['rule']} ({sample['method']}, seed {sample['seed']}); "
            f"{sample['held_back']} disputed issues hold it back.",
            "",
            "Type shares over the scope (a share is of every issue in scope, false positives "
            '(`FP`) included; "few in sample": fewer than 10 sampled issues have the code or '
            "lack it, and the interval may be too narrow):",
            "",
            *share_table(overall, grouped=False),
            "",
        ]
        if by_repository["estimates"]:
            lines += [
                "Type shares per repository (a repository the sample has reached with fewer "
                "than 2 issues is left out):",
                "",
                *share_table(by_repository, grouped=True),
                "",
            ]
    return lines


def limitations(facts: ReleaseFacts, recall_measured: bool) -> list[str]:
    counts = facts.counts
    lines = ["## Known limitations", ""]
    if not recall_measured:
        lines.append(
            "- The keyword filter's recall was not measured: relevant issues it dropped are "
            "missing from the dataset in unknown number."
        )
    few = [
        f"{row['type']} ({row['level']})"
        for row in facts.agreement
        if row.get("note") or (row.get("issues_used") or 0) < 30
    ]
    if few:
        lines.append(
            "- Agreement rests on few issues or is flagged for: " + ", ".join(sorted(set(few)))
        )
    imported = (counts.get("resolution_methods") or {}).get("imported", 0)
    if imported:
        lines.append(
            f"- {imported} final labels were imported from a published dataset; how they were "
            "decided is not recorded here."
        )
    unmapped = len(unmapped_labels(facts.context))
    if unmapped:
        lines.append(f"- {unmapped} labels have no counterpart in the taxonomy version.")
    if metadata.estimated_with_machine_help(facts):
        lines.append(
            "- The estimates with machine help read the raters' labels on every issue in scope, "
            "and `machine_labels.csv` holds them on the released (final) issues only: the "
            "estimates are recorded as computed when the release was made, not recomputable "
            "from this release's files alone."
        )
    lines += [
        "- Only final issues are released; issues still being labeled or in disagreement are not.",
        "- Issue text and comments belong to their authors on the forges and may change or "
        "disappear there; the text is the one fetched before the release.",
        "",
    ]
    return lines


def changes(facts: ReleaseFacts) -> list[str]:
    diff = facts.diff
    lines = ["## Changes from the previous release", ""]
    if facts.previous is None:
        return [*lines, "This is the first release.", ""]
    lines.append(
        f"Since {facts.previous.version}: {len(diff.added)} issues added, {len(diff.removed)} "
        f"removed, {len(diff.changed)} final labels changed"
        + (
            f", {len(diff.taxonomy.changes)} taxonomy changes"
            if diff.taxonomy is not None
            else ", taxonomy unchanged"
        )
        + ". Every change is listed in `changes.csv`."
    )
    if diff.taxonomy is not None:
        lines.append("")
        lines += [f"- {_cell(c.text)}" for c in diff.taxonomy.changes[:50]]
    return [*lines, ""]


def write_datasheet(facts: ReleaseFacts, out: TextIO) -> None:
    project, release, counts = facts.project, facts.release, facts.counts
    summary = recall(project)
    lines = [
        f"# Datasheet: {metadata.title_of(facts)} {release.version}",
        "",
        f"Released {facts.released_at.date().isoformat()} under {metadata.licence_of(facts)}. "
        f"Taxonomy: {facts.context.version}.",
        "",
    ]
    people = metadata.authors(facts)
    lines += [
        (
            "Authors: " + ", ".join(metadata.author_display(a) for a in people) + "."
            if people
            else f"{metadata.CITATION_INCOMPLETE}: this release names no author."
        ),
        "",
    ]
    if release.note:
        lines += ["> " + line for line in release.note.splitlines()] + [""]
    lines += ["## Motivation and composition", ""]
    if project.description:
        lines += [project.description, ""]
    lines += [
        f"{counts['issues']} issue reports with their final labels "
        f"({counts.get('false_positives', 0)} marked as false positives, i.e. not relevant), "
        "each with every annotator's label under a pseudonym.",
        "",
        "| type | issues |",
        "| --- | ---: |",
        *(f"| {_cell(code)} | {n} |" for code, n in counts.get("types", {}).items()),
        "",
        "Files: the study's CSV per repository (`labels/`), `final_labels.csv`, `issues.jsonl` "
        "(text, comments, every label revision), the taxonomy detail CSVs (`taxonomy/`), "
        "`table_one.csv`, `agreement.csv`, `changes.csv`, the machine raters' labels and "
        "descriptions (`machine_labels.csv`, `machine_raters.json`); `datapackage.json` and "
        "`croissant.json` describe them, `README.md` (a HuggingFace dataset card) names the "
        "tables `datasets.load_dataset` reads, `manifest.json` lists each file's SHA-256.",
        "",
    ]
    lines += sources(facts)
    lines += keyword_filter(facts)
    lines += annotation_process(facts)
    lines += agreement(facts)
    lines += machine_raters(facts)
    lines += estimates(facts)
    lines += limitations(facts, summary is not None)
    lines += changes(facts)
    out.write("\n".join(lines))
