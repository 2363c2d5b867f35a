"""Receivers: every diagnosis the engine saves is recorded in its team's knowledge base, in the same
transaction (jobs.signals.diagnosis_saved: jobs never imports knowledge)."""
from knowledge import services


def record_diagnosis(sender, incident, diagnosis, **kwargs):
    services.record(incident, diagnosis)
