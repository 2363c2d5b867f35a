"""Knowledge-base stories: alice and bob share team Alpha's problems; charlie (Bravo) sees none of them."""
import pytest


@pytest.fixture(autouse=True)
def _fresh_throttle_counters(fresh_cache):
    """Throttle counters start at zero in every knowledge test."""


def diagnosis(message="'conversations'", *, category="data_schema", exception="KeyError",
              summary="Rank 1 raised KeyError 'conversations' while reading a training sample", frames=None,
              evidence=None, fixes=None, fingerprint="ab" * 8, failing_rank=1):
    return {
        "engine_version": "1.0.0", "category": category, "confidence": 0.9, "summary": summary,
        "launcher": "torchrun", "world_size": 2, "failing_rank": failing_rank,
        "root_cause": {"rank": failing_rank, "exception": exception, "message": message, "frames": frames or [],
                       "evidence": evidence if evidence is not None else [
                           {"source": "log.txt", "line": 3, "text": f"{exception}: {message}"}]},
        "ranks": [], "fixes": fixes or [], "memory": {"series": [], "estimate": None}, "fingerprint": fingerprint,
    }


@pytest.fixture
def recorded_incident(make_incident):
    """An incident diagnosed with `message` (and any diagnosis() option), recorded in its team's knowledge base."""
    from knowledge import services

    def make(team, message="'conversations'", **kwargs):
        fields = {key: kwargs.pop(key) for key in ("title", "job_id", "cluster") if key in kwargs}
        incident = make_incident(team, diagnosis=diagnosis(message, **kwargs), **fields)
        services.record(incident, incident.diagnosis)
        return incident

    return make
