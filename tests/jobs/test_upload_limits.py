"""Every upload limit answers a clear error and leaves no incident and no stored file behind."""
import gzip

import pytest
from django.urls import reverse

from jobs.models import Artifact, Incident
from jobs.uploads import UploadRejected, create_incident
from tests.jobs.upload_builders import (
    RANK_LOG,
    gzip_bomb,
    log_dir_tree,
    tar_bytes,
    upload,
    zip_bomb,
    zip_bytes,
)

pytestmark = pytest.mark.django_db


def post_json(client, **data):
    return client.post(reverse("jobs:upload"), data, HTTP_ACCEPT="application/json")


def assert_rejected(response, code, stored_files, status=400):
    assert response.status_code == status, response.content
    error = response.json()["error"]
    assert error["code"] == code
    assert error["message"]
    assert Incident.objects.count() == 0
    assert Artifact.objects.count() == 0
    assert stored_files() == []
    return error


def test_it_refuses_an_upload_without_logs(alice_client, stored_files):
    error = assert_rejected(post_json(alice_client, command="torchrun train.py"), "no_files", stored_files)
    assert error["field"] == "logs"


def test_it_refuses_an_upload_whose_only_file_is_empty(alice_client, stored_files):
    response = post_json(alice_client, logs=[upload("rank1.log", b"")])
    assert "rank1.log" in assert_rejected(response, "empty_file", stored_files)["message"]


def test_it_ignores_an_empty_file_next_to_others_with_a_note(alice):
    incident = create_incident(team=alice.teams.get(), logs=[upload("rank0.log", RANK_LOG), upload("rank1.log", b"")])
    assert [a.original_name for a in incident.artifacts.all()] == ["rank0.log"]
    assert incident.upload_notes == [
        {"file": "rank1.log", "code": "empty_file", "message": "rank1.log is empty; it was ignored."}]


