"""End to end: the seed case submitted through the API; a diagnose worker and a separate repro worker
take their tasks from real Redis; the API then shows the reproduction and the verified fix."""
import time

import pytest
from django.conf import settings
from rest_framework.test import APIClient

from jobs.models import ApiKey
from repro.models import ReproRun
from tests.integration.conftest import require
from tests.integration.test_worker_redis_postgres import database_url
from tests.repro.factories import DEMO, upload
from tests.workers import CeleryWorker, wait_for, worker_env

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.usefixtures("sandbox_runtime")]


@pytest.fixture(scope="module")
def workers(django_db_setup, django_db_blocker, tmp_path_factory):
    database = settings.DATABASES["default"]
    require(database["ENGINE"].endswith("postgresql"), "needs TRIAGE_DATABASE_URL (PostgreSQL)")
    require(bool(settings.REDIS_URL), "needs TRIAGE_REDIS_URL (Redis)")
    from config.celery import app

    try:
        with app.connection_for_write() as connection:
            connection.ensure_connection(max_retries=1)
            for queue in ("diagnose", "repro"):
                app.amqp.queues[queue].bind(connection.default_channel).purge()
    except Exception as exc:  # noqa: BLE001 - any connection problem means "no Redis"
        require(False, f"Redis at {settings.REDIS_URL} is not reachable: {exc}")
    media = tmp_path_factory.mktemp("media")
    env = worker_env(TRIAGE_DATABASE_URL=database_url(database), TRIAGE_REDIS_URL=settings.REDIS_URL,
                     TRIAGE_MEDIA_ROOT=str(media), TRIAGE_CELERY_EAGER="0")
    logs = tmp_path_factory.mktemp("workers")
    with CeleryWorker(env=env, queues="diagnose", log_path=logs / "diagnose.log") as diagnose, \
            CeleryWorker(env=env, queues="repro", log_path=logs / "repro.log") as repro:
        yield {"media": media, "diagnose": diagnose, "repro": repro}


@pytest.mark.django_db(transaction=True)
def test_the_seed_case_through_the_api_is_reproduced_and_its_fix_verified_by_the_repro_worker(
        workers, settings, alpha, alice):
    settings.MEDIA_ROOT = workers["media"]
    settings.CELERY_TASK_ALWAYS_EAGER = False
    _, raw_key = ApiKey.issue(alpha, name="ci", created_by=alice)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {raw_key}")
    started = time.monotonic()
    response = api.post("/api/v1/incidents/", {
        "files": [upload("train.log", (DEMO / "keyerror-2rank.log").read_bytes())],
        "command": (DEMO / "keyerror-2rank.command.txt").read_text(),
        "data": upload("train_alpaca.json", (DEMO / "keyerror-2rank.data.json").read_bytes()),
    }, format="multipart")
    assert response.status_code in (201, 202), response.content
    url = f"/api/v1/incidents/{response.json()['id']}/"

    def verified():
        body = api.get(url).json()
        fixes = (body.get("diagnosis") or {}).get("fixes") or []
        return body if fixes and fixes[0].get("verified") is not None else None

    describe = lambda: workers["diagnose"].log_tail() + "\n---\n" + workers["repro"].log_tail()  # noqa: E731
    body = wait_for(verified, timeout=120, describe=describe)
    elapsed = time.monotonic() - started
    fix = body["diagnosis"]["fixes"][0]
    assert fix["kind"] == "convert_data_format" and fix["verified"] is True
    runs = body["repro_runs"]
    assert [(r["kind"], r["status"], r["reproduced"], r["verified"]) for r in runs] == [
        ("data_check", "reproduced", True, None), ("data_check", "passed", None, True)]
    assert runs[0]["verdict"]["category"] == "data_schema" and runs[0]["log_url"].startswith("http")
    download = api.get(runs[1]["output_url"].replace("http://testserver", ""))
    assert download.status_code == 200 and b'"conversations"' in b"".join(download.streaming_content)
    # the repro task ran on the repro worker, not on the diagnose worker
    assert "Task repro.tasks.run_repro[" in workers["repro"].log_text()
    assert "repro.tasks.run_repro" not in workers["diagnose"].log_text().split("[tasks]")[-1].split("\n\n")[-1]
    assert ReproRun.objects.filter(incident_id=body["id"], status=ReproRun.Status.RUNNING).count() == 0
    print(f"submit -> verified: {elapsed:.1f} s")
