"""Real escape attempts from inside the sandbox; each must be contained and reported as such."""
import os
import socket
import threading
import time
from pathlib import Path

import pytest

from repro import sandbox
from repro.sandbox import SandboxLimits

pytestmark = pytest.mark.usefixtures("sandbox_runtime")


def no_process_left(uid: int) -> bool:
    """The kernel tears a killed pid namespace down asynchronously: allow it a moment."""
    deadline = time.monotonic() + 3
    while sandbox.processes_of(uid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def py(code: str, **limits) -> sandbox.SandboxResult:
    return sandbox.run(["python", "-c", code], limits=SandboxLimits(**{"wall_s": 30, **limits}))


def test_a_connection_to_a_server_on_the_host_loopback_is_refused():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(5)
    server.settimeout(0.2)
    port = server.getsockname()[1]
    accepted = []

    def accept():
        deadline = time.monotonic() + 8
        while time.monotonic() < deadline:
            try:
                accepted.append(server.accept())
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept)
    thread.start()
    result = py(
        "import socket\n"
        f"for host in ('127.0.0.1', 'localhost', '10.0.2.2'):\n"
        "    try:\n"
        f"        socket.create_connection((host, {port}), timeout=2); print('CONNECTED', host)\n"
        "    except OSError as exc: print('BLOCKED', host, type(exc).__name__)\n"
    )
    thread.join()
    server.close()
    assert accepted == []
    assert "CONNECTED" not in result.log
    assert result.log.count("BLOCKED") == 3, result.log


def test_writes_outside_the_work_dir_fail_and_leave_the_host_untouched(tmp_path):
    targets = ["/usr/escape.txt", "/opt/triage-sandbox/escape.txt", "/triage/runtime/escape.txt",
               "/work/in/escape.txt", "/etc/escape.txt", str(tmp_path / "escape.txt"), "/root/escape.txt"]
    code = (
        "import os\n"
        f"for path in {targets!r}:\n"
        "    try:\n"
        "        os.makedirs(os.path.dirname(path), exist_ok=True)\n"
        "        open(path, 'w').write('x'); print('WROTE', path)\n"
        "    except OSError as exc: print('DENIED', path, exc.strerror)\n"
        "open('/work/out/inside.txt', 'w').write('fine')\n"
    )
    result = sandbox.run(["python", "-c", code], inputs={"sample.json": b"[]"}, limits=SandboxLimits(wall_s=30))
    host_visible = [t for t in targets if Path(t).exists()]
    assert host_visible == []
    assert result.files == {"inside.txt": b"fine"}  # the work dir itself is writable
    # paths that happen to land on the private tmpfs inside are not host writes; the rest are denied
    for path in ("/usr/escape.txt", "/opt/triage-sandbox/escape.txt", "/triage/runtime/escape.txt",
                 "/work/in/escape.txt"):
        assert f"DENIED {path}" in result.log, result.log


def test_files_outside_the_binds_and_host_secrets_cannot_be_read(tmp_path, monkeypatch):
    secret = Path("/var/tmp") / f"triage-secret-{os.getpid()}.txt"
    secret.write_text("hunter2-host-secret")
    monkeypatch.setenv("TRIAGE_SECRET_KEY", "hunter3-env-secret")
    try:
        result = py(
            "import os\n"
            f"for path in ({str(secret)!r}, '/etc/shadow', '/etc/passwd', '/root/.bashrc', '/proc/1/environ'):\n"
            "    try: print('READ', path, open(path).read()[:40])\n"
            "    except OSError as exc: print('DENIED', path, exc.strerror)\n"
            "print('ENV', sorted(os.environ))\n"
        )
    finally:
        secret.unlink()
    assert "hunter2" not in result.log and "hunter3" not in result.log
    assert "TRIAGE_SECRET_KEY" not in result.log
    assert f"DENIED {secret}" in result.log and "DENIED /etc/shadow" in result.log


@pytest.mark.slow
def test_a_fork_bomb_stops_at_the_process_limit_and_is_killed_by_the_wall_clock():
    result = sandbox.run(
        ["/bin/sh", "-c", "bomb() { bomb | bomb & }; bomb; sleep 30"],
        limits=SandboxLimits(wall_s=4, processes=48),
    )
    # either the bomb starves at the limit and dies out, or it keeps the limit full until the wall clock
    assert result.limit_hit in ("processes", "wall_clock"), result.log[-500:]
    assert result.timed_out or "Cannot fork" in result.log
    assert result.peak_processes <= 48 + 2  # the limit, plus setpriv/bwrap's own
    assert no_process_left(result.uid)


