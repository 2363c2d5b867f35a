"""Data or code: where an exception was raised and what its message says about a row's values."""

from __future__ import annotations

import pytest
from triage_helpers import write

from triage import diagnose

SITE = "/srv/env/lib/python3.11/site-packages"


def _trace(frames, last):
    lines = ["Traceback (most recent call last):"]
    for path, function in frames:
        lines.append(f'  File "{path}", line 40, in {function}')
        lines.append("    step()")
    return "\n".join(lines + [last]) + "\n"


CASES = [
    # a null text field reaching a map function of the library's formatting
    (_trace([("/work/sft/run.py", "main"), (f"{SITE}/datasets/arrow_dataset.py", "_map_single"),
             ("/work/sft/run.py", "add_suffix")],
            "AttributeError: 'NoneType' object has no attribute 'strip'"), "data_schema", "fix_data_file"),
    # a number where the script's own row reader expects text
    (_trace([("/work/pt/train.py", "main"), ("/work/pt/train.py", "read_records"), ("/work/pt/train.py", "encode")],
            "TypeError: 'float' object is not iterable"), "data_schema", "fix_data_file"),
    # the script's collate function asserting on a batch
    (_trace([("/work/pt/train.py", "train"), (f"{SITE}/torch/utils/data/_utils/fetch.py", "fetch"),
             ("/work/pt/train.py", "pad_collate")],
            "AssertionError: row 3 has no tokens"), "data_pipeline", "fix_data_file"),
    # the evaluation's metric code decoding the wrong thing
    (_trace([(f"{SITE}/transformers/trainer.py", "evaluation_loop"), ("/work/ft/train.py", "compute_metrics"),
             (f"{SITE}/transformers/tokenization_utils_base.py", "batch_decode")],
            "TypeError: argument 'ids': 'list' object cannot be interpreted as an integer"), "code_bug", "fix_code"),
    # near misses: a tensor written to JSON, an assertion in the training step
    (_trace([("/work/pt/train.py", "save_meta"), ("/usr/lib/python3.11/json/__init__.py", "dump"),
             ("/usr/lib/python3.11/json/encoder.py", "_iterencode")],
            "TypeError: Object of type Tensor is not JSON serializable"), "code_bug", "fix_code"),
    (_trace([("/work/pt/train.py", "train_step")], "AssertionError: loss went negative"), "code_bug", "fix_code"),
]


@pytest.mark.parametrize("text, category, first_fix", CASES,
                         ids=["null-field", "number-field", "collate-assert", "metrics", "json-dump", "step-assert"])
def test_data_or_code(tmp_path, text, category, first_fix):
    log = tmp_path / "log.txt"
    log.write_text(text)
    result = diagnose([log])
    assert result.category == category, result.facts
    assert result.fixes[0]["kind"] == first_fix


@pytest.mark.parametrize("frames, category, first_fix", [
    ([("/work/tab/fit.py", "main"), ("/work/tab/fit.py", "load_table")], "data_schema", "fix_data_file"),
    ([("/work/tab/fit.py", "main"), (f"{SITE}/transformers/tokenization_utils_base.py", "convert_to_tensors")],
     "data_pipeline", "fix_config"),
], ids=["script-stacks-rows", "tokenizer-without-padding"])
def test_ragged_rows_stacked_by_the_script_are_the_datas(tmp_path, frames, category, first_fix):
    log = tmp_path / "log.txt"
    log.write_text(_trace(frames, "ValueError: expected sequence of length 12 at dim 1 (got 11)"))
    result = diagnose([log])
    assert result.category == category and result.fixes[0]["kind"] == first_fix


def test_a_collator_stacking_labels_it_never_padded_offers_the_code_fix_too(tmp_path):
    log = tmp_path / "log.txt"
    log.write_text(_trace([("/work/ft/run.py", "main"), ("/work/ft/collate.py", "pad_batch"),
                           (f"{SITE}/transformers/tokenization_utils_base.py", "convert_to_tensors")],
                          "ValueError: expected sequence of length 10 at dim 1 (got 5)"))
    kinds = [fix["kind"] for fix in diagnose([log]).fixes]
    assert kinds[:2] == ["fix_config", "fix_code"]


