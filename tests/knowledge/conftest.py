"""Knowledge-base stories: alice and bob share team Alpha's problems; charlie (Bravo) sees none of them."""
import pytest

from tests.factories import diagnosis_data as diagnosis


@pytest.fixture(autouse=True)
def _fresh_throttle_counters(fresh_cache):
    """Throttle counters start at zero in every knowledge test."""


@pytest.fixture
def recorded_incident(make_incident):
    """An incident diagnosed with `fingerprint` and recorded into its team's knowledge base."""
    from knowledge import services

    def make(team, fingerprint="ab" * 8, **kwargs):
        fields = {key: kwargs.pop(key) for key in ("title", "job_id") if key in kwargs}
        incident = make_incident(team, diagnosis=diagnosis(fingerprint, **kwargs), **fields)
        services.record(incident, incident.diagnosis)
        return incident

    return make
