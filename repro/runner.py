"""Drive the repro runs of one incident: plan, reproduce, check the fix, record everything.

    reproduce(incident_pk)   called by repro.tasks.run_repro on the `repro` queue

Each run is a ReproRun row, updated while it goes (status, log tail), its full log stored as an
artifact. A fix is `verified` only by a run of its corrected command (or converted data) that passed;
what cannot happen on a CPU sandbox is recorded as not reproducible here, with the reason.
"""
from __future__ import annotations

import logging
import re
import shutil
import socket
import tempfile
import time
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.core.files.base import ContentFile
from django.db import transaction
from django.utils import timezone

from jobs.models import Artifact, Diagnosis, Incident
from repro import datacheck, launchcmd, sandbox, tinymodels, verdicts
from repro.models import ReproRun
from triage.text import mask_secrets

logger = logging.getLogger(__name__)

DATA_CATEGORIES = {"data_schema", "data_corrupt", "data_pipeline"}
LAUNCH_CATEGORIES = DATA_CATEGORIES | {"config_invalid", "version_mismatch", "code_bug", "model_load", "numerical"}
MEMORY_CATEGORIES = {"gpu_oom", "host_oom"}
MEMORY_FIX_KINDS = ("reduce_batch_size", "reduce_seq_len", "enable_gradient_checkpointing")
# Memory checks run a wider tiny model: at hidden 64 a batch of 8 x 512 tokens moves the peak by ~50 MiB
# out of ~2.4 GiB of address space, under the noise of allocator arenas; at this width it moves it by hundreds.
MEMORY_HIDDEN = 512
DATA_FIX_KINDS = ("convert_data_format", "fix_data_file")
NOT_HERE = {
    "nccl_timeout": "a collective timeout needs the real interconnect and a rank that stalls on it; a CPU "
                    "sandbox with gloo cannot show why the job's collective hung",
    "nccl_error": "NCCL errors come from GPUs and their links; the sandbox has neither",
    "hardware": "hardware faults (ECC, Xid, a GPU off the bus) cannot be reproduced in software",
    "cuda_error": "CUDA runtime errors need a GPU and its driver",
    "rendezvous": "the rendezvous failed on the job's own hosts and ports; the sandbox has its own private "
                  "network, so the same ports and hosts do not exist there",
    "dataloader_worker": "worker deaths come from the host's shared memory and signals, not from the code",
    "storage": "disk and filesystem faults belong to the job's own storage",
    "unknown": "the engine could not name the failure, so there is nothing to compare a run with",
}
TAIL_CHARS = 6000
LOG_LIMIT = 4 * 1024 * 1024


@dataclass
class Context:
    incident: Incident
    diagnosis: dict
    workdir: Path
    data: Path | None = None
    data_name: str | None = None
    script: Path | None = None
    script_name: str | None = None
    done_fixes: set[str] = field(default_factory=set)


def reproduce(incident_pk: int) -> str:
    incident = Incident.objects.select_related("diagnosis").filter(pk=incident_pk).first()
    diagnosis = getattr(incident, "diagnosis", None) if incident else None
    if incident is None or diagnosis is None:
        return "skipped"
    stale_before = timezone.now() - timedelta(seconds=settings.TRIAGE_REPRO_TIME_LIMIT + 120)
    open_runs = incident.repro_runs.exclude(status__in=ReproRun.FINISHED)
    if open_runs.filter(created_at__gte=stale_before).exists():
        return "skipped"  # a repro of this incident is already under way (a redelivered message)
    open_runs.update(status=ReproRun.Status.ERROR, reason="The worker running it stopped.", finished_at=timezone.now())
    forget_previous(incident)
    workdir = Path(tempfile.mkdtemp(prefix=f"triage-repro-{incident.pk}-"))
    try:
        ctx = Context(incident=incident, diagnosis=diagnosis.data or {}, workdir=workdir)
        gather_inputs(ctx)
        for step in plan(ctx):
            guarded(ctx, step)
        return "done"
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


STEP_KINDS = {"data_check": ReproRun.Kind.DATA_CHECK, "launch_repro": ReproRun.Kind.LAUNCH,
              "memory_repro": ReproRun.Kind.MEMORY, "not_reproducible": ReproRun.Kind.UNSUPPORTED}