def test_it_refuses_a_binary_file_that_is_no_archive(alice_client, stored_files):
    response = post_json(alice_client, logs=[upload("model.bin", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" * 10)])
    assert_rejected(response, "binary_file", stored_files)


def test_it_answers_413_when_the_request_is_larger_than_the_limit(alice_client, settings, stored_files):
    settings.TRIAGE_UPLOAD_MAX_BYTES = 1000
    big = b"x" * 2000 + b"\n"
    response = post_json(alice_client, logs=[upload("a.log", big * 600)])  # over the limit plus the envelope
    assert_rejected(response, "too_large", stored_files, status=413)


def test_it_answers_413_when_the_files_add_up_to_more_than_the_limit(alice, settings, stored_files):
    settings.TRIAGE_UPLOAD_MAX_BYTES = 1000
    with pytest.raises(UploadRejected) as caught:
        create_incident(team=alice.teams.get(), user=alice, logs=[upload("a.log", b"x\n" * 300),
                                                                     upload("b.log", b"y\n" * 300)])
    assert (caught.value.code, caught.value.status) == ("too_large", 413)
    assert Incident.objects.count() == 0 and stored_files() == []


def test_it_refuses_too_many_files(alice_client, settings, stored_files):
    settings.TRIAGE_UPLOAD_MAX_FILES = 2
    logs = [upload(f"rank{rank}.log", RANK_LOG) for rank in range(3)]
    assert_rejected(post_json(alice_client, logs=logs), "too_many_files", stored_files)


def test_it_refuses_a_zip_bomb(alice_client, stored_files):
    response = post_json(alice_client, logs=[upload("logs.zip", zip_bomb())])
    assert_rejected(response, "archive_bomb", stored_files)


def test_it_refuses_a_gzip_bomb(alice_client, stored_files):
    response = post_json(alice_client, logs=[upload("rank0.log.gz", gzip_bomb())])
    assert_rejected(response, "archive_bomb", stored_files)


@pytest.mark.parametrize("name", ["../../etc/cron.d/evil.log", "/etc/passwd", "logs/../../escape.log"])
def test_it_refuses_path_traversal_in_a_zip(alice_client, stored_files, name):
    archive = zip_bytes({"logs/ok.log": RANK_LOG, name: b"gotcha\n"})
    assert_rejected(post_json(alice_client, logs=[upload("logs.zip", archive)]), "path_traversal", stored_files)


def test_it_refuses_path_traversal_in_a_tar(alice_client, stored_files):
    archive = tar_bytes({"logs/ok.log": RANK_LOG, "../outside.log": b"gotcha\n"})
    assert_rejected(post_json(alice_client, logs=[upload("logs.tar.gz", archive)]), "path_traversal", stored_files)


def test_it_refuses_links_in_a_tar(alice_client, stored_files):
    archive = tar_bytes({"logs/ok.log": RANK_LOG}, links={"logs/passwd.log": "/etc/passwd"})
    assert_rejected(post_json(alice_client, logs=[upload("logs.tgz", archive)]), "path_traversal", stored_files)


def test_it_refuses_an_archive_with_too_many_members(alice_client, settings, stored_files):
    settings.TRIAGE_ARCHIVE_MAX_MEMBERS = 3
    archive = zip_bytes({f"rank{rank}.log": RANK_LOG for rank in range(5)})
    assert_rejected(post_json(alice_client, logs=[upload("logs.zip", archive)]), "too_many_members", stored_files)


@pytest.mark.parametrize("name,content", [
    ("logs.zip", b"PK\x03\x04" + b"\x00garbage" * 20),
    ("rank0.log.gz", gzip.compress(RANK_LOG * 50)[:-30]),
    ("logs.tar.gz", gzip.compress(b"not a tar at all\n" * 40)),
], ids=["zip", "gz", "tar.gz"])
def test_it_refuses_a_corrupt_archive(alice_client, stored_files, name, content):
    response = post_json(alice_client, logs=[upload(name, content)])
    assert_rejected(response, "bad_archive", stored_files)


def test_it_refuses_a_bad_config_file_after_a_good_log(alice_client, stored_files):
    response = post_json(alice_client, logs=[upload("rank0.log", RANK_LOG)],
                         config=upload("ds.zip", zip_bytes({"ds.json": b"{}"})))
    assert assert_rejected(response, "bad_field", stored_files)["field"] == "config"


def test_it_renders_the_page_again_with_the_error_for_a_plain_form_post(alice_client, stored_files):
    response = alice_client.post(reverse("jobs:upload"), {"logs": [upload("logs.zip", zip_bomb())]})
    assert response.status_code == 400
    assert b"Upload refused" in response.content and b'id="upload-form"' in response.content
    assert Incident.objects.count() == 0 and stored_files() == []


def test_it_cleans_up_when_the_idempotency_key_is_taken(alice, stored_files):
    from django.db import IntegrityError

    team = alice.teams.get()
    first = create_incident(team=team, logs=[upload("rank1.log", RANK_LOG)], meta={"idempotency_key": "job-7"})
    kept = stored_files()
    assert len(kept) == 1
    with pytest.raises(IntegrityError):
        create_incident(team=team, logs=[upload("a.log", RANK_LOG), upload("b.log", RANK_LOG)],
                        meta={"idempotency_key": "job-7"})
    assert list(Incident.objects.values_list("pk", flat=True)) == [first.pk]
    assert stored_files() == kept


def test_it_accepts_a_log_dir_tree_that_is_within_the_limits(alice_client, stored_files):
    response = post_json(alice_client, logs=[upload("run.zip", zip_bytes(log_dir_tree()))])
    assert response.status_code == 201
    assert len(stored_files()) == len(log_dir_tree())


def test_it_caps_what_all_archives_of_one_upload_expand_to_together(alice_client, settings, stored_files):
    settings.TRIAGE_UPLOAD_MAX_BYTES = 100_000
    archives = [upload(f"node{node}.zip", zip_bytes({f"node{node}/rank0.log": b"loss 1.0\n" * 6_000}))
                for node in range(2)]  # each expands to 54 kB, under the limit; together they do not fit
    assert_rejected(post_json(alice_client, logs=archives), "archive_bomb", stored_files)


def test_it_refuses_too_many_files_already_while_parsing_the_request(alice_client, settings, stored_files):
    settings.DATA_UPLOAD_MAX_NUMBER_FILES = 2  # Django's own parser stops here, before any view code
    logs = [upload(f"rank{rank}.log", RANK_LOG) for rank in range(3)]
    assert_rejected(post_json(alice_client, logs=logs), "too_many_files", stored_files)


def test_it_asks_for_a_file_when_the_pasted_log_is_too_big(alice_client, settings, stored_files):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    error = assert_rejected(post_json(alice_client, pasted_log="x" * 5000), "too_large", stored_files, status=413)
    assert error["field"] == "pasted_log"
