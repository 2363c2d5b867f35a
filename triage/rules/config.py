"""Training flags or launcher configs that contradict each other or the hardware."""

from __future__ import annotations

import re

from triage.rules import ROOT, rule

# `torch.cuda.set_device(rank)` / `cuda:{SLURM_PROCID}`: the global rank used as a GPU index
_GLOBAL_RANK_DEVICE = re.compile(r"(?:set_device\(|device\(\s*f?[\"']cuda:?\{?|\.to\(\s*)[^)]*?"
                                 r"\b(?:rank|global_rank|world_rank|SLURM_PROCID|RANK|get_rank\(\))\b", re.IGNORECASE)


def _device_from_global_rank(frames: list[dict]):
    """The line that called torch picks the GPU by the global rank: on the second node rank 8 asks for GPU 8.
    In the script's own code, that line; in a library's (a trainer's DDP set-up), its release's."""
    from triage.rules.exceptions import TORCH_FILE, library_file

    for frame in reversed(frames):
        path = str(frame.get("file", ""))
        if TORCH_FILE.search(path) or path.startswith("<"):
            continue
        code = str(frame.get("code", ""))
        if not _GLOBAL_RANK_DEVICE.search(code) or "local" in code.lower():
            return None
        if library_file(path):
            return ("code_bug", ("fix_code", "pin_versions"),
                    f"the library picks the GPU by the global rank ({code.strip()[:80]}): past the first node that "
                    "index does not exist; a release that uses the local rank, or set the device in the script")
        return ("code_bug", ("fix_code",),
                f"the script picks the GPU by the global rank ({code.strip()[:80]}): past the first node that "
                "index does not exist; use the local rank (LOCAL_RANK, SLURM_LOCALID)")
    return None


def _argparse_exit(match: re.Match) -> dict:
    # argparse reports the refusal and exits the process with SystemExit(2)
    return {"exception": "SystemExit", "message": match.string.strip()[:500]}


# TrainingArguments fields that transformers 4.x took and transformers 5 no longer has (a 4.x recipe's keys are
# then "not used by the HfArgumentParser")
REMOVED_IN_TRANSFORMERS_5 = frozenset({
    "overwrite_output_dir", "logging_dir", "evaluation_strategy", "no_cuda", "use_mps_device", "fp16_backend",
    "per_gpu_train_batch_size", "per_gpu_eval_batch_size", "tpu_num_cores", "push_to_hub_token", "past_index",
    "use_ipex", "jit_mode_eval", "ray_scope", "save_safetensors", "include_tokens_per_second", "torchdynamo",
    "split_batches", "dispatch_batches", "include_inputs_for_metrics", "use_legacy_prediction_loop",
    "mp_parameters", "fsdp_min_num_params", "fsdp_transformer_layer_cls_to_wrap", "xpu_backend", "sharded_ddp",
})
_UNUSED_KEYS = re.compile(r"not used by the HfArgumentParser: \[([^\]]{1,2000})\]")


def removed_training_args(text: str) -> list[str]:
    """The keys an HfArgumentParser left unused, where all of them are ones transformers 5 removed from
    TrainingArguments (else [])."""
    found = _UNUSED_KEYS.search(text or "")
    if found is None:
        return []
    keys = [key.strip().strip("'\"") for key in found.group(1).split(",")]
    # (only where every unused key is one of them: a list that also holds current keys, output_dir or
    # learning_rate, is a config given to the wrong command or stage)
    return keys if keys and all(key in REMOVED_IN_TRANSFORMERS_5 for key in keys) else []


def _keys_removed_by_a_release(text: str, frames: list[dict]):
    """The unused keys are TrainingArguments fields that transformers 5 removed: a 4.x recipe on a 5.x install."""
    removed = removed_training_args(text)
    if not removed:
        return None
    return ("version_mismatch", ("rename_flag", "pin_versions"),
            f"the config sets {', '.join(removed)}, which transformers 5 removed from TrainingArguments: a recipe "
            "written for transformers 4.x")


def _no_columns_left(text: str, frames: list[dict]):
    """The Trainer found no column its model takes. With none ignored either, the dataset has no columns at all:
    a filter or map left it empty, which is the data's (the filter's limits are the setting to change)."""
    if re.search(r"The following columns have been ignored: \[\s*\]", text):
        return ("data_pipeline", ("fix_config", "fix_data_file"),
                "the dataset reaching the Trainer has no columns at all: a filter or map left it empty (relax the "
                "filter's limits, or check the data it reads)")
    return None


