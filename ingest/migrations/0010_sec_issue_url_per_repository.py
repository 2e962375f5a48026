"""An issue's URL is unique within its repository, no longer across repositories (#28 review,
L2): a project's upload may hold a URL another project's repository holds, so an upload answers
alike whether a URL is stored elsewhere or new."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('ingest', '0009_zh_verbose_names'),
    ]

    operations = [
        migrations.AlterField(
            model_name='issue',
            name='url',
            field=models.URLField(db_index=True, max_length=500),
        ),
        migrations.AddConstraint(
            model_name='issue',
            constraint=models.UniqueConstraint(fields=('repository', 'url'), name='unique_issue_url'),
        ),
    ]
