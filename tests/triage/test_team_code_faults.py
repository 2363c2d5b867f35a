"""Faults in a team's own training code and data, as real CPU runs print them (blind sets 8 and 9 found
these forms): which category, which rank, which fix first."""

from __future__ import annotations

from triage_helpers import diagnose_text as _run

from triage import diagnose


def _traceback(rank: int, frames: list[tuple[str, str]], last: str) -> str:
    lines = [f"[rank{rank}]: Traceback (most recent call last):"]
    for where, code in frames:
        lines += [f"[rank{rank}]:   {where}", f"[rank{rank}]:     {code}"]
    return "\n".join(lines + [f"[rank{rank}]: {last}"]) + "\n"


def test_a_keyerror_on_each_record_a_comprehension_reads_is_the_datas_schema(tmp_path):
    text = _traceback(2, [
        ('File "/jobs/lm/train_loop.py", line 88, in build', "keep = [r for r in shard.rows if len(r[cfg.field]) > 2]"),
        ('File "/jobs/lm/train_loop.py", line 88, in <listcomp>', "keep = [r for r in shard.rows if len(r[cfg.field]) > 2]"),
    ], "KeyError: 'tokens'")
    result = _run(tmp_path, text)
    assert (result.category, result.failing_rank) == ("data_schema", 2)
    # the same KeyError on a lookup table the script owns stays the script's
    text = _traceback(2, [('File "/jobs/lm/train_loop.py", line 40, in setup', "scheduler = SCHEDULERS[cfg.sched]")],
                      "KeyError: 'cosine_restarts'")
    assert _run(tmp_path, text, name="other.log").category == "code_bug"


def _truncated_load(code: str) -> str:
    return _traceback(3, [
        ('File "/jobs/lm/train_loop.py", line 160, in worker', code),
        ('File "/venv/lib/python3.11/site-packages/torch/serialization.py", line 1568, in load',
         "with _open_zipfile_reader(opened_file) as opened_zipfile:"),
        ('File "/venv/lib/python3.11/site-packages/torch/serialization.py", line 807, in __init__',
         "super().__init__(torch._C.PyTorchFileReader(name_or_buffer))"),
    ], "OSError: [Errno 22] Invalid argument")


def test_einval_reading_a_cut_weights_file_is_model_loading_and_a_cut_resume_state_is_storage(tmp_path):
    weights = _run(tmp_path, _truncated_load('sd = torch.load(cfg.init_from, map_location="cpu")'))
    assert (weights.category, weights.failing_rank) == ("model_load", 3)
    assert weights.fixes[0]["kind"] == "fix_path"
    resume = _run(tmp_path, _truncated_load("state = torch.load(os.path.join(args.resume, 'rank3.pt'))"),
                  name="resume.log")
    assert resume.category == "storage"


def test_an_argparse_choice_spelt_another_way_is_a_setting_and_an_unknown_one_a_release(tmp_path):
    typo = _run(tmp_path, "usage: train_loop.py [-h] [--sharding {none,full_shard,no_shard}]\n"
                "train_loop.py: error: argument --sharding: invalid choice: 'full-shard' "
                "(choose from 'none', 'full_shard', 'no_shard')\n")
    assert typo.category == "config_invalid"
    assert [fix["kind"] for fix in typo.fixes] == ["fix_config"]
    other = _run(tmp_path, "error: argument subcommand: invalid choice: 'finetune_full' (choose from 'download', "
                 "'chat', 'finetune', 'pretrain', 'serve')\n", name="other.log")
    assert other.category == "version_mismatch"


def test_in_a_collective_mismatch_the_rank_whose_steps_ran_ahead_skipped_the_collective(tmp_path):
    node0 = "\n".join([
        "[rank0] step 2 loss 1.40", "[rank1] step 2 loss 1.40", "[rank0] step 4 loss 1.38", "[rank1] step 4 loss 1.38",
        "[rank1] step 6 loss 0.34",
        "terminate called after throwing an instance of 'gloo::EnforceNotMet'",
        "  what():  [enforce fail at /src/gloo/transport/tcp/pair.cc:456] op.preamble.length <= op.nbytes. 2148 vs 4. "
        "Received data size doesn't match expected size. Is there a distributed collective mismatch in your code?",
    ]) + "\n"
    node1 = "\n".join(["[rank2] step 2 loss 1.40", "[rank3] step 2 loss 1.40", "[rank2] step 4 loss 1.38",
                       "[rank3] step 4 loss 1.38"]) + "\n"
    (tmp_path / "node0.log").write_text(node0)
    (tmp_path / "node1.log").write_text(node1)
    result = diagnose([tmp_path / "node0.log", tmp_path / "node1.log"])
    assert (result.category, result.failing_rank) == ("code_bug", 1)
    # the C++ exception the process died of is named, from the terminate line above gloo's "what():"
    assert result.root_cause.exception == "EnforceNotMet"
    assert result.root_cause.message.startswith("[enforce fail at")


def test_a_host_allocation_refused_at_the_scripts_own_line_puts_the_batch_and_that_line_first(tmp_path):
    text = _traceback(1, [('File "/jobs/lm/train_loop.py", line 199, in worker',
                           "table = torch.zeros(cfg.vocab * 700, cfg.vocab * 700)")],
                      "RuntimeError: [enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate "
                      "memory: you tried to allocate 8028160000 bytes. Error code 12 (Cannot allocate memory)")
    result = _run(tmp_path, "[rank1] step 3 loss 2.1\n" + text)
    assert result.category == "host_oom"
    assert [fix["kind"] for fix in result.fixes][:2] == ["reduce_batch_size", "fix_code"]


def test_nccl_notices_every_healthy_job_prints_do_not_outrank_the_scripts_error(tmp_path):
    text = "\n".join([
        "gpu-a1:70112:70190 [0] net.cc:140 NCCL WARN NET/Plugin: Could not find: libnccl-net.so",
        "gpu-a1:70112:70190 [0] init.cc:1410 NCCL WARN Could not enable P2P between dev 0(=41000) and dev 1(=61000)",
        " 12%|#2        | 50/400 [00:40<04:40,  1.25it/s]",
    ]) + "\n" + _traceback(0, [('File "/jobs/sum/callbacks.py", line 31, in on_log', "best = logs['eval_rougeL']")],
                           "KeyError: 'eval_rougeL'")
    result = _run(tmp_path, text)
    assert (result.category, result.root_cause.exception) == ("code_bug", "KeyError")


def test_nccl_reporting_cudas_out_of_memory_is_the_gpus_memory(tmp_path):
    text = "\n".join([
        "seg-ws:66120:66391 [2] include/alloc.h:125 NCCL WARN Cuda failure 2 'out of memory'",
        "[rank2]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:3356, unhandled cuda "
        "error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5",
        "[rank2]: Last error:",
        "[rank2]: Cuda failure 2 'out of memory'",
    ]) + "\n"
    result = _run(tmp_path, text)
    assert (result.category, result.failing_rank) == ("gpu_oom", 2)


def test_labels_given_as_words_are_the_datas_format(tmp_path):
    inner = _traceback(1, [('File "/venv/lib/python3.11/site-packages/transformers/tokenization_utils_base.py", '
                            'line 708, in as_tensor', "return torch.tensor(value, dtype=dtype)")],
                       "ValueError: too many dimensions 'str'")
    outer = _traceback(1, [('File "/venv/lib/python3.11/site-packages/transformers/tokenization_utils_base.py", '
                            'line 724, in convert_to_tensors', "raise ValueError(")],
                       "ValueError: Unable to create tensor, you should probably activate truncation and/or padding "
                       "with 'padding=True' 'truncation=True' to have batched tensors with the same length.")
    text = inner + "[rank1]: \n[rank1]: The above exception was the direct cause of the following exception:\n" + outer
    result = _run(tmp_path, text)
    assert result.category == "data_schema"
    assert result.fixes[0]["kind"] in ("convert_data_format", "fix_data_file")