RULES = [
    rule(
        "config.no_model_columns",
        "config_invalid",
        ROOT,
        ["No columns in the dataset match the model's forward method signature"],
        # the Trainer drops every column its model's forward does not name (remove_unused_columns): raw columns
        # (image, text) that the job's collator was meant to turn into inputs are all dropped before it runs
        r"No columns in the dataset match the model's forward method signature",
        ["fix_config", "fix_code"],
        0.8,
        "the Trainer dropped every dataset column because none is an argument of the model's forward: keep them "
        "for the collator that builds the inputs (remove_unused_columns=False), or map the raw columns into the "
        "model's inputs first",
        within=_no_columns_left,
    ),
    rule(
        "config.single_process_only",
        "config_invalid",
        ROOT,
        ["support multi", "support distributed", "not supported", "only support", "support DDP", "support FSDP"],
        # a library (or a build of it) that runs in one process only, launched across several
        r"(?:does not|doesn't|do not|don't|cannot|can't) (?:yet |currently )?support "
        r"(?:multi[- ]?(?:GPU|node|process|device)|distributed|DDP|FSDP)\b|"
        r"\b(?:multi[- ]?(?:GPU|node|device)|distributed) (?:training |setups? |mode )?(?:is|are) not (?:yet )?supported|"
        r"only supports? (?:a )?single[- ](?:GPU|device|process)",
        ["fix_config"],
        0.7,
        "a library in the job runs in one process only, and the job launches several: launch one process, or "
        "leave that library's option out of the distributed run",
        flags=re.IGNORECASE,
    ),
    rule(
        "config.ddp_over_spread_model",
        "config_invalid",
        ROOT,
        ["device_ids and output_device arguments only work with"],
        # DDP wrapping a model whose parameters sit on several GPUs (device_map="auto", 8-bit loading spread over
        # the GPUs) while each process was to own one GPU
        r"device_ids and output_device arguments only work with single-device",
        ["fix_config", "fix_code"],
        0.8,
        "DDP wraps a model spread over several GPUs (device_map='auto' or a low-memory loading mode): load each "
        "process's model on its own GPU (device_map={'': local_rank}) or run model parallel without DDP",
    ),
    rule(
        "config.image_size_mismatch",
        "config_invalid",
        ROOT,
        ["doesn't match model ("],
        # a vision model's patch embedding refusing images of another size than its config's image_size: the
        # job resizes (or its processor crops) to a size the model was not built for
        r"Input image size \(\d+\s?\*\s?\d+\) doesn't match model \(\d+\s?\*\s?\d+\)",
        ["fix_config", "fix_data_file"],
        0.75,
        "the images reach the vision model at another size than its config's image_size: make the job's resize "
        "(or the image processor's size) and the model's image_size agree",
    ),
    rule(
        "config.ctc_blank_range",
        "config_invalid",
        ROOT,
        ["blank must be in label range"],
        # the CTC blank index set to the vocabulary size (or past it): the output layer has no such class
        r"blank must be in label range",
        ["fix_config", "fix_code"],
        0.8,
        "the CTC blank index is outside the model's output classes: set blank_id to a class the output layer "
        "has (0 by convention, or vocab size - 1 where the blank is the last class) and size the output layer "
        "as vocabulary + blank",
    ),
    rule(
        "config.cli_value_refused",
        "config_invalid",
        ROOT,
        ["error: argument", "arguments are required"],
        # the script's argparse refusing a value the launch command gave it: an empty variable ("--rank ''"),
        # a word where a number goes, a flag with nothing after it, a required flag left out
        # (or two flags the parser keeps apart: "argument --gpu-ids: not allowed with argument --gpus")
        r"error: argument [\w\-/ ]{1,60}: (?:invalid \w{1,20} value: '|expected (?:one|\d+) arguments?|"
        r"not allowed with argument -)|"
        r"error: the following arguments are required: --?\w",
        ["fix_config"],
        0.75,
        "the script's argument parser refused a value on the command line (often a variable the job environment "
        "left empty, or a word where a number goes): fix the launch command or the variable it reads",
        facts=_argparse_exit,
    ),
    rule(
        "config.gpu_too_old_for_compiler",
        "config_invalid",
        ROOT,
        ["too old to be supported by the triton", "Triton only supports devices"],
        # torch.compile's inductor backend generates Triton kernels, which need compute capability 7.0+
        r"too old to be supported by the triton GPU compiler|Triton only supports devices of CUDA Capability",
        ["fix_config"],
        0.8,
        "torch.compile's backend (Triton) does not support this GPU: turn torch_compile off, or run on a newer GPU",
    ),
    rule(
        "config.kernel_out_of_resources",
        "config_invalid",
        ROOT,
        ["out of resource:"],
        # a Triton kernel (a fused-kernel library, a custom kernel, inductor's) launched with block sizes or
        # stages that need more of the GPU's on-chip shared memory or registers than this GPU model has
        r"OutOfResources\b.{0,40}out of resource: (?:shared memory|registers|threads)|"
        r"^\W*out of resource: (?:shared memory|registers), Required: \d+",
        ["fix_config", "pin_versions"],
        0.8,
        "a GPU kernel (Triton) asks for more on-chip shared memory or registers than this GPU has: turn the "
        "fused kernel off for this GPU, or lower its block size / stages, or use a kernel release that fits it",
    ),
    rule(
        "config.hub_write_offline",
        "config_invalid",
        ROOT,
        ["offline mode is enabled"],
        # pushing to the Hub (creating the repo, uploading a checkpoint) from a job that runs offline:
        # push_to_hub or hub_strategy contradicts HF_HUB_OFFLINE; nothing is missing from the cache
        r"Cannot reach \S*/api/(?:repos/create|\S*(?:commit|upload|preupload)\S*): offline mode is enabled",
        ["fix_config"],
        0.9,
        "the job pushes to the Hub while the Hub is switched off (HF_HUB_OFFLINE): turn push_to_hub off for "
        "offline runs, or push from a machine online after the run",
    ),
    rule(
        "config.zero3_partitioned_weight",
        "config_invalid",
        ROOT,
        ["'weight' must be 2-D"],
        # ZeRO-3 partitions every parameter to an empty placeholder until its engine gathers it: a model used
        # outside the engine's forward (one GPU started without the launcher, a generate() before wrapping)
        # meets an embedding weight that is not 2-D
        r"'weight' must be 2-D",
        ["fix_config"],
        0.75,
        "a ZeRO-3-partitioned weight was used outside DeepSpeed's engine (a single-GPU run with a ZeRO-3 config and "
        "no launcher): drop the ZeRO-3 config for one GPU, or start the job through the distributed launcher",
    ),
    rule(
        "config.inference_memory_share",
        "config_invalid",
        ROOT,
        ["desired GPU memory utilization"],
        # vLLM's start-up check: the share of the GPU it is told to take (gpu_memory_utilization) is more than
        # is free, because the trainer (colocated) or another process already holds part of the GPU
        r"less than desired GPU memory utilization",
        ["fix_config"],
        0.8,
        "the inference engine is told to take a larger share of the GPU than is free (gpu_memory_utilization, "
        "with the trainer on the same GPU): lower that share",
    ),
    rule(
        "config.mixed_dtensor",
        "config_invalid",
        ROOT,
        ["mixed torch.Tensor and DTensor"],
        # FSDP2 / tensor parallel: a parameter or buffer the sharding plan left out (tied weights, a module
        # not wrapped) meets sharded ones in one op
        r"got mixed torch\.Tensor and DTensor",
        ["fix_config", "fix_code"],
        0.8,
        "a plain tensor met sharded DTensors in one op: a module or tied weight was left out of the FSDP2 / "
        "tensor-parallel plan",
    ),
    rule(
        "config.class_weights_count",
        "config_invalid",
        ROOT,
        ["weight tensor should be defined"],
        # cross-entropy class weights listed for another number of classes than the model's labels
        r"weight tensor should be defined either for all \d+ classes or no classes",
        ["fix_config"],
        0.8,
        "the class weights in the settings do not list one weight per class of the model",
    ),
    rule(
        "config.registry_missing",
        "config_invalid",
        ROOT,
        ["registry"],
        # registry-built configs (mmengine, detectron2-style, fairseq): the config names a type that was never
        # registered, a misspelt name or a custom module the config's custom_imports does not import
        r"is not in the [\w:.]+ registry|not registered in (?:the )?[\w:.]+ registry|"
        r"No object named '\w+' found in '\w+' registry",
        ["fix_config"],
        0.8,
        "the config names a type its registry does not hold: a misspelt type, or a custom module that is never "
        "imported (add it to the config's custom imports)",
    ),
    rule(
        "config.no_nccl_build",
        "config_invalid",
        ROOT,
        ["doesn't have NCCL built in"],
        # a CPU-only or Windows build of torch asked for the nccl backend: the launch or the script chose it
        r"Distributed package doesn't have NCCL built in",
        ["fix_config"],
        0.85,
        "the job asks for the nccl backend on a torch build without NCCL (a CPU-only install, or Windows): "
        "use the gloo backend there, or run on a Linux CUDA build",
    ),
    rule(
        "config.ranks_built_different_models",
        "config_invalid",
        ROOT,
        ["appears not to match sizes of the same param", "appears not to match strides", "not to match",
         "DDP expects same model across all ranks"],
        # DDP's check at wrap time: the ranks' models differ in shape or in their number of parameters (a config,
        # adapter, label or vocabulary file that differs between nodes)
        r"appears not to match (?:sizes|strides) of the same param in process|"
        r"DDP expects same model across all ranks, but Rank \d+ has \d+ params, while rank \d+ has inconsistent",
        ["fix_config", "fix_path"],
        0.85,
        "the ranks built models of different shapes: a config, vocabulary or label file differs between the "
        "nodes (another copy of the job folder), or the model depends on rank-local data",
    ),
    rule(
        "config.optimizer_groups",
        "config_invalid",
        ROOT,
        ["doesn't match the size of optimizer's group", "parameter group that doesn't match", "DP world size of"],
        r"loaded state dict (?:contains a parameter group that doesn't match the size of optimizer's group|"
        r"has a different number of parameter groups)|"
        # DeepSpeed ZeRO resumed on another data-parallel size
        r"used a DP world size of \d+ but the current world size is \d+",
        ["fix_config", "fix_path"],
        0.8,
        "the optimizer state being resumed was saved for other parameter groups: another world size or "
        "sharding (ZeRO/FSDP), other trainable parameters (LoRA settings, frozen layers), or another model",
    ),
    rule(
        "config.invalid_device_ordinal",
        "config_invalid",
        ROOT,
        ["invalid device ordinal"],
        r"invalid device ordinal",
        ["fix_config"],
        0.85,
        "a process asked for a GPU index the machine does not have: more processes per node than visible GPUs "
        "(--nproc_per_node, CUDA_VISIBLE_DEVICES), or a device id written into the script",
        within=lambda text, frames: _device_from_global_rank(frames),
    ),
    rule(
        # a launcher's or framework's own check that the world it was told of fits the GPUs this process sees
        # (fairseq's single-node fallback when the multi-node init was not configured, a step given no GPUs)
        "config.world_past_devices",
        "config_invalid",
        ROOT,
        ["available devices", "available GPUs"],
        r"world[ _]size (?:is |of |= ?)?\d+ but (?:only )?(?:have|has|found|there are) \d+ available (?:devices|GPUs)",
        ["fix_config", "fix_rendezvous"],
        0.8,
        "the world size the job was given does not fit the GPUs this process sees: a step without its GPUs, or a "
        "multi-node job that fell back to single-node start-up (its multi-node init settings are missing)",
    ),
    rule(
        "config.no_process_group",
        "config_invalid",
        ROOT,
        ["process group has not been initialized", "process group is not initialized", "init_process_group"],
        # (not torch's start-up warning "... or call init_process_group() with a device_id": no error)
        r"[Dd]efault process group (?:has not been|is not) initialized|make sure to call init_process_group",
        ["fix_config", "fix_code"],
        0.8,
        "a distributed call ran before the process group existed: the script was started without a "
        "distributed launcher (torchrun / accelerate launch) or never called init_process_group",
    ),
    rule(
        "config.single_gpu_only",
        "config_invalid",
        ROOT,
        ["multi GPU", "multi-GPU", "multiple GPUs", "single GPU", "single-GPU", "multi-gpu"],
        # a library that refuses to run when it sees more than one GPU: make one visible, or use a release
        # (or another library) that supports several
        r"(?:does not|doesn't|do not|cannot|can't|not) (?:currently )?(?:work|run|supported?)\w* (?:on|with|for) "
        r"(?:multi[- ]?GPU|multiple GPUs)|only supports? (?:a )?single[- ]GPU",
        ["fix_config", "pin_versions"],
        0.8,
        "the library runs on one GPU only, and the process sees several: expose one (CUDA_VISIBLE_DEVICES) "
        "or use a release that supports several",
        flags=re.IGNORECASE,
    ),
    rule(
        "config.no_gpu_visible",
        "config_invalid",
        ROOT,
        ["no GPUs found", "No CUDA GPUs are available", "Found no NVIDIA driver", "no CUDA-capable device"],
        r"ProcessGroupNCCL is only supported with GPUs, no GPUs found|No CUDA GPUs are available|"
        r"Found no NVIDIA driver on your system|no CUDA-capable device is detected",
        ["fix_config"],
        0.8,
        "the process sees no GPU (CUDA_VISIBLE_DEVICES, the container's --gpus, or the scheduler's GPU request)",
    ),
    rule(
        "config.flash_attention_arch",
        "config_invalid",
        ROOT,
        ["FlashAttention only supports", "is_sm80", "is_sm8x", "requires Ampere"],
        r"FlashAttention only supports (?:Ampere|Turing)|Expected (?:is_sm80|is_sm8x|is_sm90)|"
        r"(?:flash.?attn|Flash ?Attention).{0,60}requires? (?:an )?Ampere",
        ["fix_config"],
        0.85,
        "flash attention was asked for on a GPU generation it does not support: use sdpa/eager attention",
    ),
    rule(
        "config.ddp_ready_twice",
        "config_invalid",
        ROOT,
        ["mark a variable ready only once", "marked ready twice", "ready only once"],
        r"Expected to mark a variable ready only once|has been marked as ready twice|"
        r"mark a variable ready only once",
        ["fix_config", "fix_code"],
        0.9,
        "DDP saw a parameter's gradient twice in one step: reentrant gradient checkpointing (or shared "
        "weights) under DDP; use non-reentrant checkpointing (gradient_checkpointing_kwargs "
        "use_reentrant=False) or ddp_find_unused_parameters=False / static_graph",
    ),
    rule(
        "config.ds_batch",
        "config_invalid",
        ROOT,
        ["train_batch_size", "Check batch related", "AssertionError: "],
        r"train_batch_size.{0,60}(?:is not equal|!=)|Check batch related parameters|"
        r"AssertionError: \d+ != \d+ \* \d+ \* \d+",
        ["fix_config"],
        0.85,
        "the DeepSpeed batch settings disagree: train_batch_size != micro batch x accumulation x world size",
    ),
    rule(
        "config.unused_keys",
        "config_invalid",
        ROOT,
        ["Some keys are not used by the HfArgumentParser"],
        r"Some keys are not used by the HfArgumentParser",
        ["fix_config"],
        0.85,
        "the config file holds keys that this command does not accept",
        within=_keys_removed_by_a_release,
    ),
    rule(
        "config.fsdp_wrap",
        "config_invalid",
        ROOT,
        ["transformer layer class", "transformer_layer_cls_to_wrap"],
        r"Could not find the transformer layer class|transformer_layer_cls_to_wrap.{0,80}(?:not found|invalid)",
        ["fix_config"],
        0.85,
        "the FSDP auto-wrap class does not exist in this model",
    ),
    rule(
        "config.precision",
        "config_invalid",
        ROOT,
        [
            "bf16",
            "float16",
            "BF16",
            "fp16",
            "Ampere",
            "mixed precision",
            "unscale FP16",
            "not implemented for '",
        ],
        r"(?:[Bb][Ff]16|[Bb]float16).{0,80}(?:not supported|requires|only supported)|"
        r"(?:doesn't|does not|don't|do not) support (?:[Bb][Ff]16|[Bb]float16)|"
        r"(?:fp16|bf16) and (?:fp16|bf16).{0,40}(?:can|cannot|both)|(?:fp16|bf16).{0,20}mutually exclusive|"
        r"(?:fp16|mixed precision).{0,60}(?:requires a GPU|only supported|can only be used)|"
        r"Ampere (?:GPUs )?or newer|Attempting to unscale FP16 gradients|not implemented for '(?:Half|BFloat16)'",
        ["fix_config", "enable_mixed_precision"],
        0.8,
        "the precision setting is not supported by this hardware",
    ),
    rule(
        "config.deepspeed_config",
        "config_invalid",
        ROOT,
        ["DeepSpeedConfigError", "deepspeed config", "DeepSpeed config"],
        r"DeepSpeedConfigError|(?:[Ii]nvalid|[Uu]nknown) (?:deepspeed|DeepSpeed) config",
        ["fix_config"],
        0.8,
        "the DeepSpeed config is invalid",
    ),
    rule(
        "config.peft_targets",
        "config_invalid",
        ROOT,
        ["Target modules", "target_modules"],
        r"Target modules? .{0,300}not found in the base model|[Pp]lease specify `?target_modules",
        ["fix_config"],
        0.85,
        "the LoRA target modules do not exist in this model",
    ),
    rule(
        "config.quantized_training",
        "config_invalid",
        ROOT,
        [
            "purely quantized",
            "loaded in 8-bit",
            "loaded in 4-bit",
            "Zero-3 is not compatible",
            "ZeRO-3 is not compatible",
        ],
        r"fine-tuning on purely quantized models|train a model that has been loaded in \d-bit precision on a different device|"
        r"Ze[Rr]O-3 is not compatible with",
        ["fix_config"],
        0.85,
        "the quantization / ZeRO-3 / device_map settings cannot be combined for training",
    ),
    rule(
        "config.divisible",
        "config_invalid",
        ROOT,
        ["divisible by", "must be divisible"],
        r"(?:is not|must be|should be) divisible by",
        ["fix_config"],
        0.6,
        "sizes in the configuration must divide each other",
    ),
    rule(
        "config.dataloader_options",
        "config_invalid",
        ROOT,
        ["option needs num_workers", "option could only be specified in multiprocessing", "option should be non-neg",
         "can only be used with multi-process loading"],
        # torch's DataLoader refusing its worker settings as given (a yaml's dataloader_persistent_workers or
        # prefetch factor with no worker processes, a negative count): settings that contradict each other
        r"persistent_workers option needs num_workers > 0|prefetch_factor option could only be specified in "
        r"multiprocessing|(?:num_workers|timeout|prefetch_factor) option should be non-negative|"
        r"multiprocessing_context can only be used with multi-process loading",
        ["fix_config"],
        0.8,
        "the data loader's worker settings contradict each other (persistent workers or a prefetch factor with "
        "no worker processes, a negative count): set the number of workers above 0 or drop the option",
    ),
    rule(
        "config.recomputation_differs",
        "config_invalid",
        ROOT,
        ["Recomputed values for the following tensors", "different number of tensors was saved"],
        # torch.utils.checkpoint recomputing a layer that no longer looks as it did in the forward pass: most
        # often activation checkpointing applied twice (the model's gradient_checkpointing and FSDP's
        # activation_checkpointing), or non-reentrant recomputation meeting parameters FSDP already freed
        r"Recomputed values for the following tensors have different metadata|"
        r"A different number of tensors was saved during the original forward and recomputation",
        ["fix_config", "fix_code"],
        0.75,
        "activation checkpointing recomputed a layer differently from its forward pass: usually checkpointing "
        "turned on twice (the model's gradient_checkpointing and FSDP's activation_checkpointing) or recomputation "
        "meeting parameters FSDP has already freed; keep one checkpointing switch on",
    ),
    rule(
        "config.flag_conflict",
        "config_invalid",
        ROOT,
        [
            "requires the",
            "requires a",
            "requires an",
            "cannot be used with",
            "can not be used with",
            "are mutually exclusive",
            "is only available",
        ],
        r"--\w+.{0,80}(?:requires (?:the|a|an)|cannot be used with|can not be used with|are mutually exclusive|"
        r"is only available)",
        ["fix_config"],
        0.6,
        "two training flags contradict each other",
    ),
]


