"""Run one untrusted command inside bubblewrap, as a dedicated unprivileged uid, with hard limits.

    result = sandbox.run(["python", "/triage/runtime/load_check.py", ...], inputs={"data.json": path},
                         limits=SandboxLimits(wall_s=60))

Layers, outermost first:
  * rlimits set in the child before exec (address space, CPU seconds, file size, processes, core 0);
    they survive setpriv and bwrap. RLIMIT_NPROC counts per real uid, so every concurrent run takes
    its own uid from a small pool (a lock file per uid).
  * `setpriv` drops root: the run's uid/gid, no supplementary groups, no capabilities.
  * `bwrap --unshare-all --die-with-parent --new-session`: no network (a private loopback only), no
    view of host processes, read-only binds of the runtime, a size-limited tmpfs at /work created
    before the read-only input bind under it, /dev/urandom for torch, nothing of the host's /etc
    besides what Python needs, and an empty environment apart from the few variables set here.
  * a wall clock: the whole process group is killed, then every process still owned by the uid.

Files the command leaves in /work/out come back through a pipe as a size-capped tar stream (the
tmpfs disappears with the sandbox); nothing of the host is ever writable from inside.
"""
from __future__ import annotations

import fcntl
import io
import os
import resource
import shutil
import signal
import subprocess
import tarfile
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings

WORK = "/work"
RUNTIME_MOUNT = "/triage/runtime"  # repro/runtime: the scripts that run inside
RUNTIME_SOURCE = Path(__file__).resolve().parent / "runtime"
TAR_CAP_BYTES = 64 * 1024 * 1024


class SandboxUnavailable(RuntimeError):
    """bwrap, setpriv or the runtime venv is missing: an operator problem, never the user's."""


@dataclass(frozen=True)
class SandboxLimits:
    wall_s: float = 120.0
    cpu_s: int = 240
    address_space_mb: int = 16384
    file_size_mb: int = 128
    processes: int = 256
    workdir_mb: int = 512
    output_bytes: int = 4 * 1024 * 1024  # log kept from stdout+stderr (the tail wins)

    def as_dict(self) -> dict:
        return {"wall_s": self.wall_s, "cpu_s": self.cpu_s, "address_space_mb": self.address_space_mb,
                "file_size_mb": self.file_size_mb, "processes": self.processes, "workdir_mb": self.workdir_mb}


@dataclass
class SandboxResult:
    exit_status: int | None  # None when killed by a signal
    signal: int | None
    timed_out: bool
    duration_s: float
    peak_rss_mb: float  # the largest summed resident memory of the run's processes (sampled)
    peak_process_mb: float  # the largest single process's peak (kernel's high-water mark)
    log: str
    files: dict[str, bytes] = field(default_factory=dict)
    uid: int = 0
    peak_processes: int = 0
    peak_vm_mb: float = 0.0  # the largest single process's peak address space
    peak_threads: int = 0  # the most tasks (processes and their threads) alive at once: what RLIMIT_NPROC counts
    limit_hit: str | None = None  # wall_clock, cpu_time, file_size, memory, processes

    @property
    def ok(self) -> bool:
        return self.exit_status == 0 and not self.timed_out


def runtime_dir() -> Path:
    return Path(getattr(settings, "TRIAGE_SANDBOX_RUNTIME", "/opt/triage-sandbox"))


def check_available() -> None:
    missing = [name for name in ("bwrap", "setpriv") if shutil.which(name) is None]
    if missing:
        raise SandboxUnavailable(f"missing {', '.join(missing)} (Debian: apt-get install bubblewrap util-linux)")
    if os.geteuid() != 0:
        raise SandboxUnavailable("the repro worker must run as root: runs start as dedicated uids through setpriv")
    if not (runtime_dir() / "bin" / "python").exists():
        raise SandboxUnavailable(f"no sandbox runtime at {runtime_dir()} (run `make sandbox-runtime`)")


@contextmanager
def claim_uid():
    """One uid per concurrent run, so RLIMIT_NPROC and the final sweep only ever touch this run."""
    base = int(getattr(settings, "TRIAGE_SANDBOX_UID_BASE", 64100))
    slots = int(getattr(settings, "TRIAGE_SANDBOX_SLOTS", 8))
    lock_dir = Path(tempfile.gettempdir()) / "triage-sandbox-uids"
    lock_dir.mkdir(mode=0o700, exist_ok=True)
    deadline = time.monotonic() + 600
    while True:
        for slot in range(slots):
            handle = open(lock_dir / f"{base + slot}.lock", "w")  # noqa: SIM115 - held for the run
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.close()
                continue
            try:
                kill_uid(base + slot)  # leftovers of a crashed worker
                yield base + slot
            finally:
                kill_uid(base + slot)
                handle.close()
            return
        if time.monotonic() > deadline:
            raise SandboxUnavailable("every sandbox uid stayed busy for 10 minutes")
        time.sleep(0.5)


