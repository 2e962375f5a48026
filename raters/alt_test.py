"""The alternative annotator test of a machine rater on its project's human labels.

The humans are the project's annotators (their current labels, pilot included: every
independent label is a vote), the machine is the rater's current labels, both read at theme
level (`raters.backends.theme_code`; a false positive is a category) under the project's
taxonomy version, as validation reads them. An invalid machine output counts as a label no
human gave (a miss), never as a missing item. The margin ε is the project's
`alt_test_epsilon`. The statistics are `agreement.alt_test`'s.
"""

from __future__ import annotations

from django.core.cache import cache
from django.db.models import Count, Max

from agreement.alt_test import AltTestResult, alt_test
from annotator.models import Project
from annotator.pseudonyms import natural_order, pseudonyms, unnamed
from labeling.models import Annotation, MachineLabel, MachineRater
from raters.backends import theme_code
from taxonomy.lineage import Translator

# What an invalid machine output is compared as: no human label is ever this.
INVALID = "\x00invalid"


def human_theme_codes(project: Project) -> dict[str, dict[int, str]]:
    """{annotator's pseudonym: {issue id: theme-level code}} of the project's current
    annotations, in the natural order of the pseudonyms (the test's report names annotators
    as the agreement report does, never by account)."""
    translator = Translator(project.taxonomy_version)
    rows = Annotation.objects.filter(project=project, is_current=True).values_list(
        "annotator_id", "issue_id", "is_false_positive", "issue_type_id", "theme_id", "sub_theme_id"
    )
    by_user: dict[int, dict[int, str]] = {}
    for annotator, issue, fp, type_id, theme_id, sub_id in rows.iterator(chunk_size=5000):
        code = theme_code(translator.label_from_ids(fp, type_id, theme_id, sub_id).code)
        if code:
            by_user.setdefault(annotator, {})[issue] = code
    names = pseudonyms(project)
    named = {names.get(user) or unnamed(user): labels for user, labels in by_user.items()}
    return {name: named[name] for name in sorted(named, key=natural_order)}


def machine_theme_codes(rater: MachineRater) -> dict[int, str]:
    """{issue id: theme-level code} of the labels its current version gave (a retrained rater is
    tested on its new labels only), INVALID for an unreadable output."""
    translator = Translator(rater.project.taxonomy_version)
    rows = rater.current_version_labels().values_list(
        "issue_id", "valid", "is_false_positive", "issue_type_id", "theme_id", "sub_theme_id"
    )
    out = {}
    for issue, valid, fp, type_id, theme_id, sub_id in rows.iterator(chunk_size=5000):
        code = theme_code(translator.label_from_ids(fp, type_id, theme_id, sub_id).code)
        out[issue] = code if valid and code else INVALID
    return out


def rater_alt_test(
    rater: MachineRater, humans: dict[str, dict[int, str]] | None = None
) -> AltTestResult:
    """The rater's alt-test at its project's margin. Pass `humans` (from `human_theme_codes`)
    to test several raters of one project on one read of the annotations."""
    project = rater.project
    if humans is None:
        humans = human_theme_codes(project)
    return alt_test(humans, machine_theme_codes(rater), epsilon=project.alt_test_epsilon)


CACHE_SECONDS = 24 * 3600


def rater_alt_tests(project: Project, raters: list[MachineRater]) -> dict[int, dict]:
    """Each rater's `alt_test` JSON, cached under a key that changes with any new or revised
    annotation of the project, the rater's labels and version, the margin and the taxonomy
    version pinned (the raters page and its API read this on every load; at the study's size
    the annotations take about a second to read). The annotations are read once, and only when
    some rater's result is not cached."""
    if not raters:
        return {}
    ann = Annotation.objects.filter(project=project).aggregate(m=Max("id"), n=Count("id"))
    base = (
        f"alt-test:v1:{project.pk}:{project.taxonomy_version_id}:{project.alt_test_epsilon}:"
        f"{ann['m']}:{ann['n']}"
    )
    humans: dict[str, dict[int, str]] | None = None
    out = {}
    for rater in raters:
        labels = MachineLabel.objects.filter(rater=rater).aggregate(m=Max("id"), n=Count("id"))
        key = f"{base}:{rater.pk}:{rater.version}:{labels['m']}:{labels['n']}"
        found = cache.get(key)
        if found is None:
            if humans is None:
                humans = human_theme_codes(project)
            found = rater_alt_test(rater, humans).as_json()
            cache.set(key, found, CACHE_SECONDS)
        out[rater.pk] = found
    return out


def retest_enlisted(rater_id: int) -> bool:
    """After a training (or an import) made a new version: an enlisted rater keeps counting only
    if the new version passes too; otherwise it is taken back (a lead may enlist it again once
    it passes). True if it stays enlisted."""
    rater = MachineRater.objects.select_related("project__taxonomy_version").get(pk=rater_id)
    if not rater.enlisted:
        return False
    if rater_alt_test(rater).passed:
        return True
    MachineRater.objects.filter(pk=rater_id).update(enlisted=False)
    return False