# parsers' errors for a file that is not valid JSON / YAML / TOML
_PARSE_ERRORS = frozenset({"JSONDecodeError", "ScannerError", "ParserError", "TOMLDecodeError", "YAMLError"})


# the config file endings each parser reads (YAMLError and its kin only come from YAML files, and so on)
_PARSED_AS = {"JSONDecodeError": "json jsonc", "ScannerError": "yaml yml", "ParserError": "yaml yml",
              "YAMLError": "yaml yml", "TOMLDecodeError": "toml"}


def unreadable_config(exception: str | None, reads_data: bool, configs: list[str], data: list[str]):
    """A parse error is the config file's, not the data's, when the command hands the script a JSON/YAML
    config and no data file, and the traceback does not run through data reading: (category, fixes,
    summary), or None."""
    if exception not in _PARSE_ERRORS or reads_data or not configs or data:
        return None
    configs = [name for name in configs if name.rsplit(".", 1)[-1].lower() in _PARSED_AS.get(exception, "").split()]
    if not configs:  # a JSON error with only a YAML config given: the JSON the script read is something else
        return None
    return ("config_invalid", ("fix_config",),
            f"the config file the command passes ({', '.join(configs[:2])}) is not valid "
            f"{'JSON' if exception == 'JSONDecodeError' else 'YAML/TOML'}: a hand edit left a trailing comma, "
            "a quote or a bracket wrong at the position the message gives")


