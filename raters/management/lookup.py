"""The project and rater a management command names (`--project NAME --rater RATER`)."""

from __future__ import annotations

from django.core.management.base import CommandError

from annotator.models import Project
from labeling.models import MachineRater


def project_and_rater(options: dict) -> tuple[Project, MachineRater]:
    """The project named `--project` and its rater named `--rater`, or a CommandError naming
    the option that names nothing."""
    project = Project.objects.filter(name=options["project"]).first()
    if project is None:
        raise CommandError(f"project: no project named {options['project']!r}")
    rater = MachineRater.objects.filter(project=project, name=options["rater"]).first()
    if rater is None:
        raise CommandError(f"rater: no rater named {options['rater']!r} in {project.name}")
    return project, rater
