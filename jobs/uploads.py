"""Turn an upload into an Incident with its Artifact files, or reject it leaving nothing behind.

Three phases, so that a rejected upload never leaves a half-made incident:
1. validate: counts, sizes, empty and binary files, and every archive through the engine's
   `triage.inspect_upload` (bombs, traversal, member counts, corrupt or truncated archives);
2. prepare: stream every log, config and data sample into the request's staging folder as
   plain text, line by line, with secrets masked; archives become one file per member, .gz
   files are decompressed (capped);
3. store: the Incident and its Artifact rows in one transaction, the files moved into storage,
   `diagnose_incident` enqueued on commit. Any failure deletes the files already stored; a
   process killed in between leaves files that the orphan sweep (jobs.staging) removes.

Files that are ignored rather than refused (an empty file next to others, an empty or binary
archive member) are described in `incident.upload_notes`: a list of
{"file": name, "code": "empty_file" | "binary_file", "message": text}.

Archive members are read by triage.archives (through jobs.archives), text sniffing and masked
copying live in jobs.textfiles, staging folders and the orphan sweep in jobs.staging.
"""
from __future__ import annotations

import io
import logging
import os
import shutil
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.files import File
from django.core.files.storage import default_storage
from django.core.validators import URLValidator
from django.db import transaction

import triage
from jobs.archives import container_kind, open_members
from jobs.limits import upload_limits
from jobs.models import Artifact, Incident
from jobs.staging import stage
from jobs.textfiles import binary_reason, sample_of, write_masked
from triage.archives import READ_ERRORS, first_line
from triage.secrets import mask_secrets  # one masking for the engine and the stored artifacts

logger = logging.getLogger(__name__)

READ_SIZE = 1024 * 1024
META_FIELDS = ("title", "job_id", "attempt", "scheduler", "cluster", "callback_url", "idempotency_key")
MASKED_FIELDS = ("title", "job_id", "attempt", "scheduler", "cluster")  # free text a user may paste a secret into
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
class UploadNote:
    """A file that was ignored, not refused: shown to the user next to the new incident."""

    file: str
    code: str
    message: str

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class Prepared:
    """One file ready to store: plain text (logs, config) or the data sample as uploaded."""

    path: Path
    original_name: str
    kind: str
    size: int
    sha256: str


def create_incident(*, team, user=None, logs: list, command: str = "", config=None, data=None,
                    pasted_log: str = "", meta: dict | None = None, enqueue: bool = True) -> Incident:
    """Validate, prepare and store an upload; return the queued Incident or raise UploadRejected.

    The returned incident carries `upload_notes` (a list of dicts, see the module docstring).
    """
    fields = clean_meta(meta or {})
    logs = [upload for upload in (logs or []) if upload is not None]
    pasted_log = (pasted_log or "").replace("\r\n", "\n")
    notes: list[UploadNote] = []
    with stage() as workdir:
        incoming = validate(logs=logs, config=config, data=data, pasted_log=pasted_log, workdir=workdir,
                            notes=notes)
        prepared = prepare(incoming, pasted_log, workdir, notes=notes)
        incident = store(team=team, user=user, command=command, fields=fields, prepared=prepared,
                         enqueue=enqueue)
    incident.upload_notes = [note.as_dict() for note in notes]
    return incident


def clean_meta(meta: dict) -> dict:
    fields = {}
    for key, value in meta.items():
        if key not in META_FIELDS:
            raise UploadRejected(f"unknown field {key!r}", code="bad_field", field=key)
        if value is None or value == "":
            continue
        value = str(value).strip()
        if key in MASKED_FIELDS:
            value = mask_secrets(value)
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


def validate(*, logs, config, data, pasted_log: str, workdir: Path, notes: list | None = None) -> list[tuple]:
    """Check everything before anything is stored; return (field, kind, name, local path, container,
    masked copy or None).

    An empty file is ignored with a note when the upload holds something else to diagnose.
    """
    notes = [] if notes is None else notes
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
    non_empty_logs = sum(1 for field, _, upload in files if field == "logs" and upload.size)
    limits = upload_limits()
    incoming = []
    for field, kind, upload in files:
        name = _display_name(upload, field)
        if not upload.size:
            if non_empty_logs or pasted_log.strip():
                notes.append(UploadNote(file=name, code="empty_file", message=f"{name} is empty; it was ignored."))
                continue
            raise UploadRejected(f"{name} is empty.", code="empty_file", field=field)
        path = _local_path(upload, workdir)
        container = container_kind(path, name)
        if container == "binary":
            with open(path, "rb") as handle:
                reason = binary_reason(sample_of(handle, path.stat().st_size), name)
            raise UploadRejected(reason or f"{name} is a binary file, not a log, archive or text file.",
                                 code="binary_file", field=field)
        if container != "plain" and kind != Artifact.Kind.LOG:
            raise UploadRejected(f"{name}: the {field} file must be plain text, not an archive.",
                                 code="bad_field", field=field)
        if container != "plain":
            try:
                triage.inspect_upload(path, name, limits)
            except triage.UnusableInput as exc:  # InputRejected too: each carries its code
                raise UploadRejected(str(exc) or f"cannot read {name}", code=exc.code, field=field) from None
            except READ_ERRORS as exc:  # a truncated stream can surface while the engine drains it
                raise UploadRejected(f"cannot read {name}: {first_line(exc)}", code="bad_archive",
                                     field=field) from None
        masked = getattr(upload, "masked_copy", None)  # made while the body was parsed (jobs.uploadhandlers)
        masked = masked if container == "plain" and masked is not None and masked.complete else None
        incoming.append((field, kind, name, path, container, masked))
    return incoming


def prepare(incoming: list[tuple], pasted_log: str, workdir: Path, notes: list | None = None) -> list[Prepared]:
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
            size, digest = write_masked(io.BytesIO(pasted_log.encode("utf-8")), handle)
        prepared.append(Prepared(dest, PASTED_LOG_NAME, Artifact.Kind.LOG, size, digest))
    for field, kind, name, path, container, masked in incoming:
        if container == "plain" and masked is not None:  # masked while the request was read: link it
            dest = target()
            try:
                os.link(masked.path, dest)
            except OSError:  # another file system
                shutil.copyfile(masked.path, dest)
            prepared.append(Prepared(dest, name, kind, masked.size, masked.sha256))
        elif container == "plain":  # logs, configs and data samples alike: text, masked
            dest = target()
            with open(path, "rb") as source, open(dest, "wb") as handle:
                size, digest = write_masked(source, handle)
            prepared.append(Prepared(dest, name, kind, size, digest))
        else:
            count, spent = len(prepared), sum(item.size for item in prepared)
            try:
                for member_name, stream in open_members(path, name, container, limits, field, spent, notes):
                    dest = target()
                    with open(dest, "wb") as handle:
                        size, digest = write_masked(stream, handle)
                    prepared.append(Prepared(dest, member_name, kind, size, digest))
            except READ_ERRORS as exc:  # raised while decompressing a member
                raise UploadRejected(f"cannot read {name}: {first_line(exc)}", code="bad_archive",
                                     field=field) from None
            if len(prepared) == count:
                raise UploadRejected(f"{name} contains no text logs.", code="bad_archive", field=field)
    return prepared


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
    """Wake a worker. The incident row is the source of truth: when the broker is down the
    incident stays queued and the periodic sweep (jobs.tasks.sweep_incidents) enqueues it later."""
    from jobs.tasks import enqueue_diagnosis

    enqueue_diagnosis(incident_pk)