def zero_setting(exception: str | None, flag_zeros: list[str], config_zeros: list[str] = ()):
    """A division or modulo by zero where the command sets a flag to 0 (`--save_every 0`), or a config file
    sets a setting the raising line names to 0: the setting, not the code, is what to change.
    (category, fixes, summary), or None."""
    zeros = ["--" + name for name in flag_zeros] + list(config_zeros)
    if exception != "ZeroDivisionError" or not zeros:
        return None
    return ("config_invalid", ("fix_config",),
            f"the job sets {', '.join(zeros[:3])} to 0, and the script divides by it "
            "(an interval, a count or a ratio): give it a positive value")


# a size-0 weight in a ZeRO-3 job: the code used a partitioned parameter outside a gather
PARTITIONED_WEIGHTS = (
    "config_invalid", ("fix_config", "fix_code"),
    "under ZeRO-3 each rank holds its parameters partitioned (an empty placeholder, size 0) outside a gather, and "
    "this step used the weights directly (merging an adapter, an init, a custom forward): run it without ZeRO-3 "
    "(ZeRO-2, or a single process), or inside deepspeed.zero.GatheredParameters")


# a setting that sizes a layer or a tensor (edge_dim, image_size, hidden, in_channels, hop_length, upsample_rates)
SIZE_KEY = re.compile(r"(?:^|_)(?:dim|dims|size|hidden|channels?|features?|width|embd|embed|hop|rates?|d_model|"
                      r"units|filters|patch|mels|bins)(?:_|$)", re.IGNORECASE)
