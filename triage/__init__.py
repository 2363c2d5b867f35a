"""Triage: the diagnosis engine for failed distributed fine-tuning jobs. Plain Python, no Django.

Pipeline (each stage one module):
  sources     open files, .gz, .zip/.tar(.gz), folders, torchrun --log-dir trees -> named byte streams (safely)
  scan        literal prefilter -> candidate lines + windows (grepscan: the same through GNU grep for big files)
  text/ranks  decode, strip ANSI, resolve \\r, mask secrets; peel [rankN]: / [defaultN]: / srun / mpirun / host prefixes
  engine      per line: tracebacks (tracebacks.py), launcher facts (launchers/), rule hits (rules/), progress, memory
  decide      candidates ranked by rule weight -> root cause, category, first failing rank (timeout culprit logic)
  api         diagnose(): fixes (triage.fixes), memory (triage.memory), timeline, fingerprint -> Diagnosis
"""

from __future__ import annotations

from triage.diagnosis import ENGINE_VERSION, Diagnosis, Event, Evidence, RankStatus, RootCause
from triage.errors import InputRejected, UnusableInput
from triage.limits import Limits
from triage.pipeline import diagnose
from triage.sources import inspect_upload

__all__ = [
    "ENGINE_VERSION",
    "Diagnosis",
    "Evidence",
    "Event",
    "InputRejected",
    "Limits",
    "RankStatus",
    "RootCause",
    "UnusableInput",
    "diagnose",
    "inspect_upload",
]
