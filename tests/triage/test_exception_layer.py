"""The form-agnostic exception layer: whatever is glued before an exception line, and whether or not a
traceback surrounds it, the verdict names the exception; the fallback classifier names a category."""

from __future__ import annotations

import json

import pytest
from triage_helpers import diagnose_text

from triage import diagnose
from triage.decorations import core, strip_progress_bar
from triage.rules import exceptions


@pytest.mark.parametrize(
    "line, expected",
    [
        ("16:49:33.632torch.cuda.OutOfMemoryError: CUDA out of memory", "torch.cuda.OutOfMemoryError: CUDA out of memory"),
        ("2022-12-28 16:13:02 [ERROR]  RuntimeError: CUDA error", "RuntimeError: CUDA error"),
        ("2023-09-14 21:27:58\t2023-09-14 21:27:58.000 [INFO] [Driver] KeyError: 'x'", "KeyError: 'x'"),
        ("(RayTrainWorker pid=4242, ip=10.1.2.3) ValueError: bad", "ValueError: bad"),
        # vLLM's worker processes, named with their tensor-parallel rank, then vLLM's own logger
        ("(VllmWorker rank=1 pid=907) ERROR 03-02 11:04:09 [multiproc_executor.py:512] RuntimeError: NCCL error",
         "RuntimeError: NCCL error"),
        ("(VllmWorker TP1 pid=907) IndexError: out of range", "IndexError: out of range"),
        ("2025-10-14T09:31:14.329Z stdout F TypeError: nope", "TypeError: nope"),
        ("2024-08-07 13:34:11 - INFO - datasets.builder - Generating", "Generating"),
        ("2024-01-02 10:00:00.123 | ERROR    | __main__:main:12 - AssertionError: x", "AssertionError: x"),
        ("[WARNING|trainer.py:41] 2024-08-07 13:34:12,926 >> Token indices", "Token indices"),
        ("  File \"/x/train.py\", line 3, in <module>", "  File \"/x/train.py\", line 3, in <module>"),
        ("KeyError: 'conversations'", "KeyError: 'conversations'"),
    ],
)
def test_it_peels_what_loggers_glue_before_a_line(line, expected):
    assert core(line) == expected


def test_it_cuts_a_progress_bar_that_did_not_end_its_line():
    line = "Map: 40%|####      | 400/1000 [00:04<00:06, 99.1 examples/s][rank1]: KeyError: 'text'"
    assert strip_progress_bar(line) == "[rank1]: KeyError: 'text'"
    assert strip_progress_bar("plain [text] here") == "plain [text] here"


@pytest.mark.parametrize(
    "exception, message, category",
    [
        ("AssertionError", "Micro batch size per gpu: 0 has to be greater than 0", "config_invalid"),
        ("ValueError", "The global train batch size (6) must be divisible by the number of generations (4)", "config_invalid"),
        ("RuntimeError", "NCCL communicator was aborted", "nccl_error"),
        ("RuntimeError", "found NaN in local grad norm", "numerical"),
        ("OSError", "[Errno 28] No space left on device", "storage"),
        ("TypeError", "__init__() got an unexpected keyword argument 'tokenizer'", "version_mismatch"),
        ("UnboundLocalError", "cannot access local variable 'x'", "code_bug"),
        ("ValueError", "Size of available data is not a multiple of the data-type size.", "data_corrupt"),
        ("ValueError", "buffer size must be a multiple of element size", "data_corrupt"),
        ("ValueError", "buffer is smaller than requested size", "data_corrupt"),
        ("RuntimeError", "disagreement between rank0 and rank1: rank0: [318, 319], rank1: [0, 1]", "code_bug"),
        ("AssertionError", "Padding_idx must be within num_embeddings", "config_invalid"),
        ("Error", "file does not start with RIFF id", "data_corrupt"),
        ("RuntimeError", "stft(torch.FloatTensor[7615], n_fft=256, hop_length=80, win_length=1024) : expected "
                         "0 < win_length <= n_fft", "config_invalid"),
        ("RuntimeError", "stft requires the return_complex parameter be given for real inputs", "version_mismatch"),
        ("KeyError", "'latents is not a file in the archive'", "data_schema"),
        ("RuntimeError", "selected index k out of range", "config_invalid"),
    ],
)
def test_the_fallback_names_a_category_from_class_and_message(exception, message, category):
    found = exceptions.explain(exception, message, [])
    assert found is not None and found[0] == category
    assert found[3]  # and says what it was based on


def test_a_bug_class_in_user_code_is_not_read_by_words_about_data():
    frames = [{"file": "/home/me/train.py", "line": 3, "function": "main"}]
    found = exceptions.explain("AttributeError", "'dict' object has no attribute 'truncated'", frames)
    assert found[0] == "code_bug"


def test_the_raising_library_decides_when_words_do_not(tmp_path):
    frames = [{"file": "/venv/lib/python3.11/site-packages/torch/distributed/elastic/rendezvous/api.py",
               "line": 9, "function": "next_rendezvous"}]
    assert exceptions.explain("RuntimeError", "it broke", frames)[0] == "rendezvous"


def test_zero3_partitioning_a_quantized_weight_is_a_combination_of_settings():
    site = "/venv/lib/python3.10/site-packages/"
    loading = [{"file": "/home/me/qlora.py", "line": 229, "function": "train"},
               {"file": site + "transformers/quantizers/quantizer_bnb_4bit.py", "line": 214,
                "function": "create_quantized_param"}]
    zero3 = {"file": site + "deepspeed/runtime/zero/partition_parameters.py", "line": 1128,
             "function": "all_gather_coalesced"}
    message = "expected there to be only one unique element in <generator object at 0x7f>"
    assert exceptions.explain("RuntimeError", message, [*loading, zero3])[0] == "config_invalid"
    # ZeRO-3 alone, with no quantized weight in the traceback, is not read this way
    assert (exceptions.explain("RuntimeError", message, [loading[0], zero3]) or ("",))[0] != "config_invalid"