NOT_A_LAYER_SIZE = re.compile(r"batch|step|epoch|seed|worker|save|log|eval|warmup|accum|port|timeout|^sample_rate$|"
                              r"learning_rate|^lr$|_lr$|ring|cache|buffer|shard|chunk|vocab", re.IGNORECASE)
_SIZE_CLASH = re.compile(r"shapes cannot be multiplied|must match the size of tensor \w+ \(\d+\)|"
                         r"stack expects each tensor to be equal size")


def sizes_set_by_config(rule_id: str | None, message: str | None, size_settings: list[str]):
    """Tensor sizes that do not fit each other inside the team's own model (a Linear fed more features than it
    was built for, an output and its target of different lengths), in a job whose config sizes the layers: one
    size setting disagrees with the data or with another setting (edge_dim against the feature set, image_size
    against the images, upsampling against the hop). (category, fixes, summary) or None."""
    if rule_id not in ("code.shapes", "data.collate_ragged") or not size_settings \
            or not _SIZE_CLASH.search(message or ""):
        return None
    return ("config_invalid", ("fix_config", "fix_code"),
            "the model's layers are sized by the job's config, and one size setting "
            f"({', '.join(size_settings[:4])}) does not fit what the data or another setting gives: set it to "
            "the size the message shows, or derive it from the data")


