"""python manage.py create_team NAME [--user USERNAME [--existing-user]]: a team and a new API key.

The key is printed once, alone on stdout (KEY=$(manage.py create_team X)); everything meant for a
person goes to stderr. A --user that does not exist yet is created with a generated password,
printed once, unless --existing-user asks to refuse instead.
"""
import secrets

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from jobs.models import ApiKey, Membership, Team


class Command(BaseCommand):
    help = "Create a team (or reuse one of that name), optionally add a user as admin, and print a new API key."

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("--user", dest="username",
                            help="add this user to the team as an admin (created with a generated password if missing)")
        parser.add_argument("--existing-user", action="store_true",
                            help="refuse a --user that does not exist instead of creating it")

    def handle(self, *args, name, username=None, existing_user=False, **options):
        name = name.strip()
        if not name:
            raise CommandError("The team needs a name.")
        username = (username or "").strip()
        User = get_user_model()
        user, password = None, None
        if username:
            user = User.objects.filter(username=username).first()
            if user is None and existing_user:
                raise CommandError(
                    f"No user named {username!r}. Create one with 'python manage.py createsuperuser --username "
                    f"{username}' (or run create_team without --existing-user to create it with a generated password).")
        with transaction.atomic():
            if username and user is None:
                password = secrets.token_urlsafe(12)
                user = User.objects.create_user(username=username, password=password)
            team, created = Team.objects.get_or_create(name=name)
            if user is not None:
                Membership.objects.get_or_create(team=team, user=user, defaults={"role": Membership.Role.ADMIN})
            _, raw_key = ApiKey.issue(team, name="create_team", created_by=user)
        # Humans read stderr; scripts capture the key alone from stdout: KEY=$(manage.py create_team X)
        self.stderr.write(f"{'Created' if created else 'Reusing'} team {team.name!r} (slug {team.slug}).")
        if password is not None:
            self.stderr.write(f"Created user {user.username!r} with password {password} (shown only this once; "
                              f"change it with 'python manage.py changepassword {user.username}').")
        if user is not None:
            self.stderr.write(f"{user.username} is a member of {team.name}.")
        self.stderr.write("API key (shown only this once; send it as 'Authorization: Token <key>'):")
        self.stdout.write(raw_key)