@pytest.mark.parametrize(
    "text, exception",
    [
        ("[rank3]: RuntimeError: Expected to mark a variable ready only once.\n", "RuntimeError"),
        ("UnboundLocalError: cannot access local variable 'step' where it is not associated with a value\n",
         "UnboundLocalError"),
        ("2024-02-02 11:00:00 [step (912)] [4f2a9c] SomeLibError: this broke in an odd way\n", "SomeLibError"),
    ],
)
def test_an_exception_line_alone_is_never_dropped(tmp_path, text, exception):
    log = tmp_path / "log.txt"
    log.write_text(text)
    result = diagnose([log]).to_dict()
    assert result["root_cause"] is not None
    assert result["root_cause"]["exception"] == exception


def test_a_kernel_assertion_takes_the_bare_exception_that_surfaced_it(tmp_path):
    log = tmp_path / "log.txt"
    log.write_text(
        "/pytorch/aten/src/ATen/native/cuda/Loss.cu:250: nll_loss_forward: block: [0,0,0], thread: [5,0,0] "
        "Assertion `t >= 0 && t < n_classes` failed.\n"
        "[rank2]: RuntimeError: CUDA error: device-side assert triggered\n"
    )
    result = diagnose([log]).to_dict()
    assert result["category"] == "cuda_error"
    assert result["failing_rank"] == 2


def test_notebook_tracebacks_keep_their_frames(tmp_path):
    log = tmp_path / "log.txt"
    log.write_text(
        "KeyError                                  Traceback (most recent call last)\n"
        "Cell In[7], line 12\n"
        "---> 12 trainer.train()\n"
        "\n"
        "File ~/env/lib/python3.10/site-packages/datasets/formatting/formatting.py:280, in LazyDict.__getitem__(self, key)\n"
        "--> 280     value = self.data[key]\n"
        "\n"
        "KeyError: 'messages'\n"
    )
    root = diagnose([log]).to_dict()["root_cause"]
    assert root["exception"] == "KeyError"
    assert [frame["line"] for frame in root["frames"]] == [12, 280]


def test_a_library_calling_the_scripts_override_with_a_new_signature_is_a_version_change():
    frames = [
        {"file": "/home/me/train.py", "line": 80, "function": "main"},
        {"file": "/venv/lib/python3.11/site-packages/transformers/trainer.py", "line": 3600, "function": "training_step"},
        {"file": "/home/me/train.py", "line": 40, "function": "compute_loss"},
    ]
    message = "compute_loss() got an unexpected keyword argument 'num_items_in_batch'"
    assert exceptions.explain("TypeError", message, frames)[0] == "version_mismatch"
    own = [{"file": "/home/me/train.py", "line": 80, "function": "main"},
           {"file": "/home/me/train.py", "line": 40, "function": "helper"}]
    assert exceptions.explain("TypeError", "helper() missing 1 required positional argument: 'x'", own)[0] == "code_bug"


def test_an_attribute_error_raised_by_getattr_belongs_to_the_caller():
    frames = [
        {"file": "/home/me/train_ddp.py", "line": 131, "function": "evaluate"},
        {"file": "/venv/lib/python3.10/site-packages/torch/nn/modules/module.py", "line": 1931, "function": "__getattr__"},
    ]
    found = exceptions.explain("AttributeError", "'DistributedDataParallel' object has no attribute 'generate'", frames)
    assert found[0] == "code_bug"


def test_a_chain_names_the_library_error_not_the_generic_one_under_it(tmp_path):
    log = tmp_path / "log.txt"
    log.write_text(
        "Traceback (most recent call last):\n"
        '  File "/venv/lib/python3.11/site-packages/transformers/models/auto/configuration_auto.py", line 90, in from_pretrained\n'
        "    config_class = CONFIG_MAPPING[config_dict['model_type']]\n"
        "KeyError: 'zeta9'\n"
        "\n"
        "During handling of the above exception, another exception occurred:\n"
        "\n"
        "Traceback (most recent call last):\n"
        '  File "/srv/job/train.py", line 12, in <module>\n'
        "    model = AutoModelForCausalLM.from_pretrained(path)\n"
        "ValueError: The checkpoint you are trying to load has model type `zeta9` but Transformers does not "
        "recognize this architecture.\n"
    )
    assert diagnose([log]).to_dict()["root_cause"]["exception"] == "ValueError"


def test_an_exception_after_a_setup_line_carries_its_name(tmp_path):
    log = tmp_path / "log.txt"
    log.write_text(
        "CUDA SETUP: Something went wrong loading the library for your CUDA version\n"
        "[rank1]: Traceback (most recent call last):\n"
        '[rank1]:   File "/venv/lib/python3.11/site-packages/bnb/setup.py", line 5, in check\n'
        "[rank1]:     raise RuntimeError(\n"
        "[rank1]: RuntimeError:\n"
        "[rank1]:         CUDA Setup failed despite GPU being available. Please check your install.\n"
    )
    result = diagnose([log]).to_dict()
    assert (result["category"], result["root_cause"]["exception"]) == ("version_mismatch", "RuntimeError")


def _reraised_from_worker(tmp_path, prefix, exception, inner_frames, message):
    lines = [
        "Traceback (most recent call last):",
        '  File "/srv/job/train.py", line 88, in <module>',
        "    trainer.train()",
        '  File "/opt/py/lib/python3.10/site-packages/torch/_utils.py", line 705, in reraise',
        "    raise exception",
        f"{exception}: Caught {exception.rsplit('.', 1)[-1]} in DataLoader worker process 1.",
        "Original Traceback (most recent call last):",
        '  File "/opt/py/lib/python3.10/site-packages/torch/utils/data/_utils/worker.py", line 308, in _worker_loop',
        "    data = fetcher.fetch(index)",
        *inner_frames,
        f"{exception}: {message}",
    ]
    path = tmp_path / "run.log"
    path.write_text("\n".join(prefix + line for line in lines) + "\n")
    return diagnose([path])


