"""create_team prints a key once; load_demo fills an empty dashboard and is safe to run twice."""
import io

import pytest
from django.contrib.auth import authenticate, get_user_model
from django.core.management import CommandError, call_command

from jobs.models import ApiKey, Diagnosis, Incident, Membership, Team
from jobs.models.api_keys import hash_key

pytestmark = pytest.mark.django_db


def run(*args):
    out, err = io.StringIO(), io.StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_it_creates_a_team_and_prints_a_working_key_alone_on_stdout(alice):
    out, err = run("create_team", "Gamma", "--user", "alice")
    raw_key = out.strip()
    team = Team.objects.get(name="Gamma")
    assert ApiKey.objects.get(hashed_key=hash_key(raw_key)).team == team
    assert Membership.objects.get(team=team, user=alice).role == "admin"
    assert "shown only this once" in err and raw_key not in err


def test_it_creates_a_missing_user_and_prints_its_password_once():
    out, err = run("create_team", "Research", "--user", "dana")
    password = err.split("with password ", 1)[1].split(" ", 1)[0]
    user = authenticate(username="dana", password=password)
    assert user is not None and len(password) >= 12
    assert Membership.objects.get(team__name="Research", user=user).role == "admin"
    assert password not in out and ApiKey.objects.get(hashed_key=hash_key(out.strip())).created_by == user
    _, again = run("create_team", "Research", "--user", "dana")  # the second run reuses the user
    assert "with password" not in again and get_user_model().objects.filter(username="dana").count() == 1


def test_it_refuses_an_unknown_user_when_asked_to_and_says_how_to_make_one():
    with pytest.raises(CommandError, match="createsuperuser --username nobody"):
        run("create_team", "Gamma", "--user", "nobody", "--existing-user")
    assert not Team.objects.filter(name="Gamma").exists()
    assert not get_user_model().objects.filter(username="nobody").exists()


def test_it_loads_the_demo_once_and_diagnoses_it_without_a_worker():
    out, _ = run("load_demo", "--password", "demo-password-1")
    assert "demo-password-1" in out
    user = authenticate(username="demo", password="demo-password-1")
    assert user is not None and user.teams.get().name == "Demo"
    incidents = Incident.objects.filter(team__name="Demo")
    assert incidents.count() >= 4
    assert set(incidents.values_list("status", flat=True)) == {"diagnosed"}
    assert Diagnosis.objects.count() == incidents.count()
    assert "data_schema" in set(incidents.values_list("category", flat=True))

    run("load_demo")
    assert Incident.objects.filter(team__name="Demo").count() == incidents.count()
    assert get_user_model().objects.filter(username="demo").count() == 1
    assert authenticate(username="demo", password="demo-password-1") is not None
