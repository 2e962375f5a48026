"""The label audit: which final labels a Dawid-Skene model of the annotators finds unlikely.

At the theme level (a false positive is its own class "FP", as in the agreement report) the
project's current, non-pilot annotations are fitted with Dawid-Skene (`agreement.dawid_skene`):
each annotator's confusion matrix and each issue's posterior over the themes. Every issue with
a current final label is then ranked by the posterior of that final label, lowest first: the
top of the list are the finals the annotators' own record of errors argues against most. Beside
each: the model's preferred theme and its posterior, and the issue's votes.

Per annotator: the model's accuracy, sum_k prior_k * confusion[k, k] (the probability of
answering an issue's true theme, the diagonal weighted by how often each theme occurs).

Labels are read once per table (`agreement.measures.load_labels`, under the taxonomy version's
lineage like the report) and integer-encoded with numpy; the issues' URLs and queue ids are read
in one more query for the rows shown. For leads only: the model's estimates are never shown to
annotators (`agreement.permissions.AUDIT_ROLES`). The per-issue list is never cached; the
accuracies are, for the lead's agreement page only (`cached_rater_accuracies`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from django.core.cache import cache
from django.utils.translation import gettext_noop

from agreement import dawid_skene as ds
from agreement.measures import CACHE_SECONDS, cache_key, load_labels
from annotator.models import Project
from annotator.pseudonyms import names_of, natural_order
from labeling.models import ProjectIssue
from taxonomy.models import TaxonomyVersion

if TYPE_CHECKING:
    import numpy as np

# Shown on the pages in the reader's language (gettext there), written in English by the command.
ACCURACY_DEFINITION = gettext_noop(
    "sum over themes k of prior_k * confusion[k, k]: the probability that the annotator gives "
    "an issue's true theme, under the model"
)
# Above this many rows the URLs are read for the whole project rather than by an id list.
IDS_IN_QUERY = 2000


@dataclass
class AuditRow:
    item_id: int | None  # the ProjectIssue (the resolve page's id)
    issue_id: int
    url: str
    final: str
    final_posterior: float
    suggested: str
    suggested_posterior: float
    votes: list[tuple[str, int]]  # (theme code, count), most votes first


@dataclass
class RaterAccuracy:
    pseudonym: str
    accuracy: float
    labels: int


@dataclass
class Audit:
    project: str
    taxonomy_version: str
    issues_fitted: int = 0
    finals: int = 0
    classes: int = 0
    iterations: int = 0
    converged: bool = True
    issues: list[AuditRow] = field(default_factory=list)
    annotators: list[RaterAccuracy] = field(default_factory=list)

    def as_json(self) -> dict:
        return {
            "project": self.project,
            "taxonomy_version": self.taxonomy_version,
            "issues_fitted": self.issues_fitted,
            "finals": self.finals,
            "classes": self.classes,
            "iterations": self.iterations,
            "converged": self.converged,
            "accuracy_definition": ACCURACY_DEFINITION,
            "issues": [
                {
                    "url": row.url,
                    "item_id": row.item_id,
                    "final": row.final,
                    "final_posterior": row.final_posterior,
                    "suggested": row.suggested,
                    "suggested_posterior": row.suggested_posterior,
                    "votes": [{"code": code, "count": count} for code, count in row.votes],
                }
                for row in self.issues
            ],
            "annotators": [
                {"pseudonym": a.pseudonym, "accuracy": a.accuracy, "labels": a.labels}
                for a in self.annotators
            ],
        }


@dataclass
class _Model:
    """A fitted project: the compact arrays and what Dawid-Skene made of them."""

    fit: ds.Fit | None
    issue_ids: list[int]  # per model item: the Issue id
    codes: list[str]  # per model class: the theme code (or FP)
    rater_ids: list[int]  # per model rater: the user id
    item: np.ndarray  # per answer, its model item
    label: np.ndarray  # per answer, its model class
    rater_labels: list[int]
    final: np.ndarray  # per model item, its final's class (-1: no final)
    version: TaxonomyVersion


def _fit(project: Project, version: TaxonomyVersion | None = None) -> _Model:
    import numpy as np

    version = version or project.taxonomy_version
    labels, _ = load_labels(project, version, pilot=False)
    cats = labels.cats["theme"]
    keep = cats >= 0  # an annotation without a theme (nor FP) says nothing at this level
    # Only issues with at least one answer are modelled: a pilot issue's final alone would sit
    # at the class prior and read as "unlikely" for no reason.
    issues, item = np.unique(labels.issue[keep], return_inverse=True)
    raters, rater = np.unique(labels.rater[keep], return_inverse=True)
    finals = labels.final["theme"][issues]
    classes, encoded = np.unique(np.concatenate([cats[keep], finals]), return_inverse=True)
    # A final with no theme (-1) is not audited; -1 sorts first, so it takes class 0.
    has_final = finals >= 0
    offset = 1 if classes.size and classes[0] < 0 else 0
    classes = classes[offset:]
    label = encoded[: int(keep.sum())] - offset
    final = np.where(has_final, encoded[int(keep.sum()) :] - offset, -1)
    theme = labels.categories["theme"]
    fit = None
    if issues.size:
        data = ds.answers(item, rater, label, len(issues), len(raters), len(classes))
        fit = ds.fit(data)
    return _Model(
        fit=fit,
        issue_ids=[labels.issue_ids[i] for i in issues.tolist()],
        codes=[theme[c] for c in classes.tolist()],
        rater_ids=[labels.raters[r] for r in raters.tolist()],
        item=item,
        label=label,
        rater_labels=np.bincount(rater, minlength=len(raters)).tolist(),
        final=final,
        version=version,
    )


def rater_accuracies(project: Project, version: TaxonomyVersion | None = None) -> dict[str, float]:
    """The model's accuracy per annotator pseudonym (for the agreement page's lead column)."""
    model = _fit(project, version)
    if model.fit is None:
        return {}
    names = names_of(project, model.rater_ids)
    return dict(zip(names, (float(a) for a in model.fit.accuracy), strict=True))


def cached_rater_accuracies(
    project: Project, version: TaxonomyVersion | None = None
) -> dict[str, float]:
    """`rater_accuracies`, kept under the agreement report's key (which changes with any new,
    revised or reopened label) so the lead's agreement page does not refit on every view.

    Only pseudonyms and their accuracies are stored, and only the lead branch of the agreement
    page reads them (AUDIT_ROLES); the audit's per-issue list is never cached.
    """
    key = "audit-accuracy:" + cache_key(project, version.pk if version else None)
    found = cache.get(key)
    if found is None:
        found = rater_accuracies(project, version)
        cache.set(key, found, CACHE_SECONDS)
    return found


def audit(
    project: Project, top: int | None = None, version: TaxonomyVersion | None = None
) -> Audit:
    """Fit the project's labels and rank its finals, least likely first (`top` rows, or all)."""
    import numpy as np

    model = _fit(project, version)
    result = Audit(project=project.name, taxonomy_version=str(model.version))
    fit = model.fit
    if fit is None:
        return result
    final = model.final
    audited = np.flatnonzero(final >= 0)
    posterior = fit.posteriors[audited, final[audited]]
    suggested = fit.posteriors[audited].argmax(axis=1)
    suggested_posterior = fit.posteriors[audited, suggested]
    # Least likely final first; among equals the model's most confident alternative first.
    order = np.lexsort((-suggested_posterior, posterior))
    if top is not None:
        order = order[:top]
    shown = audited[order]

    # Votes of the shown issues: answers sorted by item, sliced per issue.
    item, label = model.item, model.label
    by_item = np.argsort(item, kind="stable")
    bounds = np.searchsorted(item[by_item], [shown, shown + 1])
    issue_ids = [model.issue_ids[i] for i in shown.tolist()]
    located = ProjectIssue.objects.filter(project=project)
    if len(issue_ids) <= IDS_IN_QUERY:
        located = located.filter(issue_id__in=issue_ids)
    where = {
        issue_id: (pk, url)
        for issue_id, pk, url in located.values_list("issue_id", "pk", "issue__url")
    }
    for n, i in enumerate(shown.tolist()):
        counts = np.bincount(label[by_item[bounds[0][n] : bounds[1][n]]])
        votes = sorted(
            ((model.codes[c], int(k)) for c, k in enumerate(counts.tolist()) if k),
            key=lambda v: (-v[1], v[0]),
        )
        item_id, url = where.get(model.issue_ids[i], (None, ""))
        k = order[n]
        result.issues.append(
            AuditRow(
                item_id=item_id,
                issue_id=model.issue_ids[i],
                url=url,
                final=model.codes[int(final[i])],
                final_posterior=float(posterior[k]),
                suggested=model.codes[int(suggested[k])],
                suggested_posterior=float(suggested_posterior[k]),
                votes=votes,
            )
        )
    names = names_of(project, model.rater_ids)
    result.annotators = sorted(
        (
            RaterAccuracy(pseudonym=name, accuracy=float(acc), labels=count)
            for name, acc, count in zip(names, fit.accuracy, model.rater_labels, strict=True)
        ),
        key=lambda a: natural_order(a.pseudonym),
    )
    result.issues_fitted = len(model.issue_ids)
    result.finals = int(audited.size)
    result.classes = len(model.codes)
    result.iterations = fit.iterations
    result.converged = fit.converged
    return result