@pytest.mark.parametrize("frames, last, category", [
    # a library refusing a config file's keys / a scheduler setting: the config's
    ([("/work/ft/run.py", "main"), (f"{SITE}/accelerate/commands/config/config_args.py", "from_yaml_file")],
     "ValueError: The config file at c.yaml had unknown keys (['num_procs'])", "config_invalid"),
    ([("/work/ft/run.py", "main"), (f"{SITE}/transformers/optimization.py", "get_scheduler")],
     "ValueError: One of warmup_ratio or warmup_steps should be set through the scheduler kwargs", "config_invalid"),
    # the DataLoader worker's seeding hook, under numpy's Cython frames: the script's code, not its data
    ([(f"{SITE}/torch/utils/data/_utils/worker.py", "_worker_loop"), ("/work/ft/run.py", "seed_worker"),
      ("numpy/random/mtrand.pyx", "numpy.random.mtrand.seed")],
     "ValueError: Seed must be between 0 and 2**32 - 1", "code_bug"),
    # a tokenizer.json cut short: the model folder, not the training data
    ([("/work/ft/run.py", "main"), (f"{SITE}/transformers/tokenization_utils_base.py", "from_pretrained"),
      ("/usr/lib/python3.11/json/decoder.py", "raw_decode")],
     "json.decoder.JSONDecodeError: Unterminated string starting at: line 9 column 3 (char 201)", "model_load"),
    # torch.distributed's sharding and checkpoint APIs are configuration and loading, not communication
    ([("/work/ft/run.py", "load"), (f"{SITE}/torch/distributed/fsdp/_state_dict_utils.py", "_pre_load_state_dict")],
     "AssertionError: Expected ShardedTensor, got <class 'torch.Tensor'>", "config_invalid"),
    ([("/work/ft/run.py", "resume"), (f"{SITE}/torch/distributed/checkpoint/utils.py", "reduce_scatter")],
     "torch.distributed.checkpoint.api.CheckpointException: CheckpointException ranks:dict_keys([0, 1])",
     "model_load"),
    ([("/work/ft/run.py", "build"), (f"{SITE}/torch/nn/modules/batchnorm.py", "forward")],
     "ValueError: SyncBatchNorm layers only work with GPU modules", "config_invalid"),
    ([("/work/ft/run.py", "step"), (f"{SITE}/deepspeed/runtime/swap_tensor/partitioned_param_swapper.py", "swap_in")],
     "AssertionError: More elements 311164928 than buffer size 100,000,000", "config_invalid"),
    ([("/work/ft/run.py", "main"), (f"{SITE}/torchtune/models/llama3/_tokenizer.py", "__init__")],
     "FileNotFoundError: [Errno 2] No such file or directory: '/tmp/Llama-3.2-1B/original/tokenizer.model'",
     "model_load"),
    ([("/work/ft/run.py", "step"), (f"{SITE}/accelerate/accelerator.py", "backward")],
     "RuntimeError: MPS backend out of memory (MPS allocated: 35.71 GB, other allocations: 1.02 GB)", "gpu_oom"),
], ids=["unknown-config-keys", "scheduler-setting", "worker-seed", "tokenizer-json", "fsdp-state-dict-type",
        "dcp-load", "gpu-only-layer", "zero-infinity-buffer", "tokenizer-file-missing", "mps-oom"])
def test_library_refusals_and_hooks(tmp_path, frames, last, category):
    log = tmp_path / "log.txt"
    log.write_text(_trace(frames, last))
    assert diagnose([log]).category == category


def test_the_worker_re_raise_does_not_take_over_its_origins_category(tmp_path):
    worker = _trace([(f"{SITE}/torch/utils/data/_utils/worker.py", "_worker_loop"), ("/work/ft/run.py", "seed_worker"),
                     ("numpy/random/mtrand.pyx", "seed")], "ValueError: Seed must be between 0 and 2**32 - 1")
    outer = _trace([("/work/ft/run.py", "batches"), (f"{SITE}/torch/utils/data/dataloader.py", "_next_data"),
                    (f"{SITE}/torch/_utils.py", "reraise")],
                   "ValueError: Caught ValueError in DataLoader worker process 0.\nOriginal " + worker)
    log = tmp_path / "log.txt"
    log.write_text(outer)
    result = diagnose([log])
    assert result.category == "code_bug" and "Seed must be" in result.root_cause.message


