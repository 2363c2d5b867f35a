"""Fallback: name a category from the exception class and where it was raised, when no
specific rule matched the exception line."""

from __future__ import annotations

import re

_DATA_FRAMES = re.compile(
    r"__getitem__|getitem|preprocess|collat|tokeni[sz]e|_map_single|formatting|format_|"
    r"convert|dataset|data_?loader|load_data|build_data|fetch|__iter__|apply_chat",
    re.IGNORECASE,
)
_SITE = re.compile(r"site-packages|dist-packages|/lib/python\d|<frozen|/usr/lib/")
_CODE_BUGS = {
    "NameError",
    "UnboundLocalError",
    "AttributeError",
    "ZeroDivisionError",
    "IndentationError",
    "SyntaxError",
    "RecursionError",
    "NotImplementedError",
    "TypeError",
    "IndexError",
    "AssertionError",
}
_DATA_CORRUPT = {
    "JSONDecodeError",
    "UnicodeDecodeError",
    "ArrowInvalid",
    "ParserError",
    "DatasetGenerationError",
    "ArrowTypeError",
    "EmptyDataError",
}
_VERSION = {"ImportError", "ModuleNotFoundError"}
_CASCADE = {"ChildFailedError", "CalledProcessError", "KeyboardInterrupt", "SystemExit", "DistBackendError"}
CASCADE_EXCEPTIONS = frozenset(_CASCADE)

WEIGHT = 0.3


def classify(exception: str, message: str, frames: list[dict]) -> tuple[str, list[str], float] | None:
    """(category, fix kinds, weight) for an exception no rule recognised, or None."""
    if not exception or exception in _CASCADE:
        return None
    user_frames = [frame for frame in frames if not _SITE.search(frame.get("file", ""))]
    raised_in_user_code = bool(frames) and frames[-1] in user_frames
    in_data = any(
        _DATA_FRAMES.search(frame.get("function", "") + " " + frame.get("file", "")) for frame in frames[-4:]
    )
    if exception in _DATA_CORRUPT:
        return "data_corrupt", ["fix_data_file"], 0.6
    if exception in _VERSION:
        return "version_mismatch", ["pin_versions"], 0.55
    if exception == "OutOfMemoryError":
        return "gpu_oom", ["reduce_batch_size", "enable_gradient_checkpointing", "shard_more"], 0.8
    if exception in ("KeyError",) and in_data:
        return "data_schema", ["convert_data_format", "fix_data_file"], 0.5
    if exception in ("FileNotFoundError", "PermissionError", "IsADirectoryError", "NotADirectoryError"):
        return "storage", ["fix_path"], 0.45
    if exception == "TypeError" and "unexpected keyword" in message:
        return "version_mismatch", ["rename_flag", "pin_versions"], 0.6
    if exception in _CODE_BUGS or exception == "KeyError":
        if raised_in_user_code or not frames:
            return "code_bug", ["fix_code"], 0.4 if frames else 0.25
        if in_data and exception in ("IndexError", "TypeError", "ValueError"):
            return "data_pipeline", ["fix_data_file", "convert_data_format"], 0.35
        return "code_bug", ["fix_code"], WEIGHT
    if exception == "ValueError" and in_data:
        return "data_pipeline", ["fix_data_file", "convert_data_format"], 0.35
    if exception == "ValueError" and raised_in_user_code:
        # scripts validate their arguments with ValueError
        return "config_invalid", ["fix_config"], 0.25
    return None
