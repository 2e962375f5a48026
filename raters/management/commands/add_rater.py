"""`manage.py add_rater --project NAME --name RATER --kind classifier|llm [--model M]
[--api-url URL] [--api-key-env VAR] [--temperature T] [--samples K] [--prompt-details]`: add a
machine rater (the same validation as the page's form; an llm rater's model is checked against
the endpoint's `GET /models`, a warning when the endpoint lists none)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotator.models import Project
from lib.refusal import Refusal, command_error
from raters.forms import AddRaterForm
from raters.runs import add_rater


class Command(BaseCommand):
    help = "Add a machine rater to a project."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True, help="the project's name")
        parser.add_argument("--name", required=True, help="the rater's name")
        parser.add_argument("--kind", required=True, help="classifier or llm")
        parser.add_argument("--model", default="")
        parser.add_argument("--api-url", default="")
        parser.add_argument("--api-key-env", default="", help="NAME of the variable with the key")
        parser.add_argument("--temperature", default="0")
        parser.add_argument("--samples", default="1")
        parser.add_argument(
            "--prompt-details",
            action="store_true",
            help="show the taxonomy's example details in an llm prompt (validation may then "
            "not be fully out of sample)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        project = Project.objects.filter(name=options["project"]).first()
        if project is None:
            raise CommandError(f"project: no project named {options['project']!r}")
        form = AddRaterForm(
            {
                "name": options["name"],
                "kind": options["kind"],
                "model": options["model"],
                "api_url": options["api_url"],
                "api_key_env": options["api_key_env"],
                "temperature": options["temperature"],
                "samples": options["samples"],
                "prompt_details": options["prompt_details"],
            }
        )
        if not form.is_valid():
            field, errors = next(iter(form.errors.items()))
            raise CommandError(f"{field.replace('_', '-')}: {' '.join(str(e) for e in errors)}")
        try:
            rater = add_rater(
                project, form.settings(), warn=lambda text: self.stderr.write(f"warning: {text}")
            )
        except Refusal as exc:
            raise command_error(exc) from exc
        self.stdout.write(f"added rater {rater.name} ({rater.kind}, {rater.model}) to {project}")
