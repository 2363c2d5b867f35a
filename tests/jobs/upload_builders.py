"""Real archives for the upload tests: log trees, bombs, traversal, links, corrupt files."""
import gzip
import io
import tarfile
import zipfile

from django.core.files.uploadedfile import SimpleUploadedFile

RANK_LOG = b"[default1]:Traceback (most recent call last):\n[default1]:KeyError: 'conversations'\n"


def upload(name: str, content: bytes) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, content, content_type="application/octet-stream")


def zip_bytes(members: dict[str, bytes], compression=zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression) as archive:
        for name, content in members.items():
            archive.writestr(name, content)
    return buffer.getvalue()


def tar_bytes(members: dict[str, bytes], mode: str = "w:gz", links: dict[str, str] | None = None) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode=mode) as archive:
        for name, content in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            archive.addfile(info, io.BytesIO(content))
        for name, target in (links or {}).items():
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            archive.addfile(info)
    return buffer.getvalue()


def log_dir_tree() -> dict[str, bytes]:
    """What `torchrun --log-dir logs/run` writes for a 2-rank job whose rank 1 failed."""
    return {
        "logs/run/attempt_0/0/stdout.log": b"step 1 loss 2.1\n",
        "logs/run/attempt_0/0/stderr.log": b"W: SIGTERM received\n",
        "logs/run/attempt_0/1/stdout.log": b"step 1 loss 2.2\n",
        "logs/run/attempt_0/1/stderr.log": RANK_LOG,
        "logs/run/attempt_0/1/error.json": b'{"message": {"message": "KeyError: \'conversations\'"}}\n',
    }


def zip_bomb(expanded_mib: int = 24) -> bytes:
    return zip_bytes({"huge.log": b"\0" * (expanded_mib * 1024 * 1024)})


def gzip_bomb(expanded_mib: int = 24) -> bytes:
    return gzip.compress(b"A" * (expanded_mib * 1024 * 1024), compresslevel=9)
