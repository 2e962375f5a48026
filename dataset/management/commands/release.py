"""`manage.py release --project NAME --version X.Y.Z [--note "…"] [--user NAME] [--title T]
[--author "Family, Given[, ORCID]" …] [--no-authors] [--license SPDX]`: freeze the project's
final dataset as a release, built here and now (the page and the API queue it). Title, authors
and licence default to the project's (`dataset.releases.citation_defaults`); `--no-authors`
releases without authors, and the citation then says it is incomplete."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotator.models import Project
from dataset.releases import (
    build_release,
    citation_complete,
    create_release,
    release_path,
)
from lib.refusal import Refusal, command_error


class Command(BaseCommand):
    help = "Freeze a project's final dataset as an immutable, versioned release (a ZIP)."

    def add_base_argument(self, parser: CommandParser, *args: Any, **kwargs: Any) -> None:
        # Django's own --version (the framework's version) would take the release's flag.
        if "--version" in args:
            return
        super().add_base_argument(parser, *args, **kwargs)

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True, help="the project's name")
        parser.add_argument("--version", required=True, help="semantic version X.Y.Z")
        parser.add_argument("--note", default="", help="what this release is (Markdown)")
        parser.add_argument("--user", default="", help="username recorded as its creator")
        parser.add_argument("--title", help="the dataset's title (default: the project's name)")
        parser.add_argument(
            "--author",
            action="append",
            dest="authors",
            help='"Family, Given[, ORCID]" or "Organisation[, ORCID]"; repeat for each author '
            "(default: the project's authors)",
        )
        parser.add_argument(
            "--no-authors", action="store_true", help="no author: the citation is incomplete"
        )
        parser.add_argument(
            "--license", "--licence", dest="licence", help="SPDX identifier (default: project's)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        project = Project.objects.filter(name=options["project"]).first()
        if project is None:
            raise CommandError(f"project: no project named {options['project']!r}")
        user = None
        if options["user"]:
            user = User.objects.filter(username=options["user"]).first()
            if user is None:
                raise CommandError(f"user: no user named {options['user']!r}")
        if options["no_authors"] and options["authors"]:
            raise CommandError("author: --no-authors and --author exclude each other")
        authors = "\n".join(options["authors"]) if options["authors"] else None
        try:
            release = create_release(
                project,
                user,
                options["version"],
                options["note"],
                title=options["title"],
                authors="" if options["no_authors"] else authors,
                licence=options["licence"],
            )
        except Refusal as exc:
            raise command_error(exc, {"authors": "author", "licence": "license"}) from exc

        def progress(step: str, done: int, total: int) -> None:
            if options["verbosity"] > 1:
                self.stdout.write(f"[{done}/{total}] {step}")

        release = build_release(release.pk, progress)
        if not citation_complete(release):
            self.stderr.write("citation incomplete: the release names no author")
        self.stdout.write(
            f"release {release.version} of {project.name}: {release_path(release)}\n"
            f"{release.sha256}  {release.size} bytes, {release.counts.get('issues', 0)} issues"
        )