@pytest.mark.parametrize("prefix", ["", "[rank3]: "])
def test_a_worker_reraise_yields_to_the_original_traceback_in_its_message(tmp_path, prefix):
    """torch re-raises a worker's exception as 'Caught X in DataLoader worker process N.' with the
    original traceback below: the worker's own message and raising frame are the root cause, and the
    words 'DataLoader worker' do not make it a worker crash."""
    result = _reraised_from_worker(
        tmp_path,
        prefix,
        "PIL.UnidentifiedImageError",
        [
            '  File "/srv/job/data.py", line 41, in __getitem__',
            "    img = Image.open(path)",
            '  File "/opt/py/lib/python3.10/site-packages/PIL/Image.py", line 3339, in open',
            "    raise UnidentifiedImageError(msg)",
        ],
        "cannot identify image file '/mnt/shards/img_000731.png'",
    )
    assert result.category == "data_corrupt"
    assert "cannot identify image file" in result.root_cause.message
    assert "Original Traceback" not in result.root_cause.message
    assert result.root_cause.frames[-1]["function"] == "open"


def test_a_damaged_tar_shard_read_in_a_worker_is_corrupt_data(tmp_path):
    result = _reraised_from_worker(
        tmp_path,
        "",
        "tarfile.ReadError",
        [
            '  File "/opt/py/lib/python3.10/site-packages/webdataset/tariterators.py", line 150, in tar_file_iterator',
            "    stream = tarfile.open(fileobj=fileobj, mode='r|*')",
        ],
        "unexpected end of data",
    )
    assert result.category == "data_corrupt"
    assert result.fixes[0]["kind"] == "fix_data_file"


@pytest.mark.parametrize(
    "key, frames, category",
    [
        ("'ground_truth'", [{"file": "/opt/rl/workers/reward/naive.py", "line": 40, "function": "__call__"}], "data_schema"),
        ("'user'", [{"file": "/srv/proj/src/pkg/data/aligner.py", "line": 12, "function": "<module>"}], "data_schema"),
        ("'optimizer_state'", [{"file": "/srv/proj/train.py", "line": 90, "function": "resume"}], "code_bug"),
    ],
)
def test_a_keyerror_naming_a_dataset_field_or_raised_in_a_data_module_is_the_data(key, frames, category):
    assert exceptions.classify("KeyError", key, frames)[0] == category


@pytest.mark.parametrize(
    "message, frames, category",
    [
        ("You have set `args.eval_strategy` to steps but you didn't pass an `eval_dataset` to `Trainer`. "
         "Either set `args.eval_strategy` to `no` or pass an `eval_dataset`.",
         [{"file": "/venv/lib/python3.11/site-packages/transformers/trainer.py", "line": 9, "function": "__init__"}],
         "config_invalid"),
        ("lr_warmup cannot exceed the schedule",
         [{"file": "/srv/recipes/cfg.py", "line": 9, "function": "__post_init__"}], "config_invalid"),
        ("invalid literal for int() with base 10: 'abc'",
         [{"file": "/srv/recipes/data.py", "line": 9, "function": "collate_batch"}], "data_pipeline"),
    ],
)
def test_argument_checks_are_config_errors(message, frames, category):
    assert exceptions.classify("ValueError", message, frames)[0] == category


@pytest.mark.parametrize(
    "exception, message",
    [
        ("ConfigAttributeError", "Key 'peft_scheme' is not in struct"),
        ("MisconfigurationException", "You requested gpu: [0, 1, 2, 3] But your machine only has: [0, 1]"),
        ("ValidationError", "1 validation error for AxolotlConfig micro_batch_size field required"),
        ("ValueError", "The model's max seq len (8192) is larger than the KV cache can hold (4096). "
                       "Try increasing `gpu_memory_utilization` or decreasing `max_model_len`."),
    ],
)
def test_config_libraries_errors_and_try_changing_advice_are_config_errors(exception, message):
    frames = [{"file": "/opt/env/lib/python3.10/site-packages/somelib/core.py", "line": 3, "function": "build"}]
    assert exceptions.classify(exception, message, frames)[0] == "config_invalid"


def test_a_tools_footer_after_a_traceback_is_not_part_of_the_message(tmp_path):
    log = tmp_path / "run.log"
    log.write_text(
        "Traceback (most recent call last):\n"
        '  File "/srv/run.py", line 5, in main\n'
        "    check(cfg)\n"
        "AssertionError: train_batch_size 10 should be divisible by micro_batch 4\n"
        "\n"
        "Set the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace.\n"
        "==========================================================\n"
        "Process finished with exit code 1\n"
    )
    result = diagnose([log])
    assert result.root_cause.message == "train_batch_size 10 should be divisible by micro_batch 4"


def test_a_rank_waiting_for_the_communicator_id_yields_to_the_rank_that_never_posted_it(tmp_path):
    waiting = (
        "[rank1]: torch.distributed.DistBackendError: [1] is setting up NCCL communicator and retrieving "
        "ncclUniqueId from [0] via c10d key-value store by key '0', but store->get('0') got error: Socket Timeout"
    )
    alone = tmp_path / "alone.log"
    alone.write_text(waiting + "\n")
    # alone, it is a peer whose wait for rank 0's first collective ran out (rank 0 still busy): a timeout
    assert diagnose([alone]).category == "nccl_timeout"
    both = tmp_path / "both.log"
    both.write_text(
        "[rank0]: Traceback (most recent call last):\n"
        '[rank0]:   File "/srv/train.py", line 12, in setup\n'
        "[rank0]:     ratio = total / count\n"
        "[rank0]: ZeroDivisionError: division by zero\n" + waiting + "\n"
    )
    result = diagnose([both])
    assert (result.category, result.failing_rank) == ("code_bug", 0)


