"""Detail mapping: summaries grouped under sub-themes, reviewed by a lead."""

import pytest

from labeling.details import (
    DetailError,
    detail_lists,
    export_detail_csv,
    grouped,
    merge_entries,
    move_entry,
    sync_entries,
)
from labeling.models import Annotation, DetailEntry
from taxonomy import edits
from taxonomy.loader import parse_type_file
from tests.taxonomy.labels import annotate

pytestmark = pytest.mark.django_db

FULLWIDTH_COMMA = "\uff0c"


@pytest.fixture
def summaries(project, issues_in_project, annotator, other_annotator):
    i1, i2, i3 = issues_in_project[:3]
    annotate(project, i1, annotator, "C.3.i", summary="NCCL timeout at init")
    annotate(project, i1, other_annotator, "C.3.i", summary="NCCL init timeout")
    annotate(project, i2, annotator, "C.4.ii", summary="fp16 overflow in softmax")
    annotate(project, i3, annotator, "C.3.i", summary="")  # nothing to map
    return sync_entries(project)


def test_summaries_group_under_their_sub_theme(project, summaries):
    assert summaries == 3
    assert sync_entries(project) == 0  # once per annotation
    assert detail_lists(project) == {
        "C.3.i": ["NCCL timeout at init", "NCCL init timeout"],
        "C.4.ii": ["fp16 overflow in softmax"],
    }


def test_lead_merges_duplicates_and_moves_a_summary(project, lead, summaries):
    keep, dup = DetailEntry.objects.filter(node__code="C.3.i").order_by("pk")
    merge_entries(keep, [dup], lead, text="NCCL timeout during initialization")
    overflow = DetailEntry.objects.get(text__startswith="fp16")
    move_entry(overflow, project.taxonomy_version.nodes.get(code="C.4.i"), lead)
    assert detail_lists(project) == {
        "C.3.i": ["NCCL timeout during initialization"],
        "C.4.i": ["fp16 overflow in softmax"],
    }
    # The annotations themselves are untouched.
    assert set(Annotation.objects.values_list("sub_theme__code", "summary")) >= {
        ("C.4.ii", "fp16 overflow in softmax"),
        ("C.3.i", "NCCL init timeout"),
    }
    with pytest.raises(DetailError, match="not a sub-theme"):
        move_entry(overflow, project.taxonomy_version.nodes.get(code="C.4"), lead)


def test_groups_follow_the_taxonomy_version_in_use(project, lead, summaries):
    v1 = project.taxonomy_version
    v2, moved = edits.move(project, lead, v1.nodes.get(code="C.3.i"), v1.nodes.get(code="C.2"))
    codes = {g.node.code: len(g.entries) for g in grouped(project) if g.entries}
    assert codes == {moved.code: 2, "C.4.ii": 1}
    assert moved.code.startswith("C.2.") and all(
        g.node.version_id == v2.pk for g in grouped(project)
    )


def test_detail_file_reads_back_with_the_study_loader(project, lead, summaries):
    text = export_detail_csv(project, "C")
    assert text.startswith("\ufeffrootcause,subcategory,symptoms\n")
    parsed = parse_type_file(text, "details-C.csv", "C", "Bug")
    by_code = {s.code: s for t in parsed.children for s in t.children}
    version_details = project.taxonomy_version.nodes.get(code="C.3.i").details
    assert by_code["C.3.i"].details == [
        d.replace(",", FULLWIDTH_COMMA) for d in version_details
    ] + [
        "NCCL timeout at init",
        "NCCL init timeout",
    ]
    assert by_code["C.4.ii"].details[-1] == "fp16 overflow in softmax"
    only_reviewed = export_detail_csv(project, "C", with_version_details=False)
    by_code = {
        s.code: s.details
        for t in parse_type_file(only_reviewed, "x", "C", "Bug").children
        for s in t.children
        if s.details
    }
    assert by_code == {
        "C.3.i": ["NCCL timeout at init", "NCCL init timeout"],
        "C.4.ii": ["fp16 overflow in softmax"],
    }
