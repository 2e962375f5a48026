"""Every member gets a pseudonym: members without one get their project's next rater-N (by
joining order), a repeated pseudonym within a project is renumbered, then pseudonyms are
unique per project."""

import re

from django.db import migrations, models

RATER = re.compile(r"rater-(\d+)")


def give_pseudonyms(apps, schema_editor):
    Membership = apps.get_model("annotator", "Membership")
    project_ids = Membership.objects.values_list("project_id", flat=True).distinct()
    for project_id in project_ids:
        members = list(Membership.objects.filter(project_id=project_id).order_by("joined_at", "pk"))
        numbers = [int(m.group(1)) for x in members if (m := RATER.fullmatch(x.pseudonym))]
        next_n = max(numbers, default=0) + 1
        seen: set[str] = set()
        for member in members:
            if member.pseudonym and member.pseudonym.lower() not in seen:
                seen.add(member.pseudonym.lower())
                continue
            member.pseudonym = f"rater-{next_n}"
            next_n += 1
            seen.add(member.pseudonym)
            member.save(update_fields=["pseudonym"])


class Migration(migrations.Migration):
    dependencies = [("annotator", "0007_project_policy_guideline_citation")]

    operations = [
        migrations.RunPython(give_pseudonyms, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="membership",
            constraint=models.UniqueConstraint(
                condition=models.Q(("pseudonym", ""), _negated=True),
                fields=("project", "pseudonym"),
                name="unique_pseudonym_in_project",
            ),
        ),
    ]
