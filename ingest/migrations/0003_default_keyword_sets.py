"""Load the study's three keyword lists (ingest/data/filter_keywords) as default sets."""

from django.db import migrations


def load(apps, schema_editor):
    from ingest.keywords import load_study_keyword_sets

    load_study_keyword_sets(apps.get_model("ingest", "KeywordSet"))


def unload(apps, schema_editor):
    from ingest.keywords import STUDY_LISTS

    apps.get_model("ingest", "KeywordSet").objects.filter(
        name__in=[name for name, _ in STUDY_LISTS.values()]
    ).delete()


class Migration(migrations.Migration):
    dependencies = [("ingest", "0002_sync_runs_keyword_sets")]
    operations = [migrations.RunPython(load, unload)]
