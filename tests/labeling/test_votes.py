"""The resolve page's vote table (`labeling.votes`): each level's choices by name, with their
votes, most first."""

from labeling import resolution
from labeling.votes import vote_table
from taxonomy.models import TaxonomyNode
from tests.labeling.conftest import label_item


def test_each_level_lists_its_choices_by_name_most_votes_first(
    project, items, annotator, other_annotator, third_annotator
):
    for user, code in [(annotator, "C.3.i"), (other_annotator, "C.3.ii"), (third_annotator, "FP")]:
        label_item(user, project, items[0], code)
    comparison = resolution.compare(resolution.current_annotations(items[0]))
    nodes = TaxonomyNode.objects.filter(version_id=project.taxonomy_version_id)

    def named(code: str) -> str:
        node = nodes.get(code=code)
        return f"{code} {node.name}"

    table = vote_table(comparison, project.taxonomy_version_id)
    assert list(table) == ["not LLM-related", "type", "theme", "sub-theme"]
    assert table["not LLM-related"] == [("LLM-related", 2), ("not LLM-related", 1)]
    assert table["type"] == [(named("C"), 2), ("—", 1)]  # a false positive has no type
    assert table["theme"] == [(named("C.3"), 2), ("—", 1)]
    assert sorted(table["sub-theme"]) == sorted(
        [(named("C.3.i"), 1), (named("C.3.ii"), 1), ("—", 1)]
    )