def guarded(ctx: Context, step) -> None:
    """One kind of run failing (the sandbox, the engine, storage) is recorded on its row; the next runs."""
    before = set(ctx.incident.repro_runs.values_list("pk", flat=True))
    try:
        step(ctx)
    except Exception as exc:  # noqa: BLE001 - recorded; the incident and the other runs go on
        logger.exception("repro step %s of incident %s failed", step.__name__, ctx.incident.pk)
        reason = f"The run stopped: {type(exc).__name__}: {exc}"[:2000]
        opened = ReproRun.objects.filter(incident=ctx.incident).exclude(pk__in=before)
        if not opened.exists():
            ReproRun.objects.create(incident=ctx.incident, kind=STEP_KINDS.get(step.__name__, ReproRun.Kind.LAUNCH),
                                    status=ReproRun.Status.ERROR, reason=reason, finished_at=timezone.now())
        opened.exclude(status__in=ReproRun.FINISHED).update(status=ReproRun.Status.ERROR, reason=reason,
                                                             finished_at=timezone.now())


def forget_previous(incident: Incident) -> None:
    """A new diagnosis makes earlier runs moot (their fix indices point into the old verdict)."""
    previous = list(incident.repro_runs.all())
    artifact_ids = [pk for run in previous for pk in (run.log_id, run.output_id) if pk]
    incident.repro_runs.all().delete()
    for artifact in Artifact.objects.filter(pk__in=artifact_ids):
        artifact.file.delete(save=False)
        artifact.delete()


def abandon(incident_pk: int, reason: str, timed_out: bool = False) -> None:
    """The task itself stopped: close whatever runs it left open (the incident is not touched)."""
    status = ReproRun.Status.TIMED_OUT if timed_out else ReproRun.Status.ERROR
    ReproRun.objects.filter(incident_id=incident_pk).exclude(status__in=ReproRun.FINISHED).update(
        status=status, reason=reason[:2000], finished_at=timezone.now())


def gather_inputs(ctx: Context) -> None:
    for artifact in ctx.incident.artifacts.all():
        try:
            _gather(ctx, artifact)
        except OSError:
            logger.warning("artifact %s of incident %s is unreadable; left out of the repro",
                           artifact.pk, ctx.incident.pk)


def _gather(ctx: Context, artifact: Artifact) -> None:
    if artifact.kind == Artifact.Kind.DATA_SAMPLE and ctx.data is None:
        ctx.data_name = _safe_name(artifact.original_name, "data.json")
        ctx.data = _copy_out(artifact, ctx.workdir / "data" / ctx.data_name)
    elif artifact.kind == Artifact.Kind.CONFIG and artifact.original_name.endswith(".py") and ctx.script is None:
        # a Python file uploaded beside the logs is the training script: it runs only in the sandbox
        ctx.script_name = _safe_name(artifact.original_name, "train.py")
        ctx.script = _copy_out(artifact, ctx.workdir / "script" / ctx.script_name)


def _safe_name(name: str, fallback: str) -> str:
    base = Path(name.replace("\\", "/")).name
    cleaned = "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in base).lstrip(".")
    return cleaned[:100] or fallback


def _copy_out(artifact: Artifact, target: Path) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    with artifact.file.open("rb") as source, open(target, "wb") as handle:
        shutil.copyfileobj(source, handle, 1024 * 1024)
    return target


def plan(ctx: Context) -> list:
    category = ctx.diagnosis.get("category") or "unknown"
    steps = []
    if ctx.data is not None:
        steps.append(data_check)
    if category in MEMORY_CATEGORIES and ctx.incident.command and _fix(ctx, MEMORY_FIX_KINDS)[1] is not None:
        steps.append(memory_repro)
    elif category in LAUNCH_CATEGORIES and ctx.incident.command:
        steps.append(launch_repro)
    elif category in NOT_HERE or (category in MEMORY_CATEGORIES):
        steps.append(not_reproducible)
    if not steps:
        steps.append(not_reproducible)
    return steps


