"""Signals other parts of the app listen to."""
from django.dispatch import Signal

# Sent (sender=Incident, incident=...) on commit once a diagnosis is saved or the incident failed.
incident_finished = Signal()
# Sent (sender=Diagnosis, incident=..., diagnosis=...) inside the transaction that saves a diagnosis
# from the engine; a receiver's error rolls the save back (the knowledge base records it here).
diagnosis_saved = Signal()