_SUBREAPER = False


def become_subreaper() -> None:
    """Orphans of a killed sandbox (its pid-namespace init) come back to this process to be reaped.

    Without it they go to the host's init, which may never reap them, and zombies count against the
    uid's process limit.
    """
    global _SUBREAPER
    if not _SUBREAPER:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
        _SUBREAPER = True


def reap(uid: int) -> None:
    for pid in processes_of(uid):
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass


def processes_of(uid: int) -> list[int]:
    pids = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            if entry.stat().st_uid == uid:
                pids.append(int(entry.name))
        except OSError:
            continue
    return pids


def kill_uid(uid: int) -> None:
    for _ in range(20):
        reap(uid)
        pids = processes_of(uid)
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.05)


def _status_kib(pid: int, keys: tuple[str, ...]) -> dict[str, int]:
    found = {}
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                name, _, value = line.partition(":")
                if name in keys:
                    found[name] = int(value.split()[0])
    except (OSError, ValueError, IndexError):
        pass
    return found


class MemoryWatch(threading.Thread):
    """Samples the uid's processes: peak summed RSS and the largest per-process high-water mark."""

    def __init__(self, uid: int, interval: float = 0.05):
        super().__init__(daemon=True)
        self.uid, self.interval = uid, interval
        self.peak_total_kib = 0
        self.peak_process_kib = 0
        self.peak_processes = 0
        self.peak_threads = 0
        self.peak_vm_kib = 0
        self.stop_event = threading.Event()

    def run(self) -> None:
        while not self.stop_event.is_set():
            self.sample()
            self.stop_event.wait(self.interval)

    def sample(self) -> None:
        total = threads = 0
        pids = processes_of(self.uid)
        self.peak_processes = max(self.peak_processes, len(pids))
        for pid in pids:
            values = _status_kib(pid, ("VmRSS", "VmHWM", "VmPeak", "Threads"))
            self.peak_vm_kib = max(self.peak_vm_kib, values.get("VmPeak", 0))
            threads += values.get("Threads", 1)
            total += values.get("VmRSS", 0)
            self.peak_process_kib = max(self.peak_process_kib, values.get("VmHWM", 0))
        self.peak_total_kib = max(self.peak_total_kib, total)
        self.peak_threads = max(self.peak_threads, threads)

    def stop(self) -> None:
        self.stop_event.set()
        self.join(timeout=2)


class TailBuffer:
    """Keeps the head and the tail of a stream within a byte budget; notifies a listener per chunk."""

    def __init__(self, limit: int, on_chunk=None):
        self.limit, self.on_chunk = limit, on_chunk
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0

    def feed(self, chunk: bytes) -> None:
        room = self.limit // 4 - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        self.tail += chunk
        excess = len(self.tail) - (self.limit - self.limit // 4)
        if excess > 0:
            del self.tail[:excess]
            self.dropped += excess
        if self.on_chunk is not None:
            self.on_chunk(self.text())

    def text(self) -> str:
        middle = f"\n[... {self.dropped} bytes of output left out ...]\n".encode() if self.dropped else b""
        return (bytes(self.head) + middle + bytes(self.tail)).decode("utf-8", errors="replace")


HOSTS = "127.0.0.1 localhost repro\n::1 localhost ip6-localhost\n"
PASSWD = "repro:x:{uid}:{uid}:repro:/work:/bin/sh\n"


def bwrap_argv(workdir_bytes: int, inputs_dir: Path | None, runtime: Path, etc_dir: Path,
               binds: dict[str, Path] | None = None) -> list[str]:
    argv = ["bwrap", "--unshare-all", "--die-with-parent", "--new-session", "--clearenv",
            "--hostname", "repro",
            "--ro-bind", "/usr", "/usr"]
    for name in ("lib", "lib64", "bin", "sbin"):
        target = Path("/") / name
        if target.is_symlink():
            argv += ["--symlink", os.readlink(target), f"/{name}"]
        elif target.is_dir():
            argv += ["--ro-bind", str(target), f"/{name}"]
    # Python and its libraries read a handful of /etc files (locale, ld cache, passwd for getpwuid).
    for name in ("ld.so.cache", "localtime", "nsswitch.conf"):
        if (Path("/etc") / name).exists():
            argv += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
    # its own name resolution (gloo looks the hostname up: without it each rank waits on DNS)
    for name in ("hosts", "passwd"):
        argv += ["--ro-bind", str(etc_dir / name), f"/etc/{name}"]
    argv += ["--ro-bind", str(runtime), str(runtime),
             "--ro-bind", str(RUNTIME_SOURCE), RUNTIME_MOUNT,
             "--proc", "/proc", "--dev", "/dev",
             "--tmpfs", "/tmp",
             # the size-limited work dir first, then the read-only input bind inside it
             "--size", str(workdir_bytes), "--tmpfs", WORK,
             "--dir", f"{WORK}/out", "--dir", f"{WORK}/tmp"]
    if inputs_dir is not None:
        argv += ["--ro-bind", str(inputs_dir), f"{WORK}/in"]
    for target, source in (binds or {}).items():
        if not target.startswith(f"{WORK}/") or ".." in target or target.startswith((f"{WORK}/in/", f"{WORK}/out/")):
            raise ValueError(f"extra binds go under {WORK}: {target}")
        argv += ["--ro-bind", str(source), target]
    argv += ["--chdir", WORK]
    return argv


def sandbox_env(runtime: Path, extra: dict[str, str] | None) -> list[str]:
    env = {
        "PATH": f"{runtime}/bin:/usr/bin:/bin", "HOME": WORK, "TMPDIR": f"{WORK}/tmp", "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1", "PYTHONPATH": RUNTIME_MOUNT,
        "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_HOME": f"{WORK}/hf",
        "TOKENIZERS_PARALLELISM": "false", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
        "WANDB_DISABLED": "true", "WANDB_MODE": "disabled", "DISABLE_MLFLOW_INTEGRATION": "TRUE",
        "HF_HUB_DISABLE_TELEMETRY": "1", "TORCHINDUCTOR_CACHE_DIR": f"{WORK}/tmp/inductor",
        "MASTER_ADDR": "127.0.0.1", "GLOO_SOCKET_IFNAME": "lo",
    }
    env.update(extra or {})
    argv = []
    for key, value in env.items():
        argv += ["--setenv", key, value]
    return argv


def _limits_preexec(limits: SandboxLimits):
    def apply() -> None:
        mib = 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limits.address_space_mb * mib,) * 2)
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s + 2))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_size_mb * mib,) * 2)
        resource.setrlimit(resource.RLIMIT_NPROC, (limits.processes,) * 2)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))
    return apply


