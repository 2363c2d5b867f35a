"""tests/factories.py has a factory for every model, and each one makes a row the model accepts."""
import re
from pathlib import Path

import pytest
from django.apps import apps

from tests import factories

pytestmark = pytest.mark.django_db


def factory_name(model) -> str:
    return "make_" + re.sub(r"(?<!^)(?=[A-Z])", "_", model.__name__).lower()


def test_there_is_a_factory_for_every_model_of_the_project():
    models = [model for label in ("jobs", "knowledge") for model in apps.get_app_config(label).get_models()]
    assert len(models) >= 10
    missing = [factory_name(model) for model in models if not hasattr(factories, factory_name(model))]
    assert missing == []


def test_every_factory_makes_a_valid_row(media_root):
    team = factories.make_team()
    user = factories.make_user(team=team, role="admin")
    key, raw = factories.make_api_key(team, created_by=user)
    incident = factories.make_incident(team, created_by=user, diagnosis=factories.diagnosis_data(category="gpu_oom"))
    artifact = factories.make_artifact(incident, "logs/rank0.log", "[rank0]: hello\n")
    endpoint = factories.make_webhook_endpoint(team)
    delivery = factories.make_webhook_delivery(incident, endpoint)
    problem = factories.make_problem(team)
    link = factories.make_problem_occurrence(problem, incident)
    other = factories.make_problem(team)
    knowledge_rows = (
        factories.make_problem_hash(problem),
        factories.make_grouping_action(other, problem, actor=user),
        factories.make_runbook(team),
        factories.make_evidence_sample(incident),
    )
    membership = user.memberships.get()
    for row in (team, user, membership, key, incident, incident.diagnosis, artifact, endpoint, delivery, problem, link,
                *knowledge_rows):
        row.full_clean()
    assert (membership.team, membership.role) == (team, "admin") and raw.startswith(key.prefix)
    assert (incident.status, incident.category, incident.failing_rank) == ("diagnosed", "gpu_oom", 1)
    assert artifact.file.read() == b"[rank0]: hello\n"
    assert media_root in Path(artifact.file.path).parents
    assert delivery.url == endpoint.url and problem.occurrences == 1 and list(problem.incidents.all()) == [incident]


def test_unnamed_rows_get_distinct_names():
    assert factories.make_team().name != factories.make_team().name
    assert factories.make_user().username != factories.make_user().username