def test_a_length_filter_that_kept_nothing_puts_its_limits_first(tmp_path):
    text = "[prep] filtering pairs longer than max_length=512 tokens\n[prep] kept 0 / 30412 pairs\n" + _traceback(
        0, [('File "/venv/lib/python3.11/site-packages/torch/utils/data/sampler.py", line 156, in __init__',
             "raise ValueError(")],
        "ValueError: num_samples should be a positive integer value, but got num_samples=0")
    result = _run(tmp_path, text)
    assert result.category == "data_pipeline"
    assert result.fixes[0]["kind"] == "fix_config"
    plain = _run(tmp_path, "[prep] read 30412 pairs\n" + text.split("pairs\n", 2)[-1], name="plain.log")
    assert plain.category == "data_pipeline" and plain.fixes[0]["kind"] != "fix_config"


def test_a_checkpoint_cut_after_a_low_disk_warning_is_the_full_disk(tmp_path):
    warning = ("/venv/lib/python3.11/site-packages/huggingface_hub/file_download.py:653: UserWarning: Not enough free "
               "disk space to download the file. The expected file size is: 4943.21 MB. The target location "
               "/cache/hub only has 1210.40 MB free disk space.\n")
    cut = _traceback(2, [('File "/venv/lib/python3.11/site-packages/transformers/modeling_utils.py", line 512, '
                          'in load_state_dict', 'with safe_open(checkpoint_file, framework="pt") as f:')],
                     "safetensors_rust.SafetensorError: Error while deserializing header: MetadataIncompleteBuffer")
    result = _run(tmp_path, warning + cut)
    assert result.category == "storage"
    assert result.fixes[0]["kind"] == "free_disk"
    assert _run(tmp_path, cut, name="cut.log").category == "model_load"


def test_a_rankless_nccl_warning_goes_to_the_rank_whose_own_report_came_first(tmp_path):
    def watchdog(rank: int, clock: str) -> str:
        return (f"gpu-b7: [rank{rank}]:[E1109 08:{clock} ProcessGroupNCCL.cpp:1895] [PG ID 0 PG GUID 0(default_pg) "
                f"Rank {rank}] Process group watchdog thread terminated with exception: NCCL error: remote process "
                "exited or there was a network error, NCCL version 2.21.5")
    text = "\n".join([
        "gpu-b7: gpu-b7:50322:50871 [2] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer "
        "10.40.7.17<40291> with status=12 opcode=0 len=0 vendor err 129 (Recv)",
        watchdog(6, "14:52.118420"), watchdog(4, "15:01.000000"), watchdog(5, "15:01.003301"),
        watchdog(7, "15:01.006602"),
        "gpu-b7: [2026-11-09 08:15:09,660] [ERROR] [launch.py:325:sigkill_handler] ['/usr/bin/python', '-u', "
        "'train.py', '--local_rank=3', '--deepspeed'] exits with return code = 1",
    ]) + "\n"
    result = _run(tmp_path, text)
    assert (result.category, result.failing_rank) == ("nccl_error", 6)


def test_two_ranks_of_a_node_failing_alike_name_the_nodes_lower_rank(tmp_path):
    """No clock, one log per node: the order in which a node's ranks reached its stream is a race."""
    def failure(rank: int) -> str:
        return _traceback(rank, [('File "/jobs/ft/train.py", line 42, in <module>',
                                  "model = AutoModelForCausalLM.from_pretrained(args.model)")],
                          "KeyError: 'RUN_TAG'")
    (tmp_path / "node0.log").write_text("[rank0] step 1 loss 2.0\n[rank1] step 1 loss 2.0\n")
    (tmp_path / "node1.log").write_text(failure(3) + failure(2))
    result = diagnose([tmp_path / "node0.log", tmp_path / "node1.log"])
    assert result.failing_rank == 2
    # in one stream the first to print stays first: one file is not a race this reading can settle
    (tmp_path / "all.log").write_text(failure(3) + failure(2))
    assert diagnose([tmp_path / "all.log"]).failing_rank == 3


def test_a_refused_local_rank_is_the_launch_unless_the_script_takes_the_old_spelling(tmp_path):
    refusal = "train.py: error: unrecognized arguments: --local-rank=1\n"
    launch = _run(tmp_path, "usage: train.py [-h] --config CONFIG [overrides ...]\n" + refusal)
    assert launch.category == "config_invalid"
    assert [fix["kind"] for fix in launch.fixes][:2] == ["fix_config", "fix_code"]
    spelling = _run(tmp_path, "usage: train.py [-h] [--local_rank LOCAL_RANK] [--data DATA]\n" + refusal,
                    name="old.log")
    assert spelling.category == "version_mismatch"
    assert spelling.fixes[0]["kind"] == "rename_flag"


def test_a_training_argument_one_letter_off_is_a_misspelt_setting_and_a_removed_one_a_release(tmp_path):
    def refused(name: str) -> str:
        return _traceback(1, [('File "/jobs/ft/hf_ft.py", line 30, in <module>', "args = TrainingArguments(**cfg)")],
                          f"TypeError: TrainingArguments.__init__() got an unexpected keyword argument '{name}'")
    typo = _run(tmp_path, refused("per_device_train_bach_size"))
    assert (typo.category, typo.fixes[0]["kind"]) == ("config_invalid", "fix_config")
    removed = _run(tmp_path, refused("per_gpu_train_batch_size"), name="removed.log")
    assert removed.category == "version_mismatch"


def test_a_missing_weight_shard_is_the_models(tmp_path):
    text = _traceback(0, [('File "/venv/lib/python3.11/site-packages/transformers/modeling_utils.py", line 900, '
                           'in load_shard', "state = safe_load_file(shard_file)")],
                      "FileNotFoundError: No such file or directory: assets/quokka/model-00003-of-00003.safetensors")
    result = _run(tmp_path, text)
    assert (result.category, result.fixes[0]["kind"]) == ("model_load", "fix_path")


def test_a_reshape_written_for_a_full_batch_at_the_scripts_line_is_a_code_bug(tmp_path):
    text = _traceback(2, [('File "/jobs/ft/ddp_ft.py", line 120, in evaluate', "scores = logits.view(4, -1).mean(1)")],
                      "RuntimeError: shape '[4, -1]' is invalid for input of size 45")
    result = _run(tmp_path, text)
    assert (result.category, result.failing_rank) == ("code_bug", 2)


def test_a_memoryerror_at_the_scripts_line_puts_the_batch_and_that_line_first(tmp_path):
    text = _traceback(1, [('File "/jobs/ft/job.py", line 77, in build_cache', "cache = [featurize(r) for r in rows]")],
                      "MemoryError")
    result = _run(tmp_path, text)
    assert result.category == "host_oom"
    assert [fix["kind"] for fix in result.fixes][:2] == ["reduce_batch_size", "fix_code"]


def test_a_message_announcing_a_list_takes_its_long_lines(tmp_path):
    keys = ", ".join(f'"module.transformer.h.{index}.attn.c_attn.weight"' for index in range(40))
    text = _traceback(1, [('File "/jobs/ft/hf_ft.py", line 36, in <module>', "model.load_state_dict(state)")],
                      "RuntimeError: Error(s) in loading state_dict for GPT2LMHeadModel: ")
    text += f"[rank1]: \tUnexpected key(s) in state_dict: {keys}\n"
    result = _run(tmp_path, text)
    assert result.category == "model_load"
    assert "Unexpected key(s)" in result.root_cause.message
    assert result.fixes[0]["kind"] == "fix_code"


def test_a_thread_that_died_before_its_ranks_timeout_is_why_every_rank_timed_out(tmp_path):
    def watchdog(rank: int) -> str:
        return (f"[rank{rank}]:[E1201 17:12:44.111000 ProcessGroupNCCL.cpp:632] [Rank {rank}] Watchdog caught "
                "collective operation timeout: WorkNCCL(SeqNum=3071, OpType=ALLGATHER, NumelIn=4, NumelOut=16, "
                "Timeout(ms)=600000) ran for 600047 milliseconds before timing out.")
    text = "\n".join([
        "[rank2]:Exception in thread eval-metrics:",
        "[rank2]:Traceback (most recent call last):",
        '[rank2]:  File "/usr/lib/python3.11/threading.py", line 1075, in _bootstrap_inner',
        "[rank2]:    self.run()",
        '[rank2]:  File "/jobs/rl/eval_async.py", line 41, in run',
        "[rank2]:    self.result = correct / seen",
        "[rank2]:ZeroDivisionError: division by zero",
        watchdog(0), watchdog(1), watchdog(2), watchdog(3),
    ]) + "\n"
    result = _run(tmp_path, text)
    assert (result.category, result.root_cause.exception, result.failing_rank) == ("code_bug", "ZeroDivisionError", 2)


