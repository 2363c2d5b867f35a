"""Disk, filesystem and checkpoint I/O."""

from __future__ import annotations

import re

from triage.rules import HINT, ROOT, rule

# the files of a tokenizer or adapter folder (a missing weights file under a checkpoint folder is a resume
# path, the storage's)
_MODEL_FILE = re.compile(
    r"No such file or directory: '?[^'\s]*(?:tokenizer(?:_config)?\.(?:model|json)|spiece\.model|vocab\.(?:json|txt)|"
    r"merges\.txt|special_tokens_map\.json|generation_config\.json|adapter_config\.json|"
    # a weight shard of a sharded checkpoint ("model-00003-of-00003.safetensors", "pytorch_model-00001-of-00002.bin")
    r"(?:model|pytorch_model)-\d{3,6}-of-\d{3,6}\.(?:safetensors|bin)|(?:model|pytorch_model)\.(?:safetensors|bin)|"
    r"adapter_model\.(?:safetensors|bin))(?:'|$|\s)"
)


# shutil.rmtree's own frames: a file gone from under it was deleted by another process
_RMTREE = re.compile(r"_?rmtree")
_SHUTIL = re.compile(r"[/\\]shutil\.py$")


def _model_file_missing(text: str, frames: list[dict]):
    """A missing file of a model, tokenizer or adapter folder (a tokenizer.model under a download path
    that was never filled): the model's path, even when a tokenizer's loading frames look like data code.
    A file that vanished while shutil.rmtree walked its folder: another process deleted it first."""
    if frames and _RMTREE.match(str(frames[-1].get("function", ""))) \
            and _SHUTIL.search(str(frames[-1].get("file", ""))):
        return ("code_bug", ("fix_code",),
                "a folder was deleted by two processes at once (rmtree found its files already gone): let one "
                "rank clean it, then a barrier")
    if not _MODEL_FILE.search(text) and not _restoring_a_model(frames):
        return None
    return ("model_load", ("fix_path",),
            "a file of the model, tokenizer or adapter folder does not exist at the path given: the folder was not "
            "downloaded there, or the path points at another folder")


# a library restoring a model's files (its context, config, tokenizer, weights) from a folder it was given
_MODEL_RESTORE = re.compile(r"^_?(?:try_)?restore\w*|^load_context$|^from_pretrained$|^_?load_model\w*|"
                            r"^import_ckpt$|^_?load_(?:pretrained|hf)\w*")


def _restoring_a_model(frames: list[dict]) -> bool:
    """The missing file was asked for by a library's model-restoring code (NeMo's restore of a model's
    context, a from_pretrained): the model path given to it is wrong."""
    from triage.rules.exceptions import library_file

    return any(_MODEL_RESTORE.match(str(frame.get("function", ""))) and library_file(str(frame.get("file", "")))
               for frame in frames[-5:])


def _stale_mount(text: str, frames: list[dict]):
    """ESTALE: the NFS server no longer knows the file the client holds (deleted or replaced under it, or the
    export remounted); no space is missing."""
    if "Stale file handle" not in text and "[Errno 116]" not in text:
        return None
    return ("storage", ("fix_path",),
            "a network mount answered 'stale file handle': the file was replaced or the export remounted under "
            "the job; remount, or read from a path that is not rewritten while the job runs")


# where a process keeps shared memory: semaphores and queues of multiprocessing, torch's shared tensors
_SHARED_MEMORY_FRAMES = re.compile(r"multiprocessing[/\\](?:synchronize|queues|heap|shared_memory|reductions)\.py$|"
                                   r"torch[/\\]multiprocessing[/\\]|torch[/\\]storage\.py$")


# an NCCL WARN line from its shared-memory code ("include/shm.h:28 NCCL WARN Call to posix_fallocate failed : No
# space left on device")
_NCCL_SHM = re.compile(r"NCCL WARN.{0,120}(?:posix_fallocate|shared memory|shm)|shm\.(?:h|cc)[:\d]*\s+NCCL WARN")


