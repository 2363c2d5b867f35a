"""Rules added for families seen across public threads: each recognises its form and leaves a near miss alone."""

from __future__ import annotations

import pytest

from triage import diagnose

CASES = [
    ("deepspeed.runtime.zero.utils.ZeRORuntimeException: The checkpoint being loaded used a DP world size of 8 but "
     "the current world size is 4.", "config.optimizer_groups", "config_invalid"),
    ("jinja2.exceptions.TemplateError: Conversation roles must alternate user/assistant/user/assistant/...",
     "data.template_roles", "data_pipeline"),
    ("[rank5]: RuntimeError: CUDA error: invalid device ordinal", "config.invalid_device_ordinal", "config_invalid"),
    ("ValueError: Can't find 'adapter_config.json' at '/ckpt/run-7'", "model_load.adapter_missing", "model_load"),
    ("ValueError: Image features and image tokens do not match: tokens: 100, features 400",
     "data.image_tokens_mismatch", "data_pipeline"),
    ("[rank2]: RuntimeError: Expected to mark a variable ready only once. This error is caused by ...",
     "config.ddp_ready_twice", "config_invalid"),
    ("Error while creating shared memory segment /dev/shm/nccl-a1b2c3 (size 9637888), error: No space left on device (28)",
     "nccl.shm_segment", "nccl_error"),
    ("RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:1 and cuda:0!",
     "config.devices_spread", "config_invalid"),
    ("ValueError: Template qwen9 does not exist.", "versions.unknown_template", "version_mismatch"),
    ("ValueError: File data/my_setx.json not found.", "data.file_not_found", "data_pipeline"),
    ("RuntimeError: Cannot find valid samples, check the data format.", "data.no_valid_samples", "data_schema"),
    ("ValueError: Default process group has not been initialized, please make sure to call init_process_group.",
     "config.no_process_group", "config_invalid"),
    ("RuntimeError: ProcessGroupNCCL is only supported with GPUs, no GPUs found!", "config.no_gpu_visible", "config_invalid"),
    ("RuntimeError: FlashAttention only supports Ampere GPUs or newer.", "config.flash_attention_arch", "config_invalid"),
    ("RuntimeError: Detected mismatch between collectives on ranks. Rank 0 is running collective: ALLREDUCE",
     "code.collective_mismatch", "code_bug"),
    ("ImportError: LlamaTokenizer requires the protobuf library but it was not found in your environment.",
     "versions.missing_library", "version_mismatch"),
    ("safetensors_rust.SafetensorError: Error while deserializing header: HeaderTooLarge",
     "model_load.corrupt_checkpoint", "model_load"),
    ("RuntimeError: Error(s) in loading state_dict for PeftModel: size mismatch for base_model.layers.0.lora_A.weight",
     "model_load.state_dict", "model_load"),
    ("safetensors_rust.SafetensorError: Error while serializing: I/O error: File too large (os error 27)",
     "storage.io_error", "storage"),
    ("OSError: [Errno 30] Read-only file system: '/models/cache/tmp_x1'", "storage.read_only", "storage"),
    ("ValueError: The checkpoint you are trying to load has model type `zephyr9` but Transformers does not "
     "recognize this architecture.", "versions.architecture_unknown", "version_mismatch"),
    ("[rank1]: IndexError: index out of range in self", "model_load.vocab_mismatch", "model_load"),
    ("ValueError: Asking to pad but the tokenizer does not have a padding token.", "data.no_pad_token", "data_pipeline"),
    ("RuntimeError: Parent directory /mnt/ckpt/run3 does not exist.", "storage.not_found", "storage"),
    ("RuntimeError: stack expects each tensor to be equal size, but got [3, 448, 448] at entry 0 and [3, 336, 336] "
     "at entry 3", "data.collate_ragged", "data_pipeline"),
    ("[rank2]: IndexError: Target 4 is out of bounds.", "data.label_out_of_range", "data_schema"),
    ("Exception: cublasLt ran into an error!", "cuda.cublas", "cuda_error"),
    ("train_dist.py: error: argument --rank: invalid int value: ''", "config.cli_value_refused", "config_invalid"),
    ("finetune.py: error: the following arguments are required: --data_path", "config.cli_value_refused",
     "config_invalid"),
    ("RuntimeError: result type Float can't be cast to the desired output type Long", "code.dtype_mismatch",
     "code_bug"),
    ("memory allocation of 26764787 bytes failed", "memory.host_alloc", "host_oom"),
]
NEAR_MISSES = [
    "setting device ordinal 3 for local rank 3",
    "saving adapter_config.json to /ckpt/run-7",
    "resizing image features to 336x336 tokens",
    "INFO: all tensors are on the same device cuda:0",
    "Loading template qwen2 from the registry",
    "creating shared memory pool for the dataloader",
    "the process group was initialized with backend nccl",
    "mounting /models read-only for the evaluation workers",
    "using cublasLt for the int8 matmul (no error checks)",
    "reading argument --rank from the environment: 3",
]


