"""The runbooks shipped with the product: one per taxonomy category, in Markdown.

A team edits its own copy (knowledge.models.Runbook); until it does, the text here is shown.
"""
from __future__ import annotations

DEFAULT_RUNBOOKS: dict[str, tuple[str, str]] = {
    "data_schema": ("The data does not have the fields the script reads", """\
1. Open the first rows of the training file and compare their keys with what the loader reads
   (the `KeyError` names the missing field).
2. Mixed formats are the usual cause: alpaca rows (`instruction`/`input`/`output`) in a ShareGPT
   file (`conversations`), or a `text` column missing for a plain LM loader.
3. Convert the file once (`python -m triage convert-data --to sharegpt IN OUT`) rather than patching
   the loader, and check the row count before and after.
"""),
    "data_corrupt": ("A data file cannot be read", """\
1. The error names the line or byte offset: look at that row (`sed -n 'Np' file.jsonl`).
2. Typical causes: a truncated copy, two JSON documents in one `.json`, a non-UTF-8 export.
3. Repair or drop the bad rows (`python -m triage convert-data --repair IN OUT`) and keep the
   count of dropped rows in the run notes.
"""),
    "data_pipeline": ("Preprocessing failed before training", """\
1. Rerun the preprocessing alone with one process (`num_proc=1`) to see the real exception.
2. Tokenizer without a chat template, an empty dataset after filtering and ragged columns from a
   `map` that returns lists of different lengths are the common ones.
3. Fix the step, then cache the processed dataset so every rank reads the same files.
"""),
    "gpu_oom": ("GPU memory ran out", """\
1. Note the step and rank: an OOM at step 0-1 means the model or batch never fits; a late OOM
   usually means a long sample or a memory leak in evaluation.
2. Lower `--per_device_train_batch_size` and raise `--gradient_accumulation_steps` by the same
   factor to keep the global batch.
3. Then: gradient checkpointing, bf16, shorter `max_seq_length`, stronger sharding (ZeRO-3 / FSDP
   full_shard) or CPU offload, in that order of cost.
"""),
    "host_oom": ("Host RAM ran out (the kernel killed a rank)", """\
1. Exit code -9 with no traceback is the kernel OOM killer: check `dmesg` or the scheduler's
   accounting (`sacct -j JOB --format=MaxRSS`) on the failing node.
2. Each DataLoader / `datasets.map` worker holds its own copy: lower
   `--dataloader_num_workers` and `num_proc` first.
3. Load the model with `low_cpu_mem_usage`, stream large datasets, or ask for more memory per task.
"""),
    "dataloader_worker": ("A DataLoader worker died", """\
1. "Bus error" or "No space left on device" under `/dev/shm` means shared memory is too small.
2. In containers raise `--shm-size` (e.g. 16g) or mount a larger tmpfs on `/dev/shm`.
3. Otherwise lower `--dataloader_num_workers`; set it to 0 once to see the worker's real exception.
"""),
    "nccl_timeout": ("A collective operation timed out", """\
1. Find the rank that never reached the collective: the ranks that report the timeout are waiting
   for it. Its last log lines say what it was doing (saving, evaluating, a slow data read).
2. Uneven work between ranks (rank 0 saving a checkpoint, evaluation on one rank, unused
   parameters) is the usual cause: make every rank take the same path.
3. Raise the timeout (`--ddp_timeout`, `TORCH_NCCL_*` timeout) only when the long step is
   expected; a straggler node needs draining instead.
"""),
    "nccl_error": ("The communication library failed", """\
1. Rerun with `NCCL_DEBUG=INFO` and read the first `NCCL WARN` line of the failing rank.
2. Wrong network interface (`NCCL_SOCKET_IFNAME`), broken peer-to-peer (`NCCL_P2P_DISABLE=1`) and
   two ranks on one GPU (call `torch.cuda.set_device(local_rank)`) are the frequent causes.
3. If one node is always involved, suspect its NICs or GPUs and drain it.
"""),
    "rendezvous": ("The job never formed", """\
1. "Address already in use": another job holds `MASTER_PORT` on the master node; pick a free
   port or let the scheduler assign one.
2. Rendezvous timeouts: check `MASTER_ADDR` resolves on every node, `--nnodes` and `--node_rank`
   match the allocation, and the firewall lets the port through.
3. Start all nodes within the rendezvous timeout.
"""),
    "version_mismatch": ("Installed versions do not fit the script", """\
1. Print the versions the job really used (`pip freeze` inside the job's environment).
2. `unexpected keyword argument` or a removed flag: rename the flag for the installed release or
   pin the release the script was written for.
3. `undefined symbol` in a compiled extension: rebuild it against the installed torch/CUDA.
"""),
    "config_invalid": ("The configuration contradicts itself or the hardware", """\
1. Read the assertion: it names the two settings that disagree (batch sizes, precision flags).
2. DeepSpeed: set `train_batch_size` and `gradient_accumulation_steps` to `"auto"` so the trainer
   fills them in.
3. bf16 needs Ampere or newer; use fp16 on older GPUs.
"""),
    "cuda_error": ("A CUDA runtime error", """\
1. Errors are reported late: rerun with `CUDA_LAUNCH_BLOCKING=1` to get the real failing kernel.
2. "device-side assert" is nearly always an index out of range: labels >= vocabulary size or
   padding id -1 in an embedding lookup.
3. Illegal memory access inside a fused kernel: try without the custom kernel (e.g. flash
   attention off) to tell a library bug from a data problem.
"""),
    "hardware": ("A GPU, link or node fault", """\
1. Look up the Xid code in the node's kernel log; ECC errors and "fallen off the bus" are hardware.
2. Drain the node from the scheduler and open a ticket with the node name and the Xid lines.
3. Resume from the last checkpoint on other nodes; do not change the training configuration.
"""),
    "storage": ("Disk or filesystem trouble", """\
1. "No space left on device": check the output filesystem (`df -h`) and the checkpoint size times
   `save_total_limit`.
2. "Permission denied": the job's user cannot write the output directory; fix the path or rights.
3. A missing checkpoint file on resume: the previous save was interrupted; resume from the one before.
"""),
    "model_load": ("The model or tokenizer could not be loaded", """\
1. Offline nodes: download to a shared cache first and set `HF_HUB_OFFLINE=1` with that cache.
2. A local path that does not exist is taken for a hub repo id: check the path on every node.
3. `size mismatch` in a state dict: the checkpoint was saved with another vocabulary size; resize
   the embeddings before loading.
"""),
    "numerical": ("Training diverged", """\
1. Find the first step with a NaN/inf loss and the learning rate at that step.
2. Prefer bf16 to fp16, lower the learning rate or lengthen warm-up, and keep gradient clipping on.
3. A NaN from the very first step points at the data (empty labels) rather than the optimiser.
"""),
    "code_bug": ("A bug in the training script", """\
1. The innermost frame of your own code is where to look; the exception names the object.
2. Reproduce on one process with a tiny dataset before launching on many GPUs again.
3. Add a test for the case that failed.
"""),
    "unknown": ("The engine could not tell", """\
1. Upload every rank's log and the launcher's output: the first failing rank is often in a file
   that was left out.
2. Look for the earliest error line across ranks, not the last one.
3. When you find the cause, write it down as this problem's resolution so the next person sees it.
"""),
}


def default_runbook(category: str) -> tuple[str, str]:
    """(title, markdown body) shipped for the category; the unknown one for anything else."""
    return DEFAULT_RUNBOOKS.get(category) or DEFAULT_RUNBOOKS["unknown"]