def test_a_job_runners_task_name_before_a_rank_prefix_is_peeled(tmp_path):
    log = tmp_path / "run.log"
    lines = [
        "Traceback (most recent call last):",
        '  File "/opt/proj/recipes/data/jsonl.py", line 40, in __init__',
        "    raise FileNotFoundError(f'Data file not found: {fn}')",
        "FileNotFoundError: Data file not found: /mnt/corpora/chat/train.jsonl",
    ]
    log.write_text("".join(f"sft_job/0 [default1]:{line}\n" for line in lines))
    result = diagnose([log])
    assert result.root_cause.exception == "FileNotFoundError"
    assert result.failing_rank == 1
    # raised while reading the training data: the data's path, not the storage
    assert result.category == "data_pipeline"
    assert result.fixes[0]["kind"] == "fix_path"


def test_an_unreadable_file_in_a_datasets_getitem_is_a_damaged_shard_not_a_checkpoint(tmp_path):
    frames = [
        '  File "/opt/py/site-packages/torch/utils/data/_utils/fetch.py", line 52, in fetch',
        "    data = [self.dataset[idx] for idx in possibly_batched_index]",
        '  File "/srv/job/shards.py", line 63, in __getitem__',
        "    return torch.load(self.paths[i])",
        '  File "/opt/py/site-packages/torch/serialization.py", line 1360, in load',
        "    return _legacy_load(opened_file, map_location, pickle_module, **pickle_load_args)",
    ]
    log = tmp_path / "run.log"
    log.write_text("Traceback (most recent call last):\n" + "\n".join(frames) + "\n_pickle.UnpicklingError: invalid load key, '\\x00'.\n")
    assert diagnose([log]).category == "data_corrupt"
    checkpoint = tmp_path / "ckpt.log"
    checkpoint.write_text(
        "Traceback (most recent call last):\n"
        '  File "/srv/job/train.py", line 20, in main\n'
        "    model.load_state_dict(torch.load(args.init_weights))\n"
        '  File "/opt/py/site-packages/torch/serialization.py", line 1360, in load\n'
        "    return _legacy_load(opened_file)\n"
        "_pickle.UnpicklingError: invalid load key, '\\x00'.\n"
    )
    assert diagnose([checkpoint]).category == "model_load"


def test_mp_spawns_process_raised_exception_yields_to_the_childs_traceback(tmp_path):
    log = tmp_path / "run.log"
    log.write_text(
        "Traceback (most recent call last):\n"
        '  File "/srv/job/train.py", line 300, in <module>\n'
        "    mp.spawn(train, nprocs=3, join=True)\n"
        '  File "/opt/py/site-packages/torch/multiprocessing/spawn.py", line 211, in join\n'
        "    raise ProcessRaisedException(msg, error_index, failed_process.pid)\n"
        "torch.multiprocessing.spawn.ProcessRaisedException: \n"
        "\n"
        "-- Process 2 terminated with the following error:\n"
        "Traceback (most recent call last):\n"
        '  File "/srv/job/train.py", line 111, in read_rows\n'
        "    for line in f:\n"
        '  File "/usr/lib/python3.11/gzip.py", line 518, in read\n'
        '    raise EOFError("Compressed file ended before the "\n'
        "EOFError: Compressed file ended before the end-of-stream marker was reached\n"
    )
    result = diagnose([log])
    assert (result.category, result.root_cause.exception, result.failing_rank) == ("data_corrupt", "EOFError", 2)


@pytest.mark.parametrize(
    "message, category",
    [
        ("The `metric_for_best_model` training argument is set to 'eval_acc', which is not found in the "
         "evaluation metrics. The available evaluation metrics are: ['eval_loss', 'eval_samples_per_second']",
         "config_invalid"),
        ("[enforce fail at gloo/transport/tcp/pair.cc:456] op.preamble.length <= op.nbytes. 4 vs 2. Received "
         "data size doesn't match expected size. Is there a distributed collective mismatch in your code?",
         "code_bug"),
    ],
)
def test_messages_that_name_their_cause(tmp_path, message, category):
    log = tmp_path / "run.log"
    log.write_text(f"RuntimeError: {message}\n")
    assert diagnose([log]).category == category


@pytest.mark.parametrize(
    "innermost, category",
    [("/srv/job/train.py", "code_bug"), ("/opt/py/lib/python3.11/site-packages/torch/autograd/graph.py", "unknown")],
)
def test_a_faulthandler_stack_ending_in_the_scripts_own_code_is_its_bug(tmp_path, innermost, category):
    log = tmp_path / "run.log"
    log.write_text(
        "[default1]:Fatal Python error: Segmentation fault\n"
        "[default1]:\n"
        "[default1]:Thread 0x00007f0000000001 (most recent call first):\n"
        '[default1]:  File "/srv/job/train.py", line 12 in wait_loop\n'
        "[default1]:\n"
        "[default1]:Current thread 0x00007f271ac1fb80 (most recent call first):\n"
        f'[default1]:  File "{innermost}", line 128 in source_key\n'
        '[default1]:  File "/srv/job/train.py", line 240 in train\n'
        "E1201 11:46:45.038000 2913 torch/distributed/elastic/multiprocessing/api.py:1002] failed "
        "(exitcode: -11) local_rank: 1 (pid: 3033) of binary: /usr/bin/python3\n"
    )
    result = diagnose([log])
    assert (result.category, result.failing_rank) == (category, 1)


def test_fault_stacks_are_bounded_on_a_hostile_log(tmp_path):
    from triage import faultstacks

    log = tmp_path / "run.log"
    log.write_text("Fatal Python error: Segmentation fault\n" * 5000)
    result = diagnose([log])
    assert result.category == "unknown"
    sink = []
    stacks = faultstacks.FaultStacks(sink)
    for number in range(5000):
        stacks.feed("log", 0, number, "Fatal Python error: Aborted", number, None)
    assert len(sink) == faultstacks.MAX_STACKS


