"""Turn an upload into an Incident with its Artifact files, or reject it leaving nothing behind.

Three phases, so that a rejected upload never leaves a half-made incident:
1. validate: counts, sizes, empty and binary files, and every archive through the engine's
   `triage.inspect_upload` (bombs, traversal, member counts, corrupt archives);
2. prepare: stream every log into a local work folder as plain text, line by line, with
   secrets masked; archives become one file per member, .gz files are decompressed (capped);
3. store: the Incident and its Artifact rows in one transaction, the files moved into storage,
   `diagnose_incident` enqueued on commit. Any failure deletes the files already stored.
"""
from __future__ import annotations

import codecs
import gzip
import hashlib
import io
import logging
import re
import shutil
import tarfile
import tempfile
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.files import File
from django.core.files.storage import default_storage
from django.core.validators import URLValidator
from django.db import transaction

import triage
from jobs.models import Artifact, Incident
from triage.text import mask_block, mask_secrets  # one masking for the engine and the stored artifacts

logger = logging.getLogger(__name__)

READ_SIZE = 1024 * 1024
MASK_BLOCK = 1024 * 1024  # bytes of whole lines masked at once; a longer line is masked in pieces
SNIFF_BYTES = 8192
_DRIVE = re.compile(r"^[A-Za-z]:")
_TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")
_ARCHIVE_ERRORS = (OSError, EOFError, ValueError, zlib.error, zipfile.BadZipFile, tarfile.TarError)
META_FIELDS = ("title", "job_id", "attempt", "scheduler", "cluster", "callback_url", "idempotency_key")
PASTED_LOG_NAME = "pasted.log"


class UploadRejected(Exception):
    """A clear, user-facing reason to refuse an upload; `status` is the HTTP status to answer."""

    CODES = frozenset({
        "no_files", "too_large", "too_many_files", "empty_file", "binary_file", "archive_bomb",
        "path_traversal", "too_many_members", "bad_archive", "bad_field",
    })

    def __init__(self, message: str, *, code: str, field: str | None = None):
        super().__init__(message)
        self.message, self.code, self.field = message, code, field

    @property
    def status(self) -> int:
        return 413 if self.code == "too_large" else 400

    def as_dict(self) -> dict:
        return {"code": self.code, "message": self.message, "field": self.field}


@dataclass
class Prepared:
    """One file ready to store: plain text (logs, config) or the data sample as uploaded."""

    path: Path
    original_name: str
    kind: str
    size: int
    sha256: str


def upload_limits():
    return triage.Limits(
        max_total_bytes=settings.TRIAGE_UPLOAD_MAX_BYTES,
        max_members=settings.TRIAGE_ARCHIVE_MAX_MEMBERS,
        max_ratio=settings.TRIAGE_ARCHIVE_MAX_RATIO,
    )


def rejection_code(message: str) -> str:
    """Map the engine's InputRejected message onto an upload error code."""
    lower = message.lower()
    if "empty" in lower:
        return "empty_file"
    if "unsafe path" in lower or "traversal" in lower or "link or device" in lower:
        return "path_traversal"
    if "member" in lower and "more than" in lower or "has more than" in lower:
        return "too_many_members"
    if "bomb" in lower or "expands" in lower or "larger than" in lower:
        return "archive_bomb"
    return "bad_archive"


def create_incident(*, team, user=None, logs: list, command: str = "", config=None, data=None,
                    pasted_log: str = "", meta: dict | None = None, enqueue: bool = True) -> Incident:
    """Validate, prepare and store an upload; return the queued Incident or raise UploadRejected."""
    fields = clean_meta(meta or {})
    logs = [upload for upload in (logs or []) if upload is not None]
    pasted_log = (pasted_log or "").replace("\r\n", "\n")
    workdir = Path(tempfile.mkdtemp(prefix="triage-upload-"))
    try:
        incoming = validate(logs=logs, config=config, data=data, pasted_log=pasted_log, workdir=workdir)
        prepared = prepare(incoming, pasted_log, workdir)
        return store(team=team, user=user, command=command, fields=fields, prepared=prepared, enqueue=enqueue)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def clean_meta(meta: dict) -> dict:
    fields = {}
    for key, value in meta.items():
        if key not in META_FIELDS:
            raise UploadRejected(f"unknown field {key!r}", code="bad_field", field=key)
        if value is None or value == "":
            continue
        value = str(value).strip()
        limit = Incident._meta.get_field(key).max_length
        if limit and len(value) > limit:
            raise UploadRejected(f"{key} is longer than {limit} characters", code="bad_field", field=key)
        fields[key] = value
    if "callback_url" in fields:
        try:
            URLValidator(schemes=["http", "https"])(fields["callback_url"])
        except ValidationError:
            raise UploadRejected("callback_url must be an http(s) URL", code="bad_field",
                                 field="callback_url") from None
    return fields