@pytest.mark.parametrize("line, rule_id, category", CASES, ids=[case[1] for case in CASES])
def test_the_rule_recognises_its_form(tmp_path, line, rule_id, category):
    log = tmp_path / "log.txt"
    log.write_text(line + "\n")
    result = diagnose([log])
    assert (result.rule_id, result.category) == (rule_id, category)
    assert result.fixes


@pytest.mark.parametrize("line", NEAR_MISSES)
def test_a_near_miss_stays_unknown(tmp_path, line):
    log = tmp_path / "log.txt"
    log.write_text(line + "\n")
    assert diagnose([log]).category == "unknown"


def test_argparse_refusing_a_value_names_the_exit_it_causes(tmp_path):
    log = tmp_path / "log.txt"
    log.write_text("usage: train.py [-h] [--rank RANK]\ntrain.py: error: argument --rank: invalid int value: ''\n")
    result = diagnose([log])
    assert result.root_cause.exception == "SystemExit" and "invalid int value" in result.root_cause.message


def test_deepspeeds_note_that_it_accepts_a_compatible_cuda_toolkit_is_not_the_failure(tmp_path):
    log = tmp_path / "run.log"
    log.write_text(
        "Installed CUDA version 12.1 does not match the version torch was compiled with 12.4 but since the APIs are "
        "compatible, accepting this combination\n"
        "Using /home/sam/.cache/torch_extensions/py311_cu124 as PyTorch extensions root...\n"
        "  3%|▎         | 12/400 [00:40<21:01,  3.25s/it]ERROR: Unexpected bus error encountered in worker. This "
        "might be caused by insufficient shared memory (shm).\n"
        "[2026-03-03 10:10:10,100] [ERROR] [launch.py:321:sigkill_handler] ['/usr/bin/python3', '-u', 'sft.py', "
        "'--local_rank=1'] exits with return code = -7\n"
    )
    result = diagnose([log])
    assert result.category == "dataloader_worker"
    assert result.fixes[0]["kind"] == "increase_shm"
    refused = tmp_path / "refused.log"
    refused.write_text("deepspeed.ops.op_builder.builder.CUDAMismatchException: >- DeepSpeed Op Builder: Installed "
                       "CUDA version 11.8 does not match the version torch was compiled with 12.1, unable to compile "
                       "cuda/cpp extensions without a matching cuda version.\n")
    assert diagnose([refused]).category == "version_mismatch"


def _library_traceback(path: str, code: str, last: str) -> str:
    return ("Traceback (most recent call last):\n  File \"/srv/rl/train.py\", line 30, in <module>\n    main()\n"
            f"  File \"/usr/lib/python3.11/site-packages/{path}\", line 400, in run\n    {code}\n{last}\n")


@pytest.mark.parametrize(("path", "code", "last", "category", "first"), [
    # a feature that needs a second backend in the process group: the setup, not a rendezvous
    ("torch/distributed/checkpoint/state_dict_saver.py", "assert pg_has_cpu_backend(group)",
     "AssertionError: A CPU backend must be enabled for async save; try initializing process group with "
     "'cpu:gloo,cuda:nccl'", "config_invalid", "fix_config"),
    # an operator DTensor has no rule for: the model's code runs it on a sharded tensor
    ("torch/distributed/tensor/_sharding_prop.py", "raise NotImplementedError(msg)",
     "NotImplementedError: Operator aten.grid_sampler_2d.default does not have a sharding strategy registered.",
     "code_bug", "fix_code"),
    # the trainer hands the dataset's columns to the team's reward function, which needs one the data lacks
    ("trl/trainer/grpo_trainer.py", "output = reward_func(prompts=prompts, completions=completions, **kwargs)",
     "TypeError: format_reward() missing 1 required positional argument: 'answer'", "data_schema",
     "convert_data_format"),
])
def test_library_raised_messages_are_read_by_what_they_say(tmp_path, path, code, last, category, first):
    log = tmp_path / "run.log"
    log.write_text(_library_traceback(path, code, last))
    result = diagnose([log])
    assert (result.category, result.fixes[0]["kind"]) == (category, first)


