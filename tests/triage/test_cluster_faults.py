"""Cluster-level faults as multi-node jobs print them: which report is the cause, which are its victims."""

from __future__ import annotations

from triage import diagnose

WATCHDOG = ("[rank{r}]:[E1129 23:18:0{r}.111402 ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught collective "
            "operation timeout: WorkNCCL(SeqNum=88, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600071 "
            "milliseconds before timing out.\n")


def test_an_infiniband_port_going_down_under_a_hang_is_the_hardware(tmp_path):
    log = tmp_path / "slurm-77.out"
    log.write_text("2: node-c03:8812:8855 [0] NCCL INFO NET/IB : Got async event : port error\n"
                   "2: node-c03:8812:8855 [1] NCCL INFO NET/IB : Got async event : port active\n"
                   + "".join(WATCHDOG.format(r=r) for r in range(4)))
    result = diagnose([log])
    assert (result.category, result.fixes[0]["kind"]) == ("hardware", "replace_hardware")


def test_an_nccl_error_a_rank_raised_for_the_port_stays_the_nccl_error(tmp_path):
    log = tmp_path / "run.log"
    log.write_text("node-b07:5811:5870 [1] NCCL WARN NET/IB : Got async event : port error\n"
                   "[rank9]: Traceback (most recent call last):\n"
                   '[rank9]:   File "/nfs/mds/pretrain.py", line 310, in train_step\n'
                   "[rank9]:     dist.all_reduce(grads)\n"
                   "[rank9]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:3356, unhandled "
                   "system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5\n"
                   "[rank9]: ncclSystemError: System call (e.g. socket, malloc) or external library call failed or "
                   "device error.\n")
    assert diagnose([log]).category == "nccl_error"


def test_the_ofi_plugin_asking_for_an_option_the_installed_libfabric_lacks_is_a_version_mismatch(tmp_path):
    log = tmp_path / "cloudwatch.txt"
    log.write_text("algo-1:212:308 [0] NCCL INFO NET/OFI Using Libfabric version 1.17\n"
                   "algo-1:212:308 [0] nccl_net_ofi_rdma_init:5871 NCCL WARN NET/OFI Couldn't set "
                   "FI_OPT_EFA_SENDRECV_IN_ORDER_ALIGNED_128_BYTES. RC: -92, ERROR: Protocol not available\n"
                   + WATCHDOG.format(r=0))
    result = diagnose([log])
    assert (result.category, result.fixes[0]["kind"]) == ("version_mismatch", "pin_versions")


def test_a_datasets_build_that_lost_a_file_from_its_incomplete_folder_is_a_cache_built_twice(tmp_path):
    log = tmp_path / "slurm-9.out"
    log.write_text(
        "1: [rank8]: Traceback (most recent call last):\n"
        '1: [rank8]:   File "/nfs/proj/sft.py", line 88, in main\n'
        '1: [rank8]:     ds = load_dataset("json", data_files=files)\n'
        '1: [rank8]:   File "/env/lib/python3.11/site-packages/datasets/builder.py", line 1788, in _prepare_split_single\n'
        '1: [rank8]:     raise DatasetGenerationError("An error occurred while generating the dataset") from e\n'
        "1: [rank8]: datasets.exceptions.DatasetGenerationError: An error occurred while generating the dataset\n"
        "1: [rank8]: (caused by) FileNotFoundError: [Errno 2] No such file or directory: '/nfs/hf/datasets/json/"
        "default-1a2b/0.0.0/77ce.incomplete/json-train-00004-of-00016.arrow'\n")
    result = diagnose([log])
    assert (result.category, result.failing_rank, result.fixes[0]["kind"]) == ("data_pipeline", 8, "fix_path")


def test_a_json_log_whose_gradient_norm_turned_nan_is_numerical(tmp_path):
    log = tmp_path / "logging.jsonl"
    log.write_text('{"loss": 1.41, "grad_norm": 3.14, "learning_rate": 1.9e-05, "global_step/max_steps": "6080/8802"}\n'
                   '{"loss": 2.91, "grad_norm": NaN, "learning_rate": 1.86e-05, "global_step/max_steps": "6130/8802"}\n'
                   '{"loss": 0.0, "grad_norm": NaN, "learning_rate": 1.85e-05, "global_step/max_steps": "6135/8802"}\n')
    result = diagnose([log])
    assert (result.category, result.fixes[0]["kind"]) == ("numerical", "fix_numerics")