@pytest.mark.parametrize("frames, last, category", [
    # a vocabulary lookup of a word the data holds (a value, not a field)
    ([("/work/pt/train.py", "__getitem__"), ("/work/pt/train.py", "encode")], "KeyError: 'Zürich'", "data_pipeline"),
    # a field the record lacks, or a position where a mapping was expected: the data's shape
    ([("/work/pt/train.py", "__getitem__"), ("/work/pt/train.py", "encode")], "KeyError: 'prompt_text'",
     "data_schema"),
    # a nested record where the code splits a string
    ([("/work/pt/train.py", "__getitem__"), ("/work/pt/train.py", "encode")],
     "AttributeError: 'dict' object has no attribute 'split'", "data_schema"),
    # the script's own pickled cache of rows, cut short (no library loader in the traceback)
    ([("/work/pt/train.py", "worker")], "_pickle.UnpicklingError: pickle data was truncated", "data_corrupt"),
    # torch.load of weights cut short stays a checkpoint problem; the run's own save it resumes from, the storage's
    ([("/work/pt/train.py", "load_backbone"), (f"{SITE}/torch/serialization.py", "load")],
     "_pickle.UnpicklingError: pickle data was truncated", "model_load"),
    ([("/work/pt/train.py", "resume"), (f"{SITE}/torch/serialization.py", "load")],
     "_pickle.UnpicklingError: pickle data was truncated", "storage"),
], ids=["vocab-value", "missing-field", "nested-record", "own-pickle-cache", "torch-load", "torch-load-resume"])
def test_values_fields_and_caches(tmp_path, frames, last, category):
    log = tmp_path / "log.txt"
    log.write_text(_trace(frames, last))
    assert diagnose([log]).category == category


def test_the_workers_re_raise_yields_to_the_key_it_wraps(tmp_path):
    worker = _trace([(f"{SITE}/torch/utils/data/_utils/fetch.py", "fetch"), ("/work/pt/train.py", "__getitem__"),
                     ("/work/pt/train.py", "encode")], "KeyError: 'Zürich'")
    outer = _trace([("/work/pt/train.py", "batches"), (f"{SITE}/torch/utils/data/dataloader.py", "_next_data"),
                    (f"{SITE}/torch/_utils.py", "reraise")],
                   "KeyError: Caught KeyError in DataLoader worker process 1.\nOriginal " + worker)
    log = tmp_path / "log.txt"
    log.write_text(outer)
    result = diagnose([log])
    assert result.category == "data_pipeline"
    assert "Zürich" in result.root_cause.message and "DataLoader worker process 1" in result.root_cause.message


@pytest.mark.parametrize("frames, last, category", [
    # os.environ['RUN_TAG'] on a node where the variable is not set
    ([("/work/ft/train.py", "on_log"), ("<frozen os>", "__getitem__")], "KeyError: 'RUN_TAG'", "config_invalid"),
    # a score column holding "n/a" reaching torch.tensor in the collate function
    ([("/work/ft/train.py", "collate"), (f"{SITE}/torch/utils/data/_utils/fetch.py", "fetch")],
     "TypeError: must be real number, not str", "data_schema"),
    # a library that cannot run a requested feature on this hardware
    ([("/work/ft/train.py", "main"), (f"{SITE}/accelerate/accelerator.py", "__init__")],
     "RuntimeError: FP8 is not available on this machine.", "config_invalid"),
], ids=["env-var-unset", "text-for-number", "feature-not-on-machine"])
def test_settings_and_values(tmp_path, frames, last, category):
    log = tmp_path / "log.txt"
    log.write_text(_trace(frames, last))
    assert diagnose([log]).category == category