def test_a_callback_missing_an_argument_that_is_no_data_field_stays_a_signature_mismatch(tmp_path):
    log = tmp_path / "run.log"
    log.write_text(_library_traceback("transformers/trainer.py", "loss = self.compute_loss(model, inputs, **kw)",
                                      "TypeError: compute_loss() missing 1 required positional argument: "
                                      "'num_items_in_batch'"))
    assert diagnose([log]).category == "version_mismatch"


@pytest.mark.parametrize(("last", "category", "first"), [
    ("numpy._core._exceptions._UFuncOutputCastingError: Cannot cast ufunc 'subtract' output from dtype('float32') "
     "to dtype('int16') with casting rule 'same_kind'", "data_schema", "convert_data_format"),
    ("ValueError: window shape cannot be larger than input array shape", "data_pipeline", "fix_data_file"),
    ("ValueError: The defined number of input channels (7) in the config has to be the same as the number of "
     "channels in the batch input (6)", "config_invalid", "fix_config"),
])
def test_numpy_and_model_config_messages_from_the_teams_pipeline(tmp_path, last, category, first):
    log = tmp_path / "run.log"
    log.write_text("[rank1]: Traceback (most recent call last):\n"
                   '[rank1]:   File "/srv/grid/windows.py", line 40, in build\n'
                   "[rank1]:     arr -= stats.mean\n"
                   f"[rank1]: {last}\n")
    result = diagnose([log])
    assert (result.category, result.fixes[0]["kind"]) == (category, first)
    assert result.root_cause.exception == last.split(":", 1)[0].rsplit(".", 1)[-1]


def test_numpys_private_memory_error_is_named_and_an_array_over_the_whole_data_is_the_memory_it_is_allowed(tmp_path):
    log = tmp_path / "run.log"
    log.write_text("[rank1]: Traceback (most recent call last):\n"
                   '[rank1]:   File "/srv/grid/windows.py", line 77, in __init__\n'
                   "[rank1]:     self.cache = np.ascontiguousarray(view.transpose(0, 2, 1))\n"
                   "[rank1]: numpy._core._exceptions._ArrayMemoryError: Unable to allocate 3.10 GiB for an array with "
                   "shape (480000, 432, 4) and data type float32\n")
    result = diagnose([log], command="torchrun --nproc-per-node 2 train.py")
    assert (result.category, result.root_cause.exception) == ("host_oom", "_ArrayMemoryError")
    assert result.fixes[0]["kind"] == "fix_config"


def test_a_librarys_explanation_raised_from_an_index_error_outranks_the_generic_cause(tmp_path):
    log = tmp_path / "run.log"
    log.write_text(
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.11/site-packages/torch/nn/functional.py", line 2615, in embedding\n'
        "    return torch.embedding(weight, input, padding_idx, scale_grad_by_freq, sparse)\n"
        "IndexError: index out of range in self\n"
        "\n"
        "The above exception was the direct cause of the following exception:\n"
        "\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.11/site-packages/transformers/models/layoutlm/modeling_layoutlm.py", line 100, in '
        "forward\n"
        '    raise IndexError("The `bbox` coordinate values should be within 0-1000 range.") from e\n'
        "IndexError: The `bbox` coordinate values should be within 0-1000 range.\n")
    result = diagnose([log])
    assert (result.category, result.fixes[0]["kind"]) == ("data_schema", "convert_data_format")


def test_the_other_cuda_math_libraries_failures_are_cuda_errors(tmp_path):
    from tests.triage.triage_helpers import diagnose_text

    for message in ("RuntimeError: CUFFT error: 6", "RuntimeError: cuFFT error: CUFFT_EXEC_FAILED",
                    "RuntimeError: CUSOLVER_STATUS_EXECUTION_FAILED when calling `cusolverDnXgeqrf`"):
        result = diagnose_text(tmp_path, f"[rank1]: {message}\n")
        assert result.category == "cuda_error", message


def test_the_old_wording_of_a_missing_process_group_is_a_setting(tmp_path):
    from tests.triage.triage_helpers import diagnose_text

    text = ("Traceback (most recent call last):\n"
            '  File "/opt/venv/lib/python3.7/site-packages/torch/distributed/distributed_c10d.py", line 187, in '
            "_check_default_pg\n"
            '    "Default process group is not initialized"\n'
            "AssertionError: Default process group is not initialized\n")
    assert diagnose_text(tmp_path, text).category == "config_invalid"