@pytest.mark.parametrize(
    "exception, message, category",
    [
        ("RuntimeError", "Timed out initializing process group in store based barrier on rank: 3, for key: "
                         "store_based_barrier_key:1 (world_size=8, worker_count=4, timeout=0:30:00)", "rendezvous"),
        ("OSError", "Incorrect path_or_model_id: '/models/m-8b/'. Please provide either the path to a local folder "
                    "or the repo_id of a model on the Hub.", "model_load"),
        ("ValueError", "Cannot instantiate this tokenizer from a slow version. If it's based on sentencepiece, make "
                       "sure you have sentencepiece installed.", "version_mismatch"),
    ],
)
def test_what_a_message_says_about_its_cause(exception, message, category):
    frames = [{"file": "/opt/py/lib/python3.11/site-packages/lib/core.py", "line": 5, "function": "setup"}]
    assert exceptions.classify(exception, message, frames)[0] == category


def test_a_quoted_paste_reads_like_the_original(tmp_path):
    log = tmp_path / "issue.md"
    log.write_text(
        "> Traceback (most recent call last):\n"
        '>   File "/srv/train.py", line 10, in <module>\n'
        ">     main()\n"
        "> KeyError: 'conversations'\n"
        "```\n"
    )
    result = diagnose([log])
    assert (result.category, result.root_cause.exception, result.root_cause.message) == (
        "data_schema", "KeyError", "'conversations'")


@pytest.mark.parametrize(
    "exception, message, raised_in",
    [
        ("ValueError", "`rope_scaling` must be a dictionary with two fields, `type` and `factor`, got {'factor': 8.0}",
         "/opt/py/lib/python3.10/site-packages/transformers/models/llama/configuration_llama.py"),
        ("KeyError", "'qwen9'", "/opt/py/lib/python3.10/site-packages/transformers/models/auto/configuration_auto.py"),
        ("RuntimeError", "Python 3.13+ not yet supported for torch.compile",
         "/opt/py/lib/python3.13/site-packages/torch/_dynamo/eval_frame.py"),
    ],
)
def test_a_checkpoint_or_interpreter_newer_than_the_library_is_a_version_mismatch(exception, message, raised_in):
    frames = [{"file": "/srv/train.py", "line": 3, "function": "main"}, {"file": raised_in, "line": 9, "function": "f"}]
    assert exceptions.classify(exception, message, frames)[0] == "version_mismatch"


def test_a_sample_over_the_length_limit_is_the_data_pipeline_even_when_refused_by_not_implemented():
    frames = [{"file": "/opt/rl/utils/torch_functional.py", "line": 9, "function": "postprocess_data"}]
    category, fixes, _weight = exceptions.classify(
        "NotImplementedError", "sequence_length=2113 is larger than max_length=2048", frames)
    assert (category, fixes[0]) == ("data_pipeline", "fix_config")


def test_a_flag_a_library_release_renamed_is_renamed_first(tmp_path):
    log = tmp_path / "run.log"
    log.write_text("ValueError: Some specified arguments are not used by the HfArgumentParser: "
                   "['--evaluation_strategy', 'steps']\n")
    assert [fix["kind"] for fix in diagnose([log]).fixes][:2] == ["rename_flag", "pin_versions"]
    other = tmp_path / "other.log"
    other.write_text("ValueError: Some specified arguments are not used by the HfArgumentParser: ['--scale_factor', '2']\n")
    assert diagnose([other]).fixes[0]["kind"] == "pin_versions"


def test_a_traceback_kept_as_one_escaped_string_in_a_json_record(tmp_path):
    log = tmp_path / "export.jsonl"
    log.write_text(
        '2024-06-01T10:00:00.000Z {"level":"error","msg":"Traceback (most recent call last):\\n  File '
        '\\"/srv/train.py\\", line 10, in <module>\\n    main()\\nKeyError: \'messages\'\\n"}\n'
    )
    result = diagnose([log])
    assert (result.category, result.root_cause.exception, result.root_cause.message) == (
        "data_schema", "KeyError", "'messages'")


@pytest.mark.parametrize(
    "exception, frames, category",
    [
        ("StopIteration", [{"file": "/opt/py/site-packages/torch/utils/data/dataloader.py", "line": 7, "function": "__next__"}],
         "data_corrupt"),
        ("FileExistsError", [{"file": "/srv/job/train.py", "line": 7, "function": "save"}], "storage"),
    ],
)
def test_an_empty_loader_and_an_existing_path(exception, frames, category):
    assert exceptions.classify(exception, "", frames)[0] == category


def test_a_kill_while_the_dataset_is_mapped_asks_for_fewer_preprocessing_workers(tmp_path):
    log = tmp_path / "run.log"
    log.write_text(
        "Map:   0%|          | 0/64 [00:00<?, ? examples/s]Map:  50%|#####     | 32/64 [00:01<00:01, 21.5 examples/s]\n"
        "E1201 10:00:01.000000 100 torch/distributed/elastic/multiprocessing/api.py:900] failed "
        "(exitcode: -9) local_rank: 1 (pid: 4242) of binary: /usr/bin/python3\n"
    )
    assert diagnose([log], command="torchrun --nproc_per_node 2 t.py").fixes[0]["kind"] == "reduce_dataloader_workers"


@pytest.mark.parametrize(
    "message",
    [
        "`r` should be a positive integer value but the value passed is 0",
        "Unknown loss type: sigmoidd. Should be one of ['sigmoid', 'hinge', 'ipo']",
    ],
)
def test_a_library_refusing_a_setting_value_is_a_config_error(message):
    frames = [{"file": "/opt/py/lib/python3.11/site-packages/somelib/layer.py", "line": 3, "function": "update"}]
    assert exceptions.classify("ValueError", message, frames)[0] == "config_invalid"