def test_a_c10d_warning_with_a_three_digit_date_is_a_warning(tmp_path):
    log = tmp_path / "log.txt"
    log.write_text("[rank0]:[W304 17:48:43.337810025 ProcessGroupNCCL.cpp:4561] [PG ID 0 PG GUID 0 Rank 0]  using GPU 0 "
                   "to perform barrier; specify device_ids in barrier() or call init_process_group() with a device_id.\n"
                   + _trace([("/work/asr/data.py", "shard_for")], "IndexError: list index out of range").replace(
                       "\n", "\n[rank3]:").replace("Traceback", "[rank3]:Traceback", 1))
    result = diagnose([log])
    assert result.root_cause.exception == "IndexError" and result.category != "config_invalid"


CUT = """\
[rank0]:   File "/home/u/proj/src/pkg/data/build.py", line 272, in build
[rank0]:     raise RuntimeError("Cannot find valid samples, check the data format in data/README.md.")
[rank0]: RuntimeError: {printed}
"""


@pytest.mark.parametrize("printed, category", [
    ("Cannot find valid sampl", "data_schema"),  # the log cut the line: the raise statement says the rest
    ("something else entirely went wrong", None),  # not that literal: the message stands alone
])
def test_a_message_the_log_cut_short_is_read_from_its_raise_statement(tmp_path, printed, category):
    log = tmp_path / "log.txt"
    log.write_text("[rank0]: Traceback (most recent call last):\n" + CUT.format(printed=printed))
    result = diagnose([log])
    assert result.root_cause.exception == "RuntimeError"
    if category:
        assert result.category == category
    else:
        assert result.category != "data_schema"


def _expand_failure(frames: list[tuple[str, str]]) -> str:
    lines = ["Traceback (most recent call last):"]
    for path, code in frames:
        lines += [f'  File "{path}", line 88, in forward', f"    {code}"]
    lines.append("RuntimeError: The expanded size of the tensor (80) must match the existing size (64) at "
                 "non-singleton dimension 1.  Target sizes: [4, 80].  Tensor sizes: [1, 64]")
    return "\n".join(lines) + "\n"


def test_an_input_longer_than_the_models_positions_is_read_from_the_buffer_that_could_not_expand(tmp_path):
    log = _expand_failure([("/srv/rk/train_rerank.py", "out = model(**batch)"),
                           ("/usr/lib/python3.11/site-packages/transformers/models/bert/modeling_bert.py",
                            "token_type_ids = buffered_token_type_ids.expand(batch_size, seq_length)")])
    result = diagnose([write(tmp_path / "a.log", log)])
    assert (result.category, result.fixes[0]["kind"]) == ("data_pipeline", "reduce_seq_len")


def test_the_scripts_own_expand_in_its_collate_is_left_to_the_exception_layer(tmp_path):
    log = _expand_failure([("/usr/lib/python3.11/site-packages/torch/utils/data/_utils/fetch.py",
                            "return self.collate_fn(data)"),
                           ("/srv/rk/collate.py", "tags[i, :len(row['tags'])] = torch.tensor(row['tags'])")])
    result = diagnose([write(tmp_path / "b.log", log)])
    assert result.rule_id != "code.shapes"  # not a shape bug of the model: the collate's rows (data) decide
    assert result.category == "data_pipeline"


def test_a_length_setting_past_the_models_positions_is_the_config_and_the_fix_truncates_to_them(tmp_path):
    log = _expand_failure([("/srv/rk/train_rerank.py", "out = model(**batch)"),
                           ("/usr/lib/python3.11/site-packages/transformers/models/bert/modeling_bert.py",
                            "token_type_ids = buffered_token_type_ids.expand(batch_size, seq_length)")])
    recipe = write(tmp_path / "rerank.yaml", "model: tiny-bert\nmax_length: 256\nbatch_size: 4\n")
    result = diagnose([write(tmp_path / "a.log", log)], command="torchrun --nproc-per-node 2 train_rerank.py "
                      "--config rerank.yaml", config_paths=[str(recipe)])
    assert result.category == "config_invalid"  # the job asked for 256 tokens of a 64-position model
    first = result.fixes[0]
    assert first["kind"] == "reduce_seq_len"
    assert "64 positions" in first["title"] and "max_length 256 -> 64" in first["title"]
    assert first["config_patch"] == {"rerank.yaml": {"max_length": 64}}
    within = write(tmp_path / "ok.yaml", "model: tiny-bert\nmax_length: 48\n")
    again = diagnose([tmp_path / "a.log"], command="torchrun --nproc-per-node 2 train_rerank.py --config ok.yaml",
                     config_paths=[str(within)])
    assert again.category == "data_pipeline"  # the setting is within the positions: a row was not truncated