def _local_path(upload, workdir: Path) -> Path:
    """Uploads are streamed to temporary files; in-memory ones (tests, small settings) are copied out."""
    if hasattr(upload, "temporary_file_path"):
        return Path(upload.temporary_file_path())
    handle = tempfile.NamedTemporaryFile(dir=workdir, delete=False)
    with handle:
        for chunk in upload.chunks(READ_SIZE):
            handle.write(chunk)
    return Path(handle.name)


def _display_name(upload, fallback: str) -> str:
    name = Path(str(getattr(upload, "name", "") or "").replace("\\", "/")).name
    return name[-255:] or fallback


def validate(*, logs, config, data, pasted_log: str, workdir: Path) -> list[tuple]:
    """Check everything before anything is stored; return (field, kind, name, local path, container)."""
    if not logs and not pasted_log.strip():
        raise UploadRejected("Add at least one log file or paste a log.", code="no_files", field="logs")
    files = [("logs", Artifact.Kind.LOG, upload) for upload in logs]
    files += [("config", Artifact.Kind.CONFIG, config)] if config is not None else []
    files += [("data", Artifact.Kind.DATA_SAMPLE, data)] if data is not None else []
    if len(files) > settings.TRIAGE_UPLOAD_MAX_FILES:
        raise UploadRejected(f"Too many files: at most {settings.TRIAGE_UPLOAD_MAX_FILES} per upload.",
                             code="too_many_files", field="logs")
    total = sum(upload.size or 0 for _, _, upload in files) + len(pasted_log.encode())
    if total > settings.TRIAGE_UPLOAD_MAX_BYTES:
        raise UploadRejected(f"The upload is {total} bytes; the limit is {settings.TRIAGE_UPLOAD_MAX_BYTES} bytes.",
                             code="too_large", field="logs")
    limits = upload_limits()
    incoming = []
    for field, kind, upload in files:
        name = _display_name(upload, field)
        if not upload.size:
            raise UploadRejected(f"{name} is empty.", code="empty_file", field=field)
        path = _local_path(upload, workdir)
        container = container_kind(path, name)
        if container == "binary":
            raise UploadRejected(f"{name} is a binary file, not a log, archive or text file.",
                                 code="binary_file", field=field)
        if container != "plain" and kind != Artifact.Kind.LOG:
            raise UploadRejected(f"{name}: the {field} file must be plain text, not an archive.",
                                 code="bad_field", field=field)
        if container != "plain":
            try:
                triage.inspect_upload(path, name, limits)
            except triage.UnusableInput as exc:  # InputRejected is a subclass
                message = str(exc) or f"cannot read {name}"
                code = rejection_code(message) if isinstance(exc, triage.InputRejected) else "bad_archive"
                raise UploadRejected(message, code=code, field=field) from None
            except _ARCHIVE_ERRORS as exc:  # a truncated stream can surface while the engine drains it
                reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                raise UploadRejected(f"cannot read {name}: {reason}", code="bad_archive", field=field) from None
        incoming.append((field, kind, name, path, container))
    return incoming


def prepare(incoming: list[tuple], pasted_log: str, workdir: Path) -> list[Prepared]:
    """Write every artifact into the work folder as it will be stored (masked plain text)."""
    out = workdir / "prepared"
    out.mkdir()
    limits = upload_limits()
    prepared: list[Prepared] = []

    def target() -> Path:
        return out / str(len(prepared))

    if pasted_log.strip():
        dest = target()
        with open(dest, "wb") as handle:
            size, digest = write_masked(io.BytesIO(pasted_log.encode("utf-8")), handle, mask_block)
        prepared.append(Prepared(dest, PASTED_LOG_NAME, Artifact.Kind.LOG, size, digest))
    for field, kind, name, path, container in incoming:
        if kind == Artifact.Kind.DATA_SAMPLE:
            dest = target()
            size, digest = _copy(path, dest)
            prepared.append(Prepared(dest, name, kind, size, digest))
        elif container == "plain":
            dest = target()
            with open(path, "rb") as source, open(dest, "wb") as handle:
                size, digest = write_masked(source, handle, mask_block)
            prepared.append(Prepared(dest, name, kind, size, digest))
        else:
            count, spent = len(prepared), sum(item.size for item in prepared)
            try:
                for member_name, stream in open_members(path, name, container, limits, field, spent):
                    dest = target()
                    with open(dest, "wb") as handle:
                        size, digest = write_masked(stream, handle, mask_block)
                    prepared.append(Prepared(dest, member_name, kind, size, digest))
            except _ARCHIVE_ERRORS as exc:  # raised while decompressing a member
                reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                raise UploadRejected(f"cannot read {name}: {reason}", code="bad_archive", field=field) from None
            if len(prepared) == count:
                raise UploadRejected(f"{name} contains no text logs.", code="bad_archive", field=field)
    return prepared


