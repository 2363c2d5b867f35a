"""make screenshots: every page at 1440x900 and 390x844 into docs/screenshots/ (palette PNGs).

Builds a throw-away instance (SQLite and media under a temporary TRIAGE_VAR_DIR): the demo
incidents, a 64-rank `torchrun --log-dir` job, one incident still queued; serves it with
`manage.py runserver`, and drives Debian's Chromium through Playwright. Nothing of the
developer's own var/ is touched.
"""
from __future__ import annotations

import io
import os
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "docs" / "screenshots"
CHROMIUM = os.environ.get("TRIAGE_TEST_CHROMIUM", "/usr/bin/chromium")
PASSWORD = "screenshot-password-1"
SIZES = {"desktop": (1440, 900), "phone": (390, 844)}
# The elements (outside charts) that stick out past the viewport, widest first.
WIDEST = """() => {
  const limit = document.documentElement.clientWidth;
  if (document.documentElement.scrollWidth <= limit) return [];
  return [...document.querySelectorAll('body *')]
    .filter(e => e.getBoundingClientRect().right > limit + 1 && !(e.closest('svg') && e.tagName.toLowerCase() !== 'svg'))
    .sort((a, b) => b.getBoundingClientRect().right - a.getBoundingClientRect().right).slice(0, 3)
    .map(e => e.tagName.toLowerCase() + (e.className ? '.' + String(e.className).split(' ')[0] : '')
         + ' in #' + ((e.closest('[id]') || {}).id || '') + ' to ' + Math.round(e.getBoundingClientRect().right));
}"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def build_instance(var_dir: Path) -> dict:
    """Run in a child process: migrate, load the demo, add the extra incidents; return their ids."""
    os.environ["TRIAGE_VAR_DIR"] = str(var_dir)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    sys.path.insert(0, str(REPO))
    import django

    django.setup()
    from django.core.files import File
    from django.core.management import call_command

    from jobs.models import Incident, Team
    from jobs.tasks import diagnose_incident
    from jobs.uploads import create_incident
    from tests.fixtures.logtree import COMMAND, write_logdir

    call_command("migrate", verbosity=0)
    call_command("load_demo", password=PASSWORD, stdout=io.StringIO())
    call_command("create_api_key", "Demo", name="slurm-epilog on the login node", stdout=io.StringIO())
    team = Team.objects.get(name="Demo")
    user = team.memberships.first().user
    tree = write_logdir(var_dir / "tree", world=64, failing=3, straggler=41)
    small = write_logdir(var_dir / "sft-run", world=4, failing=3, nul_in=2)
    archive = var_dir / "run-logs.tar"
    with tarfile.open(archive, "w") as tar:
        tar.add(tree / "run-logs", arcname="run-logs")
    with open(archive, "rb") as handle:
        big = create_incident(team=team, user=user, logs=[File(handle, name="run-logs.tar")],
                              command=COMMAND.format(world=64),
                              meta={"title": "7B SFT on 64 GPUs: rank 3 out of memory, 63 ranks timed out",
                                    "job_id": "sft-0504", "cluster": "h100-pod-2"}, enqueue=False)
    diagnose_incident(big.pk)
    with open(tree / "run-logs/attempt_0/0/stderr.log", "rb") as handle:
        queued = create_incident(team=team, user=user, logs=[File(handle, name="stderr.log")],
                                 meta={"title": "Waiting for a worker"}, enqueue=False)
    ids = {incident.idempotency_key or "": incident.pk for incident in Incident.objects.filter(team=team)}
    artifact = big.artifacts.filter(original_name__endswith="attempt_0/3/stderr.log").first()
    return {"demos": ids, "tree": str(small), "big": big.pk, "queued": queued.pk, "big_artifact": artifact.pk if artifact else None}


def pages(ids: dict) -> list[tuple[str, str]]:
    demos = ids["demos"]
    out = [
        ("incidents", "/"),
        ("upload", "/incidents/new/"),
        ("incident-64-ranks-oom", f"/incidents/{ids['big']}/"),
        ("incident-keyerror", f"/incidents/{demos['demo-keyerror-2rank']}/"),
        ("incident-cuda-oom", f"/incidents/{demos['demo-cuda-oom']}/"),
        ("incident-nccl-timeout", f"/incidents/{demos['demo-nccl-timeout']}/"),
        ("incident-host-oom", f"/incidents/{demos['demo-sigkill-host-oom']}/"),
        ("incident-queued", f"/incidents/{ids['queued']}/"),
        ("knowledge", "/knowledge/"),
        ("api-keys", "/settings/api-keys/"),
    ]
    if ids["big_artifact"]:
        out.append(("log-viewer", f"/incidents/{ids['big']}/artifacts/{ids['big_artifact']}/?line=15#L15"))
    return out


def save_small(png: bytes, path: Path) -> int:
    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("RGB").quantize(colors=128, method=Image.Quantize.MEDIANCUT)
    image.save(path, optimize=True)
    return path.stat().st_size


def shoot(base: str, ids: dict) -> None:
    from playwright.sync_api import sync_playwright

    OUT.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                             args=["--no-sandbox", "--disable-gpu"])
        for size_name, (width, height) in SIZES.items():
            for scheme in ("light", "dark") if size_name == "desktop" else ("light",):
                context = browser.new_context(viewport={"width": width, "height": height}, base_url=base,
                                              color_scheme=scheme)
                page = context.new_page()
                page.goto("/accounts/login/")
                if scheme == "light":
                    write(page, f"login-{size_name}.png")
                page.fill("input[name=username]", "demo")
                page.fill("input[name=password]", PASSWORD)
                page.click("form button[type=submit]")
                page.wait_for_url(lambda url: "/accounts/login/" not in url)
                shots = pages(ids) if scheme == "light" else [p for p in pages(ids) if p[0] in (
                    "incidents", "incident-64-ranks-oom", "upload")]
                for name, url in shots:
                    page.goto(url)
                    if page.locator("#timeline-chart").count():
                        page.wait_for_selector("#timeline-chart .scatterlayer .trace", state="attached")
                    if page.locator("#memory-chart").count():
                        page.wait_for_selector("#memory-chart .scatterlayer .trace", state="attached")
                    page.wait_for_timeout(300)
                    wide = page.evaluate(WIDEST)
                    if wide:
                        print(f"  ! {url} scrolls sideways at {width} px: {wide}")
                    suffix = f"{size_name}-dark" if scheme == "dark" else size_name
                    write(page, f"{name}-{suffix}.png",
                          page.evaluate("() => [document.documentElement.scrollHeight,"
                                        " document.documentElement.scrollWidth]"))
                    if name == "upload" and scheme == "light":  # the same page with a log-dir folder picked
                        page.set_input_files("#folder-input", str(ids["tree"]))
                        page.wait_for_selector("#upload-file-list li[data-path$='attempt_0/3/stderr.log'][data-sniffed]")
                        page.locator("#file-table").scroll_into_view_if_needed()
                        write(page, f"upload-folder-picked-{suffix}.png")
                    if name == "incident-64-ranks-oom":  # the timeline is below the first screen
                        section = page.locator("section[aria-labelledby=timeline-h]")
                        write_element(section, f"timeline-64-ranks-{suffix}.png")
                context.close()
        browser.close()


def write(page, name: str, extent=None) -> None:
    size = save_small(page.screenshot(), OUT / name)
    whole = f"   page {extent[0]:>5} px tall, {extent[1]:>4} px wide" if extent else ""
    print(f"  {name:<44} {size // 1024:>4} KB{whole}")


def write_element(locator, name: str) -> None:
    size = save_small(locator.screenshot(), OUT / name)
    print(f"  {name:<44} {size // 1024:>4} KB")


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--build":
        import json

        print(json.dumps(build_instance(Path(sys.argv[2]))))
        return 0
    with tempfile.TemporaryDirectory(prefix="triage-screens-") as tmp:
        var_dir = Path(tmp)
        env = {**os.environ, "TRIAGE_VAR_DIR": str(var_dir), "DJANGO_SETTINGS_MODULE": "config.settings",
               "TRIAGE_DATABASE_URL": "", "TRIAGE_REDIS_URL": ""}
        built = subprocess.run([sys.executable, __file__, "--build", str(var_dir)], env=env, cwd=REPO,
                               capture_output=True, text=True, check=False)
        if built.returncode:
            print(built.stdout, built.stderr, file=sys.stderr)
            return built.returncode
        import json

        ids = json.loads(built.stdout.strip().splitlines()[-1])
        port = free_port()
        server = subprocess.Popen([sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"],
                                  env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            base = f"http://127.0.0.1:{port}"
            for _ in range(100):
                try:
                    urllib.request.urlopen(base + "/accounts/login/", timeout=1)
                    break
                except OSError:
                    time.sleep(0.2)
            print(f"screenshots into {OUT.relative_to(REPO)}/")
            shoot(base, ids)
        finally:
            server.terminate()
            server.wait(timeout=10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