def test_a_gloo_peer_closed_traceback_is_never_the_root_when_a_rank_raised(tmp_path):
    log = tmp_path / "run.log"
    log.write_text(
        "[rank0]: Traceback (most recent call last):\n"
        '[rank0]:   File "/srv/job/train.py", line 88, in save_meta\n'
        "[rank0]:     json.dump(meta, f)\n"
        "[rank0]: TypeError: Object of type Tensor is not JSON serializable\n"
        "[rank1]: Traceback (most recent call last):\n"
        '[rank1]:   File "/srv/job/train.py", line 70, in train\n'
        "[rank1]:     loss.backward()\n"
        "[rank1]: RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed by peer [127.0.0.1]:29500\n"
    )
    result = diagnose([log])
    assert (result.category, result.failing_rank, result.root_cause.exception) == ("code_bug", 0, "TypeError")


def test_a_container_runtimes_json_records_are_read_as_their_lines(tmp_path):
    log = tmp_path / "pod-logs.jsonl"
    lines = ["Traceback (most recent call last):\n", '  File "/app/train.py", line 40, in main\n',
             "    os.makedirs(out)\n", "PermissionError: [Errno 13] Permission denied: '/shared/models/run3'\n"]
    log.write_text("".join(json.dumps({"time": "2026-10-21T09:12:40.400Z", "stream": "stderr", "log": line}) + "\n"
                           for line in lines))
    result = diagnose([log])
    assert (result.category, result.root_cause.exception) == ("storage", "PermissionError")


def test_a_rankless_gpu_fault_takes_the_rank_whose_cuda_calls_failed(tmp_path):
    node_b = tmp_path / "node-b.log"
    node_b.write_text(
        "[rank12]:terminate called after throwing an instance of 'c10::DistBackendError'\n"
        "[rank12]:  what():  [PG 0 Rank 12] Process group watchdog thread terminated with exception: CUDA error: "
        "unspecified launch failure\n"
        "E0905 04:17:53.990000 77120 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: -6) "
        "local_rank: 4 (pid: 77145) of binary: /usr/bin/python3\n"
    )
    dmesg = tmp_path / "dmesg.txt"
    dmesg.write_text("NVRM: Xid (PCI:0000:9d:00): 79, pid=77145, name=python, GPU has fallen off the bus.\n")
    result = diagnose([node_b, dmesg])
    assert (result.category, result.failing_rank) == ("hardware", 12)


def test_a_compilers_failure_with_no_other_cause_is_the_compile_setting():
    frames = [{"file": "/srv/det/train.py", "line": 80, "function": "main"},
              {"file": "/venv/lib/python3.11/site-packages/torch/_dynamo/backends/distributed.py", "line": 533,
               "function": "run_node"}]
    found = exceptions.explain("RuntimeError", "Cannot call sizes() on tensor with symbolic sizes/strides", frames)
    assert found[0] == "config_invalid" and found[1][0] == "fix_config"
    # the same words raised in the script's own code stay the script's
    own = exceptions.explain("RuntimeError", "Cannot call sizes() on tensor with symbolic sizes/strides", frames[:1])
    assert own is None or own[0] != "config_invalid"


def test_distributed_checkpointings_gathered_exception_yields_to_the_ranks_own_error(tmp_path):
    lines = ["[rank0]: Traceback (most recent call last):",
             '[rank0]:   File "/srv/ft/resume.py", line 41, in <module>',
             "[rank0]:     dcp.load(state, checkpoint_id=args.ckpt)",
             "[rank0]: torch.distributed.checkpoint.api.CheckpointException: CheckpointException ranks:dict_keys([0, 1])"]
    for rank in (0, 1):
        lines += [f"[rank0]: Traceback (most recent call last): (RANK {rank})",
                  '[rank0]:   File "/venv/lib/python3.11/site-packages/torch/distributed/checkpoint/default_planner.py", '
                  'line 471, in create_default_local_load_plan',
                  "[rank0]:     raise RuntimeError(f\"Missing key in checkpoint state_dict: {fqn}.\")",
                  "[rank0]: RuntimeError: Missing key in checkpoint state_dict: head.proj.weight."]
    log = tmp_path / "log.txt"
    log.write_text("\n".join(lines) + "\n")
    result = diagnose([log])
    assert result.category == "model_load"
    assert result.root_cause.exception == "RuntimeError" and "Missing key" in result.root_cause.message


def test_a_wrapper_whose_message_is_another_exceptions_line_names_the_inner_one(tmp_path):
    log = tmp_path / "log.txt"
    log.write_text(
        "[rank3]: Traceback (most recent call last):\n"
        '[rank3]:   File "/srv/vid/pretrain.py", line 77, in <module>\n'
        "[rank3]:     loss = compiled(batch)\n"
        '[rank3]:   File "/venv/lib/python3.11/site-packages/torch/_inductor/compile_fx.py", line 810, in fx_codegen\n'
        "[rank3]:     raise InductorError(e, currentframe()).with_traceback(\n"
        "[rank3]: torch._inductor.exc.InductorError: OSError: [Errno 122] Disk quota exceeded: "
        "'/mnt/shared/inductor/tk/c3q.py'\n")
    result = diagnose([log])
    assert result.category == "storage"
    assert result.root_cause.exception == "OSError"
    assert result.root_cause.message.startswith("[Errno 122] Disk quota exceeded")
    assert "InductorError" in result.root_cause.message


@pytest.mark.parametrize(("exception", "message", "category"), [
    ("ValueError", "adamw_torch_fuse is not a valid OptimizerNames, please select one of ['adamw_torch', "
                   "'adamw_torch_fused']", "config_invalid"),
    ("ValueError", "not enough values to unpack (expected 3, got 2)", "code_bug"),
])
def test_an_enum_setting_outside_its_choices_and_a_tuple_of_the_wrong_length(exception, message, category):
    frames = [{"file": "/venv/lib/python3.11/site-packages/transformers/trainer.py", "line": 3040,
               "function": "evaluation_loop"}]
    assert exceptions.explain(exception, message, frames)[0] == category


