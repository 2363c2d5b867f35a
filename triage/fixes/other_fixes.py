"""Storage, paths, numerics, CUDA debugging, hardware, user code, and the generic fallback."""
from __future__ import annotations

import posixpath
import re

from triage.rules.numerical import non_finite_terms

from .common import Edits, as_int, deepspeed_config, evidence_text, is_hf_style, lookup


def free_disk(ctx, kind: str) -> dict:
    edits = Edits(ctx)
    cmd = edits.cmd
    output = cmd.value("output_dir") or "OUTPUT_DIR"
    notes = [f"check the space: df -h {output}  (and du -sh {output}/checkpoint-* for old checkpoints)"]
    if is_hf_style(cmd, ctx) or not ctx.command:
        limit, _ = lookup(ctx, cmd, ("save_total_limit",))
        if as_int(limit) is None or as_int(limit) > 2:
            edits.set(("save_total_limit",), 2)
            notes.append("keep only the last 2 checkpoints")
        if cmd.flag("deepspeed") is not None or cmd.flag("fsdp") is not None:
            edits.set(("save_only_model",), True)
            notes.append("--save_only_model skips the sharded optimizer states (often 6x the model size); "
                         "resuming then restarts the optimizer")
    return edits.fix(kind, "Free disk space or write checkpoints to a larger volume",
                     "Writing a checkpoint failed part-way, the usual sign of a full disk or quota.",
                     notes=notes, shell=[f"df -h {output}"])


def fix_path(ctx, kind: str) -> dict:
    if (ctx.facts or {}).get("resumed_checkpoint"):
        return resume_earlier(ctx, kind)
    edits = Edits(ctx)
    text = evidence_text(ctx)
    path = re.search(r"(?:No such file or directory|Permission denied|does not exist|not found)\W*:?\s*['\"]([^'\"]+)['\"]",
                     text)
    path = path.group(1) if path else None
    notes = []
    if path:
        notes.append(f"the path in the error: {path}")
    denied = "Permission denied" in text or "EACCES" in text
    shell = [f"ls -ld {path or 'PATH'} $(dirname {path or 'PATH'})"]
    if denied:
        notes.append("the job's user cannot write there: fix the owner/mode or point output_dir elsewhere")
    return edits.fix(kind, f"Correct the path{' ' + path if path else ''} or its permissions",
                     "A file the job needs is missing, misnamed, or not readable/writable by the job's user.",
                     notes=notes, shell=shell)


def resume_earlier(ctx, kind: str) -> dict:
    """The checkpoint the run resumes from was cut short: resume from the one saved before it."""
    edits = Edits(ctx)
    cmd = edits.cmd
    named = next((value for value in (cmd.value(key) for key in ("resume_from_checkpoint", "resume", "resume_from"))
                  if value and value.lower() not in ("true", "auto")), None)
    if named and "$" not in named:
        where = posixpath.dirname(named.rstrip("/")) or "."
    else:
        where = cmd.value("output_dir", "save_dir", "ckpt_dir", "checkpoint_dir") or "CHECKPOINT_DIR"
    notes = [f"the damaged checkpoint: {named}" if named else "the damaged checkpoint is the newest one saved",
             "move it aside (do not delete it until the run is back) and resume from the checkpoint saved before it",
             "make saves atomic: write to a temporary name in the same folder, then os.replace() it, so a stopped "
             "job never leaves a half-written newest checkpoint"]
    return edits.fix(kind, "Resume from the previous complete checkpoint",
                     "The newest checkpoint is cut short or damaged: its save did not finish.",
                     notes=notes, shell=[f"ls -lt {where}"])


def fix_numerics(ctx, kind: str) -> dict:
    edits = Edits(ctx)
    cmd = edits.cmd
    notes = []
    fp16, _ = lookup(ctx, cmd, ("fp16",))
    fp16_flag = fp16 is not None and fp16.lower() in ("true", "1")
    name, ds = deepspeed_config(ctx, cmd)
    ds_fp16 = bool(ds) and (ds.get("fp16") or {}).get("enabled") is True
    if fp16_flag or not ctx.command:
        edits.set(("fp16",), False)
        edits.set(("bf16",), True)
        notes.append("bf16 has fp32's exponent range, so the loss scale cannot underflow (needs Ampere or newer)")
    if ds_fp16:
        edits.patch_config(name, "fp16.enabled", False)
        edits.patch_config(name, "bf16.enabled", True)
    lr, _ = lookup(ctx, cmd, ("learning_rate", "lr"))
    try:
        new_lr = f"{float(lr) / 2:g}" if lr is not None else None
    except ValueError:
        new_lr = None
    if new_lr:
        edits.set(("learning_rate", "lr"), new_lr)
        notes.append(f"learning rate {lr} -> {new_lr}")
    if (is_hf_style(cmd, ctx) or not ctx.command) and cmd.flag("max_grad_norm") is None:
        edits.set(("max_grad_norm",), 1.0)
    half = fp16_flag or ds_fp16 or re.search(r"loss scal|fp16|half", evidence_text(ctx), re.IGNORECASE) is not None
    why = ("The loss overflowed until the fp16 loss scale hit its minimum (or turned NaN)." if half else
           "The loss or the gradients became non-finite (NaN or inf): a step too large for the weights, or values "
           "the loss cannot take.")
    return edits.fix(kind, "Stabilise training: bf16 instead of fp16, lower learning rate, clip gradients",
                     why, notes=notes, cost="medium")


