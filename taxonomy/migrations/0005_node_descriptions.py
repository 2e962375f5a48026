"""Descriptions in other languages beside the English (`taxonomy.texts`), and the study's Chinese
ones filled into the versions a database already holds: every node of the study's taxonomy (its
loaded versions and the versions edits made of them) whose code and English name match a line of
the shipped file. A node renamed since keeps its English only."""

import csv
from pathlib import Path

from django.db import migrations, models

STUDY_TAXONOMY_NAME = "LLM-centric challenges in DL frameworks"
FILES = {"zh-hans": Path(__file__).resolve().parents[1] / "data/study/descriptions.zh-Hans.csv"}


def fill_study_descriptions(apps, schema_editor):
    node_model = apps.get_model("taxonomy", "TaxonomyNode")
    texts: dict[tuple[str, str], dict[str, str]] = {}
    for language, path in FILES.items():
        if not path.exists():
            continue
        with path.open(encoding="utf-8", newline="") as f:
            for row in csv.DictReader(f):
                key = ((row.get("code") or "").strip(), (row.get("name") or "").strip())
                if key[0] and (row.get("description") or "").strip():
                    texts.setdefault(key, {})[language] = row["description"].strip()
    if not texts:
        return
    nodes = node_model.objects.filter(version__taxonomy__name=STUDY_TAXONOMY_NAME)
    changed = []
    for node in nodes.only("pk", "code", "name", "descriptions"):
        found = texts.get((node.code, node.name))
        if found and not node.descriptions:
            node.descriptions = dict(found)
            changed.append(node)
    node_model.objects.bulk_update(changed, ["descriptions"], batch_size=500)


class Migration(migrations.Migration):
    dependencies = [
        ("taxonomy", "0004_move_proposals_to_labeling"),
    ]

    operations = [
        migrations.AddField(
            model_name="taxonomynode",
            name="descriptions",
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.RunPython(fill_study_descriptions, migrations.RunPython.noop),
    ]
