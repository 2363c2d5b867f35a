"""Errors the engine raises for inputs it cannot or will not read."""

from __future__ import annotations


class UnusableInput(Exception):
    """The input cannot be read: missing file, unreadable archive. The message is one clear line.

    `code` names the reason for callers that answer in codes (the upload API): bad_archive here."""

    def __init__(self, message: str, code: str = "bad_archive"):
        super().__init__(message)
        self.code = code


class InputRejected(UnusableInput):
    """The input is dangerous or empty: archive bomb, path traversal, too many members, links, devices.

    `code` names the reason for callers that answer in codes (the upload API): archive_bomb,
    path_traversal, too_many_members, empty_file."""