def _fix(ctx: Context, kinds) -> tuple[int, dict] | tuple[None, None]:
    """The top fix when it is of one of `kinds`, else the first such fix."""
    fixes = ctx.diagnosis.get("fixes") or []
    for index, fix in enumerate(fixes):
        if fix.get("kind") in kinds:
            return index, fix
    return None, None


# --- run rows -------------------------------------------------------------------------------

def new_run(ctx: Context, kind: str, *, fix_index=None, fix_kind="", attempt_of=None, command="",
            limits=None) -> ReproRun:
    return ReproRun.objects.create(
        incident=ctx.incident, kind=kind, status=ReproRun.Status.RUNNING, fix_index=fix_index, fix_kind=fix_kind,
        attempt_of=attempt_of, command=mask_secrets(command)[:20000], limits=limits or {}, started_at=timezone.now())


class TailWriter:
    """Streams the log tail to the row at most every half second."""

    def __init__(self, run: ReproRun):
        self.run, self.last = run, 0.0

    def __call__(self, text: str) -> None:
        now = time.monotonic()
        if now - self.last < 0.5:
            return
        self.last = now
        ReproRun.objects.filter(pk=self.run.pk).update(log_tail=mask_secrets(text[-TAIL_CHARS:]))


def execute(run: ReproRun, argv, **kwargs) -> sandbox.SandboxResult | None:
    limits = kwargs.pop("limits", None) or sandbox.SandboxLimits(wall_s=settings.TRIAGE_REPRO_WALL_S)
    run.limits = limits.as_dict()
    run.save(update_fields=["limits"])
    try:
        return sandbox.run(argv, limits=limits, on_output=TailWriter(run), **kwargs)
    except sandbox.SandboxUnavailable as exc:
        finish(run, ReproRun.Status.ERROR, reason=f"The sandbox is not available: {exc}")
        return None


def finish(run: ReproRun, status: str, *, result: sandbox.SandboxResult | None = None, verdict=None,
           reason: str = "", details: dict | None = None, output: tuple[str, bytes] | None = None) -> ReproRun:
    if result is not None:
        log = mask_secrets(result.log)
        run.exit_status, run.signal = result.exit_status, result.signal
        run.limit_hit = result.limit_hit or ""
        run.duration_s, run.peak_memory_mb = result.duration_s, result.peak_rss_mb
        run.log_tail = log[-TAIL_CHARS:]
        run.log = _artifact(run.incident, "repro_log", f"repro-{run.pk}-{run.kind}.log", log.encode()[:LOG_LIMIT])
    if output is not None:
        run.output = _artifact(run.incident, "repro_output", output[0], output[1])
        run.details = {**run.details, "output_name": output[0]}
    run.status = status
    run.verdict = verdict or run.verdict or {}
    run.reason = reason[:2000]
    if details:
        run.details = {**run.details, **details}
    run.finished_at = timezone.now()
    run.save()
    if run.fix_kind and run.verified is not None:
        mark_verified(run)
    return run


def _artifact(incident: Incident, kind: str, name: str, content: bytes) -> Artifact:
    import hashlib

    artifact = Artifact(incident=incident, kind=kind, original_name=name, size=len(content),
                        sha256=hashlib.sha256(content).hexdigest())
    artifact.file.save(name, ContentFile(content), save=False)
    artifact.save()
    return artifact


def mark_verified(run: ReproRun) -> None:
    """Write the run's outcome onto the fix in the stored diagnosis, so every page shows it."""
    with transaction.atomic():
        diagnosis = Diagnosis.objects.select_for_update().filter(incident_id=run.incident_id).first()
        if diagnosis is None:
            return
        data = dict(diagnosis.data or {})
        fixes = list(data.get("fixes") or [])
        index = run.fix_index
        if index is None or index >= len(fixes) or fixes[index].get("kind") != run.fix_kind:
            return
        fixes[index] = {**fixes[index], "verified": run.verified}
        data["fixes"] = fixes
        diagnosis.data = data
        diagnosis.save(update_fields=["data"])


# --- kinds of run ---------------------------------------------------------------------------