def _read_capped(stream, cap: int, sink: bytearray) -> None:
    while True:
        chunk = stream.read(65536)
        if not chunk:
            return
        if len(sink) < cap:
            sink += chunk[: cap - len(sink)]


def _untar(blob: bytes, max_files: int = 64) -> dict[str, bytes]:
    """Regular files only, flattened names under out/; links, devices and odd names are dropped."""
    files: dict[str, bytes] = {}
    if not blob:
        return files
    try:
        with tarfile.open(fileobj=io.BytesIO(blob), mode="r:") as archive:
            for member in archive:
                if not member.isreg() or len(files) >= max_files:
                    continue
                name = member.name.lstrip("./")
                if not name or ".." in Path(name).parts or name.startswith("/"):
                    continue
                extracted = archive.extractfile(member)
                if extracted is not None:
                    files[name] = extracted.read()
    except (tarfile.TarError, EOFError):
        pass
    return files


# What a process prints when an allocation fails; "failed to map segment" is a shared library that cannot be
# mapped (a lazy import under an address-space cap).
MEMORY_MARKERS = ("MemoryError", "can't allocate memory", "Cannot allocate memory", "std::bad_alloc", "out of memory",
                  "failed to map segment from shared object")
FORK_MARKERS = ("fork: retry", "Cannot fork")
THREAD_MARKERS = ("Resource temporarily unavailable", "can't start new thread", "Thread creation failed")


def classify_limit(result: SandboxResult, limits: SandboxLimits) -> str | None:
    if result.timed_out:
        return "wall_clock"
    if result.signal in (signal.SIGXCPU,) or (result.signal == signal.SIGKILL and _cpu_spent_out(result, limits)):
        return "cpu_time"
    tail = result.log[-20000:]
    if result.signal == signal.SIGXFSZ or "File too large" in tail:
        return "file_size"
    if "No space left on device" in tail:
        return "work_dir_size"
    if any(marker in tail for marker in MEMORY_MARKERS):
        return "memory"
    if any(marker in tail for marker in FORK_MARKERS):
        return "processes"
    if any(marker in tail for marker in THREAD_MARKERS):
        # A thread's stack is mapped memory, so under an address-space cap pthread_create fails with the same
        # EAGAIN as under the task limit: it is the task limit only when the run came near it (tasks sampled).
        return "processes" if result.peak_threads >= limits.processes // 2 else "memory"
    return None


def _cpu_spent_out(result: SandboxResult, limits: SandboxLimits) -> bool:
    return result.duration_s >= limits.cpu_s * 0.9


