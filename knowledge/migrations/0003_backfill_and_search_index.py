"""Fill the new occurrence columns and grouping hashes of existing rows; on PostgreSQL add the
full-text search index: a narrow table (one row per occurrence: team, time, filters and a tsvector)
kept in step by triggers, with a GIN index. SQLite searches without one (see knowledge.search).

Narrow on purpose: a full-text match over many rows then reads a few MB, not the occurrences'
evidence and text. No foreign key, so that Django's flush (TRUNCATE of its own tables) is never
refused; a TRUNCATE trigger empties it instead.
"""
from django.db import migrations

ADD_INDEX = """
CREATE TABLE knowledge_search_index (
    occurrence_id bigint PRIMARY KEY,
    team_id bigint,
    problem_id bigint,
    seen_at timestamptz,
    category varchar(40),
    cluster varchar(100),
    document tsvector
);
CREATE INDEX knowledge_search_index_document ON knowledge_search_index USING gin (document);
CREATE INDEX knowledge_search_index_recent ON knowledge_search_index (team_id, seen_at DESC);

CREATE FUNCTION knowledge_search_index_sync() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        DELETE FROM knowledge_search_index WHERE occurrence_id = OLD.id;
        RETURN OLD;
    END IF;
    INSERT INTO knowledge_search_index
        VALUES (NEW.id, NEW.team_id, NEW.problem_id, NEW.seen_at, NEW.category, NEW.cluster,
                to_tsvector('english'::regconfig, coalesce(NEW.search_text, '')))
    ON CONFLICT (occurrence_id) DO UPDATE SET
        team_id = EXCLUDED.team_id, problem_id = EXCLUDED.problem_id, seen_at = EXCLUDED.seen_at,
        category = EXCLUDED.category, cluster = EXCLUDED.cluster, document = EXCLUDED.document;
    RETURN NEW;
END $$;
CREATE FUNCTION knowledge_search_index_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    TRUNCATE knowledge_search_index;
    RETURN NULL;
END $$;
CREATE TRIGGER knowledge_search_index_rows AFTER INSERT OR UPDATE OR DELETE ON knowledge_problemoccurrence
    FOR EACH ROW EXECUTE FUNCTION knowledge_search_index_sync();
CREATE TRIGGER knowledge_search_index_truncate AFTER TRUNCATE ON knowledge_problemoccurrence
    FOR EACH STATEMENT EXECUTE FUNCTION knowledge_search_index_truncate();
UPDATE knowledge_problemoccurrence SET search_text = search_text;
"""
DROP_INDEX = """
DROP TRIGGER IF EXISTS knowledge_search_index_rows ON knowledge_problemoccurrence;
DROP TRIGGER IF EXISTS knowledge_search_index_truncate ON knowledge_problemoccurrence;
DROP FUNCTION IF EXISTS knowledge_search_index_sync();
DROP FUNCTION IF EXISTS knowledge_search_index_truncate();
DROP TABLE IF EXISTS knowledge_search_index;
"""


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


def add_search_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(ADD_INDEX)


def drop_search_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP_INDEX)


class Migration(migrations.Migration):

    dependencies = [
        ("knowledge", "0002_grouping_search_runbooks"),
        ("jobs", "0003_membership_viewer"),
    ]

    operations = [
        migrations.RunPython(backfill, migrations.RunPython.noop),
        migrations.RunPython(add_search_index, drop_search_index),
    ]
