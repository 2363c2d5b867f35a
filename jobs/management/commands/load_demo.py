"""python manage.py load_demo [--password PW]: a demo user and team with diagnosed sample incidents.

The logs are bundled in jobs/demo/ (written for this project). Each incident is diagnosed here,
synchronously, so the dashboard is populated before any worker runs. Running it again adds nothing.
"""
import json
import secrets
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.files import File
from django.core.management.base import BaseCommand, CommandError

from jobs.models import Incident, Membership, Team
from jobs.tasks import diagnose_incident
from jobs.uploads import UploadRejected, create_incident

DEMO_DIR = Path(__file__).resolve().parents[2] / "demo"
DEMO_USER = "demo"
DEMO_TEAM = "Demo"


class Command(BaseCommand):
    help = "Create the demo user and team and a few diagnosed incidents from bundled sample logs."

    def add_arguments(self, parser):
        parser.add_argument("--password", help="the demo user's password (default: a new random one)")
        parser.add_argument("--username", default=DEMO_USER)

    def handle(self, *args, password=None, username=DEMO_USER, **options):
        user_model = get_user_model()
        user = user_model.objects.filter(username=username).first()
        if user is None:
            password = password or secrets.token_urlsafe(12)
            user = user_model.objects.create_user(username, f"{username}@example.com", password)
            self.stdout.write(f"Created user {username!r} with password: {password}")
        elif password:
            user.set_password(password)
            user.save(update_fields=["password"])
            self.stdout.write(f"Set the password of user {username!r} to: {password}")
        else:
            self.stdout.write(f"User {username!r} exists; its password is unchanged (use --password to set one).")
        team, _ = Team.objects.get_or_create(name=DEMO_TEAM)
        Membership.objects.get_or_create(team=team, user=user, defaults={"role": Membership.Role.ADMIN})

        for demo in json.loads((DEMO_DIR / "demos.json").read_text()):
            incident = Incident.objects.filter(team=team, idempotency_key=demo["key"]).first()
            if incident is None:
                incident = self.create(team, user, demo)
            if incident.status == Incident.Status.QUEUED:
                diagnose_incident(incident.pk)
                incident.refresh_from_db()
            verdict = f"{incident.category or '-'} rank {incident.failing_rank}" if incident.category else ""
            self.stdout.write(f"  #{incident.pk} {incident.status:<10} {verdict:<28} {incident.title}")
            if incident.status == Incident.Status.FAILED:
                self.stdout.write(f"      reason: {incident.status_reason}")
        self.stdout.write(self.style.SUCCESS(f"Demo data ready: log in as {username!r} to see team {team.name!r}."))

    def create(self, team, user, demo) -> Incident:
        handles = [open(DEMO_DIR / name, "rb") for name in demo["logs"]]  # noqa: SIM115 - closed below
        data = open(DEMO_DIR / demo["data"], "rb") if demo.get("data") else None  # noqa: SIM115
        try:
            command = (DEMO_DIR / demo["command"]).read_text().strip() if demo.get("command") else ""
            return create_incident(
                team=team, user=user, command=command,
                logs=[File(handle, name=Path(handle.name).name) for handle in handles],
                data=File(data, name=Path(data.name).name) if data else None,
                meta={key: demo[key] for key in ("title", "job_id", "cluster", "scheduler") if demo.get(key)}
                | {"idempotency_key": demo["key"]},
                enqueue=False,
            )
        except UploadRejected as exc:
            raise CommandError(f"demo {demo['key']}: {exc.message}") from exc
        finally:
            for handle in handles + ([data] if data else []):
                handle.close()