def test_a_field_missing_where_a_fine_tuning_library_reads_a_checkpoint_is_the_checkpoints():
    frames = [{"file": "/env/lib/python3.11/site-packages/recipes/lora_finetune_distributed.py", "line": 212,
               "function": "load_checkpoint"},
              {"file": "/env/lib/python3.11/site-packages/torchtune/training/checkpointing/_checkpointer.py",
               "line": 560, "function": "load_checkpoint"}]
    assert exceptions.explain("KeyError", "'num_key_value_heads'", frames)[0] == "model_load"


def test_a_warn_line_repeated_as_an_exceptions_last_error_far_below_takes_that_exception(tmp_path):
    warn = ("a1b2c3:412:632 [0] include/shm.h:48 NCCL WARN Error while creating shared memory segment "
            "/dev/shm/nccl-Xa81Qe (size 9637888)\n")
    filler = "".join(f"[NeMo I 2026-01-05 10:00:{i % 60:02d} train:88] building dataset shard {i}\n" for i in range(90))
    tail = ("Traceback (most recent call last):\n"
            '  File "/workspace/pretrain.py", line 40, in <module>\n'
            "    trainer.fit(model)\n"
            "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1269, unhandled system "
            "error, NCCL version 2.14.3\n"
            "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.\n"
            "Last error:\n"
            "Error while creating shared memory segment /dev/shm/nccl-Xa81Qe (size 9637888)\n")
    log = tmp_path / "log.txt"
    log.write_text(warn + filler + tail)
    result = diagnose([log])
    assert result.category == "nccl_error"
    assert result.root_cause.exception == "RuntimeError" and "unhandled system error" in result.root_cause.message


def test_pythons_own_value_errors_at_the_scripts_line_are_not_its_checks():
    encode = [{"file": "/srv/sft/train.py", "line": 378, "function": "main"},
              {"file": "/srv/sft/train.py", "line": 114, "function": "encode_chat"}]
    # list.index finding no assistant marker after truncation, in the script's encoding of a row: the data
    assert exceptions.explain("ValueError", "6 is not in list", encode)[0] == "data_pipeline"
    own = [{"file": "/srv/sft/train.py", "line": 40, "function": "main"}]
    found = exceptions.explain("ValueError", "6 is not in list", own)
    assert found is None or found[0] != "config_invalid"
    # int('') of a setting read at the script's line stays the setting's
    assert exceptions.explain("ValueError", "invalid literal for int() with base 10: ''", own)[0] == "config_invalid"


def test_a_frameworks_source_checkout_is_library_code_not_the_users():
    assert exceptions.library_file("/opt/NeMo/nemo/lightning/resume.py")
    assert exceptions.library_file("/workspace/LLaMA-Factory/src/llamafactory/train/sft/workflow.py")
    assert not exceptions.library_file("/home/me/nemo-experiments/train.py")
    assert not exceptions.library_file("/home/me/proj/train_trl.py")


def test_a_checkpoint_loader_refusing_its_input_is_model_loading():
    frames = [{"file": "/opt/NeMo/nemo/lightning/resume.py", "line": 152, "function": "setup"},
              {"file": "/opt/NeMo/nemo/lightning/pytorch/strategies/megatron_strategy.py", "line": 1048,
               "function": "load_checkpoint"},
              {"file": "/opt/megatron-lm/megatron/core/dist_checkpointing/dict_utils.py", "line": 224,
               "function": "merge"}]
    found = exceptions.explain("ValueError", "Different dict keys encountered (dict_keys(['a']) vs dict_keys(['b']))",
                               frames)
    assert found[:2] == ("model_load", ["fix_path", "fix_config"])


def test_a_tensor_method_asked_of_a_librarys_output_object_is_a_changed_return_type():
    frames = [{"file": "/venv/lib/python3.11/site-packages/transformers/trainer.py", "line": 2127,
               "function": "training_step"},
              {"file": "/home/me/clip_lora.py", "line": 36, "function": "compute_loss",
               "code": "img = img / img.norm(dim=-1, keepdim=True)"}]
    found = exceptions.explain("AttributeError", "'BaseModelOutputWithPooling' object has no attribute 'norm'", frames)
    assert found[:2] == ("version_mismatch", ["fix_code", "pin_versions"])
    own = exceptions.explain("AttributeError", "'BatchEncoding' object has no attribute 'norm'", frames)
    assert own[0] != "version_mismatch"


def test_a_librarys_assert_on_its_arguments_is_a_settings_problem():
    site = "/env/lib/python3.10/site-packages/swift/trainers/rlhf_trainer/grpo_trainer.py"
    frames = [{"file": "/home/me/run.py", "line": 5, "function": "<module>"},
              {"file": site, "line": 402, "function": "prepare_vllm",
               "code": "assert get_device_count() == self.args.num_infer_workers, ("}]
    message = "Colocate mode requires device_count(3) == num_infer_workers(4)."
    assert exceptions.explain("AssertionError", message, frames)[0] == "config_invalid"
    frames[-1]["code"] = "assert len(buckets) == len(offsets)"
    assert exceptions.explain("AssertionError", message, frames)[0] != "config_invalid"


def test_a_librarys_own_getattr_refusing_a_name_is_a_removed_api():
    frames = [{"file": "/home/me/fim_train.py", "line": 80, "function": "encode",
               "code": "enc = tok.batch_encode_plus(texts, padding=True)"},
              {"file": "/env/lib/python3.11/site-packages/transformers/tokenization_utils_base.py", "line": 1290,
               "function": "__getattr__"}]
    message = "TokenizersBackend has no attribute batch_encode_plus. Did you mean: '_encode_plus'?"
    assert exceptions.explain("AttributeError", message, frames)[:2] == ("version_mismatch", ["fix_code", "pin_versions"])
    # Python's own wording for the script's own object stays the script's bug
    own = exceptions.explain("AttributeError", "'FIMShard' object has no attribute 'tokenzier'", frames[:1])
    assert own[0] == "code_bug"


