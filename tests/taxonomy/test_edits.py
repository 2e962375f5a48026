"""A lead merges, renames, moves and splits nodes; labels made before stay readable.

Each edit makes a new version and re-pins the project. Annotations keep their old foreign keys
(so agreement under the old version is unchanged) and read under the new version through
lineage.
"""

from collections import Counter

import pytest

from annotator.models import Membership, Project, Role
from labeling.models import Annotation
from taxonomy import edits
from taxonomy.lineage import Translator, label_in_version, node_in_version
from taxonomy.models import NodeLineage, TaxonomyNode
from tests.taxonomy.labels import annotate

pytestmark = pytest.mark.django_db


def theme_counts(annotations, version=None) -> Counter:
    """An agreement-style input: how often each theme code was chosen, read under `version`."""
    if version is None:
        return Counter(a.theme.code for a in annotations)
    translate = Translator(version)
    return Counter(translate.code(a, "theme") for a in annotations)


@pytest.fixture
def labeled(project, issues_in_project, annotator, other_annotator):
    codes = [
        ("A.2.i", "A.3.i"),
        ("A.3.ii", "A.3.ii"),
        ("A.3.iii", "A.2.ii"),
        ("C.1.i", "C.1.ii"),
        ("C.3.i", "C.1.iii"),
        ("B.1.i", "B.1.i"),
    ]
    for issue, (mine, theirs) in zip(issues_in_project, codes, strict=True):
        annotate(project, issue, annotator, mine)
        annotate(project, issue, other_annotator, theirs)
    return list(Annotation.objects.filter(project=project).select_related("theme", "sub_theme"))


def node(version, code) -> TaxonomyNode:
    return version.nodes.get(code=code)


def test_merge_and_rename_keep_every_annotation_reachable(project, lead, labeled):
    v1 = project.taxonomy_version
    before = theme_counts(labeled)
    assert before["A.3"] == 4 and before["A.2"] == 2

    v2, _ = edits.merge(project, lead, node(v1, "A.3"), node(v1, "A.2"))
    v3, renamed = edits.rename(project, lead, node(v2, "C.1"), "System Compatibility")

    project.refresh_from_db()
    assert project.taxonomy_version == v3
    assert [v3.parent, v2.parent] == [v2, v1]
    assert renamed.code == "C.1" and renamed.name == "System Compatibility"
    assert not v3.nodes.filter(name="Unexpected Behavior and Weird Design").exists()

    after = list(Annotation.objects.filter(project=project).select_related("theme", "sub_theme"))
    # The old references are untouched, so anything computed under v1 is unchanged.
    assert all(a.theme.version_id == v1.pk for a in after)
    assert theme_counts(after) == before

    # Every annotation reads under v3: A.3 became part of A.2, C.1 kept its code.
    under_v3 = theme_counts(after, v3)
    assert under_v3["A.2"] == before["A.2"] + before["A.3"]
    assert "A.3" not in under_v3
    assert under_v3["C.1"] == before["C.1"]
    assert sum(under_v3.values()) == len(after)
    for a in after:
        label = label_in_version(a, v3)
        assert label.sub_theme is not None and label.sub_theme.version_id == v3.pk
        assert label.sub_theme.parent == label.theme

    # A.3's sub-themes moved under A.2 with new codes, details kept.
    old_sub = node(v1, "A.3.ii")
    new_sub = node_in_version(old_sub, v3)
    assert new_sub.parent.code == "A.2" and new_sub.code.startswith("A.2.")
    assert new_sub.name == old_sub.name and new_sub.details == old_sub.details
    # And back: v3's merged A.2 reads as v1's A.2 (the survivor), its moved child as A.3.ii.
    assert node_in_version(node(v3, "A.2"), v1) == node(v1, "A.2")
    assert node_in_version(new_sub, v1) == old_sub


def test_move_re_parents_a_sub_theme_and_its_labels(project, lead, labeled):
    v1 = project.taxonomy_version
    v2, moved = edits.move(project, lead, node(v1, "C.1.iii"), node(v1, "C.3"))
    assert moved.parent.code == "C.3"
    assert moved.code == f"C.3.{['i', 'ii', 'iii', 'iv', 'v'][node(v1, 'C.3').children.count()]}"
    other = next(a for a in labeled if a.sub_theme.code == "C.1.iii")
    label = label_in_version(other, v2)
    assert (label.theme.code, label.sub_theme) == ("C.3", moved)
    assert NodeLineage.objects.get(version=v2, new_node=moved).kind == "move"