def test_a_memory_bomb_hits_the_address_space_limit():
    result = py("chunks = []\nwhile True: chunks.append(bytearray(16 * 1024 * 1024))",
                address_space_mb=400)
    assert result.exit_status not in (0, None) and not result.timed_out
    assert result.limit_hit == "memory", result.log
    assert result.peak_rss_mb < 420


def test_a_cpu_spinner_is_stopped_by_the_cpu_time_limit():
    started = time.monotonic()
    result = py("while True: pass", cpu_s=1, wall_s=30)
    assert not result.timed_out and time.monotonic() - started < 15
    assert result.limit_hit == "cpu_time", (result.signal, result.exit_status, result.log)


def test_a_huge_file_is_cut_at_the_file_size_limit_and_the_work_dir_is_bounded():
    big = py("f = open('/work/out/big', 'wb')\nwhile True: f.write(b'x' * 1048576)", file_size_mb=4)
    assert big.limit_hit == "file_size", big.log
    assert len(big.files.get("big", b"")) <= 4 * 1024 * 1024
    many = py("i = 0\nwhile True:\n    open(f'/work/tmp/f{i}', 'wb').write(b'x' * 2097152); i += 1",
              file_size_mb=4, workdir_mb=16)
    assert many.limit_hit == "work_dir_size", many.log


def test_a_sleeper_past_the_wall_clock_is_killed_with_its_process_group():
    started = time.monotonic()
    result = sandbox.run(["/bin/sh", "-c", "sleep 300 & sleep 300"], limits=SandboxLimits(wall_s=1.5))
    assert result.timed_out and result.limit_hit == "wall_clock"
    assert time.monotonic() - started < 8
    assert no_process_left(result.uid)


def test_proc_sys_writes_are_refused_and_the_host_value_is_unchanged():
    before = Path("/proc/sys/kernel/hostname").read_text()
    result = py(
        "for path in ('/proc/sys/kernel/hostname', '/proc/sys/vm/drop_caches', '/proc/sysrq-trigger'):\n"
        "    try: open(path, 'w').write('pwned\\n'); print('WROTE', path)\n"
        "    except OSError as exc: print('DENIED', path, exc.strerror)\n"
    )
    assert Path("/proc/sys/kernel/hostname").read_text() == before
    assert "WROTE" not in result.log and result.log.count("DENIED") == 3, result.log


def test_the_run_is_an_unprivileged_uid_without_capabilities():
    result = py("import os\nprint('IDS', os.getuid(), os.geteuid(), os.getgroups())\n"
                "print(open('/proc/self/status').read())")
    assert f"IDS {result.uid} {result.uid} []" in result.log.replace(f"[{result.uid}]", "[]")
    assert result.uid != 0
    assert "CapEff:\t0000000000000000" in result.log
    assert "NoNewPrivs:\t1" in result.log


def test_a_thread_that_cannot_map_its_stack_under_the_address_space_cap_is_a_memory_stop():
    # pthread_create answers EAGAIN both at the task limit and when the stack cannot be mapped: far from the
    # task limit, the cap on the address space is what stopped the run
    result = py("import threading, time\nthreading.stack_size(256 * 1024 * 1024)\n"
                "threads = [threading.Thread(target=time.sleep, args=(2,)) for _ in range(8)]\n"
                "[t.start() for t in threads]", address_space_mb=700)
    assert "can't start new thread" in result.log, result.log
    assert result.peak_threads < 64 and result.limit_hit == "memory", (result.peak_threads, result.limit_hit)


def _finished(log: str, *, threads: int, processes: int = 256) -> str | None:
    done = sandbox.SandboxResult(exit_status=1, signal=None, timed_out=False, duration_s=1.0, peak_rss_mb=1.0,
                                 peak_process_mb=1.0, log=log, peak_threads=threads)
    return sandbox.classify_limit(done, SandboxLimits(processes=processes))


def test_which_limit_a_failed_run_hit_is_read_from_its_log_and_its_task_count():
    thread_refused = "RuntimeError: can't start new thread"
    assert _finished(thread_refused, threads=12) == "memory"
    assert _finished(thread_refused, threads=250) == "processes"
    assert _finished("sh: fork: retry: Resource temporarily unavailable", threads=3) == "processes"
    assert _finished("ImportError: libgomp.so.1: failed to map segment from shared object", threads=2) == "memory"
    assert _finished("ValueError: bad value", threads=2) is None
