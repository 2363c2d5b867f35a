"""Hostile and odd uploads: NUL bytes kept, binary refused by share, empty and binary members noted,
truncated and oversized zips refused before their directory is parsed; nothing left behind."""
import io
import os
import zipfile

import pytest

from jobs.models import Artifact, Incident
from jobs.staging import staging_root
from jobs.uploads import UploadRejected, create_incident
from tests.jobs.upload_builders import RANK_LOG, upload, zip_bytes

pytestmark = pytest.mark.django_db


def submit(alice, *logs, **kwargs):
    return create_incident(team=alice.teams.get(), user=alice, logs=list(logs), **kwargs)


def stored_text(incident, name) -> str:
    artifact = incident.artifacts.get(original_name=name)
    with artifact.file.open("rb") as handle:
        return handle.read().decode("utf-8")


def test_a_log_with_nul_and_stray_binary_bytes_is_kept_with_replacement_characters(alice):
    log = b"step 1 loss 2.0\n" * 200 + b"\x00\x00\x00\x00 partial write \xff\xfe\n" + RANK_LOG
    incident = submit(alice, upload("rank1.log", log))
    text = stored_text(incident, "rank1.log")
    assert "\x00" not in text and "\ufffd\ufffd\ufffd\ufffd partial write \ufffd\ufffd" in text
    assert "KeyError: 'conversations'" in text


def test_a_log_that_starts_with_a_hole_of_nul_bytes_is_still_a_log(alice):
    log = b"\x00" * 4096 + b"step 1 loss 2.0\n" * 20_000 + RANK_LOG
    incident = submit(alice, upload("rank0.log", log))
    assert incident.artifacts.count() == 1


def test_a_really_binary_file_is_refused_by_name_with_the_share_of_non_text_bytes(alice, stored_files):
    blob = bytes(range(256)) * 64 + os.urandom(8192)
    with pytest.raises(UploadRejected) as caught:
        submit(alice, upload("rank0.log", RANK_LOG), upload("model.safetensors", blob))
    assert caught.value.code == "binary_file"
    assert "model.safetensors" in caught.value.message and "% of its sampled bytes are not text" in caught.value.message
    assert Incident.objects.count() == 0 and stored_files() == []


def test_empty_and_binary_archive_members_are_ignored_with_notes(alice):
    archive = zip_bytes({"logs/rank0.log": RANK_LOG, "logs/rank1.log": b"", "logs/core.dump": os.urandom(20_000)})
    incident = submit(alice, upload("run.zip", archive))
    assert [a.original_name for a in incident.artifacts.all()] == ["logs/rank0.log"]
    notes = {note["file"]: note for note in incident.upload_notes}
    assert notes["logs/rank1.log"]["code"] == "empty_file"
    assert notes["logs/core.dump"]["code"] == "binary_file" and "ignored" in notes["logs/core.dump"]["message"]


def test_an_archive_of_only_empty_members_is_refused(alice, stored_files):
    with pytest.raises(UploadRejected) as caught:
        submit(alice, upload("run.zip", zip_bytes({"a.log": b"", "b.log": b""})))
    assert caught.value.code == "bad_archive" and Incident.objects.count() == 0


def test_a_truncated_zip_holding_a_stored_inner_zip_is_refused(alice, stored_files):
    inner = zip_bytes({"rank0.log": RANK_LOG})
    outer = zip_bytes({"inner.zip": inner, "padding.log": b"loss 1.0\n" * 5000}, compression=zipfile.ZIP_STORED)
    truncated = outer[: outer.index(inner) + len(inner)]  # cut right after the inner zip's end record
    assert zipfile.ZipFile(io.BytesIO(truncated)).namelist() == ["rank0.log"]  # what the old check accepted
    with pytest.raises(UploadRejected) as caught:
        submit(alice, upload("run.zip", truncated))
    assert caught.value.code == "bad_archive" and "truncated" in caught.value.message
    assert Incident.objects.count() == 0 and stored_files() == []


def test_a_zip_with_too_many_members_is_refused_from_its_end_record(alice, settings, monkeypatch):
    settings.TRIAGE_ARCHIVE_MAX_MEMBERS = 100
    archive = zip_bytes({f"e{index}.log": b"" for index in range(150)})

    def no_directory_parsing(*args, **kwargs):
        raise AssertionError("the central directory was parsed")

    monkeypatch.setattr(zipfile, "ZipFile", no_directory_parsing)
    with pytest.raises(UploadRejected) as caught:
        submit(alice, upload("many.zip", archive))
    assert caught.value.code == "too_many_members"


def test_every_field_is_masked_before_storage(alice):
    token = "hf_Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0Lz9Xc"
    data_sample = f'{{"text": "hi", "meta": {{"api_key": "sample-secret-77"}}, "t": "{token}"}}\n'.encode()
    incident = submit(
        alice, upload("rank0.log", RANK_LOG + f"export HF_TOKEN={token}\n".encode()),
        command=f"HF_TOKEN={token} torchrun train.py --db-password Pq7Lm2",
        config=upload("ds.yaml", b"password: Yml!pass99\n"), data=upload("sample.jsonl", data_sample),
        meta={"title": f"run with {token}", "job_id": "job-1 SECRET_KEY=abcd1234efgh"},
    )
    incident.refresh_from_db()
    everything = [incident.command, incident.title, incident.job_id]
    everything += [stored_text(incident, name) for name in ("rank0.log", "ds.yaml", "sample.jsonl")]
    dumped = "\n".join(everything)
    for secret in (token, "Pq7Lm2", "Yml!pass99", "sample-secret-77", "abcd1234efgh"):
        assert secret not in dumped


def test_a_token_across_the_first_mebibyte_of_a_long_line_is_masked(alice):
    token = "hf_Zq8mWv3LkP0aRt6YuI2oNs4DfG7hJx1c"
    head = b"x " * (1024 * 1024 // 2 - 10)  # the token starts 20 bytes before byte 1,048,576
    line = head + token.encode() + b" " + b"y " * 300_000 + b"\n"
    incident = submit(alice, upload("long.log", line + RANK_LOG))
    text = stored_text(incident, "long.log")
    assert token not in text and "hf_***" in text
    assert len(text) == len(line + RANK_LOG) - len(token) + len("hf_***")


def test_the_staging_folder_is_gone_after_success_and_after_refusal(alice):
    submit(alice, upload("rank0.log", RANK_LOG))
    with pytest.raises(UploadRejected):
        submit(alice, upload("run.zip", b"PK\x03\x04broken"))
    assert list(staging_root().iterdir()) == []
    assert Artifact.objects.count() == 1


@pytest.mark.parametrize("inner", ["gz", "tar.gz"])
def test_a_truncated_archive_nested_in_a_zip_is_refused(alice, stored_files, inner):
    import gzip

    from tests.jobs.upload_builders import tar_bytes

    payload = gzip.compress(RANK_LOG * 400) if inner == "gz" else tar_bytes({"rank0.log": RANK_LOG * 400})
    archive = zip_bytes({"logs/rank1.log": RANK_LOG, f"logs/rank0.log.{inner}": payload[: len(payload) // 2]})
    with pytest.raises(UploadRejected) as caught:
        submit(alice, upload("run.zip", archive))
    assert caught.value.code == "bad_archive"
    assert Incident.objects.count() == 0 and stored_files() == []
