"""Concurrent identical submits (a scheduler retrying while the first call is in flight) make one incident."""
import threading

import pytest
import requests

from jobs.models import Incident

THREADS = 8


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("how", ["header", "job_attempt"])
def test_it_makes_one_incident_from_concurrent_retries(live_server, alpha_key, monkeypatch, how):
    monkeypatch.setattr("jobs.uploads._enqueue", lambda pk: None)
    barrier = threading.Barrier(THREADS)
    answers, errors = [], []
    form = {"job_id": "race-1", "attempt": "1"} if how == "job_attempt" else {"job_id": "race-1"}
    headers = {"Authorization": f"Token {alpha_key}"}
    if how == "header":
        headers["Idempotency-Key"] = "race-key-1"

    def submit():
        try:
            barrier.wait(timeout=10)
            response = requests.post(
                f"{live_server.url}/api/v1/incidents/", data=form, headers=headers, timeout=60,
                files=[("files", ("rank0.log", b"RuntimeError: NCCL timeout\n" * 100))],
            )
            answers.append((response.status_code, response.json()))
        except Exception as error:  # surfaced below
            errors.append(error)

    threads = [threading.Thread(target=submit) for _ in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors
    assert {status for status, _ in answers} == {202}, answers
    assert len({body["id"] for _, body in answers}) == 1
    assert Incident.objects.count() == 1
