"""A picked or dropped folder arrives as files plus their relative paths; the upload service keeps
member paths of archives only, so the folder's files travel as one tar that keeps the tree.

`attempt_0/3/stderr.log` stays `run-logs/attempt_0/3/stderr.log` (rank 3), where the bare file
names alone would be four indistinguishable `stderr.log`.
"""
from __future__ import annotations

import re
import tarfile
from pathlib import Path, PurePosixPath

from django.core.files import File

_UNSAFE = re.compile(r"[\x00-\x1f]")


class BundledFolder(File):
    """The tar on local disk: the upload service reads it in place instead of copying it."""

    def temporary_file_path(self) -> str:
        return self.file.name


def clean_path(raw: str) -> str:
    """A browser's webkitRelativePath, as a safe relative POSIX path ('' when unusable)."""
    parts = [part for part in str(raw or "").replace("\\", "/").split("/") if part not in ("", ".")]
    if not parts or ".." in parts or _UNSAFE.search("/".join(parts)):
        return ""
    return "/".join(parts)[-255:]


def bundle(files: list, paths: list[str], workdir: Path) -> list:
    """Files with a folder in their path go into one tar (named after the first folder); others stay."""
    if len(paths) != len(files):
        return files
    loose, foldered = [], []
    for upload, raw in zip(files, paths, strict=True):
        path = clean_path(raw)
        (foldered if "/" in path else loose).append((upload, path))
    if not foldered:
        return files
    top = PurePosixPath(foldered[0][1]).parts[0]
    target = workdir / f"{top[:100] or 'folder'}.tar"
    with tarfile.open(target, "w", format=tarfile.PAX_FORMAT) as archive:
        for upload, path in foldered:
            info = tarfile.TarInfo(path)
            info.size = upload.size or 0
            info.mode = 0o644
            upload.seek(0)
            archive.addfile(info, upload)
    handle = open(target, "rb")  # noqa: SIM115 - closed by the view with the work folder
    return [upload for upload, _ in loose] + [BundledFolder(handle, name=target.name)]
