"""Which attention kernel the job ran: it decides whether the a*s*s attention scores are stored.

Evidence, strongest first, and the reason stated with the answer:
  1. a flag or config key: --attn_implementation flash_attention_2 | sdpa | eager, --flash_attn fa2,
     --use_flash_attn, --sdp_attention (axolotl), --flash_attention;
  2. the traceback's frames: flash_attn / _flash_attention_forward -> flash; sdpa_attention_forward /
     scaled_dot_product_attention -> SDPA; eager_attention_forward -> eager;
  3. versions the log prints: transformers >= 4.36 with torch >= 2.1.1 defaults to SDPA for the common
     decoder families, older transformers to eager.
Nothing found: unknown, and the estimate shows the range between the two (SDPA below, eager above).
"""
from __future__ import annotations

import re

FLASH_WORDS = ("flash_attention_2", "flash_attention_3", "fa2", "fa3", "flash_attn", "flash", "kernels-community")
SDPA_WORDS = ("sdpa", "auto", "true", "1", "yes", "on", "flex_attention", "xformers")
EAGER_WORDS = ("eager", "false", "disabled", "0", "no", "off", "disable", "none")
_VERSION = re.compile(r"\btransformers(?:\s*version)?\s*(?:==|=|:|\s|v)\s*v?(\d+)\.(\d+)", re.I)
_TORCH_VERSION = re.compile(r"\btorch(?:\s*version)?\s*(?:==|=|:|\s|v)\s*v?(\d+)\.(\d+)(?:\.(\d+))?", re.I)


def _from_setting(value) -> str | None:
    word = str(value).strip().lower()
    if not word:
        return None
    if word in EAGER_WORDS:
        return "eager"
    if any(w in word for w in FLASH_WORDS):
        return "flash"
    if word in SDPA_WORDS or "sdp" in word:
        return "sdpa"
    return None


def infer_attention(setting, frames: list[str] | None, facts: dict | None, evidence: str = "") -> tuple[str, str]:
    """(kernel, reason): kernel is "flash", "sdpa", "eager" or "unknown"."""
    kernel = _from_setting(setting) if setting is not None else None
    if kernel:
        return kernel, f"stated by the job's settings ({setting})"
    joined = "\n".join(frames or []).lower()
    if "flash_attn" in joined or "_flash_attention_forward" in joined or "flash_attention" in joined:
        return "flash", "the traceback runs through flash-attention"
    if "sdpa_attention" in joined or "scaled_dot_product" in joined:
        return "sdpa", "the traceback runs through SDPA attention"
    if "eager_attention_forward" in joined:
        return "eager", "the traceback runs through eager attention"
    facts = facts or {}
    text = " ".join([str(facts.get("transformers_version") or ""), str(facts.get("versions") or ""), evidence or ""])
    found = _VERSION.search(text) or (re.match(r"^(\d+)\.(\d+)", str(facts.get("transformers_version") or "")))
    if found:
        major, minor = int(found.group(1)), int(found.group(2))
        torch = _TORCH_VERSION.search(text)
        old_torch = torch is not None and (int(torch.group(1)), int(torch.group(2))) < (2, 1)
        if (major, minor) >= (4, 36) and not old_torch:
            return "sdpa", f"transformers {major}.{minor} defaults to SDPA attention"
        return "eager", f"transformers {major}.{minor} (or torch < 2.1) defaults to eager attention"
    return "unknown", "no flag, frame or version tells the attention kernel"
