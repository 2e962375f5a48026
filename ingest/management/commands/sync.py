"""`manage.py sync github:owner/name`: start (or, with --wait, run here) a repository sync.

--api-url is held to the same rule as on the repositories page (`ingest.hosts.check_api_url`),
and everything printed has been through `redact`: a terminal's scroll-back or a CI log is no
place for a forge token either.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ingest.forges import redact
from ingest.hosts import HostRefused, check_api_url
from ingest.issue_urls import parse_repo_spec
from ingest.models import KeywordSet, Repository
from ingest.runs import start_sync
from ingest.steps import run_inline


def parse_when(value: str | None, option: str) -> datetime | None:
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise CommandError(f"{option}: not an ISO 8601 date or time: {value!r}") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


class Command(BaseCommand):
    help = "Sync a repository's issues and comments: SPEC is github:owner/name, gitee:… gitlab:…"

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("spec")
        parser.add_argument("--api-url", help="API base URL (GitHub Enterprise, GitLab, a fake)")
        parser.add_argument("--since", help="Only issues updated since (default: last sync)")
        parser.add_argument("--until", help="Only issues created until")
        parser.add_argument("--keyword-set", help="Keyword set name (framework repositories)")
        parser.add_argument("--group", default="", help="Study group of a new repository")
        parser.add_argument("--framework", action="store_true", help="Keyword-filter it")
        parser.add_argument("--full", action="store_true", help="Ignore the last sync")
        parser.add_argument(
            "--wait", action="store_true", help="Run to completion here and print the figures"
        )

    def handle(self, *args: Any, spec: str, **opts: Any) -> None:
        parsed = parse_repo_spec(spec)
        if parsed is None:
            raise CommandError(f"SPEC {spec!r}: expected github:owner/name, gitee:… or gitlab:…")
        forge, owner, name = parsed
        try:
            api_url = check_api_url(forge, opts["api_url"] or Repository.DEFAULT_API_URLS[forge])
        except HostRefused as exc:
            raise CommandError(f"--api-url: {redact(str(exc))}") from None
        keyword_set = None
        if opts["keyword_set"]:
            keyword_set = KeywordSet.objects.filter(name__iexact=opts["keyword_set"]).first()
            if keyword_set is None:
                names = ", ".join(KeywordSet.objects.values_list("name", flat=True))
                raise CommandError(f"--keyword-set: no set {opts['keyword_set']!r} ({names})")
        repo, created = Repository.objects.get_or_create(
            forge=forge,
            api_url=api_url,
            owner=owner,
            name=name,
            defaults={
                "group": opts["group"],
                "is_framework": opts["framework"] or keyword_set is not None,
                "keyword_set": keyword_set,
            },
        )
        run = start_sync(
            repo,
            since=parse_when(opts["since"], "--since"),
            until=parse_when(opts["until"], "--until"),
            keyword_set=keyword_set,
            full=opts["full"],
            enqueue=not opts["wait"],
        )
        self.stdout.write(f"sync {run.pk} of {repo}{' (new repository)' if created else ''}")
        if not opts["wait"]:
            self.stdout.write("queued for the Celery workers")
            return
        run = run_inline(run)
        for key, value in run.figures().items():
            self.stdout.write(redact(f"{key:>22}: {value}"))
        for error in run.errors:
            self.stdout.write(redact(f"  {error.get('at', '')}  {error.get('message', '')}"))
        if run.status == run.Status.FAILED:
            raise CommandError(f"sync {run.pk} failed")