def test_a_rank_that_died_of_a_signal_with_no_error_is_named_with_its_signal_in_the_root_and_summary(tmp_path):
    log = (
        "W0301 09:00:01.000000 7100 torch/distributed/elastic/multiprocessing/api.py:900] Sending process 7102 "
        "closing signal SIGTERM\n"
        "E0301 09:00:01.500000 7100 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: -11) "
        "local_rank: 0 (pid: 7101) of binary: /usr/bin/python3\n"
    )
    result = diagnose_text(tmp_path, log)
    assert result.category == "unknown"
    assert result.failing_rank == 0
    assert result.root_cause.exception is None
    assert "SIGSEGV (exit code -11)" in result.root_cause.message
    assert "PYTHONFAULTHANDLER=1" in result.summary  # a native crash: how to get its stack
    assert result.evidence and "exitcode: -11" in result.evidence[0].text


def test_the_exception_raised_while_handling_the_root_one_is_kept_after_it_in_the_message(tmp_path):
    log = (
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.11/site-packages/transformers/tokenization_utils_base.py", line 770, in as_tensor\n'
        "    tensor = as_tensor(value)\n"
        "ValueError: expected sequence of length 96 at dim 1 (got 131)\n"
        "\n"
        "During handling of the above exception, another exception occurred:\n"
        "\n"
        "Traceback (most recent call last):\n"
        '  File "/work/qa/fit.py", line 51, in <module>\n'
        "    for batch in loader:\n"
        "ValueError: Unable to create tensor, you should probably activate truncation and/or padding\n"
    )
    result = diagnose_text(tmp_path, log)
    message = result.root_cause.message
    assert message.startswith("expected sequence of length 96")
    assert "(then ValueError: Unable to create tensor" in message


def test_a_ray_actor_tag_alone_on_a_line_ends_a_wrapped_message(tmp_path):
    tag = "(TrainActor pid=4410, ip=10.2.0.7) "
    log = "".join(tag + line + "\n" for line in [
        "Traceback (most recent call last):",
        '  File "/home/ray/venv/lib/python3.11/site-packages/torch/distributed/rendezvous.py", line 180, in create',
        "    store = TCPStore(host, port)",
        "torch.distributed.DistNetworkError: The client socket has timed out after 30s while trying to connect to "
        "(10.2.0.5, 29400).",
        "",
        "The above exception was the direct cause of the following exception:",
    ])
    result = diagnose_text(tmp_path, log)
    assert result.root_cause.exception == "DistNetworkError"
    assert "pid=4410" not in result.root_cause.message
    assert "The above exception" not in result.root_cause.message


def test_a_connection_reset_inside_a_hub_download_is_the_model_files_not_a_lost_peer(tmp_path):
    log = (
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.11/site-packages/urllib3/connectionpool.py", line 790, in urlopen\n'
        "    response = self._make_request(conn, method, url)\n"
        "ConnectionResetError: [Errno 104] Connection reset by peer\n"
        "\n"
        "During handling of the above exception, another exception occurred:\n"
        "\n"
        "Traceback (most recent call last):\n"
        '  File "/srv/chat/train.py", line 40, in <module>\n'
        "    model = AutoModelForCausalLM.from_pretrained(args.model)\n"
        '  File "/usr/lib/python3.11/site-packages/huggingface_hub/file_download.py", line 1532, in get_hf_file_metadata\n'
        "    r = _request_wrapper(method='HEAD', url=url)\n"
        '  File "/usr/lib/python3.11/site-packages/requests/adapters.py", line 501, in send\n'
        "    raise ConnectionError(err, request=request)\n"
        "requests.exceptions.ConnectionError: ('Connection aborted.', ConnectionResetError(104, 'Connection reset by "
        "peer'))\n"
    )
    result = diagnose_text(tmp_path, log)
    assert result.category == "model_load"
    assert result.root_cause.exception == "ConnectionResetError"
    assert "(then ConnectionError:" in result.root_cause.message


def test_one_english_word_before_a_colon_after_a_flattened_stack_is_no_exception(tmp_path):
    log = ("Fatal Python error: Segmentation fault  Thread 0x00007f2d (most recent call first): File "
           "\"/srv/det/engine.py\", line 80 in train_step  File \"/srv/det/tools/train_net.py\", line 20 in main\n"
           "\n"
           "Environment: I built the extension in January against an older torch\n")
    result = diagnose_text(tmp_path, log)
    assert result.root_cause is None or result.root_cause.exception != "Environment"


def test_the_listing_under_a_loaders_non_strict_warning_does_not_outrank_the_real_failure(tmp_path):
    log = ("2026-02-02 10:00:00,000 - seg - WARNING - The model and loaded state dict do not match exactly\n"
           "\n"
           "size mismatch for decode_head.cls.weight: copying a param with shape torch.Size([150, 512]) from "
           "checkpoint, the shape in current model is torch.Size([4, 512]).\n"
           "2026-02-02 10:05:00,000 - seg - INFO - Iter [50/8000] loss: 1.20\n"
           "Traceback (most recent call last):\n"
           '  File "/srv/seg/train.py", line 90, in <module>\n'
           "    loss.backward()\n"
           "RuntimeError: CUDA error: an illegal memory access was encountered\n")
    result = diagnose_text(tmp_path, log)
    assert result.category == "cuda_error"


def test_a_class_name_glued_to_itself_by_ranks_printing_together_is_read_once():
    from triage.tracebacks import parse_exception_line

    assert parse_exception_line("RuntimeErrorRuntimeErrorRuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED")[:2] == (
        "RuntimeError", "RuntimeError")
    assert parse_exception_line("torch.OutOfMemoryErrorOutOfMemoryError: CUDA out of memory")[:2] == (
        "OutOfMemoryError", "torch.OutOfMemoryError")