def test_split_keeps_labels_on_the_original_and_moves_chosen_details(project, lead):
    v1 = project.taxonomy_version
    original = node(v1, "C.3.i")
    taken = original.details[:2]
    v2, part = edits.split(
        project, lead, original, "NCCL version mismatch", details=taken, description="x"
    )
    assert part.parent.code == "C.3" and part.details == taken
    kept = node_in_version(original, v2)
    assert kept.code == "C.3.i" and not set(taken) & set(kept.details)
    assert NodeLineage.objects.get(version=v2, new_node=part).kind == "split"


def test_invalid_edits_name_the_fault_and_store_nothing(project, lead):
    v1 = project.taxonomy_version
    versions = v1.taxonomy.versions.count()
    with pytest.raises(edits.EditError, match=r"A\.2 and A\.2\.i"):
        edits.merge(project, lead, node(v1, "A.2"), node(v1, "A.2.i"))
    with pytest.raises(edits.EditError, match="goes under a theme"):
        edits.move(project, lead, node(v1, "A.2.i"), node(v1, "B"))
    with pytest.raises(edits.EditError, match="name"):
        edits.rename(project, lead, node(v1, "A.2"), "  ")
    assert v1.taxonomy.versions.count() == versions
    project.refresh_from_db()
    assert project.taxonomy_version == v1


def test_an_edit_based_on_a_replaced_version_is_refused(project, lead):
    v1 = project.taxonomy_version
    edits.rename(project, lead, node(v1, "A.1"), "Installation Guidance")
    with pytest.raises(edits.StaleVersionError):
        edits.rename(project, lead, node(v1, "A.2"), "Usage Gaps")


def test_lineage_across_sibling_versions_and_new_nodes(project, lead, taxonomy_version):
    other = Project.objects.create(name="Second study", taxonomy_version=taxonomy_version)
    Membership.objects.create(project=other, user=lead, role=Role.LEAD)
    v1 = taxonomy_version
    # Two projects edit the same v1 independently: v2 (merge) and v3 (rename) are siblings.
    v2, _ = edits.merge(project, lead, node(v1, "C.2"), node(v1, "C.3"))
    v3, _ = edits.rename(other, lead, node(v1, "C.3"), "Distributed Execution")
    assert (v2.parent, v3.parent) == (v1, v1)
    c2_in_v2 = node_in_version(node(v1, "C.2.i"), v2)
    # From v2 back to v1 and forward to v3: C.2.i is C.2.i again, C.3 is the renamed node.
    assert node_in_version(c2_in_v2, v3) == node(v3, "C.2.i")
    assert node_in_version(node(v2, "C.3"), v3).name == "Distributed Execution"

    # A node added later has no counterpart before; with the fallback it reads as its parent.
    _, added = edits.add(project, lead, node(v2, "A.1"), "Driver Versions")
    assert node_in_version(added, v1) is None
    assert node_in_version(added, v1, fallback_to_parent=True) == node(v1, "A.1")
    assert node_in_version(None, v1) is None


def test_agreement_codes_under_either_version(project, lead, issues_in_project, annotator):
    v1 = project.taxonomy_version
    fp = Annotation.objects.create(
        project=project, issue=issues_in_project[0], annotator=annotator, is_false_positive=True
    )
    labeled = annotate(project, issues_in_project[1], annotator, "A.3.i")
    v2, _ = edits.merge(project, lead, node(v1, "A.3"), node(v1, "A.2"))
    old, new = Translator(v1), Translator(v2)
    assert (old.code(fp), new.code(fp)) == ("FP", "FP")
    assert (old.code(labeled), new.code(labeled)) == ("A.3", "A.2")
    assert (old.code(labeled, "sub_theme"), new.code(labeled, "sub_theme")) == ("A.3.i", "A.2.iii")
    assert new.code(labeled, "issue_type") == "A"
