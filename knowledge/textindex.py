"""The searchable text of one incident: what a person would type to find it again."""
from __future__ import annotations

SEARCH_TEXT_LIMIT = 20_000


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
    return "\n".join(joined)[:SEARCH_TEXT_LIMIT]