def test_a_typeerror_in_one_librarys_api_called_by_another_is_their_releases(tmp_path):
    frames = [
        ('File "/srv/sft/train.py", line 140, in <module>', "trainer.train()"),
        ('File "/venv/lib/python3.11/site-packages/deepspeed/comm/comm.py", line 305, in all_gather_into_tensor',
         "return cdb.all_gather_into_tensor(output_tensor=output_tensor, input_tensor=tensor, group=group)"),
        ('File "/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py", line 3847, '
         "in all_gather_into_tensor", "work = group._allgather_base(output_tensor, input_tensor, opts)"),
    ]
    result = _run(tmp_path, _traceback(0, frames, "TypeError: output tensor must have the same type as input tensor"))
    assert (result.category, result.fixes[0]["kind"]) == ("version_mismatch", "pin_versions")


def test_a_breakpoint_left_in_the_script_is_the_scripts(tmp_path):
    text = _traceback(2, [
        ('File "/jobs/lm/train_loop.py", line 62, in step', "breakpoint()"),
        ('File "/usr/lib/python3.11/bdb.py", line 115, in dispatch_line', "if self.quitting: raise BdbQuit"),
    ], "bdb.BdbQuit")
    result = _run(tmp_path, text)
    assert (result.category, result.root_cause.exception, result.failing_rank) == ("code_bug", "BdbQuit", 2)


def test_a_mean_of_no_predictions_in_the_teams_metric_is_the_teams_code(tmp_path):
    text = _traceback(1, [
        ('File "/jobs/lm/evaluate.py", line 40, in per_class_recall', "return statistics.mean(hits[cls])"),
        ('File "/usr/lib/python3.11/statistics.py", line 430, in mean', "raise StatisticsError('mean requires at least one data point')"),
    ], "statistics.StatisticsError: mean requires at least one data point")
    assert _run(tmp_path, text).category == "code_bug"


def test_the_dataloaders_own_timeout_is_the_loader_and_a_csv_error_is_the_file(tmp_path):
    timeout = _traceback(1, [('File "/venv/lib/python3.11/site-packages/torch/utils/data/dataloader.py", line 1134, '
                              'in _try_get_data', "raise RuntimeError(")],
                         "RuntimeError: DataLoader timed out after 10 seconds")
    result = _run(tmp_path, timeout)
    assert (result.category, [fix["kind"] for fix in result.fixes][:1]) == ("dataloader_worker", ["increase_timeout"])
    barrier = "[rank0]: RuntimeError: [Rank 0]: Rank 1 failed to pass monitoredBarrier in 15000 ms\n"
    csv_error = _traceback(1, [('File "/jobs/lm/shards.py", line 30, in rows', "for row in csv.DictReader(handle):")],
                           "_csv.Error: field larger than field limit (131072)")
    result = _run(tmp_path, csv_error + barrier, name="csv.log")
    assert (result.category, result.failing_rank) == ("data_corrupt", 1)


def test_ids_stored_as_one_string_meeting_the_collates_padding_are_the_datas_format(tmp_path):
    text = _traceback(3, [
        ('File "/venv/lib/python3.11/site-packages/torch/utils/data/_utils/fetch.py", line 57, in fetch',
         "return self.collate_fn(data)"),
        ('File "/jobs/lm/batching.py", line 64, in collate', "out.append(ids + [0] * (max_len - len(ids)))"),
    ], 'TypeError: can only concatenate str (not "list") to str')
    result = _run(tmp_path, text)
    assert (result.category, result.failing_rank) == ("data_schema", 3)


def test_a_learning_rate_that_yaml_read_as_text_is_a_setting(tmp_path):
    text = _traceback(1, [
        ('File "/jobs/lm/train_loop.py", line 40, in build', "opt = torch.optim.AdamW(model.parameters(), lr=cfg['lr'])"),
        ('File "/venv/lib/python3.11/site-packages/torch/optim/adamw.py", line 40, in __init__',
         "if not 0.0 <= lr:"),
    ], "TypeError: '<=' not supported between instances of 'float' and 'str'")
    assert _run(tmp_path, text).category == "config_invalid"
    # the same comparison in the team's own code is the team's
    own = text.replace('/venv/lib/python3.11/site-packages/torch/optim/adamw.py', '/jobs/lm/sched.py')
    assert _run(tmp_path, own, name="own.log").category == "code_bug"


def test_float64_data_meeting_float32_weights_is_the_datas_format(tmp_path):
    text = _traceback(1, [('File "/jobs/lm/train_loop.py", line 90, in step', "loss = F.huber_loss(pred, target)")],
                      "RuntimeError: Found dtype Double but expected Float")
    assert _run(tmp_path, text).category == "data_schema"


def test_an_assertion_that_the_loss_is_finite_is_numerical(tmp_path):
    text = _traceback(0, [
        ('File "/venv/lib/python3.10/site-packages/mmengine/hooks/checkloss_hook.py", line 38, in after_train_iter',
         "assert torch.isfinite(runner.outputs['loss']), \\"),
    ], "AssertionError")
    result = _run(tmp_path, text)
    assert (result.category, result.root_cause.exception) == ("numerical", "AssertionError")


def test_a_reward_function_meeting_a_word_or_a_null_in_the_answer_column_is_the_datas(tmp_path):
    word = _traceback(2, [('File "/jobs/rl/rewards.py", line 23, in numeric_reward', "ref = float(answer)")],
                      "ValueError: could not convert string to float: 'four'")
    assert _run(tmp_path, word).category == "data_schema"
    null = _traceback(1, [('File "/jobs/rl/rewards.py", line 30, in exact_reward', "return answer.strip() == guess")],
                      "AttributeError: 'NoneType' object has no attribute 'strip'")
    assert _run(tmp_path, null, name="null.log").category == "data_schema"
    # the same conversion in a settings helper is not the data's
    setting = word.replace("numeric_reward", "parse_schedule").replace("rewards.py", "settings.py")
    assert _run(tmp_path, setting, name="setting.log").category != "data_schema"


def test_the_re_modules_lowercase_error_is_an_exception_and_a_trainers_length_filter_emptying_the_set_asks_for_the_limit(tmp_path):
    regex = _traceback(2, [('File "/jobs/rl/rewards.py", line 12, in format_reward', "pattern = re.compile(row['format'])")],
                       "re.error: missing ), unterminated subpattern at position 0")
    assert _run(tmp_path, regex).root_cause.exception == "error"
    empty = ("Dropping fully truncated examples from train dataset:   0%|          | 0/48 [00:00<?, ? examples/s]\n"
             + _traceback(0, [('File "/venv/lib/python3.11/site-packages/torch/utils/data/sampler.py", line 164, '
                               'in __init__', "raise ValueError(")],
                          "ValueError: num_samples should be a positive integer value, but got num_samples=0"))
    result = _run(tmp_path, empty, name="empty.log")
    assert (result.category, [fix["kind"] for fix in result.fixes][:1]) == ("data_pipeline", ["fix_config"])


def test_cpu_set_16s_forms_settings_paths_and_rows(tmp_path):
    dropout = _traceback(0, [('File "/venv/lib/python3.11/site-packages/torch/nn/modules/dropout.py", line 26, in __init__',
                              "raise ValueError(")],
                         "ValueError: dropout probability has to be between 0 and 1, but got 1.5")
    assert _run(tmp_path, dropout).category == "config_invalid"
    long_name = _traceback(3, [('File "/jobs/lm/train_loop.py", line 90, in save', "torch.save(state, path)")],
                           "OSError: [Errno 36] File name too long: '/out/run-" + "retry-" * 50 + "'")
    assert _run(tmp_path, long_name, name="name.log").category == "storage"
    rows = _traceback(2, [('File "/jobs/lm/train_loop.py", line 47, in encode', 'toks = splitter.findall(r["text"].lower())')],
                      "TypeError: list indices must be integers or slices, not str")
    assert _run(tmp_path, rows, name="rows.log").category == "data_schema"
    unknown_label = _traceback(1, [('File "/jobs/lm/data/intents.py", line 30, in to_example',
                                    "label = LABELS.index(row['intent'])")],
                               "ValueError: 'cancellation' is not in list")
    assert _run(tmp_path, unknown_label, name="label.log").category == "data_schema"