def not_reproducible(ctx: Context) -> None:
    category = ctx.diagnosis.get("category") or "unknown"
    if category in NOT_HERE:
        reason = NOT_HERE[category]
    elif category in MEMORY_CATEGORIES:
        reason = ("running out of memory at the job's scale needs its GPUs; without a launch command and a "
                  "batch, sequence or checkpointing fix there is no relative check to make on a tiny model")
    elif not ctx.incident.command:
        reason = "no launch command was given, so there is nothing to rerun"
    else:
        reason = f"no CPU reproduction is defined for {category}"
    run = new_run(ctx, ReproRun.Kind.UNSUPPORTED)
    run.reproducible = False
    finish(run, ReproRun.Status.NOT_REPRODUCED, reason=f"Not reproducible here: {reason}.")


def data_check(ctx: Context) -> None:
    category = ctx.diagnosis.get("category") or "unknown"
    described = datacheck.describe(ctx.data)
    expected, source = datacheck.expected_style(ctx.diagnosis, ctx.incident.command)
    if "dataset_info" in described:
        run = new_run(ctx, ReproRun.Kind.DATA_CHECK)
        finish(run, ReproRun.Status.NOT_REPRODUCED, details={"described": described},
               reason="The upload is a LLaMA-Factory dataset_info.json: it names the datasets and their formatting "
                      "but holds no rows to check. Upload a sample of the data file it points at.")
        return
    argv = ["python", "/triage/runtime/load_check.py", "--format", expected or "auto", f"/work/in/{ctx.data_name}"]
    run = new_run(ctx, ReproRun.Kind.DATA_CHECK, command=" ".join(argv))
    result = execute(run, argv, inputs={ctx.data_name: ctx.data},
                     limits=sandbox.SandboxLimits(wall_s=60, address_space_mb=4096))
    if result is None:
        return
    report = datacheck.parse_rowcheck(result.log)
    details = {"described": described, "expected": expected, "expected_from": source,
               "bad_rows": report.get("bad_rows", []), "bad_count": report.get("bad_count"),
               "rows": report.get("rows", described.get("rows"))}
    if result.timed_out:
        finish(run, ReproRun.Status.TIMED_OUT, result=result, details=details, reason="The data check ran out of time.")
        return
    verdict = verdicts.read_log(result.log) if not result.ok else {"category": "none", "summary": "every row loads"}
    if category in DATA_CATEGORIES:
        status = ReproRun.Status.REPRODUCED if not result.ok and verdicts.same_failure(ctx.diagnosis, verdict) \
            else ReproRun.Status.NOT_REPRODUCED
    else:
        status = ReproRun.Status.PASSED if result.ok else ReproRun.Status.FAILED
    finish(run, status, result=result, verdict=verdict, details=details)
    if status == ReproRun.Status.REPRODUCED:
        check_data_fix(ctx, run, expected, details)


def check_data_fix(ctx: Context, reproduction: ReproRun, expected: str | None, details: dict) -> None:
    index, fix = _fix(ctx, DATA_FIX_KINDS)
    if fix is None:
        return
    out_dir = ctx.workdir / "converted"
    out_dir.mkdir(exist_ok=True)
    target = (fix.get("data_format") or {}).get("expected") or expected
    try:
        if fix["kind"] == "convert_data_format" and target in datacheck.CONVERTIBLE:
            converted, written, skipped = datacheck.convert(ctx.data, target, out_dir)
            how = f"python -m triage convert-data --to {target} {ctx.data_name} {converted.name}"
        else:
            converted, written, skipped = datacheck.repair(ctx.data, out_dir)
            how = f"python -m triage convert-data --repair {ctx.data_name} {converted.name}"
    except (OSError, ValueError) as exc:
        run = new_run(ctx, ReproRun.Kind.DATA_CHECK, fix_index=index, fix_kind=fix["kind"], attempt_of=reproduction)
        finish(run, ReproRun.Status.ERROR, reason=f"The converter could not read the sample: {exc}")
        return
    argv = ["python", "/triage/runtime/load_check.py", "--format", expected or "auto", f"/work/in/{converted.name}"]
    run = new_run(ctx, ReproRun.Kind.DATA_CHECK, fix_index=index, fix_kind=fix["kind"], attempt_of=reproduction,
                  command=f"{how} && {' '.join(argv)}")
    result = execute(run, argv, inputs={converted.name: converted},
                     limits=sandbox.SandboxLimits(wall_s=60, address_space_mb=4096))
    if result is None:
        return
    ctx.done_fixes.add(fix["kind"])
    report = datacheck.parse_rowcheck(result.log)
    info = {"converted_rows": written, "skipped_rows": skipped, "converter": how,
            "bad_rows": report.get("bad_rows", []), "bad_count": report.get("bad_count")}
    output = (converted.name, converted.read_bytes())
    if result.ok:
        finish(run, ReproRun.Status.PASSED, result=result, details=info, output=output,
               verdict={"category": "none", "summary": f"all {written} converted rows load as {expected}"})
    elif result.timed_out:
        finish(run, ReproRun.Status.TIMED_OUT, result=result, details=info)
    else:
        finish(run, ReproRun.Status.FAILED, result=result, details=info, output=output,
               verdict=verdicts.read_log(result.log))


