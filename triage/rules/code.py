"""Plain bugs in the training script: wrong devices, shapes, autograd misuse."""

from __future__ import annotations

import re

from triage.rules import HINT, ROOT, rule

_OPTIMIZER_STEP = re.compile(r"torch[/\\]optim[/\\](?!optimizer\.py|lr_scheduler)\w+\.py$")


def _optimizer_state_of_another_model(frames: list[dict]):
    """Shapes that disagree inside the optimizer's own step (Adam's exp_avg against a gradient): the
    optimizer state was loaded from a checkpoint of a model of another shape (a resume after a width change)."""
    if frames and _OPTIMIZER_STEP.search(str(frames[-1].get("file", ""))):
        return ("model_load", ("fix_path", "fix_config"),
                "the optimizer's state does not fit the model's parameters: it was loaded from a checkpoint of a "
                "model of another shape (resume from a checkpoint of this model, or skip the optimizer state)")
    return None


# (BERT-style models keep a token_type_ids buffer of max_position_embeddings and expand it to the input)
_POSITIONS = re.compile(r"position|embed_pos|pos_emb|positions\b|buffered_token_type_ids", re.IGNORECASE)
# a vision model adding its whole table of patch positions (a grid fixed by image_size / num_frames), not looking
# positions up by id as a text model does: `embeddings + self.position_embeddings`
_PATCH_GRID = re.compile(r"\+\s*self\.position_embeddings?(?!\s*\()\b")
_MODELING_FILE = re.compile(r"modeling_\w+\.py$|[/\\]models?[/\\]")


def _shapes_within(text: str, frames: list[dict]):
    """Shapes that disagree inside the optimizer's step (another model's optimizer state); or where a model's
    own code adds its position embeddings: the input is longer than the model's maximum positions (a row the
    preprocessing did not truncate), the data's length, not the script's code."""
    other_state = _optimizer_state_of_another_model(frames)
    if other_state is not None:
        return other_state
    if frames and _MODELING_FILE.search(str(frames[-1].get("file", ""))) \
            and _PATCH_GRID.search(str(frames[-1].get("code", ""))) and "must match the size of tensor" in text:
        return ("config_invalid", ("fix_config", "fix_data_file"),
                "the inputs reach the vision model as more (or fewer) patches than its position grid holds: the "
                "job's image size or frame count differs from the model config's (image_size, num_frames); make "
                "them agree")
    if frames and _MODELING_FILE.search(str(frames[-1].get("file", ""))) \
            and _POSITIONS.search(str(frames[-1].get("code", ""))) \
            and ("must match the size of tensor" in text or "must match the existing size" in text):
        return ("data_pipeline", ("reduce_seq_len", "fix_data_file"),
                "an input is longer than the model's maximum positions (its position embeddings end there): a row "
                "the preprocessing did not truncate; cut or drop rows over the limit")
    if "must match the existing size" in text:
        return False  # an expand() of the script's own (a collate writing rows into a padded tensor): not read here
    return None


def _engine_mixes_devices(frames: list[dict]):
    """The distributed engine's own step (ZeRO's gradient clipping with CPU offload) mixes its own tensors' devices:
    a bug of that release, not the script's placement."""
    from triage.rules.exceptions import above_torch_layers

    inner = above_torch_layers(frames)
    if inner and _ENGINE_INTERNALS.search(str(inner[-1].get("file", ""))):
        return ("version_mismatch", ("pin_versions", "fix_config"),
                "DeepSpeed's own optimizer step mixes devices (its CPU-offloaded gradients and a GPU tensor): a bug of "
                "the installed release; install another DeepSpeed release, or turn off the offload that meets it")
    return None


def _devices_met_in_own_code(frames: list[dict]):
    """Two GPUs' tensors meeting in the script's own module (its forward, its loss): the script put one of them
    on a device by hand (cuda:{local_rank} where the job's runner already narrowed the visible GPUs)."""
    from triage.rules.exceptions import library_file, own_model_raised

    engine = _engine_mixes_devices(frames)
    if engine is not None:
        return engine
    if own_model_raised(frames):
        return ("code_bug", ("fix_code",),
                "two GPUs' tensors meet in the script's own code: it moves a tensor to a device of its own choosing "
                "(cuda:<local rank>) instead of the model's or the runner's device")
    own = [index for index, frame in enumerate(frames) if not library_file(str(frame.get("file", "")))]
    if len(own) >= 2 and own[-1] > 0 and library_file(str(frames[own[-1] - 1].get("file", ""))):
        # the trainer called back into the team's code (a reward function, a metric, a collator) and the
        # mismatch is below it: the callback runs a model or tensors of its own on a device it chose itself
        return ("code_bug", ("fix_code",),
                "two GPUs' tensors meet under the script's own callback (a reward function, a metric) that the "
                "trainer called: the callback keeps its own model or tensors on a fixed device (cuda / cuda:0) "
                "instead of the rank's device")
    return None