_TORCH = "/venv/lib/python3.11/site-packages/torch"


def test_tensor_sizes_that_disagree_are_the_scripts_at_its_own_call_and_the_datas_in_its_collate(tmp_path):
    # (cpu_blind17's forms) a loss called at the script's line with a squeezed [1] batch; a collate whose tags
    # and tokens differ in length for one row
    loss = _run(tmp_path, _traceback(1, [
        ('File "/jobs/intent/train.py", line 144, in main',
         'loss = F.binary_cross_entropy_with_logits(out["escalate"].squeeze(), batch["esc"])'),
        (f'File "{_TORCH}/nn/functional.py", line 3689, in binary_cross_entropy_with_logits', "raise ValueError("),
    ], "ValueError: Target size (torch.Size([1])) must be the same as input size (torch.Size([]))"))
    assert (loss.category, loss.failing_rank, loss.fixes[0]["kind"]) == ("code_bug", 1, "fix_code")
    collate = _run(tmp_path, _traceback(3, [
        (f'File "{_TORCH}/utils/data/_utils/fetch.py", line 55, in fetch', "return self.collate_fn(data)"),
        ('File "/jobs/ner/train.py", line 61, in collate', "labels[i, : len(tags)] = torch.tensor(tags)"),
    ], "RuntimeError: The expanded size of the tensor (11) must match the existing size (12) at non-singleton "
       "dimension 0.  Target sizes: [11].  Tensor sizes: [12]"), name="collate.log")
    assert (collate.category, collate.failing_rank) == ("data_pipeline", 3)


def test_a_collective_refusing_the_arguments_one_rank_passed_is_the_scripts_call(tmp_path):
    result = _run(tmp_path, _traceback(2, [
        ('File "/jobs/intent/train.py", line 170, in summarize', "dist.gather_object(mine, gathered, dst=0)"),
        (f'File "{_TORCH}/distributed/distributed_c10d.py", line 3611, in gather_object',
         "_validate_output_list_for_rank(my_rank, dst, object_gather_list)"),
        (f'File "{_TORCH}/distributed/distributed_c10d.py", line 2998, in _validate_output_list_for_rank',
         "raise ValueError("),
    ], "ValueError: Argument ``gather_list`` must NOT be specified on non-destination ranks."))
    assert (result.category, result.failing_rank, result.fixes[0]["kind"]) == ("code_bug", 2, "fix_code")


def test_a_module_attribute_named_by_a_setting_is_the_setting_and_one_named_in_the_code_a_release(tmp_path):
    lookup = (f'File "{_TORCH}/__init__.py", line 2963, in __getattr__',
              "raise AttributeError(f\"module '{__name__}' has no attribute '{name}'\")")
    by_setting = _run(tmp_path, _traceback(2, [
        ('File "/jobs/intent/train.py", line 122, in main', 'dtype = getattr(torch, os.environ.get("TRAIN_DTYPE"))'),
        lookup], "AttributeError: module 'torch' has no attribute 'bf16'"))
    assert (by_setting.category, by_setting.fixes[0]["kind"]) == ("config_invalid", "fix_config")
    in_code = _run(tmp_path, _traceback(2, [
        ('File "/jobs/intent/train.py", line 122, in main', "model = torch.compiler.compile(model)"),
        lookup], "AttributeError: module 'torch' has no attribute 'compiler'"), name="release.log")
    assert in_code.category == "version_mismatch"


def test_an_adapter_library_refusing_a_target_module_is_the_adapter_settings(tmp_path):
    peft = "/venv/lib/python3.11/site-packages/peft/tuners"
    result = _run(tmp_path, _traceback(1, [
        ('File "/jobs/lora/train.py", line 48, in main', "model = get_peft_model(model, LoraConfig(**cfg.lora))"),
        (f'File "{peft}/tuners_utils.py", line 501, in inject_adapter',
         "self._create_and_replace(peft_config, adapter_name, target, target_name, parent)"),
        (f'File "{peft}/lora/model.py", line 241, in _create_new_module', "raise ValueError("),
    ], "ValueError: Target module Block(\n  (attn): Attention()\n  (mlp): Mlp()\n) is not supported."))
    assert (result.category, result.fixes[0]["kind"]) == ("config_invalid", "fix_config")


ACCELERATE_LEFT_ALONE = """\
[rank0]: Traceback (most recent call last):
[rank0]:   File "/jobs/sft/run.py", line 101, in main
[rank0]:     metrics = trainer.evaluate()
[rank0]:   File "/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py", line 4287, in all_gather
[rank0]:     work.wait()
[rank0]: RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed by peer [127.0.0.1]:63644. This is typically caused by a remote worker crashing.
E1205 02:13:52.386000 28851 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: 1) local_rank: 0 (pid: 28855) of binary: /venv/bin/python
"""


def test_an_accelerate_config_states_the_world_the_command_leaves_to_it(tmp_path):
    # rank 0 alone waits in a gather its peers, finished, never join: only a known world of 3 says so
    config = tmp_path / "accelerate.yaml"
    config.write_text("distributed_type: MULTI_GPU\nnum_machines: 1\nnum_processes: 3\nuse_cpu: true\n")
    log = tmp_path / "run.log"
    log.write_text(ACCELERATE_LEFT_ALONE)
    command = "accelerate launch --config_file acc.yaml run.py --final_eval"
    result = diagnose([log], command=command, config_paths=[config])
    assert (result.world_size, result.category, result.failing_rank) == (3, "code_bug", 0)
    assert diagnose([log], command=command).world_size != 3  # without the config nothing states it


def test_the_global_rank_used_as_a_gpu_index_is_the_scripts_and_a_count_past_the_gpus_a_setting(tmp_path):
    # srun --label pads task numbers to the widest ("11: ", " 8: "): both are task labels, never hosts
    def ranks(code: str, where: str = "/home/vit/dist_utils.py") -> str:
        out = ""
        for rank in (8, 11):
            out += "".join(f"{rank:2d}: {line}\n" for line in (
                "Traceback (most recent call last):",
                f'  File "{where}", line 19, in setup_distributed', f"    {code}",
                '  File "/venv/lib/python3.12/site-packages/torch/cuda/__init__.py", line 567, in set_device',
                "    torch._C._cuda_setDevice(device)",
                "torch.AcceleratorError: CUDA error: invalid device ordinal"))
        return out
    by_rank = _run(tmp_path, ranks("torch.cuda.set_device(rank)"))
    assert (by_rank.category, by_rank.failing_rank, by_rank.fixes[0]["kind"]) == ("code_bug", 8, "fix_code")
    local = _run(tmp_path, ranks("torch.cuda.set_device(local_rank)"), name="local.log")
    assert local.category == "config_invalid"
    # a trainer library's own DDP set-up doing it: its release, or the script setting the device itself
    library = _run(tmp_path, ranks("torch.cuda.set_device(RANK)", "/opt/conda/lib/python3.9/site-packages/"
                                   "detkit/engine/trainer.py"), name="library.log")
    assert (library.category, [fix["kind"] for fix in library.fixes][:2]) == ("code_bug", ["fix_code", "pin_versions"])


def test_a_gpu_feature_for_a_newer_gpu_model_is_a_setting_for_another_gpu(tmp_path):
    result = _run(tmp_path, _traceback(3, [
        ('File "/lustre/titan/components/quantization/float8.py", line 60, in __init__', "raise ValueError("),
    ], "ValueError: Failed to swap to Float8Linear because float8 is only supported on SM89 or later."))
    assert (result.category, result.fixes[0]["kind"]) == ("config_invalid", "fix_config")