def _free_port() -> int:
    with socket.socket() as probe:  # inside the sandbox's own network any port is free; vary it anyway
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _launch(ctx: Context, command: str, *, data_name=None, data_path=None, batch_size=None, length_cap=128,
            max_procs=2, hidden=64):
    launch = launchcmd.plan(command, data_name=data_name or ctx.data_name, script_name=ctx.script_name,
                            master_port=_free_port(), length_cap=length_cap, batch_size=batch_size,
                            max_procs=max_procs)
    inputs = {}
    if data_path is not None:
        inputs[data_name] = data_path
    elif ctx.data is not None:
        inputs[ctx.data_name] = ctx.data
    if ctx.script is not None:
        inputs[ctx.script_name] = ctx.script
    where = {"inputs": inputs, "binds": {"/work/tiny-model": tinymodels.ensure(launch.family, hidden)}}
    data_input = data_name if data_path is not None else ctx.data_name
    if ctx.script is not None and data_input:
        # a script that reads its data from a default path gets the sample there too
        where["aliases"] = {path: data_input for path in default_data_paths(ctx.script)}
    return launch, where


DEFAULT_PATH = re.compile(r"""["']([A-Za-z0-9_][\w./-]{0,120}\.jsonl?)["']""")


def default_data_paths(script: Path) -> list[str]:
    """Relative .json/.jsonl paths written as string literals in the uploaded script (read, never run)."""
    try:
        text = script.read_text(encoding="utf-8", errors="replace")[:500_000]
    except OSError:
        return []
    found = []
    for path in DEFAULT_PATH.findall(text):
        if ".." not in path.split("/") and not path.startswith(("in/", "out/", "tiny-model")) and path not in found:
            found.append(path)
    return found[:4]


def launch_repro(ctx: Context) -> None:
    if any(kind in ctx.done_fixes for kind in DATA_FIX_KINDS) and ctx.diagnosis.get("category") in DATA_CATEGORIES \
            and ctx.script is None:
        return  # the data check settled it; an uploaded script is still run, as the stronger evidence
    command = ctx.incident.command
    env = _expect_env(ctx)
    synthetic = None
    if ctx.data is None:
        synthetic = _synthetic_data(ctx)
    try:
        launch, where = _launch(ctx, command, data_name=synthetic and synthetic.name, data_path=synthetic)
    except launchcmd.NotLaunchable as exc:
        run = new_run(ctx, ReproRun.Kind.LAUNCH, command=command)
        run.reproducible = False
        finish(run, ReproRun.Status.NOT_REPRODUCED, reason=f"Not reproducible here: {exc}.")
        return
    run = new_run(ctx, ReproRun.Kind.LAUNCH, command=launch.text)
    run.details = {"changes": launch.changes, "family": launch.family, "processes": launch.nproc,
                   "synthetic_data": synthetic is not None}
    result = execute(run, launch.argv, **where, env=env)
    if result is None:
        return
    if result.timed_out:
        finish(run, ReproRun.Status.TIMED_OUT, result=result, reason="The reproduction ran past the wall clock.")
        return
    verdict = verdicts.read_log(result.log, launch.text) if not result.ok else {"category": "none"}
    reproduced = not result.ok and verdicts.same_failure(ctx.diagnosis, verdict)
    finish(run, ReproRun.Status.REPRODUCED if reproduced else ReproRun.Status.NOT_REPRODUCED, result=result,
           verdict=verdict, reason="" if reproduced else _why_not(result, verdict))
    if reproduced:
        check_launch_fix(ctx, run, env, synthetic)


