
import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('annotator', '0001_initial'),
        ('ingest', '0001_initial'),
        ('taxonomy', '0001_initial'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='DetailEntry',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('text', models.TextField()),
                ('reviewed_at', models.DateTimeField(blank=True, null=True)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('annotation', models.OneToOneField(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='detail_entry', to='annotator.annotation')),
                ('merged_into', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='duplicates', to='taxonomy.detailentry')),
                ('node', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='taxonomy.taxonomynode')),
                ('project', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='detail_entries', to='annotator.project')),
                ('reviewed_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'verbose_name_plural': 'detail entries',
                'ordering': ['project', 'pk'],
            },
        ),
        migrations.CreateModel(
            name='Proposal',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(max_length=300)),
                ('description', models.TextField(blank=True)),
                ('status', models.CharField(choices=[('pending', 'open for votes'), ('accepted', 'accepted'), ('rejected', 'rejected')], default='pending', max_length=10)),
                ('decided_at', models.DateTimeField(blank=True, null=True)),
                ('rejection_reason', models.TextField(blank=True)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('created_node', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='taxonomy.taxonomynode')),
                ('decided_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('issues', models.ManyToManyField(blank=True, related_name='+', to='ingest.issue')),
                ('parent', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='taxonomy.taxonomynode')),
                ('project', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='taxonomy_proposals', to='annotator.project')),
                ('proposed_by', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='taxonomy_proposals', to=settings.AUTH_USER_MODEL)),
                ('source_annotation', models.OneToOneField(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='taxonomy_proposal', to='annotator.annotation')),
            ],
            options={
                'ordering': ['-created_at'],
            },
        ),
        migrations.CreateModel(
            name='NodeLineage',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('kind', models.CharField(choices=[('copy', 'unchanged'), ('rename', 'renamed'), ('move', 'moved'), ('merge', 'merged into'), ('split', 'split off into'), ('edit', 'description or details changed')], default='copy', max_length=10)),
                ('new_node', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='predecessors', to='taxonomy.taxonomynode')),
                ('old_node', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='successors', to='taxonomy.taxonomynode')),
                ('version', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='lineage', to='taxonomy.taxonomyversion')),
            ],
            options={
                'indexes': [models.Index(fields=['version', 'old_node'], name='taxonomy_no_version_033834_idx')],
                'constraints': [models.UniqueConstraint(fields=('old_node', 'new_node'), name='unique_lineage_edge')],
            },
        ),
        migrations.CreateModel(
            name='ProposalVote',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('approve', models.BooleanField()),
                ('comment', models.TextField(blank=True)),
                ('voted_at', models.DateTimeField(auto_now=True)),
                ('proposal', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='votes', to='taxonomy.proposal')),
                ('voter', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('proposal', 'voter'), name='one_vote_per_voter')],
            },
        ),
    ]