def test_what_the_optimizer_and_the_compiler_refuse_and_a_folder_two_ranks_delete(tmp_path):
    # (cpu_blind18's forms)
    groups = _run(tmp_path, _traceback(0, [
        ('File "/jobs/intent/train.py", line 90, in build_optimizer', "opt = torch.optim.AdamW(groups, lr=cfg.lr)"),
        (f'File "{_TORCH}/optim/optimizer.py", line 1074, in add_param_group', "raise ValueError("),
    ], "ValueError: some parameters appear in more than one parameter group"))
    assert (groups.category, groups.fixes[0]["kind"]) == ("code_bug", "fix_code")
    compiled = _run(tmp_path, _traceback(1, [
        ('File "/jobs/intent/train.py", line 120, in step', "logits = model(batch)"),
        (f'File "{_TORCH}/_dynamo/eval_frame.py", line 841, in compile_wrapper', "raise e.with_traceback(None)"),
    ], "torch._dynamo.exc.UserError: Could not guard on data-dependent expression u0 > 30.0"), name="c.log")
    assert (compiled.category, compiled.fixes[0]["kind"]) == ("code_bug", "fix_code")
    raced = _run(tmp_path, _traceback(2, [
        ('File "/jobs/intent/train.py", line 200, in evaluate', "shutil.rmtree(out_dir)"),
        ('File "/usr/lib/python3.11/shutil.py", line 759, in rmtree', "_rmtree_safe_fd(fd, path, onerror)"),
        ('File "/usr/lib/python3.11/shutil.py", line 690, in _rmtree_safe_fd', "os.unlink(entry.name, dir_fd=topfd)"),
    ], "FileNotFoundError: [Errno 2] No such file or directory: 'eval-step01550'"), name="r.log")
    assert (raced.category, raced.failing_rank) == ("code_bug", 2)


def test_shapes_that_disagree_inside_the_optimizers_step_are_a_resumed_state_of_another_model(tmp_path):
    result = _run(tmp_path, _traceback(0, [
        ('File "/jobs/intent/train.py", line 150, in main', "optimizer.step()"),
        (f'File "{_TORCH}/optim/adam.py", line 402, in _single_tensor_adam', "exp_avg.lerp_(grad, 1 - beta1)"),
    ], "RuntimeError: The size of tensor a (64) must match the size of tensor b (48) at non-singleton dimension 1"))
    assert (result.category, result.fixes[0]["kind"]) == ("model_load", "fix_path")


def test_python_dash_m_naming_its_missing_package_in_parentheses_names_the_exception(tmp_path):
    result = _run(tmp_path, "trn-02: /opt/conda/envs/rl/bin/python: Error while finding module specification for "
                            "'deepspeed.launcher.launch' (ModuleNotFoundError: No module named 'deepspeed')\n")
    assert (result.category, result.root_cause.exception) == ("version_mismatch", "ModuleNotFoundError")
    assert "No module named 'deepspeed'" in result.root_cause.message


def test_a_worker_error_torch_could_not_rebuild_is_read_from_its_original_traceback(tmp_path):
    # torch re-raises a class it cannot rebuild as RuntimeError("Caught X in DataLoader worker process N.")
    text = ("[rank6]: RuntimeError: Caught InvalidDataError in DataLoader worker process 4.\n"
            "[rank6]: Original Traceback (most recent call last):\n"
            '[rank6]:   File "/srv/video/clips.py", line 41, in __getitem__\n'
            "[rank6]:     container = av.open(path)\n"
            "[rank6]: av.error.InvalidDataError: [Errno 1094995529] Invalid data found when processing input: "
            "'/data/clips/k_018211.mp4'\n")
    result = _run(tmp_path, text)
    assert (result.category, result.root_cause.exception, result.failing_rank) == ("data_corrupt", "InvalidDataError", 6)


def test_a_raised_exception_outranks_pips_install_time_conflict_warning(tmp_path):
    text = ("ERROR: pip's dependency resolver does not currently take into account all the packages that are "
            "installed.\n"
            "gcsfs 2025.3.2 requires fsspec==2025.3.2, but you have fsspec 2025.3.0 which is incompatible.\n"
            "Successfully installed datasets-4.0.0\n"
            "RuntimeError: Dataset scripts are no longer supported, but found medqa_4opt.py\n")
    result = _run(tmp_path, text)
    assert (result.category, result.root_cause.exception) == ("version_mismatch", "RuntimeError")
    assert "no longer supported" in result.root_cause.message


def test_a_component_that_requires_a_setting_to_be_set_is_the_config(tmp_path):
    result = _run(tmp_path, _traceback(0, [
        ('File "/venv/lib/python3.11/site-packages/torchtune/datasets/_chat.py", line 190, in chat_dataset',
         "raise ValueError("),
    ], "ValueError: PackedDataset requires a max_seq_len to be set on the tokenizer."))
    assert (result.category, result.fixes[0]["kind"]) == ("config_invalid", "fix_config")


def test_a_config_value_of_another_type_than_the_code_expects_is_the_config(tmp_path):
    join = ('File "<frozen posixpath>", line 90, in join', "genericpath._check_arg_types('join', a, *p)")
    typed = _run(tmp_path, _traceback(1, [
        ('File "/jobs/intent/train.py", line 60, in worker', 'out_dir = os.path.join(args.out, cfg["run_tag"])'),
        join], "TypeError: join() argument must be str, bytes, or os.PathLike object, not 'int'"))
    assert (typed.category, typed.fixes[0]["kind"]) == ("config_invalid", "fix_config")
    # the same refusal of a value the script computed is the script's
    computed = _run(tmp_path, _traceback(1, [
        ('File "/jobs/intent/train.py", line 60, in worker', "out_dir = os.path.join(args.out, step)"),
        join], "TypeError: join() argument must be str, bytes, or os.PathLike object, not 'int'"), name="c.log")
    assert computed.category == "code_bug"


def test_cpu_blind19_forms_a_compiler_backend_an_empty_split_and_decoded_padding(tmp_path):
    backend = _run(tmp_path, _traceback(1, [
        (f'File "{_TORCH}/_dynamo/backends/registry.py", line 70, in lookup_backend', "raise InvalidBackend(name)"),
    ], "torch._dynamo.exc.InvalidBackend: Invalid backend: 'tensorrt', see `torch._dynamo.list_backends()` for "
       "available backends."))
    assert (backend.category, backend.fixes[0]["kind"]) == ("config_invalid", "fix_config")
    empty = _run(tmp_path, _traceback(2, [
        ('File "/venv/lib/python3.11/site-packages/datasets/arrow_reader.py", line 240, in read', "raise ValueError("),
    ], 'ValueError: Instruction "validation" corresponds to no data!'), name="empty.log")
    assert (empty.category, empty.fixes[0]["kind"]) == ("data_corrupt", "fix_data_file")
    decoded = _run(tmp_path, _traceback(0, [
        ('File "/jobs/s2s/train.py", line 70, in compute_metrics',
         "refs = tok.batch_decode(labels, skip_special_tokens=True)"),
        ('File "/venv/lib/python3.11/site-packages/transformers/tokenization_utils_base.py", line 3900, in decode',
         "return self._decode("),
    ], "OverflowError: number too small to fit in target type while processing 'ids'"), name="decode.log")
    assert (decoded.category, decoded.fixes[0]["kind"]) == ("code_bug", "fix_code")


def test_blind27_forms_divisibility_arrow_offsets_and_a_callback_the_library_calls(tmp_path):
    grpo = "/venv/lib/python3.12/site-packages/trl/trainer/grpo_trainer.py"
    divide = _run(tmp_path, _traceback(3, [
        ('File "/jobs/rl/train_grpo.py", line 88, in main', "trainer = GRPOTrainer(model=model, args=cfg)"),
        (f'File "{grpo}", line 640, in __init__', "raise ValueError("),
    ], "ValueError: vllm_tensor_parallel_size (3) must divide world size (8) evenly."))
    assert (divide.category, divide.fixes[0]["kind"]) == ("config_invalid", "fix_config")
    arrow = _run(tmp_path, _traceback(0, [
        ('File "pyarrow/table.pxi", line 4361, in pyarrow.lib.Table.combine_chunks', "..."),
        ('File "pyarrow/error.pxi", line 92, in pyarrow.lib.check_status', "..."),
    ], "pyarrow.lib.ArrowInvalid: offset overflow while concatenating arrays"), name="arrow.log")
    assert (arrow.category, arrow.fixes[0]["kind"]) == ("data_pipeline", "fix_config")
    warmup = _run(tmp_path, _traceback(5, [
        ('File "/jobs/dpo/sched.py", line 12, in build_scheduler', "return LambdaLR(opt, lr_lambda)"),
        (f'File "{_TORCH}/optim/lr_scheduler.py", line 280, in <listcomp>', "base_lr * lmbda(self.last_epoch)"),
        ('File "/jobs/dpo/sched.py", line 9, in lr_lambda', "return step / warmup_steps"),
    ], "ZeroDivisionError: division by zero"), name="warmup.log")
    assert (warmup.category, warmup.fixes[0]["kind"]) == ("code_bug", "fix_code")


