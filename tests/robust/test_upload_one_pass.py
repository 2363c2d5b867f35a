"""Uploads are masked while the request body is read (jobs.uploadhandlers): the stored artifact is
byte for byte what masking the uploaded file afterwards made, the upload is not read back, and
no temporary file outlives the request (the latency: bench/api_load.py)."""
import hashlib
import io
import random

import pytest
from rest_framework.test import APIClient

from jobs import uploadhandlers
from jobs.models import Incident
from jobs.textfiles import MASK_BLOCK, write_masked
from tests.jobs.upload_builders import zip_bytes

pytestmark = pytest.mark.django_db

SECRETS = [
    b"export HF_TOKEN=hf_Zq8mWv3LkP0aRt6YuI2oNs4DfG7hJx1c\n",
    b"connecting to postgres://svc:p@ss/w0rd@db.internal:5432/app\r\n",
    b"headers={'Authorization': 'Bearer Pm3Kd9Lw2Qx7Rz'}\n",
    b"-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\nabcdef0123\n-----END RSA PRIVATE KEY-----\n",
    b"stray \x00 NUL and \xff\xfe bytes, Schl\xc3\xbcssel\n",
]


def tricky_log(seed: int, size: int) -> bytes:
    """Secrets of several forms, one crossing the first MiB of a 3 MiB line, lines of every length."""
    rng = random.Random(seed)
    parts, total = [], 0
    while total < size:
        if rng.random() < 0.05:
            part = rng.choice(SECRETS)
        elif rng.random() < 0.002:  # a very long line, a token across a MASK_BLOCK boundary
            pad = b"x " * (MASK_BLOCK // 2 - 10)
            part = pad + b"token=ghp_" + b"A" * 36 + b" " + pad * 2 + b"\n"
        else:
            part = b"[rank%d]: step %d loss 2.0 %s\n" % (rng.randrange(8), total, b"y" * rng.randrange(200))
        parts.append(part)
        total += len(part)
    return b"".join(parts)


@pytest.mark.parametrize("seed,size,piece", [(1, 3 * MASK_BLOCK + 17, 65536), (2, 5 * MASK_BLOCK, 1_000_003),
                                             (3, 2000, 7), (4, 7 * MASK_BLOCK // 3, 4096)])
def test_the_masked_copy_is_what_masking_the_file_makes_whatever_the_pieces(seed, size, piece):
    raw = tricky_log(seed, size)
    expected_out = io.BytesIO()
    expected = write_masked(io.BytesIO(raw), expected_out)
    copy = uploadhandlers.MaskedCopy()
    try:
        for start in range(0, len(raw), piece):
            copy.write(raw[start:start + piece])
        copy.finish()
        copy.handle.seek(0)
        assert copy.handle.read() == expected_out.getvalue()
        assert (copy.size, copy.sha256) == expected
    finally:
        copy.close()


def submit(client, files):
    return client.post("/api/v1/incidents/", {"files": files, "command": "torchrun --nproc-per-node 8 t.py"},
                       format="multipart")


@pytest.fixture
def api(alpha_key):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {alpha_key}")
    return client


@pytest.fixture
def alpha_key(alpha, alice):
    from tests.factories import make_api_key

    return make_api_key(alpha, name="one-pass", created_by=alice)[1]


def test_an_api_upload_stores_the_masked_copy_made_while_reading(api, settings, monkeypatch):
    raw = tricky_log(5, 3 * MASK_BLOCK)
    read_back = []
    real = uploadhandlers.MaskedCopy.finish
    monkeypatch.setattr("jobs.uploads.write_masked", lambda *a: read_back.append(1) or write_masked(*a))
    made = []
    monkeypatch.setattr(uploadhandlers.MaskedCopy, "finish", lambda self: made.append(self) or real(self))

    response = submit(api, [io.BytesIO(raw)])
    assert response.status_code == 202, response.content
    artifact = Incident.objects.get(pk=response.json()["id"]).artifacts.get()
    stored = open(artifact.file.path, "rb").read()
    expected = io.BytesIO()
    write_masked(io.BytesIO(raw), expected)
    assert stored == expected.getvalue()
    assert b"hf_Zq8mWv3" not in stored and b"ghp_AAAA" not in stored
    assert artifact.sha256 == hashlib.sha256(stored).hexdigest() and artifact.size == len(stored)
    assert len(made) == 1 and read_back == []  # masked in the same pass, never read back
    assert list((settings.VAR_DIR / "upload-tmp").iterdir()) == []  # raw and masked temporary files gone


def test_an_archive_is_not_masked_while_reading_and_its_members_still_are(api, settings, monkeypatch):
    made = []
    real = uploadhandlers.MaskedCopy.__init__
    monkeypatch.setattr(uploadhandlers.MaskedCopy, "__init__", lambda self: made.append(1) or real(self))
    archive = io.BytesIO(zip_bytes({"logs/0/stderr.log": SECRETS[0].decode() + "[rank0]: KeyError: 'x'\n"}))
    archive.name = "logs.zip"
    response = submit(api, [archive])
    assert response.status_code == 202, response.content
    artifact = Incident.objects.get(pk=response.json()["id"]).artifacts.get()
    assert b"hf_Zq8mWv3" not in open(artifact.file.path, "rb").read()
    assert made == []
    assert list((settings.VAR_DIR / "upload-tmp").iterdir()) == []


def test_a_refused_upload_leaves_no_temporary_file(api, settings):
    binary = io.BytesIO(bytes(range(256)) * 4096)
    binary.name = "model.bin"
    response = submit(api, [binary])
    assert response.status_code == 400
    assert list((settings.VAR_DIR / "upload-tmp").iterdir()) == []