def write_masked(source, handle, mask) -> tuple[int, str]:
    """Copy a binary stream as UTF-8 text, masking secrets; return (size, sha256).

    Reads blocks of whole lines (a line longer than a block is cut at the block edge), so memory
    stays bounded and `mask` (triage.text.mask_block) scans each block once.
    """
    hasher, size, carry = hashlib.sha256(), 0, b""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    while True:
        chunk = source.read(MASK_BLOCK)
        block = carry + chunk
        if not block:
            break
        cut = block.rfind(b"\n") + 1 if chunk else len(block)
        if cut == 0:  # no newline in a whole block: one very long line
            cut = len(block)
        carry = block[cut:]
        data = mask(decoder.decode(block[:cut], final=not chunk)).encode("utf-8")
        hasher.update(data)
        handle.write(data)
        size += len(data)
    return size, hasher.hexdigest()


def _copy(path: Path, dest: Path) -> tuple[int, str]:
    hasher, size = hashlib.sha256(), 0
    with open(path, "rb") as source, open(dest, "wb") as handle:
        while chunk := source.read(READ_SIZE):
            hasher.update(chunk)
            handle.write(chunk)
            size += len(chunk)
    return size, hasher.hexdigest()


class _LocalFile(File):
    """Lets FileSystemStorage move the prepared file instead of copying it."""

    def temporary_file_path(self) -> str:
        return self.file.name


def store(*, team, user, command: str, fields: dict, prepared: list[Prepared], enqueue: bool) -> Incident:
    stored: list[str] = []
    try:
        with transaction.atomic():
            incident = Incident.objects.create(
                team=team, created_by=user if getattr(user, "is_authenticated", False) else None,
                command=mask_secrets((command or "").strip()), **fields,
            )
            for item in prepared:
                artifact = Artifact(incident=incident, kind=item.kind, original_name=item.original_name,
                                    size=item.size, sha256=item.sha256)
                with open(item.path, "rb") as handle:
                    artifact.file.save(Path(item.original_name).name or "artifact", _LocalFile(handle), save=False)
                stored.append(artifact.file.name)
                artifact.save()
            if enqueue:
                transaction.on_commit(lambda: _enqueue(incident.pk), robust=True)
    except BaseException:
        for name in stored:
            try:
                default_storage.delete(name)
            except OSError:
                logger.exception("could not delete %s after a failed upload", name)
        raise
    return incident


def _enqueue(incident_pk: int) -> None:
    from jobs.tasks import diagnose_incident

    diagnose_incident.delay(incident_pk)


# --- archives: sniffing and safe, capped extraction ------------------------------------------

def _is_tar_header(block: bytes) -> bool:
    return len(block) >= 262 and block[257:262] == b"ustar"


def container_kind(path: Path, name: str) -> str:
    """plain | gz | zip | tar | binary, by magic bytes first (uploads may be misnamed)."""
    with open(path, "rb") as handle:
        head = handle.read(SNIFF_BYTES)
    tar_named = name.lower().endswith(_TAR_SUFFIXES)
    if head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return "zip"
    if head.startswith(b"\x1f\x8b"):
        if tar_named:
            return "tar"
        try:
            with gzip.open(path, "rb") as inner:
                return "tar" if _is_tar_header(inner.read(512)) else "gz"
        except _ARCHIVE_ERRORS:
            return "gz"  # corrupt: inspect_upload says why
    if head.startswith((b"BZh", b"\xfd7zXZ\x00")):
        return "tar" if tar_named else "binary"
    if _is_tar_header(head[:512]):
        return "tar"
    return "binary" if b"\x00" in head else "plain"


