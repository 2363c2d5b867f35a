"""Mask secrets in text before anything is stored or shown.

One set of patterns serves the engine (evidence, summaries), the stored artifacts (logs, configs,
data samples) and the form fields (command, title, job id). Every pattern is anchored on a cheap
literal (the "hint"); a block of text is scanned for hints once and only the lines holding one are
rewritten, so masking costs about one pass of a compiled alternation over the text.

Multi-line secrets (PEM private keys) are tracked across blocks by `Masker`, which the upload
service feeds block by block; `mask_secrets` and `mask_block` are the one-shot forms.
"""

from __future__ import annotations

import os
import re
import threading

MASK = "***"

# Names whose value is a secret, in any spelling: HF_TOKEN, hub_token, WANDB_API_KEY, client_secret,
# SecretAccessKey, SECRET_KEY, dbPassword, AccountKey. Only the name's last word is matched (the rest of
# the name stays as it is), so the regex engine never tries a long prefix at every word boundary.
# A tokenizer's special tokens are not secrets.
_NAME = (
    r"(?:api[_\-.]?key|access[_\-.]?key|account[_\-.]?key|private[_\-.]?key|secret[_\-.]?key|signing[_\-.]?key|"
    r"master[_\-.]?key|access[_\-.]?token|auth[_\-.]?token|refresh[_\-.]?token|id[_\-.]?token|session[_\-.]?token|"
    r"secret|password|passwd|passphrase|token|credentials?)"
)
_NOT_SPECIAL_TOKEN = "".join(f"(?<!{prefix}[_\\-.])" for prefix in ("pad", "eos", "bos", "unk", "sep", "cls", "mask"))
_NOT_SECRET_NAME = r"(?!(?:pad|eos|bos|unk|sep|cls|mask|special|max|num|n)[_\-.]?tokens?\b)"
_VALUE = r"(?:\"[^\"\n]{3,}\"|'[^'\n]{3,}'|[^\s'\",;&)}\]]{3,})"

# values no secret takes: switches (`--mm_use_im_patch_token False`, `use_auth_token: true`)
_PLAIN_VALUE = re.compile(r"(?i)^['\"]?(?:true|false|none|null)['\"]?$")


def _keep_quotes(match: re.Match) -> str:
    """name, separator, then the masked value in the quotes it had (a switch is kept)."""
    value = match.group(3)
    if _PLAIN_VALUE.match(value):
        return match.group(0)
    quote = value[0] if value[:1] in ("'", '"') and value[-1:] == value[:1] and len(value) > 1 else ""
    return match.group(1) + match.group(2) + quote + MASK + quote


