"""Page tests use the shared story fixtures of tests/conftest.py (alice_client, charlie_client, make_incident)."""
