"""Uploads and tasks write files: each test gets its own media folder, checked for leftovers."""
import pytest


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    # Story users are created in every test; the real hasher costs about a second each.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    root = tmp_path / "media"
    root.mkdir()
    settings.MEDIA_ROOT = root
    return root


@pytest.fixture
def stored_files(media_root):
    """The files currently in storage (a rejected upload must leave none)."""
    return lambda: sorted(path for path in media_root.rglob("*") if path.is_file())


@pytest.fixture
def alice_client(client, alice):
    client.force_login(alice)
    return client
