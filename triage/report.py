"""The short human report printed by `python -m triage diagnose` without --json."""

from __future__ import annotations

from triage.diagnosis import Diagnosis


def human_report(diagnosis: Diagnosis) -> str:
    lines = [f"Verdict: {diagnosis.category} (confidence {diagnosis.confidence:.2f})", diagnosis.summary, ""]
    rank = diagnosis.failing_rank
    lines.append(
        f"First failing rank: {rank if rank is not None else 'unknown'}"
        + (f" of {diagnosis.world_size}" if diagnosis.world_size else "")
        + (f" (launcher: {diagnosis.launcher})" if diagnosis.launcher else "")
    )
    if diagnosis.launcher_verdict_wrong and diagnosis.launcher_verdict_reason:
        lines.append(f"Note: {diagnosis.launcher_verdict_reason}")
    root = diagnosis.root_cause
    if root is not None and root.exception:
        lines.append(f"Root exception: {root.exception}: {(root.message or '')[:300]}")
    if root is not None and root.evidence:
        lines += ["", "Evidence:"]
        for item in root.evidence:
            lines.append(f"  {item.source}:{item.line}: {item.text[:200]}")
    if diagnosis.fixes:
        lines += ["", "Fixes:"]
        for number, fix in enumerate(diagnosis.fixes, 1):
            lines += fix_lines(number, fix)
    lines.append(f"\nFingerprint: {diagnosis.fingerprint}")
    return "\n".join(lines) + "\n"


def _block(label: str, text: str) -> list[str]:
    body = str(text).rstrip("\n").splitlines() or [""]
    return [f"     {label}:"] + [f"       {line}" for line in body]


def fix_lines(number: int, fix: dict) -> list[str]:
    """One fix as the CLI prints it: the steps to run first, the command (env already inside it), the
    environment only when there is no command to carry it, config changes, notes and its rank reason."""
    lines = [f"  {number}. [{fix.get('kind')}] {fix.get('title', '')}"]
    if fix.get("also_kinds"):
        lines.append("     same change as: " + ", ".join(str(k) for k in fix["also_kinds"]))
    if fix.get("why"):
        lines.append(f"     why: {fix['why']}")
    if fix.get("rank_reason"):
        lines.append(f"     ranked: {fix['rank_reason']}")
    if fix.get("shell"):
        lines += _block("run this first", "\n".join(str(line) for line in fix["shell"]))
    if fix.get("command"):
        lines += _block("then run" if fix.get("shell") else "run", fix["command"])
    elif fix.get("env"):
        lines += _block("set", "\n".join(f"export {k}={v}" for k, v in fix["env"].items()))
    for change in fix.get("changes") or []:
        if change.get("where") in ("config", "code"):
            where = change.get("file") or "code"
            lines.append(f"     change in {where}: {change.get('key')} = {change.get('new')}")
    for note in fix.get("notes") or []:
        lines.append(f"     note: {note}")
    return lines