_CHECKPOINTING_FLAG = re.compile(r"^(?:gradient_checkpointing|grad_ckpt|grad_checkpointing|activation_checkpointing|"
                                 r"gradient_checkpoint|use_gradient_checkpointing)$")


def checkpointing_without_input_grads(rule_id: str | None, message: str | None, flag_keys: set[str]):
    """Autograd finding no graph to backward through, in a job that turns gradient checkpointing on: the
    reentrant checkpoint over inputs that need no grad (frozen embeddings under LoRA) gives no gradients."""
    if rule_id != "code.autograd" or "does not require grad" not in (message or ""):
        return None
    if not any(_CHECKPOINTING_FLAG.match(key) for key in flag_keys):
        return None
    return ("config_invalid", ("fix_config", "fix_code"),
            "gradient checkpointing (reentrant) over inputs that need no grad, as under LoRA with frozen embeddings, "
            "gives no gradients: use gradient_checkpointing_kwargs={'use_reentrant': False}, or call "
            "model.enable_input_require_grads()")


def models_differ_on_one_node(one_node: bool):
    """DDP finding the ranks' models differ in shape, in a job the command runs on one node: every rank read
    the same config and weights from the same disk, so the script built the model from something each rank
    reads for itself (its own data shard's labels or vocabulary). (category, fixes, summary) or None."""
    if not one_node:
        return None
    return ("code_bug", ("fix_code", "fix_config"),
            "the ranks of one node built models of different shapes from the same files: the script sizes the model "
            "by something each rank reads for itself (its own shard's labels or vocabulary); build it from the "
            "whole job's list, or broadcast that from rank 0, before wrapping it in DDP")


