"""Signals other parts of the app listen to."""
from django.dispatch import Signal

# Sent (sender=Incident, incident=...) on commit once a diagnosis is saved or the incident failed.
incident_finished = Signal()
