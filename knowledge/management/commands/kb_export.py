"""manage.py kb_export TEAM [--out FILE]: a team's knowledge base as JSON (stdout by default)."""
import json

from django.core.management.base import BaseCommand, CommandError

from jobs.models import Team
from knowledge.transfer import export_team


class Command(BaseCommand):
    help = "Export a team's problems, resolutions and runbooks as JSON."

    def add_arguments(self, parser):
        parser.add_argument("team", help="team slug or name")
        parser.add_argument("--out", help="file to write (default: standard output)")

    def handle(self, *args, **options):
        team = Team.objects.filter(slug=options["team"]).first() or Team.objects.filter(name=options["team"]).first()
        if team is None:
            raise CommandError(f"no team {options['team']!r}")
        body = json.dumps(export_team(team), indent=1)
        if options["out"]:
            with open(options["out"], "w", encoding="utf-8") as handle:
                handle.write(body)
            self.stderr.write(f"wrote {options['out']}")
        else:
            self.stdout.write(body)
