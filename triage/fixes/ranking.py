"""Rank fixes from the evidence, merge fixes that make the same change, say why each stands where it does.

Order: the rules' kinds in their order, then the extras; then, stable:
  1. fixes the log rules out ("applicable": False, with "ruled_out": the reason) go last;
  2. among the rest, the memory estimate's verdict after the fix: fits, unknown, does not fit
     (the rules' first choice keeps the lead unless the estimate says it does not fit and another fits).
Two fixes whose corrected command, environment and config changes are identical are one fix: the
first keeps its place and lists the other kind in "also_kinds".
"""
from __future__ import annotations

import json


def _signature(fix: dict) -> str | None:
    changes = [{k: v for k, v in c.items() if k not in ("nodes", "hint")} for c in fix.get("changes") or []]
    if not changes:
        return None
    return json.dumps([fix.get("command"), sorted(fix.get("env", {}).items()), changes,
                       fix.get("config_patch")], sort_keys=True, default=str)


def _merge(fixes: list[dict]) -> list[dict]:
    kept: list[dict] = []
    by_signature: dict[str, dict] = {}
    for fix in fixes:
        signature = _signature(fix)
        if signature is not None and signature in by_signature:
            first = by_signature[signature]
            first.setdefault("also_kinds", []).append(fix["kind"])
            first.setdefault("notes", []).append(
                f"this also is the '{fix['kind'].replace('_', ' ')}' fix: the same change, shown once")
            continue
        if signature is not None:
            by_signature[signature] = fix
        kept.append(fix)
    return kept


def _fits_order(fix: dict) -> int:
    fits = (fix.get("estimate") or {}).get("fits")
    return 0 if fits else 1 if fits is None else 2


def _ruled_out(fix: dict, ctx) -> str | None:
    if fix.get("applicable") is False:
        return fix.get("ruled_out") or "already in place in this job"
    return None


def rank(fixes: list[dict], extras: list[dict], ctx) -> list[dict]:
    chosen = [dict(f) for f in fixes]
    for position, fix in enumerate(chosen):
        fix["_order"] = position
        fix["_origin"] = "rules"
    for position, fix in enumerate(extras):
        fix["_order"] = len(chosen) + position
        fix["_origin"] = "extra"
    everything = _merge(chosen + [dict(f) for f in extras])
    for fix in everything:
        reason = _ruled_out(fix, ctx)
        if reason:
            fix["applicable"] = False
            fix["ruled_out"] = reason
    lead = everything[0] if everything else None
    lead_stands = lead is not None and lead["_origin"] == "rules" and not lead.get("ruled_out") and not (
        _fits_order(lead) == 2 and any(_fits_order(f) == 0 and not f.get("ruled_out") for f in everything))

    def key(fix: dict) -> tuple:
        if lead_stands and fix is lead:
            return (0, 0, 0)
        return (1, 1 if fix.get("ruled_out") else 0, _fits_order(fix), fix["_order"])

    ranked = sorted(everything, key=key)
    category = str(getattr(ctx, "category", "") or "")
    for place, fix in enumerate(ranked, start=1):
        fix["rank_reason"] = _reason(fix, place, lead_stands and fix is lead, category)
        fix.pop("_order", None)
        fix.pop("_origin", None)
    return ranked


def _reason(fix: dict, place: int, is_lead: bool, category: str) -> str:
    estimate = fix.get("estimate") or {}
    fits = estimate.get("fits")
    verdict = ""
    if fits is True:
        verdict = f"; the memory estimate puts it at {estimate.get('total_gib')} GiB, within the GPU"
    elif fits is False:
        verdict = f"; the memory estimate still puts it at {estimate.get('total_gib')} GiB, over the GPU"
    if fix.get("ruled_out"):
        return f"#{place}, last: ruled out by the log or the command ({fix['ruled_out']})"
    if is_lead:
        return f"#{place}: the change the diagnosis of this {category or 'failure'} points to first{verdict}"
    if fix.get("added_because"):
        return f"#{place}: added because {fix['added_because']}{verdict}"
    if fits is True:
        return f"#{place}: ranked up because the memory estimate says it fits ({estimate.get('total_gib')} GiB)"
    return f"#{place}: another change that answers this {category or 'failure'}{verdict}"
