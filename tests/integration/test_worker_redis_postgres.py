"""End to end at scale: alice uploads the seed log through the page, a real Celery worker takes the
task from real Redis and writes the diagnosis to real PostgreSQL (the test database)."""
from urllib.parse import quote

import pytest
from django.conf import settings
from django.urls import reverse

from jobs.models import Diagnosis, Incident
from tests.conftest import SEED_CASE
from tests.integration.conftest import require
from tests.workers import CeleryWorker, wait_for, worker_env

pytestmark = [pytest.mark.integration, pytest.mark.slow]
SEED = SEED_CASE


def database_url(database: dict) -> str:
    credentials = quote(database.get("USER") or "")
    if database.get("PASSWORD"):
        credentials += ":" + quote(database["PASSWORD"])
    host = database.get("HOST") or "127.0.0.1"
    port = f":{database['PORT']}" if database.get("PORT") else ""
    return f"postgres://{credentials}@{host}{port}/{quote(str(database['NAME']))}"


@pytest.fixture(scope="module")
def shared_media(tmp_path_factory):
    return tmp_path_factory.mktemp("media")


@pytest.fixture(scope="module")
def redis_worker(django_db_setup, django_db_blocker, shared_media, tmp_path_factory):
    database = settings.DATABASES["default"]
    require(database["ENGINE"].endswith("postgresql"), "needs TRIAGE_DATABASE_URL (PostgreSQL)")
    require(bool(settings.REDIS_URL), "needs TRIAGE_REDIS_URL (Redis)")
    from config.celery import app

    try:
        with app.connection_for_write() as connection:
            connection.ensure_connection(max_retries=1)
            app.amqp.queues["diagnose"].bind(connection.default_channel).purge()  # stale tasks of old runs
    except Exception as exc:  # noqa: BLE001 - any connection problem means "no Redis"
        require(False, f"Redis at {settings.REDIS_URL} is not reachable: {exc}")
    env = worker_env(
        TRIAGE_DATABASE_URL=database_url(database),  # the TEST database, where this test's rows are
        TRIAGE_REDIS_URL=settings.REDIS_URL,
        TRIAGE_MEDIA_ROOT=str(shared_media),
        TRIAGE_CELERY_EAGER="0",
    )
    worker = CeleryWorker(env=env, queues="diagnose", pool="solo",
                          log_path=tmp_path_factory.mktemp("worker") / "worker.log")
    with worker:
        yield worker


@pytest.fixture
def media_for_worker(settings, shared_media):
    settings.MEDIA_ROOT = shared_media
    settings.CELERY_TASK_ALWAYS_EAGER = False
    return shared_media


@pytest.mark.django_db(transaction=True)
def test_it_diagnoses_an_uploaded_log_on_a_real_worker(redis_worker, media_for_worker, client, alice):
    client.force_login(alice)
    with open(SEED / "log.txt", "rb") as log:
        response = client.post(reverse("jobs:upload"), {
            "logs": [log], "command": (SEED / "command.txt").read_text(), "job_id": SEED.name,
        }, HTTP_ACCEPT="application/json")
    assert response.status_code == 201, response.content
    incident_pk = response.json()["id"]

    def finished():
        incident = Incident.objects.get(pk=incident_pk)
        return incident if incident.is_finished else None

    incident = wait_for(finished, timeout=90, describe=redis_worker.log_tail)
    assert incident.status == "diagnosed", f"{incident.status_reason}\n{redis_worker.log_tail()}"
    diagnosis = Diagnosis.objects.get(incident=incident)
    assert incident.category and diagnosis.category == incident.category
    assert diagnosis.data["category"] == "data_schema"
    assert diagnosis.data["failing_rank"] == incident.failing_rank == 1
    assert "Task jobs.tasks.diagnose_incident[" in redis_worker.log_text()


@pytest.mark.django_db(transaction=True)
def test_it_diagnoses_a_second_delivery_only_once(redis_worker, media_for_worker, alice):
    from jobs.tasks import diagnose_incident
    from jobs.uploads import create_incident
    from tests.jobs.upload_builders import RANK_LOG, upload

    done_before = redis_worker.log_text().count(" succeeded in ")
    incident = create_incident(team=alice.teams.get(), logs=[upload("rank1.log", RANK_LOG * 3)])
    diagnose_incident.delay(incident.pk)  # the on-commit message plus a duplicate delivery

    wait_for(lambda: redis_worker.log_text().count(" succeeded in ") >= done_before + 2, timeout=90,
             describe=redis_worker.log_tail)
    assert Incident.objects.get(pk=incident.pk).status == "diagnosed"
    assert Diagnosis.objects.filter(incident=incident).count() == 1
    assert "'skipped'" in redis_worker.log_text()