_MISSING_FILE = re.compile(r"No such file or directory: '([^']+)'")
_INDEX = re.compile(r"(\d+)")
# data parts, not checkpoint shards (a resume missing one rank's optimizer file is a copy left undone)
_DATA_PART = re.compile(r"\.(?:jsonl?|csv|tsv|parquet|arrow|txt|tar|npy|npz|idx)(?:\.gz|\.zst)?$", re.IGNORECASE)


def rank_beyond_prepared_parts(exception: str | None, message: str | None, rank: int | None,
                               world_size: int | None):
    """Only the last rank misses its own numbered part (`part-003.jsonl` on rank 3 of 4) while the lower ranks
    read theirs: the data was prepared for fewer processes than were launched. (category, fixes, summary)."""
    if exception != "FileNotFoundError" or rank is None or not world_size or rank < 1 or rank != world_size - 1:
        return None
    found = _MISSING_FILE.search(message or "")
    if not found:
        return None
    name = found.group(1).replace("\\", "/").rsplit("/", 1)[-1]
    numbers = _INDEX.findall(name)
    if not _DATA_PART.search(name) or not numbers or int(numbers[-1]) != rank:
        return None
    return ("config_invalid", ("fix_config",),
            f"only the last rank ({rank} of {world_size}) finds no part of its own ({name}): the data was "
            f"prepared for fewer processes than were launched; launch as many processes as there are parts, "
            f"or prepare the data again for {world_size}")


