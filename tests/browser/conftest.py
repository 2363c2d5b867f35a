"""Playwright (sync API) driving Debian's Chromium against pytest-django's live_server.

These tests FAIL when Chromium is missing: install it with `apt-get install -y chromium`
or point TRIAGE_TEST_CHROMIUM at a binary.
"""
import os
from pathlib import Path

import pytest

# Playwright's sync API runs an event loop in the test thread; the ORM calls the tests make
# there (fixtures, playing the worker) are still plain synchronous code.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = os.environ.get("TRIAGE_TEST_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
from tests.factories import PASSWORD  # noqa: E402  (the story users' password)


@pytest.fixture(scope="session")
def chromium_browser():
    if not Path(CHROMIUM).exists():
        pytest.fail(f"Chromium not found at {CHROMIUM}: apt-get install -y chromium, or set TRIAGE_TEST_CHROMIUM")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--no-first-run"],
        )
        yield browser
        browser.close()


@pytest.fixture
def browser_page(chromium_browser, live_server):
    context = chromium_browser.new_context(viewport={"width": 1280, "height": 900}, base_url=live_server.url)
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    page = context.new_page()
    page.set_default_timeout(20_000)
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.js_errors = errors
    yield page
    context.close()


@pytest.fixture
def screenshots():
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


def log_in(page, username):
    page.goto("/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", PASSWORD)
    page.click("form button[type=submit]")
    page.wait_for_url(lambda url: "/accounts/login/" not in url)