def test_the_random_module_refusing_the_scripts_sample_is_the_script(tmp_path):
    result = _run(tmp_path, _traceback(3, [
        ('File "/jobs/sd/bucket_sampler.py", line 44, in __iter__', "picks = random.sample(bucket, self.batch_size)"),
        ('File "/usr/lib/python3.11/random.py", line 456, in sample',
         'raise ValueError("Sample larger than population or is negative")'),
    ], "ValueError: Sample larger than population or is negative"))
    assert (result.category, result.failing_rank) == ("code_bug", 3)


def test_a_download_left_incomplete_after_a_low_disk_warning_is_the_disk(tmp_path):
    warning = ("/venv/lib/python3.12/site-packages/huggingface_hub/file_download.py:801: UserWarning: Not enough free "
               "disk space to download the file. The expected file size is: 4983.02 MB.\n")
    incomplete = _traceback(8, [
        ('File "/venv/lib/python3.12/site-packages/huggingface_hub/file_download.py", line 470, in http_get',
         "raise EnvironmentError("),
    ], "OSError: Consistency check failed: file should be of size 4983024064 but has size 1294372864 "
       "(model-00001-of-00005.safetensors). This is usually due to network issues while downloading the file.")
    assert _run(tmp_path, warning + incomplete).category == "storage"
    assert _run(tmp_path, incomplete, name="net.log").category == "model_load"


def test_ranks_whose_models_differ_in_parameter_count_built_them_from_other_settings(tmp_path):
    result = _run(tmp_path, _traceback(8, [
        ('File "/jobs/lora/train.py", line 120, in main', "model = accelerator.prepare(model)"),
        (f'File "{_TORCH}/distributed/utils.py", line 290, in _verify_param_shape_across_processes',
         "return dist._verify_params_across_processes(process_group, tensors, logger)"),
    ], "RuntimeError: DDP expects same model across all ranks, but Rank 0 has 336 params, while rank 8 has "
       "inconsistent 84 params."))
    assert (result.category, result.fixes[0]["kind"]) == ("config_invalid", "fix_config")


def test_a_write_cut_short_is_storage_and_a_view_the_scripts_loss_cannot_take_is_the_script(tmp_path):
    numpy = "/venv/lib/python3.11/site-packages/numpy/lib"
    cut = _run(tmp_path, _traceback(2, [
        ('File "/jobs/ft/train.py", line 88, in <module>', "np.save(cache / f'feat-{rank}.npy', feats)"),
        (f'File "{numpy}/_format_impl.py", line 750, in write_array', "array.tofile(fp)"),
    ], "OSError: 450560 requested and 262112 written"))
    assert (cut.category, cut.failing_rank) == ("storage", 2)
    view = _run(tmp_path, _traceback(0, [
        ('File "/venv/lib/python3.11/site-packages/transformers/trainer.py", line 3800, in training_step',
         "loss = self.compute_loss(model, inputs)"),
        ('File "/jobs/ft/wloss.py", line 40, in compute_loss', "flat = logits.transpose(1, 2).view(-1, n)"),
    ], "RuntimeError: view size is not compatible with input tensor's size and stride (at least one dimension "
       "spans across two contiguous subspaces). Use .reshape(...) instead."), name="view.log")
    assert (view.category, view.fixes[0]["kind"]) == ("code_bug", "fix_code")


def test_one_object_passed_for_two_roles_is_the_scripts_call(tmp_path):
    dpo = "/venv/lib/python3.11/site-packages/trl/trainer/dpo_trainer.py"
    result = _run(tmp_path, _traceback(0, [
        ('File "/jobs/dpo/pairs.py", line 26, in main', "trainer = DPOTrainer(model=policy, ref_model=reference)"),
        (f'File "{dpo}", line 591, in __init__', "raise ValueError("),
    ], "ValueError: `model` and `ref_model` cannot be the same object. In most cases you should omit `ref_model` "
       "and we'll initialize it to a copy of `model` for you."))
    assert (result.category, result.fixes[0]["kind"]) == ("code_bug", "fix_code")


OWN = 'File "/srv/ml/ranker/train_ranker.py", line {line}, in {function}'
SITE_PKG = 'File "/opt/env/lib/python3.11/site-packages/{path}", line 40, in {function}'


def test_faults_of_a_teams_own_loop_found_by_real_cpu_runs(tmp_path):
    """(frames, last line) -> (category, first fix): the forms blind set cpu_blind21 met."""
    cases = [
        # a staged checkpoint renamed from tmpfs onto the disk: the paths, not a full /dev/shm
        ([(OWN.format(line=134, function="save_checkpoint"), "os.rename(stage, final)")],
         "OSError: [Errno 18] Invalid cross-device link: '/dev/shm/stage/ckpt-4' -> '/data/ckpt/step-4'",
         ("storage", "fix_path")),
        # a system call of the script's own given a bad argument (a CPU past the node's cores)
        ([(OWN.format(line=141, function="pin_threads"), "os.sched_setaffinity(0, {rank})")],
         "OSError: [Errno 22] Invalid argument", ("code_bug", "fix_code")),
        # the same errno naming a file stays the file system's
        ([(OWN.format(line=88, function="save"), "open(path, 'wb')")],
         "OSError: [Errno 22] Invalid argument: '/mnt/s3fs/out/metrics:4.json'", ("storage", "fix_path")),
        # a packer that kept no block from a shard of short rows
        ([(OWN.format(line=50, function="__init__"), "self.blocks = torch.stack(blocks)")],
         "RuntimeError: stack expects a non-empty TensorList", ("data_pipeline", "fix_data_file")),
        # the optimizer's own argument check on a value from the run's config
        ([(OWN.format(line=30, function="build_optimizer"), "return AdamW(params, betas=cfg['betas'])"),
          (SITE_PKG.format(path="torch/optim/adam.py", function="__init__"),
           'raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")')],
         "ValueError: Invalid beta parameter at index 1: 1.0", ("config_invalid", "fix_config")),
        # bf16 embeddings meeting a float32 queue in a matmul outside autocast (CPU's wording)
        ([(OWN.format(line=93, function="main"), "scores = q @ queue.T")],
         "RuntimeError: expected m1 and m2 to have the same dtype, but got: c10::BFloat16 != float",
         ("code_bug", "fix_code")),
        # chat message lists where the tokenizer wants a string
        ([(OWN.format(line=30, function="__getitem__"), "return self.tok(row['chosen'])"),
          (SITE_PKG.format(path="transformers/tokenization_utils_base.py", function="__call__"),
           "raise ValueError(...)")],
         "ValueError: text input must be of type `str` (single example), `list[str]` (batch or single pretokenized "
         "example) or `list[list[str]]` (batch of pretokenized examples).", ("data_schema", "convert_data_format")),
    ]
    for index, (frames, last, (category, fix)) in enumerate(cases):
        result = _run(tmp_path, _traceback(1, frames, last), name=f"case{index}.log")
        assert (result.category, result.fixes[0]["kind"]) == (category, fix), last
        assert result.failing_rank == 1


def test_two_gpus_tensors_meeting_in_the_scripts_module_are_its_code_and_in_a_library_model_the_placement(tmp_path):
    last = ("RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and "
            "cuda:3! (when checking argument for argument tensors in method wrapper_CUDA_cat)")
    ddp = SITE_PKG.format(path="torch/nn/parallel/distributed.py", function="forward")
    own = _run(tmp_path, _traceback(0, [(OWN.format(line=96, function="train_loop"), "out = model(x)"),
                                        (ddp, "return self.module(*inputs)"),
                                        ('File "/srv/ml/ranker/model.py", line 58, in forward',
                                         "h = torch.cat([h, self.pos.to(f'cuda:{rank}')], -1)")], last), name="own.log")
    assert (own.category, own.fixes[0]["kind"]) == ("code_bug", "fix_code")
    spread = _run(tmp_path, _traceback(0, [(OWN.format(line=96, function="train_loop"), "out = model(**batch)"),
                                           (SITE_PKG.format(path="transformers/models/llama/modeling_llama.py",
                                                            function="forward"), "h = torch.cat([a, b], -1)")],
                                       last), name="spread.log")
    assert (spread.category, spread.fixes[0]["kind"]) == ("config_invalid", "fix_config")


