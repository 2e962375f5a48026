"""Random public ids for queue items (issue #20 F4): added empty, filled for existing rows with
the model's own generator, then required and unique per project."""

from django.db import migrations, models

import labeling.models


def fill_public_ids(apps, schema_editor):
    ProjectIssue = apps.get_model("labeling", "ProjectIssue")
    batch = []
    for item in ProjectIssue.objects.filter(public_id__isnull=True).only("pk").iterator(2000):
        item.public_id = labeling.models.new_public_id()
        batch.append(item)
        if len(batch) >= 2000:
            ProjectIssue.objects.bulk_update(batch, ["public_id"])
            batch = []
    if batch:
        ProjectIssue.objects.bulk_update(batch, ["public_id"])


class Migration(migrations.Migration):

    dependencies = [
        ("labeling", "0002_projectissue_needs_more"),
    ]

    operations = [
        migrations.AddField(
            model_name="projectissue",
            name="public_id",
            field=models.PositiveBigIntegerField(editable=False, null=True),
        ),
        migrations.RunPython(fill_public_ids, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="projectissue",
            name="public_id",
            field=models.PositiveBigIntegerField(
                default=labeling.models.new_public_id, editable=False
            ),
        ),
        migrations.AddConstraint(
            model_name="projectissue",
            constraint=models.UniqueConstraint(
                fields=("project", "public_id"), name="unique_public_id_in_project"
            ),
        ),
    ]
