"""Alice uploads a failed job's logs through the page; the incident is queued with its artifacts."""
import gzip
import hashlib

import pytest
from django.urls import reverse

from jobs.models import Artifact, Incident, Membership
from tests.conftest import SEED_CASE
from tests.jobs.upload_builders import RANK_LOG, log_dir_tree, tar_bytes, upload, zip_bytes

pytestmark = pytest.mark.django_db
SEED_LOG = SEED_CASE / "log.txt"


def test_it_sends_anonymous_visitors_to_the_login_page(client):
    response = client.get(reverse("jobs:upload"))
    assert response.status_code == 302 and reverse("login") in response["Location"]


def test_it_shows_a_labelled_form_with_a_drop_zone(alice_client):
    response = alice_client.get(reverse("jobs:upload"))
    html = response.content.decode()
    assert response.status_code == 200
    assert 'id="upload-form"' in html and 'id="drop-zone"' in html and "js/upload.js" in html
    assert 'type="file" name="logs"' in html and "multiple" in html
    assert "csrfmiddlewaretoken" in html
    for name in ("logs", "pasted_log", "command", "config", "data", "job_id", "cluster"):
        assert f'<label for="id_{name}">' in html, name
    assert 'name="team"' not in html  # one team: no choice to make


def test_it_stores_the_seed_log_and_redirects_to_the_incident(alice_client, alice):
    with open(SEED_LOG, "rb") as handle:
        response = alice_client.post(reverse("jobs:upload"), {
            "logs": [handle], "command": "torchrun --nproc_per_node 2 train.py", "job_id": "slurm-42",
            "cluster": "a100-pool",
        })
    incident = Incident.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("jobs:incident_detail", args=[incident.pk])
    assert (incident.team, incident.created_by, incident.status) == (alice.teams.get(), alice, "queued")
    assert (incident.job_id, incident.cluster) == ("slurm-42", "a100-pool")
    artifact = incident.artifacts.get()
    content = artifact.file.read()
    assert artifact.original_name == "log.txt" and artifact.kind == Artifact.Kind.LOG
    assert artifact.size == len(content) and artifact.sha256 == hashlib.sha256(content).hexdigest()
    assert b"KeyError: 'conversations'" in content


def test_it_answers_json_to_the_pages_script(alice_client):
    response = alice_client.post(reverse("jobs:upload"), {"logs": [upload("rank1.log", RANK_LOG)]},
                                 HTTP_ACCEPT="application/json")
    incident = Incident.objects.get()
    assert response.status_code == 201
    assert response.json() == {"id": incident.pk, "url": reverse("jobs:incident_detail", args=[incident.pk])}


def test_it_checks_the_csrf_token(alice):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    response = client.post(reverse("jobs:upload"), {"logs": [upload("rank1.log", RANK_LOG)]})
    assert response.status_code == 403
    assert Incident.objects.count() == 0


def test_it_masks_secrets_before_storing_anything(alice_client):
    log = (b"export HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz0123\n"
           b"cloning https://alice:s3cretpassw0rd@git.example.com/repo.git\n" + RANK_LOG)
    alice_client.post(reverse("jobs:upload"), {
        "logs": [upload("rank1.log", log)], "pasted_log": "wandb api_key=0123456789abcdef0123\nKeyError: 'x'\n",
        "command": "HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz0123 torchrun train.py",
    })
    incident = Incident.objects.get()
    stored = b"".join(artifact.file.read() for artifact in incident.artifacts.all())
    for secret in (b"hf_abcdefghijklmnopqrstuvwxyz0123", b"s3cretpassw0rd", b"0123456789abcdef0123"):
        assert secret not in stored
    assert "hf_abcdefghijklmnopqrstuvwxyz0123" not in incident.command
    assert b"KeyError: 'conversations'" in stored
    assert sorted(incident.artifacts.values_list("original_name", flat=True)) == ["pasted.log", "rank1.log"]


@pytest.mark.parametrize("archive_name,build", [("run.zip", zip_bytes), ("run.tar.gz", tar_bytes)])
def test_it_unpacks_a_torchrun_log_dir_tree_into_one_artifact_per_member(alice_client, archive_name, build):
    alice_client.post(reverse("jobs:upload"), {"logs": [upload(archive_name, build(log_dir_tree()))]})
    incident = Incident.objects.get()
    stored = {artifact.original_name: artifact.file.read() for artifact in incident.artifacts.all()}
    assert stored == log_dir_tree()


def test_it_decompresses_a_gz_log(alice_client):
    alice_client.post(reverse("jobs:upload"), {"logs": [upload("stderr.log.gz", gzip.compress(RANK_LOG))]})
    artifact = Incident.objects.get().artifacts.get()
    assert (artifact.original_name, artifact.file.read()) == ("stderr.log", RANK_LOG)


def test_it_stores_the_config_and_the_data_sample(alice_client):
    alice_client.post(reverse("jobs:upload"), {
        "logs": [upload("rank1.log", RANK_LOG)], "config": upload("ds_config.json", b'{"train_batch_size": 8}'),
        "data": upload("sample.jsonl", b'{"instruction": "hi", "output": "hello"}\n'),
    })
    kinds = dict(Incident.objects.get().artifacts.values_list("original_name", "kind"))
    assert kinds == {"rank1.log": "log", "ds_config.json": "config", "sample.jsonl": "data_sample"}


def test_it_lets_a_member_of_two_teams_choose_the_team(alice_client, alice, bravo):
    Membership.objects.create(team=bravo, user=alice)
    assert 'name="team"' in alice_client.get(reverse("jobs:upload")).content.decode()
    alice_client.post(reverse("jobs:upload"), {"team": bravo.pk, "logs": [upload("rank1.log", RANK_LOG)]})
    assert Incident.objects.get().team == bravo


def test_it_never_files_an_incident_under_someone_elses_team(client, charlie, alpha, bravo):
    client.force_login(charlie)
    client.post(reverse("jobs:upload"), {"team": alpha.pk, "logs": [upload("rank1.log", RANK_LOG)]})
    assert Incident.objects.get().team == bravo  # charlie has one team: the field is not even offered


def test_it_refuses_a_team_the_user_is_not_on(client, charlie, alpha, bravo):
    from jobs.models import Team

    gamma = Team.objects.create(name="Gamma")
    Membership.objects.create(team=gamma, user=charlie)
    client.force_login(charlie)
    response = client.post(reverse("jobs:upload"), {"team": alpha.pk, "logs": [upload("rank1.log", RANK_LOG)]},
                           HTTP_ACCEPT="application/json")
    assert response.status_code == 400 and response.json()["error"]["field"] == "team"
    assert Incident.objects.count() == 0