_LINE_PATTERNS: list[tuple[re.Pattern, str]] = [
    # PEM blocks on one line (JSON service-account files carry them with \n escapes)
    (re.compile(r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY( BLOCK)?-----.*?(?:-----END[A-Z0-9 ]{0,40}PRIVATE KEY"
                r"(?: BLOCK)?-----|$)"), "-----BEGIN PRIVATE KEY-----" + MASK + "-----END PRIVATE KEY-----"),
    # vendor token formats
    (re.compile(r"\bhf_[A-Za-z0-9]{20,}"), "hf_" + MASK),
    (re.compile(r"\bsk-(?:proj-|ant-(?:api\d\d-)?)?[A-Za-z0-9_\-]{20,}"), "sk-" + MASK),
    (re.compile(r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}"), "sk_" + MASK),
    (re.compile(r"\b(?:AKIA|ASIA|AROA|AIDA|ANPA|AGPA)[A-Z0-9]{16}\b"), "AKIA" + MASK),
    (re.compile(r"\bAIza[0-9A-Za-z\-_]{35}"), "AIza" + MASK),
    (re.compile(r"\bgithub_pat_[A-Za-z0-9_]{22,}"), "github_pat_" + MASK),
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}"), "gh_" + MASK),
    (re.compile(r"\bglpat-[A-Za-z0-9_\-]{20,}"), "glpat-" + MASK),
    (re.compile(r"\bnpm_[A-Za-z0-9]{36}\b"), "npm_" + MASK),
    (re.compile(r"\bxox[abprse]-[A-Za-z0-9\-]{10,}"), "xox-" + MASK),
    (re.compile(r"\bxapp-[A-Za-z0-9\-]{10,}"), "xapp-" + MASK),
    (re.compile(r"\beyJ[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]{5,}"), "eyJ" + MASK),
    # Authorization headers and bare bearer tokens, quoted or not
    (re.compile(r"(?i)(\bauthorization['\"]?\s*[:=]\s*['\"]?(?:bearer|token|basic|digest)\s+)[^\s'\",}]+"),
     r"\1" + MASK),
    (re.compile(r"(?i)(\bbearer\s+)[A-Za-z0-9\-._~+/]{8,}=*"), r"\1" + MASK),
    # wandb API keys: after `wandb login [--flags]`, in its netrc message, or any 40-hex on a wandb line
    (re.compile(r"(?i)\b(wandb: Appending key for api\.wandb\.ai to your netrc file: \S+|"
                r"wandb login(?:\s+--?[\w\-]+)*)\s+[0-9a-f]{40}\b"), r"\1 " + MASK),
    (re.compile(r"(?i)\b[0-9a-f]{40}\b(?=.*wandb)|(?<=wandb)(.*?)\b[0-9a-f]{40}\b"), MASK),
    # --db-password X, --hf_token=X, -api-key 'X'
    (re.compile(r"(?i)(?<![\w\-])(--?(?!-)" + _NOT_SECRET_NAME
                + r"[\w.\-]{0,40}(?:password|passwd|passphrase|pwd|token|secret|api[_\-]?key|access[_\-]?key)"
                r")(\s+|=)(\"[^\"\n]*\"|'[^'\n]*'|[^\s'\"]+)"), _keep_quotes),
    # name = value, name: value, "name": "value", name=value in URLs' query strings
    (re.compile(r"(?i)(?=[aprstmic])" + _NOT_SPECIAL_TOKEN + "(" + _NAME + r")(['\"]?\s*[=:]\s*)(" + _VALUE + ")"),
     _keep_quotes),
    # user:password@ in URLs of any scheme (redis://:pw@h, postgres://u:p@ss/w@h, MONGODB+SRV://...)
    (re.compile(r"(?i)\b([a-z][a-z0-9+.\-]{1,20}://[^\s:/@'\"]{0,200}:)[^\s'\"]{1,400}@(?=[^\s@'\"/]+)"),
     r"\1" + MASK + "@"),
]

# Every pattern above contains a match of one of these (lower-case) hints. The stdlib scans them over
# lower-cased text (a plain alternation there runs several times faster than re.IGNORECASE); bulk
# bytes are scanned by Hyperscan when it is installed (one DFA pass, about 1 GB/s).
_HINT_SOURCES = [
    r"hf_", r"sk-", r"[srp]k_(?:live|test)", r"akia", r"asia", r"aroa", r"aida", r"anpa", r"agpa", r"aiza",
    r"github_pat", r"gh[pousr]_", r"glpat", r"npm_", r"xox", r"xapp", r"eyj", r"-----begin", r"bearer",
    r"authoriz", r"wandb", r"://[^\s/@]*:",
    r"(?:key|token|secret|passwd|password|passphrase|credential|credentials)['\"]?[ \t]*[=:]",
    r"-[\w.\-]*(?:password|passwd|passphrase|pwd|token|secret|key)[ \t=]",
]
_HINT = re.compile("|".join(_HINT_SOURCES))
_HINT_BYTES = re.compile("|".join(_HINT_SOURCES).encode())

try:  # optional accelerator: the same hints, found at DFA speed
    import hyperscan as _hyperscan
except ImportError:  # pragma: no cover - the stdlib scan gives the same result, slower
    _hyperscan = None
_hs_database = None
_hs_local = threading.local()  # a scratch space per thread: Hyperscan's is not shared safely
_hs_lock = threading.Lock()


def _hint_ends(block: bytes) -> list[int] | None:
    """End offsets of every hint in `block` (any case), or None when Hyperscan is not available."""
    global _hs_database
    if _hyperscan is None:
        return None
    if _hs_database is None:
        with _hs_lock:
            if _hs_database is None:
                database = _hyperscan.Database()
                database.compile(
                    expressions=[source.encode() for source in _HINT_SOURCES],
                    ids=list(range(len(_HINT_SOURCES))), elements=len(_HINT_SOURCES),
                    flags=[_hyperscan.HS_FLAG_CASELESS] * len(_HINT_SOURCES),
                )
                _hs_database = database
    scratch = getattr(_hs_local, "scratch", None)
    if scratch is None or getattr(_hs_local, "pid", None) != os.getpid():
        scratch = _hs_local.scratch = _hyperscan.Scratch(_hs_database)
        _hs_local.pid = os.getpid()
    ends: list[int] = []

    def found(_id, _start, end, _flags, _context):
        ends.append(end)

    _hs_database.scan(block, match_event_handler=found, scratch=scratch)
    return ends


_PEM_BEGIN = re.compile(r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY( BLOCK)?-----")
_PEM_END = re.compile(r"-----END[A-Z0-9 ]{0,40}PRIVATE KEY( BLOCK)?-----")
PEM_MAX_LINES = 400  # a key body is at most about 100 lines; give up on a BEGIN without END after this


# For each pattern above, in order: lower-case literals of which its matches contain at least one.
# A hinted line only runs the patterns whose literal it holds (one secret rarely needs more than two).
_NEEDLES: list[tuple[str, ...]] = [
    ("-----begin",), ("hf_",), ("sk-",), ("k_live", "k_test"), ("akia", "asia", "aroa", "aida", "anpa", "agpa"),
    ("aiza",), ("github_pat_",), ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), ("glpat-",), ("npm_",), ("xox",),
    ("xapp-",), ("eyj",), ("authoriz",), ("bearer",), ("wandb",), ("wandb",),
    ("password", "passwd", "passphrase", "pwd", "token", "secret", "key"),
    ("key", "token", "secret", "password", "passwd", "passphrase", "credential"),
    ("://",),
]
assert len(_NEEDLES) == len(_LINE_PATTERNS)
_PATTERNS_WITH_NEEDLES = [(pattern, replacement, needles)
                          for (pattern, replacement), needles in zip(_LINE_PATTERNS, _NEEDLES, strict=True)]


def mask_line(line: str) -> str:
    """Mask one line (or any text whose secrets stay within a line)."""
    if not line:
        return line
    lowered = line.lower()
    if not _HINT.search(lowered):
        return line
    for pattern, replacement, needles in _PATTERNS_WITH_NEEDLES:
        if any(needle in lowered for needle in needles):
            line = pattern.sub(replacement, line)
            lowered = line.lower()
    return line


class Masker:
    """Masks a text stream fed in pieces that end at line ends (or at safe cuts, see `safe_cut`).

    Carries the one multi-line state, "inside a PEM private key block", from piece to piece.
    """

    def __init__(self) -> None:
        self.pem_lines = 0  # >0: inside a PEM block, counting its lines

    def feed(self, text: str) -> str:
        if not text:
            return text
        if self.pem_lines or "-----BEGIN" in text:
            return self._feed_pem(text)
        return _mask_hinted_lines(text)

    def feed_bytes(self, block: bytes) -> bytes:
        """Mask a block of raw log bytes ending at a line end (or a safe cut); returns UTF-8.

        Bytes that are not UTF-8 become U+FFFD, and so do NUL bytes (a database text column or a
        browser would choke on them): a mostly-text log with stray binary bytes is kept readable.
        """
        if b"\x00" in block:
            block = block.replace(b"\x00", b"\xef\xbf\xbd")
        ascii_only = block.isascii()
        ends = None if self.pem_lines or b"-----BEGIN" in block else _hint_ends(block)
        if ends is None:
            text = block.decode("ascii") if ascii_only else block.decode("utf-8", errors="replace")
            return self.feed(text).encode("utf-8")
        if not ascii_only:
            clean = block.decode("utf-8", errors="replace").encode("utf-8")
            if clean != block:  # offsets moved: scan the repaired bytes again
                return self.feed_bytes(clean)
        if not ends:
            return block
        parts, done = [], 0
        for end in sorted(ends):
            if end <= done:
                continue
            start = block.rfind(b"\n", 0, end - 1) + 1
            stop = block.find(b"\n", end - 1)
            stop = len(block) if stop < 0 else stop
            if start < done:
                start = done
            parts.append(block[done:start])
            parts.append(mask_line(block[start:stop].decode("utf-8")).encode("utf-8"))
            done = stop
        parts.append(block[done:])
        return b"".join(parts)

    def _feed_pem(self, text: str) -> str:
        out = []
        for line in text.splitlines(keepends=True):
            body = line.rstrip("\r\n")
            end = line[len(body):]
            if self.pem_lines:
                self.pem_lines += 1
                if _PEM_END.search(body):
                    self.pem_lines = 0
                    out.append(body[_PEM_END.search(body).start():] + end)
                elif self.pem_lines > PEM_MAX_LINES:
                    self.pem_lines = 0
                    out.append(mask_line(line))
                else:
                    out.append(MASK + end if body.strip() else line)
                continue
            begin = _PEM_BEGIN.search(body)
            if begin and not _PEM_END.search(body, begin.end()):
                self.pem_lines = 1
                out.append(mask_line(body[: begin.start()]) + begin.group(0) + end)
            else:
                out.append(mask_line(line))
        return "".join(out)


def _mask_hinted_lines(text: str) -> str:
    lowered = text.lower()
    if len(lowered) != len(text):  # a few characters lower-case to two: offsets would drift
        return "".join(mask_line(line) for line in text.splitlines(keepends=True))
    parts, done = [], 0
    for hint in _HINT.finditer(lowered):
        if hint.start() < done:
            continue
        start = text.rfind("\n", 0, hint.start()) + 1
        end = text.find("\n", hint.end())
        end = len(text) if end < 0 else end
        parts.append(text[done:start])
        parts.append(mask_line(text[start:end]))
        done = end
    if not parts:
        return text
    parts.append(text[done:])
    return "".join(parts)


def mask_secrets(text: str) -> str:
    """Mask every secret in `text` (one line or many, PEM blocks included)."""
    if not text:
        return text
    return Masker().feed(text)


def mask_block(text: str) -> str:
    """mask_secrets for a block of whole lines (kept as the name the upload service used)."""
    return mask_secrets(text)


def mask_deep(value):
    """Mask secrets in every string of a JSON-like structure."""
    if isinstance(value, str):
        return mask_secrets(value)
    if isinstance(value, list):
        return [mask_deep(item) for item in value]
    if isinstance(value, dict):
        return {key: mask_deep(item) for key, item in value.items()}
    return value


SAFE_WINDOW = 8192  # no secret pattern reaches further than this from its hint


def safe_cut(block: str | bytes) -> int:
    """Where to cut a block that holds no line end so that no secret straddles the cut.

    Returns the index just after a space or tab with no hint in the SAFE_WINDOW characters before
    it (every pattern starts at most a scheme's length before its hint), or 0 when there is none
    (the caller then reads on before cutting).
    """
    is_bytes = isinstance(block, bytes | bytearray)
    hint, space_chars = (_HINT_BYTES, (b" ", b"\t")) if is_bytes else (_HINT, (" ", "\t"))
    ends = _hint_ends(bytes(block)) if is_bytes else None
    if ends is not None:  # a hint holds no space, so where it ends places it as well as its start
        hints = ends
    else:
        lowered = block.lower()
        hints = [match.start() for match in hint.finditer(lowered)] if len(lowered) == len(block) else [0]
    position = len(block) - 1
    while position > 0:
        space = max(block.rfind(space_chars[0], 0, position), block.rfind(space_chars[1], 0, position))
        if space <= 0:
            return 0
        near = [start for start in hints if space - SAFE_WINDOW <= start <= space + 64]
        if not near:
            return space + 1
        position = min(near) - 64
    return 0
