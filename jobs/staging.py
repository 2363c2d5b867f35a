"""Where uploads and diagnoses keep their files while they work, and the sweep for what a killed
process left behind.

Every request stages its files in a folder of its own under TRIAGE_VAR_DIR/staging, removed on
every exit path (`stage()`); Django's own temporary upload files go to TRIAGE_VAR_DIR/upload-tmp
(settings.FILE_UPLOAD_TEMP_DIR) and a diagnosis lays its inputs out under TRIAGE_VAR_DIR/work.
A process killed with SIGKILL runs no cleanup: `sweep_orphans` (called by the periodic sweep)
removes folders and files there older than a grace period, and artifact files in storage that
no row refers to (a web process killed between writing a file and committing its row).
"""
from __future__ import annotations

import logging
import os
import shutil
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings

logger = logging.getLogger(__name__)

ORPHAN_GRACE_S = 3600  # older than any upload or diagnosis can take


def staging_root() -> Path:
    return _root("staging")


def work_root() -> Path:
    return _root("work")


def upload_tmp_root() -> Path:
    return Path(settings.FILE_UPLOAD_TEMP_DIR or tempfile.gettempdir())


def _root(name: str) -> Path:
    root = Path(settings.VAR_DIR) / name
    root.mkdir(parents=True, exist_ok=True)
    return root


@contextmanager
def stage(prefix: str = "upload-", root: Path | None = None):
    """A fresh folder for one request or task, removed however the block ends."""
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir=root or staging_root()))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _older_than(path: Path, cutoff: float) -> bool:
    try:
        return path.lstat().st_mtime < cutoff
    except FileNotFoundError:
        return False


def sweep_orphans(grace_s: float | None = None) -> dict[str, int]:
    """Remove staging folders, temporary uploads, work folders and unreferenced artifact files
    older than the grace period. Returns counts per kind (for logs and tests)."""
    grace = ORPHAN_GRACE_S if grace_s is None else grace_s
    cutoff = time.time() - grace
    removed = {"staging": 0, "upload_tmp": 0, "work": 0, "artifacts": 0}
    for kind, root in (("staging", staging_root()), ("work", work_root())):
        for entry in root.iterdir():
            if _older_than(entry, cutoff):
                shutil.rmtree(entry, ignore_errors=True) if entry.is_dir() else entry.unlink(missing_ok=True)
                removed[kind] += 1
    tmp = upload_tmp_root()
    if settings.FILE_UPLOAD_TEMP_DIR and tmp.is_dir():  # never sweep the system's shared /tmp
        for entry in tmp.iterdir():
            if entry.is_file() and _older_than(entry, cutoff):
                entry.unlink(missing_ok=True)
                removed["upload_tmp"] += 1
    removed["artifacts"] = _sweep_artifact_files(cutoff)
    if any(removed.values()):
        logger.info("orphan sweep removed %s", removed)
    return removed


def _sweep_artifact_files(cutoff: float) -> int:
    from jobs.models import Artifact

    root = Path(settings.MEDIA_ROOT) / "artifacts"
    if not root.is_dir():
        return 0
    candidates = []
    for folder, _dirs, files in os.walk(root):
        for file_name in files:
            full = Path(folder) / file_name
            if _older_than(full, cutoff):
                candidates.append(full.relative_to(settings.MEDIA_ROOT).as_posix())
    removed = 0
    for start in range(0, len(candidates), 500):
        batch = candidates[start:start + 500]
        known = set(Artifact.objects.filter(file__in=batch).values_list("file", flat=True))
        for name in batch:
            if name not in known:
                (Path(settings.MEDIA_ROOT) / name).unlink(missing_ok=True)
                removed += 1
    for folder, dirs, files in os.walk(root, topdown=False):  # empty per-incident folders
        if folder != str(root) and not dirs and not files:
            try:
                os.rmdir(folder)
            except OSError:
                pass
    return removed
