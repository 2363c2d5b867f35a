"""manage.py kb_import TEAM FILE: merge an exported knowledge base into a team (all or nothing)."""
import json

from django.core.management.base import BaseCommand, CommandError

from jobs.models import Team
from knowledge.transfer import TransferError, import_team


class Command(BaseCommand):
    help = "Import problems, resolutions and runbooks exported by kb_export into a team."

    def add_arguments(self, parser):
        parser.add_argument("team", help="team slug or name")
        parser.add_argument("file", help="JSON file written by kb_export")

    def handle(self, *args, **options):
        team = Team.objects.filter(slug=options["team"]).first() or Team.objects.filter(name=options["team"]).first()
        if team is None:
            raise CommandError(f"no team {options['team']!r}")
        try:
            with open(options["file"], encoding="utf-8") as handle:
                document = json.load(handle)
            counts = import_team(team, document)
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            raise CommandError(f"cannot read {options['file']}: {error}") from error
        except TransferError as error:
            raise CommandError(f"nothing imported: {error}") from error
        self.stdout.write("imported: {problems_created} new problems, {problems_updated} updated, "
                          "{runbooks} runbooks".format(**counts))