def _why_not(result, verdict) -> str:
    if result.ok:
        return "The tiny run finished without the failure."
    return f"The tiny run failed differently: {verdict.get('category')} ({verdict.get('exception') or 'no exception'})."


def _expect_env(ctx: Context) -> dict:
    expected, _ = datacheck.expected_style(ctx.diagnosis, ctx.incident.command)
    return {"TRIAGE_EXPECT_FORMAT": expected} if expected else {}


def _synthetic_data(ctx: Context, long: bool = False) -> Path:
    import json

    expected, _ = datacheck.expected_style(ctx.diagnosis, ctx.incident.command)
    text = "The quick brown fox jumps over the lazy dog. " * (12 if long else 1)
    rows = [{"conversations": [{"from": "human", "value": f"question {i}: {text}"},
                               {"from": "gpt", "value": f"answer {i}: {text}"}]} for i in range(16)]
    if expected and expected != "sharegpt" and expected in datacheck.CONVERTIBLE:
        rows, _ = datacheck.convert_data.convert_records(rows, expected)
    path = ctx.workdir / "synthetic" / "synthetic.jsonl"  # JSON Lines: what most loaders accept
    path.parent.mkdir(exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def check_launch_fix(ctx: Context, reproduction: ReproRun, env: dict, synthetic: Path | None) -> None:
    fixes = ctx.diagnosis.get("fixes") or []
    index = next((i for i, fix in enumerate(fixes) if fix.get("command") and fix.get("command") != ctx.incident.command),
                 None)
    if index is None:
        reproduction.details = {**reproduction.details, "fix": "no fix carries a corrected command to rerun"}
        reproduction.save(update_fields=["details"])
        return
    fix = fixes[index]
    data_name, data_path = (synthetic.name, synthetic) if synthetic is not None else (None, None)
    if fix.get("kind") == "convert_data_format" and ctx.data is not None:
        target = (fix.get("data_format") or {}).get("expected")
        if target in datacheck.CONVERTIBLE:
            data_path, _, _ = datacheck.convert(ctx.data, target, ctx.workdir)
            data_name = data_path.name
    launch, where = _launch(ctx, fix["command"], data_name=data_name, data_path=data_path)
    run = new_run(ctx, ReproRun.Kind.LAUNCH, fix_index=index, fix_kind=fix.get("kind", ""), attempt_of=reproduction,
                  command=launch.text)
    run.details = {"changes": launch.changes, "fixed_command": fix["command"]}
    result = execute(run, launch.argv, **where, env=env)
    if result is None:
        return
    if result.ok:
        finish(run, ReproRun.Status.PASSED, result=result, verdict={"category": "none", "summary": "the run finished"})
    elif result.timed_out:
        finish(run, ReproRun.Status.TIMED_OUT, result=result, reason="The corrected run ran past the wall clock.")
    else:
        finish(run, ReproRun.Status.FAILED, result=result, verdict=verdicts.read_log(result.log, launch.text))


# Limits other than the address space: a run stopped by one of them says nothing about its memory.
OTHER_LIMITS = {"wall_clock", "cpu_time", "file_size", "work_dir_size"}


def _failed_for_memory(result) -> bool:
    """The same command ran to the end without the cap, so a capped failure is the cap's doing unless another
    limit stopped it: an allocation failure, a thread or a library that could not be mapped, or a native crash
    (C code that does not check malloc) all count."""
    return not result.ok and not result.timed_out and result.limit_hit not in OTHER_LIMITS


def _failure_form(result, verdict: dict) -> str:
    if result.ok:
        return "none"
    if result.limit_hit:
        return f"{result.limit_hit} limit"
    how = f"signal {result.signal}" if result.signal else f"exit status {result.exit_status}"
    return f"{verdict.get('category') or 'unknown'} ({how})"


def memory_repro(ctx: Context) -> None:
    """Relative check on the tiny model: peaks of the original and the fixed command, then both under a cap
    set between the two peaks. Reproduced = the original hits the cap; verified = the fix runs under it."""
    index, fix = _fix(ctx, MEMORY_FIX_KINDS)
    data = _synthetic_data(ctx, long=True)
    length = 512
    try:
        before, where = _launch(ctx, ctx.incident.command, data_name=data.name, data_path=data,
                                length_cap=length, max_procs=1, hidden=MEMORY_HIDDEN)
        after, _ = _launch(ctx, fix["command"], data_name=data.name, data_path=data, length_cap=length, max_procs=1,
                           hidden=MEMORY_HIDDEN)
    except launchcmd.NotLaunchable as exc:
        run = new_run(ctx, ReproRun.Kind.MEMORY, command=ctx.incident.command)
        run.reproducible = False
        finish(run, ReproRun.Status.NOT_REPRODUCED, reason=f"Not reproducible here: {exc}.")
        return
    run = new_run(ctx, ReproRun.Kind.MEMORY, command=before.text)
    run.details = {"changes": before.changes, "scale": "tiny model on CPU; memory figures are relative"}
    env = {"TRIAGE_EXPECT_FORMAT": "sharegpt"}
    base = execute(run, before.argv, **where, env=env)
    fixed = base and base.ok and sandbox.run(after.argv, **where, env=env,
                                             limits=sandbox.SandboxLimits(wall_s=settings.TRIAGE_REPRO_WALL_S))
    if base is None:
        return
    if not base.ok or not fixed or not fixed.ok:
        finish(run, ReproRun.Status.ERROR, result=base if not base.ok else fixed,
               reason="The tiny run did not complete without a memory cap, so there is nothing to compare.",
               verdict=verdicts.read_log((base if not base.ok else fixed).log))
        return
    peak_before, peak_after = base.peak_process_mb, fixed.peak_process_mb
    vm_before, vm_after = base.peak_vm_mb, fixed.peak_vm_mb
    measured = {"peak_before_mb": peak_before, "peak_after_mb": peak_after,
                "change": f"{(peak_after - peak_before) / peak_before * 100:+.0f}%" if peak_before else None,
                "virtual_before_mb": vm_before, "virtual_after_mb": vm_after}
    if vm_before - vm_after < max(16.0, 0.03 * vm_before):
        finish(run, ReproRun.Status.NOT_REPRODUCED, result=base, details=measured,
               reason=f"On the tiny model the fix changes the peak by {measured['change']}: too little to set a "
                      "memory cap between the two runs.")
        return
    cap = int((vm_before + vm_after) / 2)
    capped = sandbox.SandboxLimits(wall_s=settings.TRIAGE_REPRO_WALL_S, address_space_mb=cap)
    measured["cap_mb"] = cap
    original = execute(run, before.argv, **where, env=env, limits=capped)
    if original is None:
        return
    verdict = verdicts.read_log(original.log, before.text) if not original.ok else {"category": "none"}
    reproduced = _failed_for_memory(original)
    measured["failure_under_cap"] = _failure_form(original, verdict)
    finish(run, ReproRun.Status.REPRODUCED if reproduced else ReproRun.Status.NOT_REPRODUCED, result=original,
           verdict=verdict, details=measured,
           reason="" if reproduced else "The original command ran under the cap set between the two peaks."
           if original.ok else f"Under the cap the original stopped for another reason: {measured['failure_under_cap']}.")
    if not reproduced:
        return
    check = new_run(ctx, ReproRun.Kind.MEMORY, fix_index=index, fix_kind=fix["kind"], attempt_of=run,
                    command=after.text)
    check.details = {**measured, "fixed_command": fix["command"]}
    result = execute(check, after.argv, **where, env=env, limits=capped)
    if result is None:
        return
    if result.ok:
        finish(check, ReproRun.Status.PASSED, result=result, verdict={"category": "none", "summary": (
            f"peak per process {peak_before:.0f} -> {peak_after:.0f} MiB ({measured['change']}) on the tiny model; "
            f"runs under the {cap} MiB cap the original exceeds (relative figures)")})
    else:
        finish(check, ReproRun.Status.FAILED, result=result, verdict=verdicts.read_log(result.log, after.text))
