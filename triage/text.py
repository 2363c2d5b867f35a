"""Turn raw log bytes into clean text: decode, drop ANSI codes, resolve \\r rewrites, mask secrets."""

from __future__ import annotations

import re

MAX_LINE = 4096  # characters of one line that regexes ever see

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]{0,512}(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_ORPHAN_ANSI = re.compile(
    r"^(?:\s*\[\d{0,3}(?:;\d{1,3}){0,4}m)+ ?"
)  # "\x1b" lost in a copy-paste: "[0m text"
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")

_SECRETS = [
    (re.compile(r"\bhf_[A-Za-z0-9]{20,}"), "hf_***"),
    (re.compile(r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_\-]{20,}"), "sk-***"),
    (re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b"), "AKIA***"),
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}"), "gh_***"),
    (re.compile(r"\bxox[abprs]-[A-Za-z0-9\-]{10,}"), "xox-***"),
    (
        re.compile(r"(?i)\b(aws_secret_access_key|aws_session_token)(\s*[=:]\s*)['\"]?[A-Za-z0-9/+=]{16,}"),
        r"\1\2***",
    ),
    (
        re.compile(
            # any *_token/*_key/*_secret name (HF_TOKEN, hub_token, WANDB_API_KEY, client_secret),
            # but not a tokenizer's special tokens (pad_token=<pad> is no secret)
            r"(?i)\b(?!(?:pad|eos|bos|unk|sep|cls|mask)_token)((?:[\w.-]{0,40}[_.-])?"
            r"(?:api[_-]?key|access[_-]?token|auth[_-]?token|secret|password|passwd|token))(['\"]?\s*[=:]\s*['\"]?)"
            r"[^\s'\"]{6,}"
        ),
        r"\1\2***",
    ),
    (
        re.compile(
            r"(?i)\b(wandb: Appending key for api\.wandb\.ai to your netrc file: \S+|"
            r"wandb login) [0-9a-f]{40}\b"
        ),
        r"\1 ***",
    ),
    (re.compile(r"\b[0-9a-f]{40}\b(?=.*wandb)", re.IGNORECASE), "***"),
    (re.compile(r"(?i)\b(authorization:\s*(?:bearer|token|basic)\s+)\S+"), r"\1***"),
    (re.compile(r"([a-z][a-z0-9+.\-]{1,20}://[^\s:/@]{1,200}:)[^\s@/]{1,200}@"), r"\1***@"),
]


def decode(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


def strip_ansi(text: str) -> str:
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    return text


def resolve_carriage_returns(text: str, prefer: re.Pattern | None = None) -> str:
    """A terminal shows the last rewrite of a line; keep it (or the last segment a pattern cares about)."""
    if "\r" not in text:
        return text
    segments = [segment for segment in text.split("\r") if segment.strip()]
    if not segments:
        return ""
    if prefer is not None:
        for segment in reversed(segments):
            if prefer.search(segment):
                return segment
    return segments[-1]


def clean_line(raw: bytes | str, prefer: re.Pattern | None = None) -> str:
    text = decode(raw) if isinstance(raw, bytes | bytearray) else raw
    if len(text) > MAX_LINE:
        text = text[:MAX_LINE]
    text = strip_ansi(text)
    if text.startswith(("[", " [")) and "m" in text[:20]:
        text = _ORPHAN_ANSI.sub("", text)
    text = resolve_carriage_returns(text.rstrip("\r\n"), prefer)
    if _CONTROL.search(text):
        text = _CONTROL.sub("", text)
    return text.rstrip()


# Every secret pattern above contains one of these cheap literals; one pass of this alternation
# lets the (many) lines without any of them skip the eleven substitutions.
# Scanned over lower-cased text: a plain alternation there runs about 7x faster than re.IGNORECASE.
# Each alternative is the fixed part of one pattern above (a bare "token" would hit every
# "tokens/s" progress line and send it through all eleven substitutions).
_SECRET_HINT = re.compile(
    r"hf_|sk-|akia|asia|gh[pousr]_|xox|(?:key|token|secret|passwd|password)['\"]?\s*[=:]|wandb|authoriz|"
    r"://[^\s/@]*:[^\s/@]*@"
)


def mask_secrets(text: str) -> str:
    if not text or not _SECRET_HINT.search(text.lower()):
        return text
    for pattern, replacement in _SECRETS:
        text = pattern.sub(replacement, text)
    return text


def mask_block(text: str) -> str:
    """mask_secrets over many lines at once: only the lines holding a hint are rewritten.

    Every secret pattern stays within one line, so a block is masked exactly as its lines
    would be one by one, at the cost of one C-level scan when the block holds no hint.
    """
    lowered = text.lower()
    if len(lowered) != len(text):  # a few characters lower-case to two: offsets would drift
        return "".join(mask_secrets(line) for line in text.splitlines(keepends=True))
    parts, done = [], 0
    for hint in _SECRET_HINT.finditer(lowered):
        if hint.start() < done:
            continue
        start = text.rfind("\n", 0, hint.start()) + 1
        end = text.find("\n", hint.end())
        end = len(text) if end < 0 else end
        parts.append(text[done:start])
        parts.append(mask_secrets(text[start:end]))
        done = end
    if not parts:
        return text
    parts.append(text[done:])
    return "".join(parts)


def mask_deep(value):
    """Mask secrets in every string of a JSON-like structure."""
    if isinstance(value, str):
        return mask_secrets(value)
    if isinstance(value, list):
        return [mask_deep(item) for item in value]
    if isinstance(value, dict):
        return {key: mask_deep(item) for key, item in value.items()}
    return value