class _Budget:
    """Counts expanded bytes and members while extracting: defence in depth behind inspect_upload."""

    def __init__(self, limits, compressed: int, name: str, field: str, spent: int = 0):
        self.limits, self.compressed, self.name, self.field = limits, max(compressed, 1), name, field
        self.expanded = self.members = 0
        self.spent = spent
        self.ratio_floor = getattr(limits, "ratio_floor_bytes", 10 * 1024**2)

    def spend(self, count: int) -> None:
        self.expanded += count
        over_ratio = self.expanded > self.ratio_floor and self.expanded / self.compressed > self.limits.max_ratio
        if self.spent + self.expanded > self.limits.max_total_bytes or over_ratio:
            raise UploadRejected(f"{self.name} expands too much (possible archive bomb).",
                                 code="archive_bomb", field=self.field)

    def member(self, raw_name: str) -> str:
        """Count a member and return its safe relative name ('' for entries to skip)."""
        self.members += 1
        if self.members > self.limits.max_members:
            raise UploadRejected(f"{self.name} has more than {self.limits.max_members} members.",
                                 code="too_many_members", field=self.field)
        clean = raw_name.replace("\\", "/")
        parts = clean.split("/")
        if clean.startswith("/") or _DRIVE.match(clean) or ".." in parts:
            raise UploadRejected(f"{self.name}: unsafe member path {raw_name!r}.",
                                 code="path_traversal", field=self.field)
        parts = [part for part in parts if part not in ("", ".")]
        if not parts or "__MACOSX" in parts or parts[-1] == ".DS_Store" or parts[-1].startswith("._"):
            return ""
        return "/".join(parts)[-255:]

    def link(self, raw_name: str):
        return UploadRejected(f"{self.name}: member {raw_name!r} is a link or device.",
                              code="path_traversal", field=self.field)


class _Capped(io.RawIOBase):
    def __init__(self, raw, budget: _Budget):
        self.raw, self.budget = raw, budget

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        data = self.raw.read(min(len(buffer), READ_SIZE))
        self.budget.spend(len(data))
        buffer[: len(data)] = data
        return len(data)


def _text_stream(raw, name: str, budget: _Budget):
    """The member as a buffered text-ish stream, .gz members decompressed; None when binary."""
    stream = io.BufferedReader(_Capped(raw, budget), READ_SIZE)
    if stream.peek(2)[:2] == b"\x1f\x8b":
        stream = io.BufferedReader(_Capped(gzip.GzipFile(fileobj=stream), budget), READ_SIZE)
        name = name[:-3] if name.lower().endswith(".gz") else name
    if b"\x00" in stream.peek(SNIFF_BYTES)[:SNIFF_BYTES]:
        return name, None
    return name, stream


def open_members(path: Path, name: str, container: str, limits, field: str, spent: int = 0):
    """Yield (relative name, stream) for every text member; consume each before the next.

    `spent` counts the bytes the upload's earlier files already expanded to: the expanded total of
    the whole upload stays under limits.max_total_bytes, not just each archive's.
    """
    budget = _Budget(limits, path.stat().st_size, name, field, spent)
    try:
        if container == "gz":
            inner = name[:-3] if name.lower().endswith(".gz") else name + ".log"
            with gzip.open(path, "rb") as raw:
                inner, stream = _text_stream(raw, inner, budget)
                if stream is None:
                    raise UploadRejected(f"{name} holds a binary file, not a log.", code="binary_file", field=field)
                yield inner, stream
        elif container == "zip":
            with zipfile.ZipFile(path) as archive:
                for info in archive.infolist():
                    member = budget.member(info.filename)
                    mode = (info.external_attr >> 16) & 0o170000
                    if mode and mode not in (0o100000, 0o040000):
                        raise budget.link(info.filename)
                    if member and not info.is_dir():
                        with archive.open(info) as raw:
                            member, stream = _text_stream(raw, member, budget)
                            if stream is not None:
                                yield member, stream
        else:
            with open(path, "rb") as handle, tarfile.open(fileobj=handle, mode="r|*") as archive:
                for info in archive:
                    member = budget.member(info.name)
                    if info.issym() or info.islnk() or info.isdev():
                        raise budget.link(info.name)
                    if member and info.isfile():
                        raw = archive.extractfile(info)
                        member, stream = _text_stream(raw, member, budget)
                        if stream is not None:
                            yield member, stream
    except _ARCHIVE_ERRORS as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise UploadRejected(f"cannot read {name}: {reason}", code="bad_archive", field=field) from None
