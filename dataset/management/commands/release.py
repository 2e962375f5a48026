"""`manage.py release --project NAME --version X.Y.Z [--note "…"] [--user NAME]`: freeze the
project's final dataset as a release, built here and now (the page and the API queue it)."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandError

from annotator.models import Project
from dataset.releases import ReleaseError, build_release, create_release, release_path


class Command(BaseCommand):
    help = "Freeze a project's final dataset as an immutable, versioned release (a ZIP)."

    def add_base_argument(self, parser, *args, **kwargs) -> None:
        # Django's own --version (the framework's version) would take the release's flag.
        if "--version" in args:
            return
        super().add_base_argument(parser, *args, **kwargs)

    def add_arguments(self, parser) -> None:
        parser.add_argument("--project", required=True, help="the project's name")
        parser.add_argument("--version", required=True, help="semantic version X.Y.Z")
        parser.add_argument("--note", default="", help="what this release is (Markdown)")
        parser.add_argument("--user", default="", help="username recorded as its creator")

    def handle(self, *args, **options) -> None:
        project = Project.objects.filter(name=options["project"]).first()
        if project is None:
            raise CommandError(f"project: no project named {options['project']!r}")
        user = None
        if options["user"]:
            user = User.objects.filter(username=options["user"]).first()
            if user is None:
                raise CommandError(f"user: no user named {options['user']!r}")
        try:
            release = create_release(project, user, options["version"], options["note"])
        except ReleaseError as exc:
            raise CommandError(str(exc)) from exc

        def progress(step: str, done: int, total: int) -> None:
            if options["verbosity"] > 1:
                self.stdout.write(f"[{done}/{total}] {step}")

        release = build_release(release.pk, progress)
        self.stdout.write(
            f"release {release.version} of {project.name}: {release_path(release)}\n"
            f"{release.sha256}  {release.size} bytes, {release.counts.get('issues', 0)} issues"
        )
