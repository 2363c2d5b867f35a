"""python manage.py create_api_key TEAM [--scope read|write] [--expires-days N] [--name NAME]"""
from datetime import timedelta

from django.core.management.base import BaseCommand, CommandError
from django.db.models import Q
from django.utils import timezone

from jobs.models import ApiKey, Team


class Command(BaseCommand):
    help = "Create an API key for a team and print it (it is shown only this once)."

    def add_arguments(self, parser):
        parser.add_argument("team", help="team name or slug")
        parser.add_argument("--scope", choices=ApiKey.Scope.values, default=ApiKey.Scope.WRITE)
        parser.add_argument("--expires-days", type=int, default=None)
        parser.add_argument("--name", default="")

    def handle(self, *args, team, scope, expires_days, name, **options):
        found = Team.objects.filter(Q(name=team) | Q(slug=team)).first()
        if found is None:
            raise CommandError(f"No team named {team!r}.")
        if expires_days is not None and expires_days < 1:
            raise CommandError("--expires-days must be at least 1.")
        expires_at = timezone.now() + timedelta(days=expires_days) if expires_days else None
        _, raw = ApiKey.issue(found, name=name, scope=scope, expires_at=expires_at)
        self.stdout.write(raw)
