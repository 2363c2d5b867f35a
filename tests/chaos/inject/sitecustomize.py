"""Fault injection for the chaos tests, loaded by every Python process started with this folder on
PYTHONPATH: with TRIAGE_CHAOS_ENGINE_DELAY_S set, each diagnosis takes that much longer (as on a
slow shared file system), so that a test can kill the worker while a diagnosis is running. The
engine itself runs unchanged after the delay."""
import os

_delay = float(os.environ.get("TRIAGE_CHAOS_ENGINE_DELAY_S") or 0)
if _delay:
    import time

    import triage

    _real_diagnose = triage.diagnose

    def _slow_diagnose(*args, **kwargs):
        time.sleep(_delay)
        return _real_diagnose(*args, **kwargs)

    triage.diagnose = _slow_diagnose
