"""The queue's index of open issues that already have labels (adaptive rule, needs more first)."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('labeling', '0001_initial'),
    ]

    operations = [
        migrations.AddIndex(
            model_name='projectissue',
            index=models.Index(condition=models.Q(('annotation_count__gt', 0), ('status', 'open')), fields=['project', 'position'], name='projectissue_needs_more'),
        ),
    ]
