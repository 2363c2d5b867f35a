"""Story: a week later, alice types what she remembers of the error and finds the incident and its fix.

The suite runs these on PostgreSQL (full-text search); test_the_same_stories_pass_on_sqlite runs this
very file again on SQLite, where the fallback (every word, case-insensitive) answers.
"""
import datetime
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection
from django.urls import reverse

from knowledge import search
from knowledge.models import Problem

pytestmark = pytest.mark.django_db
REPO = Path(__file__).resolve().parents[2]
TIMEOUT = {"category": "nccl_timeout", "exception": "RuntimeError"}


@pytest.fixture
def history(alpha, bravo, recorded_incident):
    schema = recorded_incident(alpha, "'conversations'", job_id="sft-2231", cluster="h100-east",
                               evidence=[{"source": "rank1.log", "line": 40, "text": "KeyError: 'conversations'"},
                                         {"source": "rank1.log", "line": 38, "text": "in ShareGptLoader.__getitem__"}])
    timeout = recorded_incident(alpha, "Watchdog caught collective operation timeout: ALLREDUCE ran for 1800000 ms",
                                job_id="pretrain-77", cluster="a100-west", summary="Rank 3 stalled in a collective",
                                **TIMEOUT)
    theirs = recorded_incident(bravo, "'conversations'", job_id="bravo-secret-job")
    Problem.objects.filter(pk=schema.problems.get().pk).update(
        status="resolved", resolution="Converted the alpaca rows with the **sharegpt** converter.")
    return {"schema": schema, "timeout": timeout, "theirs": theirs}


def ids(rows):
    return {row.incident_id for row in rows}


def test_it_uses_full_text_search_exactly_on_postgresql():
    assert search.uses_full_text() == (connection.vendor == "postgresql")
    if os.environ.get("TRIAGE_KB_SQLITE_RUN"):
        assert connection.vendor == "sqlite"


def test_it_finds_incidents_by_message_exception_evidence_and_job_id(alpha, history):
    team = [alpha.pk]
    assert ids(search.incidents(team, search.Filters(q="conversations"))) == {history["schema"].pk}
    assert ids(search.incidents(team, search.Filters(q="watchdog collective"))) == {history["timeout"].pk}
    assert ids(search.incidents(team, search.Filters(q="ShareGptLoader"))) == {history["schema"].pk}
    assert ids(search.incidents(team, search.Filters(q="pretrain-77"))) == {history["timeout"].pk}
    assert ids(search.incidents(team, search.Filters(q="RuntimeError"))) == {history["timeout"].pk}
    assert not ids(search.incidents(team, search.Filters(q="bravo-secret-job")))  # another team's


def test_it_finds_problems_by_resolution_and_through_their_incidents(alpha, history):
    team = [alpha.pk]
    by_resolution = search.problems(team, search.Filters(q="sharegpt converter"))
    assert [problem.pk for problem in by_resolution] == [history["schema"].problems.get().pk]
    through_incident = search.problems(team, search.Filters(q="sft-2231"))
    assert [problem.pk for problem in through_incident] == [history["schema"].problems.get().pk]


def test_it_filters_by_category_status_cluster_and_date(alpha, history):
    team = [alpha.pk]
    assert ids(search.incidents(team, search.Filters(category="nccl_timeout"))) == {history["timeout"].pk}
    assert ids(search.incidents(team, search.Filters(status="resolved"))) == {history["schema"].pk}
    assert ids(search.incidents(team, search.Filters(cluster="h100-east"))) == {history["schema"].pk}
    today = datetime.date.today()
    assert len(ids(search.incidents(team, search.Filters(since=today)))) == 2
    assert not ids(search.incidents(team, search.Filters(until=today - datetime.timedelta(days=1))))
    assert not ids(search.incidents(team, search.Filters(q="conversations", category="nccl_timeout")))


def test_the_search_page_and_the_api_answer_the_same(alice_client, alpha, history, api_as):
    page = alice_client.get(reverse("knowledge:search"), {"q": "conversations"}).content.decode()
    assert reverse("jobs:incident_detail", args=[history["schema"].pk]) in page
    assert "bravo-secret-job" not in page
    body = api_as(alpha).get("/api/v1/knowledge/search/", {"q": "conversations", "status": "resolved"}).json()
    assert [row["incident"] for row in body["incidents"]] == [history["schema"].pk]
    assert [row["id"] for row in body["problems"]] == [history["schema"].problems.get().pk]
    assert body["engine"] == ("postgresql full-text" if connection.vendor == "postgresql" else "substring")
    bad = api_as(alpha).get("/api/v1/knowledge/search/", {"since": "last tuesday"})
    assert bad.status_code == 400 and bad.json()["error"]["field"] == "since"


def test_the_same_stories_pass_on_sqlite():
    if os.environ.get("TRIAGE_KB_SQLITE_RUN"):
        pytest.fail("this test must not run inside its own SQLite run")
    env = {key: value for key, value in os.environ.items() if key != "TRIAGE_DATABASE_URL"}
    env["TRIAGE_KB_SQLITE_RUN"] = "1"
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(Path(__file__)),
         "-k", "not on_sqlite", "-o", "addopts=", "--create-db"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "5 passed" in result.stdout
