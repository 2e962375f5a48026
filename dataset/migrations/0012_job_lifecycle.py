"""The jobs' one lifecycle (`lib.jobs.Job`): a release's `created_by` and `built_at` are the
job's `requested_by` and `finished_at`, kept in their columns (`db_column`), so the database
does not change (state only: the previous release's code reads the same columns)."""

from django.conf import settings
from django.db import migrations, models
import django.db.models.deletion


class Migration(migrations.Migration):

    dependencies = [
        ('dataset', '0011_workers_job_claims'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RenameField(
                    model_name='release',
                    old_name='created_by',
                    new_name='requested_by',
                ),
                migrations.AlterField(
                    model_name='release',
                    name='requested_by',
                    field=models.ForeignKey(
                        blank=True,
                        db_column='created_by_id',
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name='+',
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                migrations.RenameField(
                    model_name='release',
                    old_name='built_at',
                    new_name='finished_at',
                ),
                migrations.AlterField(
                    model_name='release',
                    name='finished_at',
                    field=models.DateTimeField(blank=True, db_column='built_at', null=True),
                ),
            ],
            database_operations=[],
        ),
        # A job's requester may be none (an operator's command): blank, in forms only.
        migrations.AlterField(
            model_name='exportjob',
            name='requested_by',
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name='+',
                to=settings.AUTH_USER_MODEL,
            ),
        ),
    ]
