"""The study's taxonomy ships Chinese descriptions beside its English names: one for every node
(and for no node the study lacks), read with line-numbered errors, kept by new versions."""

import csv
import re
import shutil

import pytest
from django.core.management import CommandError, call_command

from taxonomy import edits
from taxonomy.loader import DEFAULT_DIR, TYPE_FILES, TaxonomyFileError, parse_study_dir
from taxonomy.models import TaxonomyNode, TaxonomyVersion
from taxonomy.texts import DESCRIPTION_FILES, description_for

ZH = "zh-hans"
ZH_FILE = DEFAULT_DIR / DESCRIPTION_FILES[ZH]
HAN = re.compile(r"[\u4e00-\u9fff]")


def study_nodes():
    return [node for t in parse_study_dir(DEFAULT_DIR) for node in t.walk()]


def test_every_study_node_has_a_chinese_description():
    nodes = study_nodes()
    assert len(nodes) == 3 + 18 + 70
    missing = [n.code for n in nodes if not n.descriptions.get(ZH, "").strip()]
    assert missing == []
    # Chinese, not the English copied over (technical terms such as LLM, API stay in Latin).
    assert [n.code for n in nodes if not HAN.search(n.descriptions[ZH])] == []
    by_code = {n.code: n.descriptions[ZH] for n in nodes}
    assert by_code["A"] == "问题" and by_code["B"] == "需求" and by_code["C"] == "缺陷"
    assert by_code["B.2.i"] == "API 与接口需求"


def test_the_file_names_no_node_the_study_lacks_and_each_node_once():
    with ZH_FILE.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    codes = [row["code"] for row in rows]
    assert len(codes) == len(set(codes))
    study = {n.code: n.name for n in study_nodes()}
    assert set(codes) == set(study)
    # Each row carries the English name it renders, as the study wrote it.
    assert {row["code"]: row["name"] for row in rows} == study


@pytest.fixture
def study_copy(tmp_path):
    for _code, _name, filename in TYPE_FILES:
        shutil.copy(DEFAULT_DIR / filename, tmp_path / filename)
    return tmp_path


def write_descriptions(directory, *lines: str) -> None:
    text = "code,name,description\n" + "".join(f"{line}\n" for line in lines)
    (directory / DESCRIPTION_FILES[ZH]).write_text(text, encoding="utf-8")


GOOD = "A.1,Unclear Installation Guidance,安装指引不清晰"


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("Z.9,Nowhere,无此节点", "no node 'Z.9'"),
        ("A.2,Unclear Installation Guidance,安装指引不清晰", "A.2 is named 'Usage Gaps"),
        ("A.3,Unexpected Behavior and Weird Design,", "empty description for A.3"),
        ("A.1,Unclear Installation Guidance,又一次", "A.1 appears twice (first on line 3)"),
        ("A.4,Cross-Platform Deployment Issues", "expected 3 cells, got 2"),
    ],
)
def test_the_loader_refuses_a_bad_line_with_its_number(study_copy, bad, message):
    # The header on line 1, two good lines, the bad one on line 4 (a repeat names the first).
    write_descriptions(study_copy, "A,Question,问题", GOOD, bad)
    with pytest.raises(TaxonomyFileError) as caught:
        parse_study_dir(study_copy)
    assert caught.value.line == 4
    assert str(caught.value).startswith(f"{study_copy / DESCRIPTION_FILES[ZH]}, line 4: ")
    assert message in str(caught.value)


def test_a_file_without_its_columns_is_refused_on_line_one(study_copy):
    (study_copy / DESCRIPTION_FILES[ZH]).write_text("code,text\nA,问题\n", encoding="utf-8")
    with pytest.raises(TaxonomyFileError, match=r"line 1: missing column\(s\): name"):
        parse_study_dir(study_copy)


@pytest.mark.django_db
def test_the_command_names_the_line_and_stores_nothing(study_copy, no_taxonomy):
    write_descriptions(study_copy, GOOD, "", "C.1,System Compatibility,系统兼容")
    with pytest.raises(CommandError, match=r"line 4: C.1 is named 'System Compatibility and"):
        call_command("load_taxonomy", str(study_copy))
    assert not TaxonomyVersion.objects.exists()


def test_without_the_file_the_nodes_keep_their_english_only(study_copy):
    assert all(not n.descriptions for t in parse_study_dir(study_copy) for n in t.walk())


def test_description_for_falls_back_to_the_english_as_written():
    node = TaxonomyNode(name="n", description="as written", descriptions={ZH: "中文说明"})
    assert description_for(node, ZH) == "中文说明"
    assert description_for(node, "zh-Hans") == "中文说明"
    assert description_for(node, "en") == "as written"
    assert description_for(node, None) == "as written"
    assert description_for({"description": "", "descriptions": {}}, ZH) == ""
    assert description_for({"description": "row", "descriptions": {ZH: "行"}}, ZH) == "行"


@pytest.mark.django_db
def test_the_loaded_study_version_holds_them(taxonomy_version):
    node = taxonomy_version.nodes.get(code="C.3.i")
    assert node.descriptions == {ZH: "分布式通信与初始化缺陷"}
    assert node.description == ""  # the English stays as the study wrote it


@pytest.mark.django_db
def test_a_new_version_keeps_the_chinese_descriptions(project, lead):
    v1 = project.taxonomy_version
    before = dict(v1.nodes.values_list("code", "descriptions"))
    moved = v1.nodes.get(code="A.1.ii")
    v2, copy = edits.move(project, lead, moved, v1.nodes.get(code="A.2"))
    assert copy.descriptions == {ZH: "配置与参数使用问题"}
    after = {n.code: n.descriptions for n in v2.nodes.exclude(pk=copy.pk)}
    assert after == {code: d for code, d in before.items() if code != "A.1.ii"}
    # Another edit of the new version: still there.
    v3, _ = edits.merge(project, lead, v2.nodes.get(code="C.9"), v2.nodes.get(code="C.10"))
    assert v3.nodes.get(code="C.4.iii").descriptions == {ZH: "检查点精度兼容性故障"}
    assert v3.nodes.get(code="C.10").descriptions == {ZH: "文档与可维护性"}


@pytest.mark.django_db
def test_a_renamed_node_drops_the_translation_of_its_old_name(project, lead):
    v1 = project.taxonomy_version
    v2, renamed = edits.rename(project, lead, v1.nodes.get(code="C.1"), "System Compatibility")
    assert renamed.descriptions == {}
    assert description_for(renamed, ZH) == ""  # the reader sees the English name alone
    # Same name, same description: nothing changed, the translation stays.
    _, same = edits.rename(
        project, lead, v2.nodes.get(code="C.2"), "Resource Efficiency and Memory Management"
    )
    assert same.descriptions == {ZH: "资源效率与内存管理"}


@pytest.mark.django_db
def test_the_migration_fills_the_versions_a_database_already_holds(project, lead):
    """Versions loaded or edited before the file existed get the texts of the nodes whose code
    and English name still match; a renamed node keeps its English only."""
    from importlib import import_module

    from django.apps import apps

    migration = import_module("taxonomy.migrations.0005_node_descriptions")
    v2, _ = edits.rename(project, lead, project.taxonomy_version.nodes.get(code="A.3"), "Odd")
    TaxonomyNode.objects.update(descriptions={})
    migration.fill_study_descriptions(apps, None)
    assert v2.nodes.get(code="A.3.i").descriptions == {ZH: "框架实现与设计问题"}
    assert v2.parent.nodes.get(code="A.3").descriptions == {ZH: "非预期行为与反常设计"}
    assert v2.nodes.get(code="A.3").descriptions == {}
