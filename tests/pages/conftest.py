import pytest


@pytest.fixture(autouse=True)
def private_media(settings, tmp_path):
    """Artifacts written by page tests land in a throwaway folder."""
    settings.MEDIA_ROOT = tmp_path / "media"


@pytest.fixture
def alice_client(client, alice):
    client.force_login(alice)
    return client


@pytest.fixture
def charlie_client(client, charlie):
    client.force_login(charlie)
    return client