def _shared_memory_full(text: str, frames: list[dict]):
    """ENOSPC raised while creating a semaphore, a queue or a shared tensor: /dev/shm is full (a container's
    64 MB default against DataLoader workers), not a disk."""
    if _NCCL_SHM.search(text):
        # NCCL's own shared-memory transport could not size its segment in /dev/shm (a container's 64 MB
        # default): the communicator fails, no disk is full
        return ("nccl_error", ("increase_shm", "set_nccl_env"),
                "NCCL could not create its shared-memory segment in /dev/shm (no space left there): give the "
                "container more shared memory (--shm-size, --ipc=host), or turn NCCL's shm transport off "
                "(NCCL_SHM_DISABLE=1)")
    if not frames or not _SHARED_MEMORY_FRAMES.search(str(frames[-1].get("file", "")).replace("\\", "/")):
        return None
    return ("dataloader_worker", ("increase_shm", "reduce_dataloader_workers"),
            "no space left in shared memory (/dev/shm): creating a semaphore, queue or shared tensor for the "
            "DataLoader workers failed; give the container more shared memory or use fewer workers")


RULES = [
    rule(
        "storage.checkpoint_shards_mixed",
        "storage",
        ROOT,
        ["_optim_states.pt' under", "_model_states.pt' under"],
        # DeepSpeed counting a checkpoint folder's shards: more (or fewer) than the run that reads it wrote, a
        # folder two runs saved into, or a save some processes never finished
        r"Expected \d+ of '\*_(?:optim|model)_states\.pt' under '[^']{1,300}' but found \d+ files",
        ["fix_path"],
        0.85,
        "the checkpoint folder holds another number of shards than the run wrote: two runs saved into it, or some "
        "processes never finished their save; use a clean checkpoint folder (one per run)",
    ),
    rule(
        "storage.stuck_on_file_lock",
        "storage",
        ROOT,
        ["filelock/_api.py", "filelock/_unix.py"],
        # a stack dump (py-spy dump, faulthandler) of a process waiting in a file lock: the cache folder's file
        # system does not grant locks (NFS without lockd, some network file systems), so the rank never
        # leaves loading while its peers time out waiting for it
        r"\bacquire \(\S*filelock[/\\]_(?:api|unix)\.py:\d+\)|filelock[/\\]_(?:api|unix)\.py\"?,? line \d+,? in acquire",
        ["fix_path"],
        0.75,
        "a process waited in a file lock that never came (a cache folder on a file system without working "
        "locks): point the datasets / hub cache at a local disk",
    ),
    rule(
        "storage.pod_evicted_disk",
        "storage",
        ROOT,
        ["ephemeral-storage", "ephemeral local storage", "local ephemeral storage"],
        # Kubernetes evicted the pod: what it wrote to the container's own disk (checkpoints, caches under the
        # working directory) passed the node's threshold or the container's ephemeral-storage limit
        r"low on resource: ephemeral-storage|ephemeral local storage usage exceeds|"
        r"exceeded its local ephemeral storage limit",
        ["free_disk", "fix_path"],
        0.9,  # the orchestrator's own record: the pod's processes vanished, the peers' errors follow
        "the pod was evicted for filling its local (ephemeral) disk: write checkpoints and caches to a mounted "
        "volume, or raise the ephemeral-storage limit",
    ),
    rule(
        "storage.no_space",
        "storage",
        ROOT,
        ["No space left on device", "Disk quota exceeded", "ENOSPC"],
        r"^(?!.{0,400}(?:/dev/shm|file </torch_))(?:.{0,2000}?)(?:No space left on device(?!.{0,200}(?:/dev/shm|torch_))|"
        r"Disk quota exceeded|ENOSPC)",
        ["free_disk", "fix_path"],
        0.9,
        "the disk is full",
        within=_shared_memory_full,
    ),
    rule(
        "storage.low_disk_warning",
        "storage",
        HINT,
        ["free disk space", "not enough disk", "Not enough disk", "low on disk", "Low disk"],
        # a downloader or a saver warned that the disk was nearly full: a file written after it may be cut
        # (triage.pipeline reads a truncated checkpoint or data file after it as the disk's fault)
        r"[Nn]ot enough (?:free )?disk space|[Ll]ow (?:on )?disk space|disk (?:is )?almost full",
        ["free_disk", "fix_path"],
        0.05,
        "a warning said the disk was almost full",
    ),
    rule(
        "storage.stream_writer",
        "storage",
        ROOT,
        ["PytorchStreamWriter", "failed writing file", "unexpected pos"],
        r"PytorchStreamWriter failed writing file|unexpected pos \d+ vs \d+",
        ["free_disk", "fix_path"],
        0.85,
        "writing a checkpoint failed (usually a full or failing volume)",
    ),
    rule(
        "storage.io_error",
        "storage",
        ROOT,
        ["Input/output error", "Errno 5", "Stale file", "I/O error", "File too large", "os error"],
        r"Input/output error|\[Errno (?:5|27)\]|Stale file handle|\bI/O error\b|"
        r"File too large|\(os error (?:5|27|30)\)",
        ["free_disk", "fix_path"],
        0.88,  # above an unreadable checkpoint: a write that the filesystem refused says why it is unreadable
        "the filesystem returned an I/O error (a full or failing disk, a remote mount, a stale NFS handle, a "
        "file size limit): free space or write elsewhere, or fix the mount",
        within=_stale_mount,
    ),
    rule(
        "storage.wrong_kind",
        "storage",
        ROOT,
        ["Is a directory", "Not a directory", "Errno 21", "Errno 20"],
        r"Is a directory|Not a directory|\[Errno (?:20|21)\]",
        ["fix_path"],
        0.9,
        "a path the job writes or reads is a folder where a file is expected (or the reverse)",
    ),
    rule(
        "storage.read_only",
        "storage",
        ROOT,
        ["Read-only file system", "Errno 30", "EROFS"],
        r"Read-only file system|\[Errno 30\]|\bEROFS\b",
        ["fix_path"],
        0.88,
        "the job writes to a read-only mount: point the output, cache or checkpoint path at a writable one",
    ),
    rule(
        "storage.permission",
        "storage",
        ROOT,
        ["Permission denied", "PermissionError"],
        r"PermissionError|\[Errno 13\] Permission denied",
        ["fix_path"],
        0.7,
        "the job may not write or read a path",
    ),
    rule(
        "storage.resume_checkpoint_missing",
        "storage",
        ROOT,
        ["find a valid checkpoint"],
        # transformers' Trainer given resume_from_checkpoint=PATH where no checkpoint was saved
        r"Can't find a valid checkpoint at",
        ["fix_path"],
        0.85,
        "the checkpoint folder to resume from is not there (or holds no saved state): point to one that was saved",
    ),
    rule(
        "storage.not_found",
        "storage",
        ROOT,
        ["FileNotFoundError", "No such file or directory", "Parent directory"],
        r"FileNotFoundError|\[Errno 2\] No such file or directory|Parent directory \S+ does not exist",
        ["fix_path"],
        0.5,
        "a file or folder the job needs does not exist",
        reading_data=("data_pipeline", ["fix_path", "fix_data_file"],
                      "a file the dataset lists or the data config points at does not exist"),
        within=_model_file_missing,
    ),
    rule(
        "storage.checkpoint_frames",
        "storage",
        HINT,
        ["save_checkpoint", "_save_checkpoint", "torch.save", "_save_zero_checkpoint", "serialization.py"],
        r"in (?:_?save_checkpoint|_save_zero_checkpoint|_save|save)\b|torch/serialization\.py",
        ["free_disk", "fix_path"],
        0.3,
        "the failure happened while a checkpoint was being saved",
    ),
]
