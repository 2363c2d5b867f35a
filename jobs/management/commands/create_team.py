"""python manage.py create_team NAME [--user USERNAME]: a team and a new API key, printed once on stdout."""
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from jobs.models import ApiKey, Membership, Team


class Command(BaseCommand):
    help = "Create a team (or reuse one of that name), optionally add a user as admin, and print a new API key."

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("--user", dest="username", help="add this existing user to the team as an admin")

    def handle(self, *args, name, username=None, **options):
        name = name.strip()
        if not name:
            raise CommandError("The team needs a name.")
        user = None
        if username:
            user = get_user_model().objects.filter(username=username).first()
            if user is None:
                raise CommandError(f"No user named {username!r}.")
        with transaction.atomic():
            team, created = Team.objects.get_or_create(name=name)
            if user is not None:
                Membership.objects.get_or_create(team=team, user=user, defaults={"role": Membership.Role.ADMIN})
            _, raw_key = ApiKey.issue(team, name="create_team", created_by=user)
        # Humans read stderr; scripts capture the key alone from stdout: KEY=$(manage.py create_team X)
        self.stderr.write(f"{'Created' if created else 'Reusing'} team {team.name!r} (slug {team.slug}).")
        if user is not None:
            self.stderr.write(f"{user.username} is a member of {team.name}.")
        self.stderr.write("API key (shown only this once; send it as 'Authorization: Token <key>'):")
        self.stdout.write(raw_key)
