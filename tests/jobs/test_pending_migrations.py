"""Guard rail: every model change has its migration."""
import pytest
from django.core.management import call_command


@pytest.mark.django_db
def test_it_has_no_pending_migrations():
    try:
        call_command("makemigrations", "--check", "--dry-run", verbosity=0)
    except SystemExit as exit_:
        pytest.fail(f"models changed without a migration (makemigrations --check exited {exit_.code})")
