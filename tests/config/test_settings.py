"""Settings come from TRIAGE_* variables and refuse bad or unsafe values at start-up."""
import os
import subprocess
import sys

import pytest
from django.core.exceptions import ImproperlyConfigured

from config.env import database_from_url, env_bool, env_int

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _start_django(**env):
    clean = {k: v for k, v in os.environ.items() if not k.startswith("TRIAGE_")}
    clean.update(env, DJANGO_SETTINGS_MODULE="config.settings")
    return subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        cwd=REPO, env=clean, capture_output=True, text=True, timeout=60,
    )


def test_it_refuses_production_with_the_development_secret_key(tmp_path):
    proc = _start_django(TRIAGE_ENV="production", TRIAGE_DEBUG="0", TRIAGE_VAR_DIR=str(tmp_path))
    assert proc.returncode != 0
    assert "TRIAGE_SECRET_KEY" in proc.stderr


def test_it_refuses_production_with_debug_on(tmp_path):
    proc = _start_django(
        TRIAGE_ENV="production", TRIAGE_DEBUG="1", TRIAGE_SECRET_KEY="x" * 50, TRIAGE_VAR_DIR=str(tmp_path)
    )
    assert proc.returncode != 0
    assert "TRIAGE_DEBUG" in proc.stderr


def test_it_starts_in_production_with_a_real_key(tmp_path):
    proc = _start_django(
        TRIAGE_ENV="production", TRIAGE_DEBUG="0", TRIAGE_SECRET_KEY="k" * 50, TRIAGE_VAR_DIR=str(tmp_path)
    )
    assert proc.returncode == 0, proc.stderr


def test_it_names_the_variable_with_a_bad_value(monkeypatch):
    monkeypatch.setenv("TRIAGE_UPLOAD_MAX_FILES", "lots")
    with pytest.raises(ImproperlyConfigured, match="TRIAGE_UPLOAD_MAX_FILES"):
        env_int("TRIAGE_UPLOAD_MAX_FILES", 10)
    monkeypatch.setenv("TRIAGE_DEBUG", "maybe")
    with pytest.raises(ImproperlyConfigured, match="TRIAGE_DEBUG"):
        env_bool("TRIAGE_DEBUG")
    monkeypatch.setenv("TRIAGE_UPLOAD_MAX_FILES", "0")
    with pytest.raises(ImproperlyConfigured, match=">= 1"):
        env_int("TRIAGE_UPLOAD_MAX_FILES", 10, minimum=1)


def test_it_reads_a_postgres_url_and_refuses_other_schemes():
    db = database_from_url("postgres://triage:p%40ss@db.internal:6543/incidents")
    assert (db["NAME"], db["USER"], db["PASSWORD"], db["HOST"], db["PORT"]) == (
        "incidents", "triage", "p@ss", "db.internal", "6543"
    )
    with pytest.raises(ImproperlyConfigured, match="postgres://"):
        database_from_url("mysql://root@localhost/triage")
