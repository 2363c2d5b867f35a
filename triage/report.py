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
            lines.append(f"  {number}. [{fix.get('kind')}] {fix.get('title', '')}")
            if fix.get("why"):
                lines.append(f"     why: {fix['why']}")
            if fix.get("command"):
                lines.append(f"     run: {fix['command']}")
            if fix.get("env"):
                lines.append("     env: " + " ".join(f"{k}={v}" for k, v in fix["env"].items()))
    lines.append(f"\nFingerprint: {diagnosis.fingerprint}")
    return "\n".join(lines) + "\n"
