"""The committed OpenAPI document is what the code generates, and it validates."""
from pathlib import Path

import pytest
import yaml
from django.core.management import call_command
from openapi_spec_validator import validate

SCHEMA = Path(__file__).resolve().parents[2] / "docs" / "openapi.yaml"


def test_it_keeps_docs_openapi_yaml_in_sync(tmp_path):
    generated = tmp_path / "openapi.yaml"
    call_command("spectacular", "--file", str(generated), "--validate", "--fail-on-warn")
    assert SCHEMA.exists(), "run: python manage.py spectacular --file docs/openapi.yaml --validate"
    assert yaml.safe_load(SCHEMA.read_text()) == yaml.safe_load(generated.read_text()), (
        "docs/openapi.yaml is stale: run python manage.py spectacular --file docs/openapi.yaml --validate"
    )


def test_it_validates_as_openapi_3():
    validate(yaml.safe_load(SCHEMA.read_text()))


@pytest.mark.django_db
def test_it_serves_the_schema_and_swagger_ui(client, alice):
    assert client.get("/api/schema/").status_code == 200
    page = client.get("/api/docs/")
    assert page.status_code == 200
    assert b"cdn.jsdelivr" not in page.content and b"unpkg.com" not in page.content


@pytest.mark.skipif("drf_spectacular_sidecar" not in __import__("django.conf").conf.settings.INSTALLED_APPS,
                    reason="add 'drf_spectacular_sidecar' to INSTALLED_APPS to serve Swagger UI without a CDN")
def test_it_finds_the_swagger_ui_assets_locally():
    from django.contrib.staticfiles import finders

    assert finders.find("drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js")