_SIZES = re.compile(r"\((\d{1,7})\)")


def position_limit(message: str | None) -> int | None:
    """The model's positions in a size mismatch where an input outran them: the smaller of the two sizes
    ("expanded size of the tensor (602) must match the existing size (512)" -> 512)."""
    sizes = [int(size) for size in _SIZES.findall(message or "")[:2]]
    return min(sizes) if len(sizes) == 2 else None


def length_past_positions(limit: int | None, setting: str, value) -> tuple | None:
    """An input longer than the model's positions, where the job's own length setting is past them: the
    setting let the rows run that long (max_length 1024 on a model of 512 positions), not the data."""
    try:
        configured = int(str(value))
    except (TypeError, ValueError):
        return None
    if limit is None or configured <= limit:
        return None
    return ("config_invalid", ("reduce_seq_len", "fix_config"),
            f"the job's {setting} ({configured}) is past the model's {limit} positions: inputs that long cannot "
            f"be embedded; set it to at most {limit}")


_TARGET_OUT = re.compile(r"Target (-?\d{1,9}) is out of bounds")
LABEL_COUNT_KEYS = ("num_labels", "num_classes", "n_classes", "num_class")


def labels_past_head(message: str | None, setting: str, value) -> tuple | None:
    """A class label past a classification head the job built with one output (num_labels 1: a score head under
    a classification loss): the setting, not the data. (Labels one past a head of several classes are the data's:
    1-based labels.)"""
    found = _TARGET_OUT.search(message or "")
    try:
        classes = int(str(value))
    except (TypeError, ValueError):
        return None
    if found is None or classes > 1 or int(found.group(1)) < classes:
        return None
    return ("config_invalid", ("fix_config", "fix_data_file"),
            f"the job's {setting} ({classes}) builds a head of {classes} classes, but the labels reach "
            f"{found.group(1)}: set {setting} to the number of classes the data has (or use a regression loss "
            "for scores)")