def test_a_loss_non_finite_on_one_rank_only_puts_that_ranks_data_next_to_the_numerics(tmp_path):
    def nan(rank: int) -> str:
        return _traceback(rank, [(OWN.format(line=68, function="main"), "raise FloatingPointError(msg)")],
                          f"FloatingPointError: non-finite loss at step 57 on rank {rank}: spend=nan")
    progress = "".join(f"[rank{r}]: step 57 batch loaded\n" for r in range(4))
    command = "torchrun --nproc_per_node 4 fit_churn.py"
    one = _run(tmp_path, progress + nan(3), command=command, name="one.log")
    assert one.category == "numerical" and one.failing_rank == 3
    assert [fix["kind"] for fix in one.fixes][:2] == ["fix_numerics", "fix_data_file"]
    assert "failing rank's data" in one.fixes[1]["title"]
    every = _run(tmp_path, progress + nan(3) + nan(1), command=command, name="every.log")
    assert "fix_data_file" not in [fix["kind"] for fix in every.fixes][:2]


def test_only_the_layers_past_the_checkpoints_last_missing_means_a_deeper_config_not_other_names(tmp_path):
    frames = [(OWN.format(line=37, function="load_teacher"), "teacher.load_state_dict(torch.load(path))")]
    deeper = _run(tmp_path, _traceback(0, frames, 'RuntimeError: Error(s) in loading state_dict for FrameMLP: Missing '
                                                  'key(s) in state_dict: "blocks.4.0.weight", "blocks.5.0.weight".'),
                  name="deeper.log")
    assert deeper.category == "model_load" and [f["kind"] for f in deeper.fixes][:2] == ["fix_path", "fix_config"]
    renamed = _run(tmp_path, _traceback(0, frames, 'RuntimeError: Error(s) in loading state_dict for FrameMLP: Missing '
                                                   'key(s) in state_dict: "blocks.0.0.weight". Unexpected key(s) in '
                                                   'state_dict: "module.blocks.0.0.weight".'), name="renamed.log")
    assert renamed.fixes[0]["kind"] == "fix_code"


def test_a_scripts_key_value_counters_saying_it_kept_nothing_put_the_filters_limits_first(tmp_path):
    empty = _traceback(1, [('File "/venv/lib/python3.11/site-packages/torch/utils/data/sampler.py", line 149, in '
                            '__init__', "raise ValueError(")],
                       "ValueError: num_samples should be a positive integer value, but got num_samples=0")
    kept_none = _run(tmp_path, "[proc 1] shards=['reports-01.jsonl'] kept=0 dropped_long=64\n" + empty, name="a.log")
    assert kept_none.fixes[0]["kind"] == "fix_config"
    kept_some = _run(tmp_path, "[proc 1] shards=['reports-01.jsonl'] kept=10 dropped_long=0\n" + empty, name="b.log")
    assert kept_some.fixes[0]["kind"] != "fix_config"


def _empty_shard_run(tmp_path, empty_rank: int, stalled_rank: int):
    """Per-rank folders as torchrun --log-dir writes them: every rank reports its rows, the stalled rank raises
    nothing and the others time out in the gradient all-reduce."""
    for rank in range(3):
        folder = tmp_path / "logs" / "attempt_0" / str(rank)
        folder.mkdir(parents=True)
        rows = 0 if rank == empty_rank else 72
        (folder / "stdout.log").write_text(f"[07:12:03] worker {rank}: loaded {rows} rows from part-{rank}.jsonl\n")
        err = "" if rank == stalled_rank else (
            f"[rank{rank}]: Traceback (most recent call last):\n"
            f'[rank{rank}]:   File "/jobs/lm/loop.py", line 77, in <module>\n'
            f"[rank{rank}]:     loss.backward()\n"
            f"[rank{rank}]: RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] "
            "Timed out waiting 20000ms for recv operation to complete\n")
        (folder / "stderr.log").write_text(err)
    return diagnose([tmp_path / "logs"])


def test_the_stalled_rank_that_read_no_rows_is_an_empty_data_file(tmp_path):
    result = _empty_shard_run(tmp_path, empty_rank=1, stalled_rank=1)
    assert (result.category, result.failing_rank) == ("data_corrupt", 1)
    assert result.fixes[0]["kind"] == "fix_data_file"


def test_no_rows_on_a_rank_that_did_reach_the_timeout_leaves_it_a_timeout(tmp_path):
    result = _empty_shard_run(tmp_path, empty_rank=2, stalled_rank=1)
    assert (result.category, result.failing_rank) == ("nccl_timeout", 1)


DDP_SHAPES = (
    "[rank1]: Traceback (most recent call last):\n"
    '[rank1]:   File "/jobs/cls/train.py", line 64, in <module>\n'
    "[rank1]:     model = DDP(model)\n"
    "[rank1]: RuntimeError: [1]: params[9] in this process with sizes [7, 64] appears not to match sizes of the "
    "same param in process 0.\n"
)


def test_models_that_differ_between_ranks_of_one_node_come_from_the_script_and_of_two_nodes_from_a_copy(tmp_path):
    one_node = _run(tmp_path, DDP_SHAPES, command="torchrun --nproc_per_node 4 train.py --labels_from shard")
    assert (one_node.category, one_node.fixes[0]["kind"]) == ("code_bug", "fix_code")
    two_nodes = _run(tmp_path, DDP_SHAPES, name="other.log",
                     command="torchrun --nnodes 2 --node_rank 1 --nproc_per_node 2 --master_addr n0 train.py")
    assert (two_nodes.category, two_nodes.fixes[0]["kind"]) == ("config_invalid", "fix_config")
    no_command = _run(tmp_path, DDP_SHAPES, name="third.log")
    assert no_command.category == "config_invalid"


def test_a_missing_string_method_called_on_a_records_field_is_the_datas_schema(tmp_path):
    def run(code, message, name):
        return _run(tmp_path, _traceback(2, [('File "/jobs/sql/train.py", line 34, in __init__', code)], message),
                    name=name)

    field = run('self.rows = [r for r in self.rows if len(r["query"].split()) <= limit]',
                "AttributeError: 'dict' object has no attribute 'split'", "field.log")
    assert (field.category, field.failing_rank) == ("data_schema", 2)
    # the same error on the script's own object (not a record's field) stays the script's bug
    own = run("words = self.vocab.split()", "AttributeError: 'dict' object has no attribute 'split'", "own.log")
    assert own.category == "code_bug"


def test_no_space_while_making_a_workers_semaphore_is_shared_memory_not_the_disk(tmp_path):
    frames = [('File "/jobs/lm/loop.py", line 137, in <module>', "for ids, labels in loader:"),
              ('File "/usr/lib/python3.11/multiprocessing/synchronize.py", line 57, in __init__',
               "sl = self._semlock = _multiprocessing.SemLock(")]
    shm = _run(tmp_path, _traceback(1, frames, "OSError: [Errno 28] No space left on device"), name="shm.log")
    assert (shm.category, shm.fixes[0]["kind"]) == ("dataloader_worker", "increase_shm")
    frames = [('File "/jobs/lm/loop.py", line 210, in save', "torch.save(state, path)")]
    disk = _run(tmp_path, _traceback(1, frames, "OSError: [Errno 28] No space left on device"), name="disk.log")
    assert disk.category == "storage"


def _one_rank_nan(step: int) -> str:
    guard = _traceback(2, [('File "/jobs/lm/loop.py", line 144, in <module>',
                            'raise RuntimeError(f"non-finite loss {loss.item()} at step {step}")')],
                       f"RuntimeError: non-finite loss nan at step {step}")
    peers = "".join(_traceback(rank, [('File "/jobs/lm/loop.py", line 145, in <module>', "loss.backward()")],
                               "RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection "
                               "closed by peer [127.0.0.1]:9111")
                    for rank in (0, 1))
    return guard + peers


def test_one_ranks_loss_going_nan_before_any_update_puts_its_batch_first(tmp_path):
    first = _run(tmp_path, _one_rank_nan(0), name="first.log")
    assert (first.category, first.failing_rank) == ("numerical", 2)
    assert [fix["kind"] for fix in first.fixes][:2] == ["fix_data_file", "fix_numerics"]
    # later in training the numerics come first, the rank's data next (the peers' lost connections are not
    # numerical failures of their own)
    later = _run(tmp_path, _one_rank_nan(412), name="later.log")
    assert [fix["kind"] for fix in later.fixes][:2] == ["fix_numerics", "fix_data_file"]