def test_a_record_id_missing_from_the_table_built_from_another_file_is_the_data(tmp_path):
    log = ("Traceback (most recent call last):\n"
           '  File "/srv/ret/train_dual.py", line 120, in build_batch\n'
           "    docs = [passages[pid] for pid in row['negatives']]\n"
           "KeyError: 'psg-004410'\n")
    result = diagnose([write(tmp_path / "a.log", log)])
    assert (result.category, result.fixes[0]["kind"]) == ("data_pipeline", "fix_data_file")
    weight = ("Traceback (most recent call last):\n"
              '  File "/srv/ret/convert.py", line 40, in remap\n'
              "    new[name] = old[name]\n"
              "KeyError: 'layers.12.attn'\n")
    assert diagnose([write(tmp_path / "b.log", weight)]).category != "data_pipeline"


def test_a_none_image_after_the_decoder_called_a_file_corrupt_is_that_file(tmp_path):
    crash = ("Traceback (most recent call last):\n"
             '  File "/srv/sr/data/paired.py", line 61, in __getitem__\n'
             "    hr = img.astype(np.float32) / 255.0\n"
             "AttributeError: 'NoneType' object has no attribute 'astype'\n")
    result = diagnose([write(tmp_path / "a.log", "Premature end of JPEG file\n" + crash)])
    assert (result.category, result.fixes[0]["kind"]) == ("data_corrupt", "fix_data_file")
    assert diagnose([write(tmp_path / "b.log", crash)]).category != "data_corrupt"  # no decoder complaint


def test_class_labels_past_a_one_output_head_are_the_class_count_setting(tmp_path):
    log = ("Traceback (most recent call last):\n"
           '  File "/usr/lib/python3.11/site-packages/torch/nn/functional.py", line 3555, in cross_entropy\n'
           "    return torch._C._nn.cross_entropy_loss(\n"
           "IndexError: Target 1 is out of bounds.\n")
    head = write(tmp_path / "head.yaml", "model: tiny\nnum_labels: 1\n")
    result = diagnose([write(tmp_path / "a.log", log)], command="torchrun --nproc-per-node 2 fit.py --config head.yaml",
                      config_paths=[str(head)])
    assert (result.category, result.fixes[0]["kind"]) == ("config_invalid", "fix_config")
    # one past a head of several classes is the data's 1-based labels
    four = write(tmp_path / "four.yaml", "model: tiny\nnum_labels: 4\n")
    shifted = diagnose([write(tmp_path / "b.log", log.replace("Target 1", "Target 4"))],
                       command="torchrun --nproc-per-node 2 fit.py --config four.yaml", config_paths=[str(four)])
    assert shifted.category != "config_invalid"


def test_a_keyerror_on_a_named_field_of_each_item_a_comprehension_reads_is_the_datas_schema(tmp_path):
    log = ("Traceback (most recent call last):\n"
           '  File "/srv/asr/data.py", line 93, in __init__\n'
           '    self.lengths = [int(m["duration_frames"]) for m in kept]\n'
           "KeyError: 'duration_frames'\n")
    result = diagnose([write(tmp_path / "a.log", log)])
    assert (result.category, result.fixes[0]["kind"]) == ("data_schema", "convert_data_format")


def test_a_single_character_missing_from_a_character_vocabulary_is_a_value_the_data_holds(tmp_path):
    log = ("Traceback (most recent call last):\n"
           '  File "/usr/lib/python3.11/site-packages/torch/utils/data/_utils/fetch.py", line 52, in fetch\n'
           "    data = [self.dataset[idx] for idx in possibly_batched_index]\n"
           '  File "/srv/asr/data.py", line 120, in encode_text\n'
           "    ids = [self.vocab[ch] for ch in text]\n"
           "KeyError: '9'\n")
    result = diagnose([write(tmp_path / "b.log", log)])
    assert result.category == "data_pipeline"


