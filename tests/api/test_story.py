"""The whole story: a scheduler submits, the worker diagnoses, the verdict is pushed back signed."""
import json

import pytest
from celery import current_app

from jobs.webhooks import team_callback_secret, verify
from tests.api.conftest import log_file
from tests.api.test_webhooks import Receiver

pytestmark = pytest.mark.django_db

CRASH = """\
[rank1]: Traceback (most recent call last):
[rank1]:   File "/work/train.py", line 210, in __getitem__
[rank1]:     conversations = sample["conversations"]
[rank1]: KeyError: 'conversations'
E1130 21:00:00.000000 123 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: 1) local_rank: 1 (pid: 124) of binary: /usr/bin/python
"""


def test_it_pushes_the_verdict_to_the_callback_url(alpha, alpha_api, settings, monkeypatch,
                                                    django_capture_on_commit_callbacks):
    settings.TRIAGE_WEBHOOK_ALLOW_PRIVATE = True
    monkeypatch.setattr(current_app.conf, "task_always_eager", True)
    with Receiver() as receiver:
        with django_capture_on_commit_callbacks(execute=True):
            response = alpha_api.post("/api/v1/incidents/", {
                "files": [log_file("rank1.log", CRASH)], "job_id": "981", "attempt": "0",
                "command": "torchrun --nproc-per-node 2 /work/train.py", "callback_url": receiver.url,
            }, format="multipart")
        assert response.status_code == 202
    incident_id = response.json()["id"]
    detail = alpha_api.get(f"/api/v1/incidents/{incident_id}/").json()
    assert detail["status"] in {"diagnosed", "failed"}
    [(headers, body)] = receiver.requests
    assert verify(team_callback_secret(alpha), headers["X-Triage-Timestamp"], body, headers["X-Triage-Signature"])
    sent = json.loads(body)["incident"]
    assert sent["id"] == incident_id and sent["status"] == detail["status"]
    assert sent["diagnosis"] == detail["diagnosis"]
    [delivery] = detail["deliveries"]
    assert delivery["status"] == "delivered" and delivery["attempts"] == 1
