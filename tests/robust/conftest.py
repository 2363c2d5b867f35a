"""Robustness stories (issue 15): each test gets its own media and var folders, checked for leftovers."""
import pytest


@pytest.fixture(autouse=True)
def private_folders(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.MEDIA_ROOT.mkdir(exist_ok=True)  # the root conftest may have made it already
    settings.VAR_DIR = tmp_path / "var"
    settings.VAR_DIR.mkdir()
    settings.FILE_UPLOAD_TEMP_DIR = str(tmp_path / "var" / "upload-tmp")
    (tmp_path / "var" / "upload-tmp").mkdir()
    return tmp_path


@pytest.fixture
def stored_files(settings):
    return lambda: sorted(path for path in settings.MEDIA_ROOT.rglob("*") if path.is_file())


@pytest.fixture
def alice_client(client, alice):
    client.force_login(alice)
    return client