def run(argv: list[str], *, inputs: dict[str, Path | str | bytes] | None = None,
        limits: SandboxLimits | None = None, env: dict[str, str] | None = None,
        on_output=None, binds: dict[str, Path] | None = None,
        aliases: dict[str, str] | None = None) -> SandboxResult:
    """Run argv inside the sandbox; inputs are placed read-only under /work/in by name, binds
    (read-only, host folders the project made, such as the cached tiny model) under /work; aliases
    bind an input once more at a relative path under /work (where a script looks by default)."""
    check_available()
    limits = limits or SandboxLimits()
    runtime = runtime_dir()
    staging = Path(tempfile.mkdtemp(prefix="triage-repro-in-"))
    try:
        inputs_dir = None
        if inputs:
            inputs_dir = staging / "in"
            inputs_dir.mkdir()
            for name, source in inputs.items():
                target = inputs_dir / Path(name).name
                if isinstance(source, bytes):
                    target.write_bytes(source)
                else:
                    shutil.copyfile(source, target)
                target.chmod(0o644)
            inputs_dir.chmod(0o755)
        binds = dict(binds or {})
        for relative, name in (aliases or {}).items():
            if inputs_dir is not None and (inputs_dir / name).exists():
                binds[f"{WORK}/{relative}"] = inputs_dir / Path(name).name
        with claim_uid() as uid:
            etc_dir = staging / "etc"
            etc_dir.mkdir()
            (etc_dir / "hosts").write_text(HOSTS)
            (etc_dir / "passwd").write_text(PASSWD.format(uid=uid))
            for path in (staging, etc_dir, etc_dir / "hosts", etc_dir / "passwd"):
                path.chmod(0o755 if path.is_dir() else 0o644)
            return _run_as(uid, argv, inputs_dir, limits, runtime, env, on_output, etc_dir, binds)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _run_as(uid, argv, inputs_dir, limits, runtime, env, on_output, etc_dir, binds) -> SandboxResult:
    become_subreaper()
    out_read, out_write = os.pipe()
    tar_read, tar_write = os.pipe()
    # after the command, /work/out goes back as a tar stream on the inherited pipe's fd
    collect = (f'"$@" {tar_write}>&-; rc=$?; cd /work/out 2>/dev/null && tar -cf - . >&{tar_write} 2>/dev/null; '
               f'exec {tar_write}>&-; exit $rc')
    command = (["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all",
                "--bounding-set=-all", "--no-new-privs", "--"]
               + bwrap_argv(limits.workdir_mb * 1024 * 1024, inputs_dir, runtime, etc_dir, binds)
               + sandbox_env(runtime, env)
               + ["--", "/bin/bash", "-c", collect, "sh", *argv])
    buffer = TailBuffer(limits.output_bytes, on_output)
    started = time.monotonic()
    process = subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=out_write, stderr=out_write, env={},
        pass_fds=(tar_write,), preexec_fn=_limits_preexec(limits), start_new_session=True, close_fds=True,
        # fd 3 inside: the tar stream of /work/out
    )
    os.close(out_write)
    os.close(tar_write)
    watch = MemoryWatch(uid)
    watch.start()
    tar_bytes = bytearray()
    tar_thread = threading.Thread(target=_read_capped, args=(os.fdopen(tar_read, "rb"), TAR_CAP_BYTES, tar_bytes),
                                  daemon=True)
    tar_thread.start()
    timed_out = threading.Event()

    def expire():
        timed_out.set()
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except OSError:
            pass
        kill_uid(uid)

    timer = threading.Timer(limits.wall_s, expire)
    timer.start()
    with os.fdopen(out_read, "rb") as stream:
        while True:
            chunk = stream.read1(65536)
            if not chunk:
                break
            buffer.feed(chunk)
    process.wait()  # (not wait4's ru_maxrss: the forked child's copy of this worker's memory would count)
    timer.cancel()
    timer.join()  # its sweep must end before the uid can go to the next run
    duration = time.monotonic() - started
    kill_uid(uid)
    tar_thread.join(timeout=5)
    watch.stop()
    code = process.returncode
    sig = -code if code < 0 else (code - 128 if code > 128 and code - 128 < 65 else None)
    result = SandboxResult(
        exit_status=code if code >= 0 else None, signal=sig, timed_out=timed_out.is_set(),
        duration_s=round(duration, 3), peak_rss_mb=round(watch.peak_total_kib / 1024, 1),
        peak_process_mb=round(watch.peak_process_kib / 1024, 1), log=buffer.text(),
        files=_untar(bytes(tar_bytes)), uid=uid, peak_processes=watch.peak_processes, peak_threads=watch.peak_threads,
        peak_vm_mb=round(watch.peak_vm_kib / 1024, 1),
    )
    result.limit_hit = classify_limit(result, limits)
    return result
