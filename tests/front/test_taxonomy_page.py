"""The taxonomy page: the tree with detail counts and a search over names and details."""

import pytest

from taxonomy.search import build_tree, search_nodes


@pytest.mark.django_db
def test_tree_counts_details_under_each_node(taxonomy_version):
    tree = build_tree(taxonomy_version)
    assert [t.node.code for t in tree] == ["A", "B", "C"]
    question = tree[0]
    assert question.detail_count == sum(
        len(s.node.details) for th in question.children for s in th.children
    )
    assert question.detail_count > 0


@pytest.mark.django_db
def test_search_finds_sub_theme_by_a_detail(taxonomy_version):
    hits = search_nodes(taxonomy_version, "PMIX spelling")
    assert [h.node.code for h in hits] == ["C.1.iv"]
    assert any("PMIX spelling" in d for d in hits[0].matched_details)
    assert [p.code for p in hits[0].path] == ["C", "C.1"]


@pytest.mark.django_db
def test_search_by_name_ranks_name_matches_first(taxonomy_version):
    hits = search_nodes(taxonomy_version, "distributed support")
    assert hits[0].node.code == "B.2.ii"
    assert hits[0].name_matched


@pytest.mark.django_db
def test_page_requires_login(client, taxonomy_version):
    response = client.get(f"/taxonomy/{taxonomy_version.pk}/")
    assert response.status_code == 302
    assert "/accounts/login/" in response["Location"]


@pytest.mark.django_db
def test_page_shows_tree_and_htmx_search_returns_fragment(client, taxonomy_version, annotator):
    client.force_login(annotator)
    page = client.get(f"/taxonomy/{taxonomy_version.pk}/")
    assert page.status_code == 200
    assert b"Numerical Stability and Precision Management" in page.content
    fragment = client.get(f"/taxonomy/{taxonomy_version.pk}/?q=NCCL", HTTP_HX_REQUEST="true")
    assert fragment.status_code == 200
    assert b"<html" not in fragment.content
    assert b"result-count" in fragment.content