def test_an_empty_batch_reaching_the_model_is_the_split_not_the_model(tmp_path):
    log = tmp_path / "eval.log"
    log.write_text('[rank3]:   File "/env/lib/python3.11/site-packages/transformers/models/llama/modeling_llama.py", '
                   "line 1085, in _prepare_4d_causal_attention_mask_with_cache_position\n"
                   "[rank3]:     causal_mask = causal_mask[:, None, None, :].expand(batch_size, 1, -1, -1)\n"
                   "[rank3]: RuntimeError: cannot reshape tensor of 0 elements into shape [0, -1] because the "
                   "unspecified dimension size -1 can be any value and is ambiguous\n")
    result = diagnose([log])
    assert (result.category, result.failing_rank, result.fixes[0]["kind"]) == ("data_pipeline", 3, "fix_config")


def test_a_plain_process_missing_the_launchers_variables_never_joined_the_job(tmp_path):
    log = tmp_path / "slurm-44.out"
    log.write_text('Traceback (most recent call last):\n  File "/home/u/proj/train.py", line 21, in <module>\n'
                   '    local_rank = int(os.environ["LOCAL_RANK"])\n'
                   '  File "<frozen os>", line 679, in __getitem__\nKeyError: \'LOCAL_RANK\'\n')
    result = diagnose([log])
    assert (result.category, result.fixes[0]["kind"]) == ("rendezvous", "fix_rendezvous")


def test_a_sigkill_after_the_launcher_sent_sigterm_is_its_own_escalation_not_the_oom_killer(tmp_path):
    log = tmp_path / "run.log"
    log.write_text(
        "[rank1]: Traceback (most recent call last):\n"
        '[rank1]:   File "/root/proj/trainer.py", line 198, in train_epoch\n'
        "[rank1]:     dist.reduce(metrics, dst=0)\n"
        "[rank1]: RuntimeError: HcclReduce: HCCL function error: hcclReduce(...), error code is 5\n"
        "W0907 13:02:53.331000 318 torch/distributed/elastic/multiprocessing/api.py:900] Sending process 3184 "
        "closing signal SIGTERM\n"
        "W0907 13:03:23.335000 318 torch/distributed/elastic/multiprocessing/api.py:918] Unable to shutdown process "
        "3184 via Signals.SIGTERM, forcefully exiting via Signals.SIGKILL\n"
        "Failures:\n[1]:\n  time      : 2026-09-07_13:03:24\n  host      : localhost\n"
        "  rank      : 0 (local_rank: 0)\n  exitcode  : -9 (pid: 3184)\n  error_file: <N/A>\n"
        "  traceback : Signal 9 (SIGKILL) received by PID 3184\n")
    result = diagnose([log])
    assert result.category != "host_oom" and result.failing_rank == 1


def test_a_rank_killed_by_an_illegal_instruction_ran_native_code_built_for_another_cpu(tmp_path):
    # a compiled extension built on one node's CPU and run on a node that lacks its instructions
    log = tmp_path / "node1.log"
    log.write_text(
        "[2026-03-01 10:00:00] step 0 | loading optimizer\n"
        "Root Cause (first observed failure):\n[0]:\n  time      : 2026-03-01_10:00:05\n  host      : amd-node-2\n"
        "  rank      : 10 (local_rank: 2)\n  exitcode  : -4 (pid: 7710)\n  error_file: <N/A>\n"
        "  traceback : Signal 4 (SIGILL) received by PID 7710\n")
    result = diagnose([log])
    assert (result.category, result.failing_rank) == ("version_mismatch", 10)
    assert result.fixes[0]["kind"] == "pin_versions"


def test_a_spawned_childs_cut_start_up_payload_is_its_parents_death_not_a_damaged_file(tmp_path):
    site = "/opt/conda/lib/python3.8"
    log = tmp_path / "train.log"
    log.write_text(
        "Traceback (most recent call last):\n"
        '  File "tools/train.py", line 113, in <module>\n'
        "    launch(main, num_gpu)\n"
        f'  File "{site}/site-packages/torch/multiprocessing/spawn.py", line 130, in join\n'
        "    raise ProcessExitedException(\n"
        "torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with signal SIGKILL\n"
        "Traceback (most recent call last):\n"
        '  File "<string>", line 1, in <module>\n'
        f'  File "{site}/multiprocessing/spawn.py", line 116, in spawn_main\n'
        "    exitcode = _main(fd, parent_sentinel)\n"
        f'  File "{site}/multiprocessing/spawn.py", line 126, in _main\n'
        "    self = reduction.pickle.load(from_parent)\n"
        "_pickle.UnpicklingError: pickle data was truncated\n")
    result = diagnose([log])
    assert (result.category, result.failing_rank) == ("host_oom", 1)