def debug_cuda(ctx, kind: str) -> dict:
    edits = Edits(ctx)
    edits.set_env("CUDA_LAUNCH_BLOCKING", "1")
    text = evidence_text(ctx)
    notes = ["kernels then run synchronously, so the traceback points at the failing operation (slower)"]
    if "device-side assert" in text or "index" in text.lower():
        notes.append("a device-side assert in training is usually a label or token id outside the vocabulary "
                     "(e.g. new special tokens without model.resize_token_embeddings)")
    return edits.fix(kind, "Rerun with CUDA_LAUNCH_BLOCKING=1 to locate the failing kernel",
                     "CUDA errors are reported asynchronously at a later call, so the traceback is misleading.",
                     notes=notes)


def replace_hardware(ctx, kind: str) -> dict:
    edits = Edits(ctx)
    text = evidence_text(ctx)
    gpu = re.search(r"(?:GPU|gpu)[ :#]*(\d+)|Xid \(PCI:([0-9a-fA-F:.]+)\)", text)
    notes = ["look for Xid / ECC errors: nvidia-smi -q -d ECC; dmesg | grep -i xid",
             "Slurm: scontrol update nodename=NODE state=drain reason=\"GPU fault\"; then reset the GPU "
             "(nvidia-smi -r) or reboot the node", "rerun the job on other nodes (srun --exclude=NODE)"]
    if gpu and gpu.group(1):
        notes.insert(0, f"the evidence names GPU {gpu.group(1)}")
    node = re.search(r"Node failure on (\S+)", text)
    if node:  # the scheduler's own word for the node it lost
        notes.insert(0, f"the scheduler lost node {node.group(1)}: resubmit with --exclude={node.group(1)}")
    return edits.fix(kind, "Drain the node and reset or replace the faulty GPU",
                     "The GPU or its link reported a hardware fault; the same job fails again on that node.",
                     notes=notes, shell=["nvidia-smi -q -d ECC", "dmesg | grep -i xid"], cost="high")


def fix_code(ctx, kind: str) -> dict:
    if ctx.category == "gpu_oom" and ((ctx.facts or {}).get("other_processes") or 0) >= 2:
        return ranks_share_a_gpu(ctx, kind)
    edits = Edits(ctx)
    where = ctx.facts.get("frame") or ctx.facts.get("user_frame")
    title = f"Fix the bug in the training script ({ctx.exception or 'error'})"
    notes = [f"{ctx.exception}: {ctx.message}"] if ctx.exception and ctx.message else []
    if where:
        notes.append(f"raised at {where}")
    terms = non_finite_terms(ctx.message or "") if ctx.category == "numerical" else []
    if terms:
        title = f"Fix the code of the loss term {', '.join(terms)}"
        notes.insert(0, f"only {', '.join(terms)} is NaN/inf while the other terms are finite: look in that term's code "
                        "for a log of 0, a division by an empty count or an exp that overflows (clamp, add an eps, "
                        "skip the term when its count is 0)")
        return edits.fix(kind, title, "One term of the loss went non-finite on its own: its code, not the step size.",
                         notes=notes, cost="medium")
    return edits.fix(kind, title, "The error is raised by the user's own code, not by a library or the setup.",
                     notes=notes, cost="medium")


def generic(ctx, kind: str) -> dict:
    edits = Edits(ctx)
    return edits.fix(kind, f"{kind.replace('_', ' ').capitalize()} (no builder for this fix kind)",
                     "The rules proposed a fix kind this engine has no specific builder for; see the evidence.",
                     notes=["the command is repeated unchanged"])


def ranks_share_a_gpu(ctx, kind: str) -> dict:
    """The OOM message lists several other processes of gigabytes on the GPU that ran out: the ranks were all
    placed on one GPU."""
    edits = Edits(ctx)
    facts = ctx.facts or {}
    gpu = facts.get("device_index")
    where = f"GPU {gpu}" if gpu is not None else "the GPU that ran out"
    notes = [f"the out-of-memory message lists {facts['other_processes']} other processes holding gigabytes on "
             f"{where}: the job's ranks are all on it while the other GPUs stay empty",
             "load the model onto the rank's own GPU: device_map={'': int(os.environ['LOCAL_RANK'])} (or "
             "accelerate's PartialState().process_index) instead of a fixed device or 'auto'",
             "call torch.cuda.set_device(local_rank) before building the model, and check that "
             "CUDA_VISIBLE_DEVICES is not narrowed to one GPU for every rank"]
    return edits.fix(kind, "Put each rank on its own GPU", "Several of the job's processes share the GPU that ran out "
                     "of memory; spreading them over the GPUs frees it without a smaller batch.", notes=notes,
                     cost="low")
