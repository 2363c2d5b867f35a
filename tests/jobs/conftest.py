"""Uploads and tasks write files into the test's own media folder (tests/conftest.py), checked for leftovers."""
import pytest


@pytest.fixture
def stored_files(media_root):
    """The files currently in storage (a rejected upload must leave none)."""
    return lambda: sorted(path for path in media_root.rglob("*") if path.is_file())
