"""The searchable text of one incident: what a person would type to find it again."""
from __future__ import annotations

import re

SEARCH_TEXT_LIMIT = 20_000
# Full-text parsers keep "Loader.__getitem__" or "torch/distributed/api.py" as one token: their parts
# are added once more, separated, so that a search for "Loader" or "distributed" finds them.
_COMPOUND = re.compile(r"[\w-]+(?:[./:\\]+[\w-]+)+|\w*_\w+")
_SEPARATORS = re.compile(r"[./:\\_-]+")


def search_text(incident, data: dict) -> str:
    """Job id, title, exception, message, summary and evidence lines, as plain text."""
    root = data.get("root_cause") if isinstance(data.get("root_cause"), dict) else {}
    parts = [incident.job_id, incident.title, incident.cluster, str(data.get("category") or ""),
             str(root.get("exception") or ""), str(root.get("message") or ""), str(data.get("summary") or "")]
    for item in list(root.get("evidence") or []) + list(data.get("evidence") or []):
        text = item.get("text") if isinstance(item, dict) else item
        if text:
            parts.append(str(text))
    joined, seen = [], set()
    for part in parts:
        part = " ".join(str(part or "").split())
        if part and part not in seen:
            seen.add(part)
            joined.append(part)
    text = "\n".join(joined)
    parts = []
    for compound in dict.fromkeys(_COMPOUND.findall(text)):
        parts.extend(part for part in _SEPARATORS.split(compound) if len(part) > 1)
    if parts:
        text += "\n" + " ".join(dict.fromkeys(parts))
    return text[:SEARCH_TEXT_LIMIT]