def test_a_missing_module_attribute_is_the_scripts_when_its_own_line_asked_for_it(tmp_path):
    getattr_frame = ('File "/env/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1940, in __getattr__',
                     """raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")""")
    message = "AttributeError: 'PairScorer' object has no attribute 'score_head'"
    own = _run(tmp_path, _traceback(0, [('File "/jobs/rm/scorer.py", line 58, in forward',
                                         "return self.score_head(h).squeeze(-1)"), getattr_frame], message),
               name="own.log")
    assert (own.category, own.fixes[0]["kind"]) == ("code_bug", "fix_code")
    # one library asking another's module for an attribute it no longer has: the releases disagree
    library = _run(tmp_path, _traceback(0, [
        ('File "/env/lib/python3.11/site-packages/peft/tuners/lora/model.py", line 357, in _prepare_model',
         "self.model.score_head.requires_grad_(False)"), getattr_frame], message), name="lib.log")
    assert library.category == "version_mismatch"


def test_an_oom_after_the_tokenizer_warned_of_a_row_far_past_the_limit_truncates_first(tmp_path):
    oom = _traceback(1, [('File "/jobs/sql/train.py", line 99, in main', "out = model(**batch)")],
                     "RuntimeError: [enforce fail at alloc_cpu.cpp:121] data. DefaultCPUAllocator: can't allocate memory: "
                     "you tried to allocate 31268536320 bytes. Error code 12 (Cannot allocate memory)")
    warning = ("Token indices sequence length is longer than the specified maximum sequence length for this model "
               "({n} > 512). Running this sequence through the model will result in indexing errors\n")
    far = _run(tmp_path, warning.format(n=44212) + oom, name="far.log")
    assert far.category == "host_oom"
    assert [fix["kind"] for fix in far.fixes][:2] == ["reduce_seq_len", "fix_data_file"]
    near = _run(tmp_path, warning.format(n=530) + oom, name="near.log")
    assert near.fixes[0]["kind"] != "reduce_seq_len"


def test_a_number_parsed_from_a_folder_listing_is_the_scripts_naming_scheme_not_a_setting(tmp_path):
    message = "ValueError: invalid literal for int() with base 10: 'latest'"
    names = _run(tmp_path, _traceback(2, [('File "/jobs/plat/train.py", line 111, in <lambda>',
                                           'kept = sorted(os.listdir(out), key=lambda n: int(n.split("-")[1]))')],
                                      message), name="names.log")
    assert (names.category, names.fixes[0]["kind"], names.failing_rank) == ("code_bug", "fix_code", 2)
    setting = _run(tmp_path, _traceback(2, [('File "/jobs/plat/train.py", line 40, in main',
                                             'steps = int(cfg["max_steps"])')], message), name="setting.log")
    assert setting.category == "config_invalid"


def test_the_stalled_rank_left_with_no_rows_by_the_commands_filter_relaxes_that_filter(tmp_path):
    (tmp_path / "logs").mkdir()
    text = "".join(f"[rank{r}] shard data/shard-{r}: {0 if r == 2 else 40} train pairs, 15 eval pairs\n" for r in range(3))
    for rank in (0, 1):
        text += _traceback(rank, [('File "/jobs/clip/pt.py", line 210, in run', "loss.backward()")],
                           "RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] Timed out "
                           "waiting 12000ms for recv operation to complete")
    command = "torchrun --nproc_per_node 3 pt.py min_caption_words=6 steps=30"
    result = _run(tmp_path, text, command=command, name="filtered.log")
    assert (result.category, result.failing_rank) == ("data_pipeline", 2)
    assert result.fixes[0]["kind"] == "fix_config" and "min_caption_words=3" in result.fixes[0]["command"]
    plain = _run(tmp_path, text, command="torchrun --nproc_per_node 3 pt.py steps=30", name="plain.log")
    assert (plain.category, plain.fixes[0]["kind"]) == ("data_corrupt", "fix_data_file")


def test_a_workers_bus_error_in_a_job_that_memory_maps_its_data_checks_the_mapped_files_first(tmp_path):
    text = ("ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory "
            "(shm).\n" + _traceback(1, [('File "/jobs/clip/pt.py", line 190, in run', "for batch in loader:")],
                                     "RuntimeError: DataLoader worker (pid 987) is killed by signal: Bus error. It is "
                                     "possible that dataloader's workers are out of shared memory. Please try to raise "
                                     "your shared memory limit."))
    mapped = _run(tmp_path, text, command="torchrun --nproc_per_node 2 pt.py features=npy mmap=true", name="m.log")
    assert (mapped.category, mapped.fixes[0]["kind"]) == ("dataloader_worker", "fix_data_file")
    assert "memory-mapped" in mapped.fixes[0]["title"]
    plain = _run(tmp_path, text, command="torchrun --nproc_per_node 2 pt.py features=npy mmap=false", name="p.log")
    assert plain.fixes[0]["kind"] == "increase_shm"


def test_a_number_missing_from_a_mapping_keyed_by_rank_is_the_scripts_and_from_a_row_the_datas(tmp_path):
    by_rank = _run(tmp_path, _traceback(8, [('File "/jobs/det/data/cache.py", line 52, in prepare_local_cache',
                                             "writer_path = paths_by_rank[0]")], "KeyError: 0"), name="rank.log")
    assert (by_rank.category, by_rank.failing_rank) == ("code_bug", 8)
    row = _run(tmp_path, _traceback(0, [('File "/jobs/sft/train.py", line 78, in preprocess',
                                         'source[0][-1] += " " + EOS')], "KeyError: 0"), name="row.log")
    assert row.category == "data_schema"


def test_a_size_mismatch_where_the_model_adds_its_positions_is_an_input_longer_than_the_model(tmp_path):
    modeling = ('File "/env/lib/python3.10/site-packages/transformers/models/whisper/modeling_whisper.py", line 1334, '
                "in forward", "hidden_states = inputs_embeds + positions.to(inputs_embeds.device)")
    message = "RuntimeError: The size of tensor a (517) must match the size of tensor b (448) at non-singleton dimension 1"
    long_row = _run(tmp_path, _traceback(1, [modeling], message), name="long.log")
    assert (long_row.category, long_row.fixes[0]["kind"], long_row.failing_rank) == ("data_pipeline", "reduce_seq_len", 1)
    assert "448 positions" in long_row.fixes[0]["title"]  # truncate to what the model holds, then the rows
    assert long_row.fixes[1]["kind"] == "fix_data_file"
    own = _run(tmp_path, _traceback(1, [('File "/jobs/asr/loss.py", line 40, in loss', "d = pred - target")], message),
               name="own.log")
    assert own.category == "code_bug"


def test_a_device_mismatch_under_the_teams_callback_that_the_trainer_called_is_the_callbacks_code(tmp_path):
    frames = [
        ('File "/home/ml/rl/train_rl.py", line 60, in <module>', "trainer.train()"),
        ('File "/env/lib/python3.11/site-packages/trl/trainer/grpo_trainer.py", line 1096, in _calculate_rewards',
         "output_reward_func = reward_func(prompts=prompts, completions=completions)"),
        ('File "/home/ml/rl/scoring.py", line 30, in judge_reward', "scores = judge(**batch).logits[:, 0]"),
        ('File "/env/lib/python3.11/site-packages/transformers/models/roberta/modeling_roberta.py", line 800, '
         "in forward", "embedding_output = self.embeddings(input_ids)"),
        ('File "/env/lib/python3.11/site-packages/torch/nn/functional.py", line 2551, in embedding',
         "return torch.embedding(weight, input, padding_idx, scale_grad_by_freq, sparse)"),
    ]
    message = ("RuntimeError: Expected all tensors to be on the same device, but found at least two devices, "
               "cuda:0 and cuda:2!")
    callback = _run(tmp_path, _traceback(2, frames, message), name="cb.log")
    assert (callback.category, callback.fixes[0]["kind"]) == ("code_bug", "fix_code")
    # the same mismatch inside the library's own model, called straight from the script: the placement setting
    plain = _run(tmp_path, _traceback(2, [frames[0], *frames[3:]], message), name="plain.log")
    assert plain.category == "config_invalid"