_ENGINE_INTERNALS = re.compile(r"[/\\]deepspeed[/\\]runtime[/\\](?:zero|fp16|bf16_optimizer|engine)")


# the Trainer's own rename of its checkpoint folder (tmp-checkpoint-N -> checkpoint-N)
_TRAINER_RENAME = re.compile(r"No such file or directory: '[^']*tmp-checkpoint-\d+' -> '[^']*checkpoint-\d+'")


def _trainer_checkpoint_rename(text: str, frames: list[dict]):
    """The rename is the Trainer's own, on every process of a shared output folder: a bug of transformers 4.36.0
    (fixed in 4.36.1), not the script's code."""
    if not _TRAINER_RENAME.search(text):
        return None
    return ("version_mismatch", ("pin_versions", "fix_path"),
            "the Trainer renames tmp-checkpoint-N to checkpoint-N on every process and the others find it gone "
            "(transformers 4.36.0): install another transformers release, or save from the main process only")


RULES = [
    rule(
        "code.leftover_breakpoint",
        "code_bug",
        ROOT,
        ["BdbQuit"],
        # breakpoint() / pdb.set_trace() left in the script: under a launcher there is no terminal to answer
        # the debugger, which quits at once and ends the rank
        r"\bbdb\.BdbQuit\b|^\s*BdbQuit\s*$",
        ["fix_code"],
        0.85,
        "a breakpoint() or pdb.set_trace() left in the script stopped the rank: a launched job has no terminal "
        "for the debugger",
    ),
    rule(
        "code.data_parallel_in_ddp",
        "code_bug",
        ROOT,
        ["(device_ids[0]) but found"],
        # nn.DataParallel left in a script that a launcher runs once per GPU: its device_ids default to every
        # visible GPU, so device_ids[0] is cuda:0 while this rank's model sits on its own GPU
        r"module must have its parameters and buffers on device \S+ \(device_ids\[0\]\) but found",
        ["fix_code"],
        0.85,
        "nn.DataParallel inside a job that already runs one process per GPU: it scatters to device_ids[0] "
        "(cuda:0) while this rank's model lives on its own GPU; remove the DataParallel wrapper (DDP or the "
        "launcher's prepare() handles the model)",
    ),
    rule(
        "code.shared_tensors_save",
        "code_bug",
        ROOT,
        ["Some tensors share memory"],
        # safetensors refusing tied weights (an LM head tied to the embedding) in a plain save_file
        r"Some tensors share memory, this will lead to duplicate memory on disk",
        ["fix_code"],
        0.85,
        "safetensors cannot save tensors that share memory (tied weights): save with the model's "
        "save_pretrained / save_model, which handles ties, or untie or clone them before saving",
    ),
    rule(
        "code.rename_race",
        "code_bug",
        ROOT,
        ["No such file or directory: '"],
        # os.replace/rename whose source vanished: another process (another rank) already moved it; every
        # rank writes the same temporary file
        r"No such file or directory: '[^']{1,300}' -> '[^']{1,300}'",
        ["fix_code", "fix_path"],
        0.8,
        "a rename found its source gone: another rank already moved the same temporary file, because every "
        "rank saves to one path; save on one rank (rank 0) or give each rank its own file",
        within=_trainer_checkpoint_rename,
    ),
    rule(
        "code.unpicklable",
        "code_bug",
        ROOT,
        ["Can't pickle", "can't pickle", "cannot pickle"],
        r"[Cc]an't pickle (?:local object|<|[\w.]+ objects?)|cannot pickle '[\w.]+' object",
        ["fix_code", "reduce_dataloader_workers"],
        0.8,
        "an object handed to a worker process cannot be pickled (a local function or lambda as collate_fn, "
        "an open handle): define it at module level, or use no worker processes",
    ),
    rule(
        "code.cpp_terminate",
        "code_bug",
        HINT,
        ["terminate called after throwing"],
        # the C++ exception a process died of ("terminate called after throwing an instance of
        # 'gloo::EnforceNotMet'"): the class the "what():" line under it belongs to (triage.decide names it)
        r"terminate called after throwing an instance of '(?:\w+::)*(\w+)'",
        [],
        0.05,
        "a C++ exception ended the process",
        facts=lambda match: {"terminate_class": match.group(1)},
    ),
    rule(
        "code.collective_mismatch",
        "code_bug",
        ROOT,
        ["mismatch between collectives", "Tensors must be CUDA and dense", "Tensors must be contiguous",
         "collective mismatch", "doesn't match expected size"],
        # gloo's own words when the ranks disagree on a tensor's size ("Received data size doesn't match
        # expected size. Is there a distributed collective mismatch in your code?")
        r"Detected mismatch between collectives on ranks|Tensors must be CUDA and dense|Tensors must be contiguous|"
        r"distributed collective mismatch|Received data size doesn't match expected size",
        ["fix_code"],
        0.8,
        "the ranks did not call the same collective with the same kind of tensor (a rank-dependent branch, "
        "or a CPU / non-contiguous tensor handed to the backend)",
    ),
    rule(
        "config.devices_spread",
        "config_invalid",
        ROOT,
        ["Expected all tensors to be on the same device"],
        r"Expected all tensors to be on the same device.{0,80}\b(?:cuda|npu|xpu):(\d+) and (?:cuda|npu|xpu):(\d+)",
        ["fix_config"],
        0.75,
        "the model is spread over several GPUs in one process (device_map='auto' or every GPU visible): "
        "pin each process to one device (CUDA_VISIBLE_DEVICES / device_map per local rank)",
        within=lambda text, frames: _devices_met_in_own_code(frames),
    ),
    rule(
        "code.batchnorm_single_value",
        "code_bug",
        ROOT,
        ["Expected more than 1 value per channel"],
        # a batch of one sample (the last, short batch of a shard) reaching BatchNorm in training mode
        r"Expected more than 1 value per channel when training",
        ["fix_code", "fix_config"],
        0.8,
        "a batch of a single sample reached a BatchNorm layer in training (the last, short batch of a rank's "
        "shard): drop the last incomplete batch (DataLoader(drop_last=True)) or even out the shards",
    ),
    rule(
        "code.scatter_devices",
        "code_bug",
        ROOT,
        ["all tensors must be on devices[0]"],
        # DataParallel / DDP without device_ids scattering inputs from a module that sits on another GPU than the
        # first of its devices (the script moved the model to its own device and wrapped it without device_ids)
        r"all tensors must be on devices\[0\]",
        ["fix_code"],
        0.7,
        "the wrapped model sits on another GPU than the first of the devices the wrapper uses: pass "
        "device_ids=[local_rank] (and output_device) to DDP, or move the model there first",
    ),
    rule(
        "code.device_mismatch",
        "code_bug",
        ROOT,
        ["Expected all tensors to be on the same device", "Expected object of device type"],
        r"Expected all tensors to be on the same device|Expected object of device type",
        ["fix_code"],
        0.7,
        "tensors live on different devices: the script moves something to the wrong device",
        within=lambda text, frames: _engine_mixes_devices(frames),
    ),
    rule(
        "code.shapes",
        "code_bug",
        ROOT,
        ["shapes cannot be multiplied", "must match the size of tensor", "to match target batch_size",
         "must match the existing size"],
        r"shapes cannot be multiplied|must match the size of tensor \w+ \(\d+\)|to match target batch_size|"
        r"expanded size of the tensor \(\d+\) must match the existing size \(\d+\)",
        ["fix_code", "fix_config"],
        0.5,
        "tensor shapes do not fit each other",
        within=_shapes_within,
    ),
    rule(
        "code.dtype_mismatch",
        "code_bug",
        ROOT,
        ["should be the same", "expected scalar type", "must have the same dtype", "expected mat1 and mat2",
         "and m2 to have the same dtype", "can't be cast to the desired output type"],
        # (an in-place op writing a float result into an integer tensor: "result type Float can't be cast to the
        # desired output type Long", a BatchNorm counter blended like a weight)
        r"Input type \(.{1,60}\) and (?:weight|bias) type \(.{1,60}\) should be the same|expected scalar type \w+ but found \w+|"
        r"must have the same dtype|expected (?:mat1 and mat2|m1 and m2) to have the same dtype|"
        r"result type \w+ can't be cast to the desired output type \w+",
        ["fix_code", "enable_mixed_precision"],
        0.6,
        "tensors of different dtypes meet in one operation (a cast is missing, or autocast is off)",
    ),
    rule(
        "code.autograd",
        "code_bug",
        ROOT,
        [
            "does not require grad",
            "backward through the graph a second time",
            "modified by an inplace operation",
        ],
        r"element 0 of tensors does not require grad|backward through the graph a second time|"
        r"modified by an inplace operation",
        ["fix_code", "fix_config"],
        0.7,
        "autograd was misused (frozen parameters, double backward or an in-place change)",
    ),
    rule(
        "code.ddp_unused",
        "config_invalid",
        ROOT,
        ["Expected to have finished reduction in the prior iteration"],
        r"Expected to have finished reduction in the prior iteration",
        ["fix_config", "fix_code"],
        0.8,
        "DDP found parameters that got no gradient: set find_unused_parameters / ddp_find_unused_parameters",
    ),
]


# peers that finished (exit 0) while some ranks still waited in a collective, which then lost the connection:
# the script calls a collective on some ranks only (read in triage/decide.py when nothing else is a root)
LEFT_ALONE = ("code_bug", ("fix_code",), 0.3,
              "a collective that its peers never called: they finished (exit 0) while this rank still waited in "
              "it, so the script calls a barrier/all_reduce on some ranks only, or a different number of times")
