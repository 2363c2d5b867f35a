"""Fill the new occurrence columns and grouping hashes of existing rows; on PostgreSQL add the
full-text GIN index (SQLite searches without one: see knowledge.search)."""
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector
from django.db import migrations

SEARCH_INDEX = "occurrence_search_gin"
SEARCH_CONFIG = "english"


def backfill(apps, schema_editor):
    from knowledge.grouping import signature
    from knowledge.textindex import search_text

    Occurrence = apps.get_model("knowledge", "ProblemOccurrence")
    ProblemHash = apps.get_model("knowledge", "ProblemHash")
    Diagnosis = apps.get_model("jobs", "Diagnosis")
    for link in Occurrence.objects.select_related("incident", "problem").iterator():
        diagnosis = Diagnosis.objects.filter(incident_id=link.incident_id).first()
        data = diagnosis.data if diagnosis is not None and isinstance(diagnosis.data, dict) else {}
        sig = signature(data)
        incident = link.incident
        link.team_id = link.problem.team_id
        link.seen_at = incident.created_at
        link.category, link.exception = sig.category, sig.exception
        link.cluster, link.job_id, link.failing_rank = incident.cluster, incident.job_id, data.get("failing_rank")
        link.fine_hash, link.coarse_hash = sig.fine, sig.coarse
        link.message = str((data.get("root_cause") or {}).get("message") or "")[:2000]
        link.evidence = "\n".join(sig.evidence)
        link.search_text = search_text(incident, data)
        link.save()
        for kind, value in sig.hashes:
            if not ProblemHash.objects.filter(team_id=link.team_id, kind=kind, value=value).exists():
                ProblemHash.objects.create(team_id=link.team_id, problem_id=link.problem_id, kind=kind, value=value)


def search_index():
    return GinIndex(SearchVector("search_text", config=SEARCH_CONFIG), name=SEARCH_INDEX)


def add_search_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.add_index(apps.get_model("knowledge", "ProblemOccurrence"), search_index())


def drop_search_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.remove_index(apps.get_model("knowledge", "ProblemOccurrence"), search_index())


class Migration(migrations.Migration):

    dependencies = [
        ("knowledge", "0002_grouping_search_runbooks"),
        ("jobs", "0003_membership_viewer"),
    ]

    operations = [
        migrations.RunPython(backfill, migrations.RunPython.noop),
        migrations.RunPython(add_search_index, drop_search_index),
    ]