def test_a_frameworks_count_after_its_filter_pass_names_the_filter_as_what_emptied_the_data(tmp_path):
    log = ("Filtering prompts longer than 1024 tokens (num_proc=8): 100%|##########| 900/900 [00:02<00:00]\n"
           "(TaskRunner pid=4410) filter dataset len: 0\n"
           "Traceback (most recent call last):\n"
           '  File "/usr/lib/python3.11/site-packages/torch/utils/data/sampler.py", line 143, in __init__\n'
           "    raise ValueError(\n"
           "ValueError: num_samples should be a positive integer value, but got num_samples=0\n")
    result = diagnose([write(tmp_path / "driver.log", log)])
    assert (result.category, result.fixes[0]["kind"]) == ("data_pipeline", "fix_config")


def test_a_length_setting_nested_in_a_section_of_the_teams_config_is_found(tmp_path):
    log = _expand_failure([("/srv/rk/train_rerank.py", "out = model(**batch)"),
                           ("/usr/lib/python3.11/site-packages/transformers/models/bert/modeling_bert.py",
                            "token_type_ids = buffered_token_type_ids.expand(batch_size, seq_length)")])
    recipe = write(tmp_path / "rerank.yaml", "model:\n  dir: tiny-bert\ndata:\n  max_len: 256\n  stride: 32\n")
    result = diagnose([write(tmp_path / "a.log", log)], command="python train_rerank.py --config rerank.yaml",
                      config_paths=[str(recipe)])
    assert result.category == "config_invalid"
    first = result.fixes[0]
    assert first["kind"] == "reduce_seq_len"
    assert first["config_patch"] == {"rerank.yaml": {"data.max_len": 64}}
    assert "data.max_len 256 -> 64" in first["title"]


def test_a_folder_every_rank_creates_without_exist_ok_is_the_scripts_race(tmp_path):
    # without exist_ok the second rank to get there finds the folder made; with exist_ok=True the same error means
    # a file sits in the folder's place (the storage's)
    from tests.triage.triage_helpers import diagnose_text

    def log(code: str) -> str:
        return ("[rank2]: Traceback (most recent call last):\n"
                '[rank2]:   File "/home/rl/agents/learner.py", line 88, in save_buffer\n'
                f"[rank2]:     {code}\n"
                '[rank2]:   File "/usr/lib/python3.10/os.py", line 225, in makedirs\n'
                "[rank2]:     mkdir(name, mode)\n"
                "[rank2]: FileExistsError: [Errno 17] File exists: '/scratch/runs/buffer/protected'\n")
    race = diagnose_text(tmp_path, log("os.makedirs(save_dir)"), name="race.log")
    assert (race.category, race.fixes[0]["kind"]) == ("code_bug", "fix_code")
    stale = diagnose_text(tmp_path, log("os.makedirs(save_dir, exist_ok=True)"), name="stale.log")
    assert (stale.category, stale.fixes[0]["kind"]) == ("storage", "fix_path")


def test_a_librarys_own_oserror_for_a_missing_file_is_the_path(tmp_path):
    from tests.triage.triage_helpers import diagnose_text

    text = ("Traceback (most recent call last):\n"
            '  File "/home/pb/graphs/train.py", line 61, in load_embeddings\n'
            '    with h5py.File(path, "r") as hf:\n'
            '  File "/opt/venv/lib/python3.9/site-packages/h5py/_hl/files.py", line 231, in make_fid\n'
            "    fid = h5f.open(name, flags, fapl=fapl)\n"
            "OSError: Unable to open file (unable to open file: name = '/data/graph/emb_0.v3.h5', errno = 2, "
            "error message = 'No such file or directory', flags = 0, o_flags = 0)\n")
    result = diagnose_text(tmp_path, text)
    assert (result.category, result.fixes[0]["kind"]) == ("storage", "fix_path")
