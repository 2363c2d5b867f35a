"""One story per failure category: the fix names the exact flag/env/config change, tied to the evidence."""
import re
from pathlib import Path

import pytest

from triage.fixes import BUILDERS, FixContext, build_fixes

COMMANDS = Path(__file__).parent / "fixtures" / "commands"
TAXONOMY = Path(__file__).resolve().parents[2] / "docs" / "taxonomy.md"
PROBE = "torchrun --nproc_per_node=2 train_tiny.py --per_device_train_batch_size 2 --max_steps 5\n"
TAXONOMY_KINDS = [
    "convert_data_format", "fix_data_file", "reduce_batch_size", "increase_grad_accum",
    "enable_gradient_checkpointing", "enable_mixed_precision", "shard_more", "reduce_seq_len",
    "reduce_dataloader_workers", "increase_shm", "increase_timeout", "set_nccl_env", "fix_rendezvous",
    "pin_versions", "rename_flag", "fix_config", "free_disk", "fix_path", "fix_numerics", "debug_cuda",
    "replace_hardware", "fix_code",
]


def fix(kind, category, command=None, **extra):
    return build_fixes([kind], FixContext(category=category, command=command, **extra))[0]


def test_it_has_a_builder_for_every_fix_kind_in_the_taxonomy():
    # docs/taxonomy.md is the project's own statement of the vocabulary: it lists exactly these kinds
    section = TAXONOMY.read_text(encoding="utf-8").split("## Fix kinds", 1)[1]
    kinds = re.findall(r"^\| `(\w+)` \|", section, re.M)
    assert sorted(kinds) == sorted(TAXONOMY_KINDS)
    assert set(kinds) <= set(BUILDERS)


def test_the_taxonomy_lists_exactly_the_categories_the_engine_answers_with():
    from triage.rules import DEFAULT_FIXES, registry

    section = TAXONOMY.read_text(encoding="utf-8").split("## Categories", 1)[1].split("## Fix kinds", 1)[0]
    categories = re.findall(r"^\| `(\w+)` \|", section, re.M)
    assert sorted(categories) == sorted(DEFAULT_FIXES)
    assert {rule.category for rule in registry()} <= set(categories)


@pytest.mark.parametrize("kind", TAXONOMY_KINDS)
def test_it_builds_every_kind_with_and_without_a_command(kind):
    with_command = fix(kind, "unknown", PROBE, message="boom")
    without = fix(kind, "unknown", None, message="boom")
    for one in (with_command, without):
        assert one["kind"] == kind and one["title"] and one["why"] and one["verified"] is None
    assert isinstance(with_command["command"], str) and without["command"] is None


def test_it_converts_alpaca_rows_for_a_sharegpt_loader():
    sample = [{"instruction": "Translate to French.", "input": "Good morning", "output": "Bonjour"}]
    command = "torchrun --nproc_per_node 2 train.py --data_path data/alpaca.json --bf16 True"
    one = fix("convert_data_format", "data_schema", command, exception="KeyError", message="'conversations'",
              data_sample=sample)
    assert one["data_format"] == {"found": "alpaca", "expected": "sharegpt"}
    assert one["shell"] == ["python -m triage convert-data --to sharegpt data/alpaca.json data/alpaca.sharegpt.json"]
    assert one["command"] == command.replace("data/alpaca.json", "data/alpaca.sharegpt.json")
    assert one["preview"] == {"conversations": [{"from": "human", "value": "Translate to French.\n\nGood morning"},
                                                {"from": "gpt", "value": "Bonjour"}]}


def test_it_repairs_an_unreadable_data_file_and_points_at_the_bad_line():
    one = fix("fix_data_file", "data_corrupt", "python train.py --train_file data/train.jsonl",
              message="json.decoder.JSONDecodeError: Expecting ',' delimiter: line 4121 column 17 (char 998877)")
    assert one["shell"] == ["python -m triage convert-data --repair data/train.jsonl data/train.repaired.jsonl"]
    assert "line 4121, column 17" in one["notes"][0]
    assert one["command"] == "python train.py --train_file data/train.repaired.jsonl"


def test_it_halves_workers_for_host_oom_and_zeroes_loader_workers_for_shm_bus_errors():
    command = "python train.py --dataloader_num_workers 8 --preprocessing_num_workers 16"
    host = fix("reduce_dataloader_workers", "host_oom", command)
    assert host["command"] == "python train.py --dataloader_num_workers 4 --preprocessing_num_workers 8"
    shm = fix("reduce_dataloader_workers", "dataloader_worker", command)
    assert shm["command"] == "python train.py --dataloader_num_workers 0 --preprocessing_num_workers 8"
    mmf = fix("reduce_dataloader_workers", "dataloader_worker", "mmf_run config=c.yaml training.num_workers=4")
    assert mmf["command"] == "mmf_run config=c.yaml training.num_workers=0"


def test_it_enlarges_shm_on_a_docker_command():
    one = fix("increase_shm", "dataloader_worker", "docker run --gpus all img python train.py")
    assert one["command"] == "docker run --shm-size=16g --gpus all img python train.py"
    assert "df -h /dev/shm" in one["shell"]


def test_it_unpins_offloaded_states_when_host_ram_ran_out_while_loading():
    configs = {"ds.json": {"zero_optimization": {"stage": 3, "offload_param": {"device": "cpu", "pin_memory": True}}}}
    one = fix("fix_config", "host_oom", "deepspeed train.py --deepspeed ds.json", configs=configs)
    assert one["config_patch"] == {"ds.json": {"zero_optimization.offload_param.pin_memory": False}}
    assert any("low_cpu_mem_usage" in note for note in one["notes"])


def test_it_raises_the_timeout_from_the_watchdog_message_and_records_a_flight_recorder_dump():
    evidence = ["[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=12, OpType=ALLREDUCE, "
                "NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600004 milliseconds before timing out."]
    one = fix("increase_timeout", "nccl_timeout", PROBE, evidence=evidence)
    assert one["command"].startswith("TORCH_NCCL_TRACE_BUFFER_SIZE=2000 TORCH_NCCL_DUMP_ON_TIMEOUT=1 ")
    assert one["command"].rstrip().endswith("--max_steps 5 --ddp_timeout 3600")
    assert one["env"]["TORCH_NCCL_DUMP_ON_TIMEOUT"] == "1" and one["env"]["NCCL_DEBUG"] == "INFO"
    assert one["notes"][0] == "collective timeout 600 s -> 3600 s"
    assert one["evidence"].startswith("[Rank 1] Watchdog caught")


def test_it_disables_the_transport_the_nccl_error_names():
    ib = fix("set_nccl_env", "nccl_error", PROBE, message="NCCL WARN NET/IB : Got completion from peer with error 12")
    assert ib["env"]["NCCL_IB_DISABLE"] == "1" and ib["env"]["NCCL_DEBUG"] == "INFO"
    assert "NCCL_P2P_DISABLE" not in ib["env"]
    p2p = fix("set_nccl_env", "nccl_error", "NCCL_DEBUG=WARN python x.py", message="unhandled cuda error")
    assert p2p["command"] == "NCCL_P2P_DISABLE=1 NCCL_DEBUG=INFO python x.py"


@pytest.mark.parametrize("command, expected", [
    (PROBE, "torchrun --nproc_per_node=2 --master_port=29501 train_tiny.py --per_device_train_batch_size 2 --max_steps 5\n"),
    ("torchrun --master_port=29500 --nproc_per_node 2 t.py", "torchrun --master_port=29501 --nproc_per_node 2 t.py"),
    ("deepspeed --master_port 520 train.py", "deepspeed --master_port 521 train.py"),
    ("accelerate launch --main_process_port 29600 t.py", "accelerate launch --main_process_port 29601 t.py"),
    ("MASTER_PORT=12345 python t.py", "MASTER_PORT=12346 python t.py"),
    ("torchrun --rdzv_endpoint node1:29400 t.py", "torchrun --rdzv_endpoint node1:29401 t.py"),
])
def test_it_moves_the_rendezvous_to_another_port(command, expected):
    one = fix("fix_rendezvous", "rendezvous", command, message="EADDRINUSE: address already in use")
    assert one["command"] == expected


def test_it_drops_the_hostfile_when_the_deepspeed_ssh_check_fails():
    one = fix("fix_rendezvous", "rendezvous", "deepspeed --hostfile hosts --num_gpus 4 train.py",
              message="subprocess.CalledProcessError: Command '['ssh', 'node2', 'hostname']' returned non-zero exit status 255.")
    assert one["command"] == "deepspeed --num_gpus 4 train.py"
    assert "passwordless ssh" in one["notes"][0]


def test_it_renames_a_removed_transformers_flag_and_offers_the_pin():
    command = (COMMANDS / "fastchat.sh").read_text()
    one = fix("rename_flag", "version_mismatch", command,
              message="TypeError: TrainingArguments.__init__() got an unexpected keyword argument 'evaluation_strategy'")
    assert one["command"] == command.replace('--evaluation_strategy "no"', '--eval_strategy "no"')
    assert one["packages"] == ["transformers<4.46"]
    without = fix("rename_flag", "version_mismatch", None, message="unexpected keyword argument 'evaluation_strategy'")
    assert without["changes"][0]["new"] == "--eval_strategy"


def test_it_removes_an_unrecognised_flag():
    one = fix("rename_flag", "version_mismatch", "python t.py --local-rank=0 --lr 1",
              message="error: unrecognized arguments: --local-rank=0")
    assert one["command"] == "python t.py --lr 1"


def test_it_pins_the_versions_the_error_asks_for():
    one = fix("pin_versions", "version_mismatch", PROBE,
              message="ImportError: Using the Trainer requires accelerate>=0.26.0: please run pip install transformers[torch]")
    assert one["packages"] == ["accelerate>=0.26.0"] and one["shell"] == ["pip install 'accelerate>=0.26.0'"]


def test_it_corrects_the_deepspeed_batch_contradiction():
    command = (Path(__file__).parent / "fixtures" / "commands" / "fastchat.sh").read_text().replace(
        "--fsdp", "--deepspeed ds_config.json --fsdp")
    configs = {"ds_config.json": {"train_batch_size": 256, "train_micro_batch_size_per_gpu": 8,
                                  "zero_optimization": {"stage": 3}}}
    message = ("AssertionError: Check batch related parameters. train_batch_size is not equal to "
               "micro_batch_per_gpu * gradient_acc_step * world_size 256 != 2 * 16 * 4")
    one = fix("fix_config", "config_invalid", command, configs=configs, message=message)
    assert one["config"]["ds_config.json"] == {"train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto",
                                               "gradient_accumulation_steps": "auto", "zero_optimization": {"stage": 3}}
    assert "2 x 16 x 4 = 128" in one["notes"][0]
    plain = fix("fix_config", "config_invalid", "deepspeed --num_gpus 2 my.py --deepspeed_config ds.json",
                configs={"ds.json": {"train_batch_size": 64}}, message="64 != 4 * 8 * 1")
    assert plain["config"]["ds.json"] == {"train_batch_size": 32, "train_micro_batch_size_per_gpu": 4,
                                          "gradient_accumulation_steps": 8}


@pytest.mark.parametrize("where", ["flag", "config"])
def test_it_drops_a_worker_only_loader_option_where_the_job_sets_it(where):
    message = "ValueError: persistent_workers option needs num_workers > 0"
    if where == "flag":
        command = "torchrun --nproc_per_node 2 sft.py --dataloader_num_workers 0 --dataloader_persistent_workers true"
        one = fix("fix_config", "config_invalid", command, message=message)
        assert "--dataloader_persistent_workers false" in one["command"].lower()
    else:
        configs = {"sft.yaml": {"dataloader_num_workers": 0, "dataloader_persistent_workers": True}}
        one = fix("fix_config", "config_invalid", "torchrun --nproc_per_node 2 sft.py sft.yaml", configs=configs,
                  message=message)
        assert one["config"]["sft.yaml"] == {"dataloader_num_workers": 0, "dataloader_persistent_workers": False}
    assert one["check"]["passed"]


def test_it_keeps_one_activation_checkpointing_switch():
    configs = {"fsdp.yaml": {"distributed_type": "FSDP",
                             "fsdp_config": {"fsdp_activation_checkpointing": True, "fsdp_use_orig_params": True}}}
    message = ("torch.utils.checkpoint.CheckpointError: torch.utils.checkpoint: Recomputed values for the following "
               "tensors have different metadata than during the forward pass.")
    one = fix("fix_config", "config_invalid", "accelerate launch --config_file fsdp.yaml sft.py", configs=configs,
              message=message)
    assert one["config"]["fsdp.yaml"]["fsdp_config"]["fsdp_activation_checkpointing"] is False
    plain = fix("fix_config", "config_invalid", "torchrun --nproc_per_node 2 sft.py", message=message)
    assert "changes" in plain and not plain["changes"] and "use_reentrant" in plain["notes"][0]


def test_it_swaps_bf16_for_fp16_on_an_old_gpu():
    one = fix("fix_config", "config_invalid", "python t.py --bf16 True",
              message="ValueError: Your setup doesn't support bf16/gpu. You need torch>=1.10, using Ampere GPU")
    assert one["command"] == "python t.py --bf16 False --fp16 True"


def test_it_stabilises_fp16_training():
    configs = {"ds.json": {"fp16": {"enabled": True}}}
    one = fix("fix_numerics", "numerical", "deepspeed t.py --deepspeed ds.json --fp16 --learning_rate 2e-5",
              configs=configs, message="Current loss scale already at minimum")
    assert one["command"] == ("deepspeed t.py --deepspeed ds.json --learning_rate 1e-05 --bf16 --max_grad_norm 1.0")
    assert one["config"]["ds.json"] == {"fp16": {"enabled": False}, "bf16": {"enabled": True}}


def test_it_reruns_cuda_errors_synchronously():
    one = fix("debug_cuda", "cuda_error", PROBE, message="CUDA error: device-side assert triggered")
    assert one["command"] == "CUDA_LAUNCH_BLOCKING=1 " + PROBE and one["env"] == {"CUDA_LAUNCH_BLOCKING": "1"}
    assert any("vocabulary" in note for note in one["notes"])


def test_it_limits_checkpoints_when_the_disk_is_full():
    one = fix("free_disk", "storage", "deepspeed t.py --deepspeed z3.json --output_dir /ckpt --save_total_limit 5",
              message="RuntimeError: PytorchStreamWriter failed writing file data/3: file write failed")
    assert one["command"] == ("deepspeed t.py --deepspeed z3.json --output_dir /ckpt --save_total_limit 2 "
                              "--save_only_model True")
    assert one["shell"] == ["df -h /ckpt"]


def test_it_names_the_missing_path():
    one = fix("fix_path", "storage", PROBE, message="FileNotFoundError: [Errno 2] No such file or directory: '/data/x.json'")
    assert "/data/x.json" in one["title"] and one["command"] == PROBE


def test_it_shards_at_load_time_without_offload_when_host_ram_ran_out():
    configs = {"ds.json": {"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}}}
    one = fix("shard_more", "host_oom", "deepspeed train.py --deepspeed ds.json", configs=configs)
    assert one["config"]["ds.json"] == {"zero_optimization": {"stage": 3}}  # offload removed, not added
    multi = fix("shard_more", "host_oom", "torchrun --nproc_per_node 4 train.py --output_dir o")
    assert "cpu_ram_efficient_loading" in multi["command"] and "offload" not in multi["command"]


def test_it_says_the_rename_belongs_in_the_code_when_the_command_lacks_the_flag():
    one = fix("rename_flag", "version_mismatch", "python finetune.py --use_adalora False",
              message="TypeError: Seq2SeqTrainingArguments.init() got an unexpected keyword argument ‘evaluation_strategy’")
    assert one["command"] == "python finetune.py --use_adalora False"
    assert one["changes"][0]["where"] == "code"
    assert "evaluation_strategy= to eval_strategy=" in one["notes"][0]


def test_it_uses_auto_batch_values_when_no_command_was_given():
    one = fix("fix_config", "config_invalid", None, configs={"ds_config.json": {"train_batch_size": 64}},
              message="world_size 64 != 4 * 8 * 1", world_size=2)
    assert one["config"]["ds_config.json"]["train_batch_size"] == "auto"
    assert any("train_batch_size 32" in note for note in one["notes"])
    assert any("logs show 2 processes but DeepSpeed counted 1" in note for note in one["notes"])


def test_a_rank_killed_mid_training_gets_training_advice_even_when_another_rank_printed_the_steps(tmp_path):
    """Only rank 0 prints the step bar, and it is glued in front of rank 0's next line; rank 1 dies
    by SIGKILL. The job was training, so the batch and the input pipeline's memory come first, not model
    loading (the workers lead only where the log or the command shows them)."""
    from triage_helpers import write

    from triage import diagnose

    log = "\n".join(
        [
            "Loading checkpoint shards: 100%|##########| 2/2 [00:03<00:00,  1.50s/it]",
            "\r  0%|          | 0/50 [00:00<?, ?it/s]\r  4%|4         | 2/50 [00:04<01:36,  2.01s/it]"
            "[rank0]:[W1201 10:00:00.000 ProcessGroupGloo.cpp:100] peer closed",
            "E1201 10:00:01.000000 100 torch/distributed/elastic/multiprocessing/api.py:900] failed "
            "(exitcode: -9) local_rank: 1 (pid: 4242) of binary: /usr/bin/python3",
        ]
    )
    result = diagnose([write(tmp_path / "run.log", log + "\n")], command="torchrun --nproc_per_node 2 train.py")
    assert result.category == "host_oom"
    assert result.failing_rank == 1
    assert [fix["kind"] for fix in result.fixes][:2] == ["reduce_batch_size", "reduce_dataloader_workers"]


@pytest.mark.parametrize(
    "victim_frames, first",
    [
        (["main", "train", "backward", "run_backward"], "reduce_batch_size"),
        (["main", "from_pretrained", "_load_pretrained_model", "load_state_dict"], "fix_config"),
    ],
)
def test_with_no_progress_line_the_victims_frames_tell_the_phase(tmp_path, victim_frames, first):
    """Rank 1 is SIGKILLed; rank 0's traceback (a lost peer) shows what the job was doing."""
    from triage_helpers import write

    from triage import diagnose

    lines = ["[rank0]: Traceback (most recent call last):"]
    for number, function in enumerate(victim_frames, start=1):
        lines.append(f'[rank0]:   File "/srv/job/lib/mod{number}.py", line {number * 10}, in {function}')
        lines.append("[rank0]:     next_call()")
    lines += [
        "[rank0]: RuntimeError: Connection closed by peer [10.1.1.2]:29500",
        "E1201 10:00:01.000000 100 torch/distributed/elastic/multiprocessing/api.py:900] failed "
        "(exitcode: -9) local_rank: 1 (pid: 4242) of binary: /usr/bin/python3",
    ]
    result = diagnose([write(tmp_path / "run.log", "\n".join(lines) + "\n")], command="torchrun --nproc_per_node 2 t.py")
    assert result.category == "host_oom"
    assert result.fixes[0]["kind"] == first


@pytest.mark.parametrize(
    "line",
    [
        "Epoch 0:  18%|#8        | 1402/7790 [14:02<1:03:58,  1.66it/s, v_num=12, train_loss=0.611]",
        "step 3/8 loss 3.6713 (0.1s)",
    ],
)
def test_a_training_step_line_in_other_words_still_says_training(tmp_path, line):
    from triage_helpers import write

    from triage import diagnose

    log = "\n".join(
        [
            line,
            "E1201 10:00:01.000000 100 torch/distributed/elastic/multiprocessing/api.py:900] failed "
            "(exitcode: -9) local_rank: 1 (pid: 4242) of binary: /usr/bin/python3",
        ]
    )
    result = diagnose([write(tmp_path / "run.log", log + "\n")], command="torchrun --nproc_per_node 2 t.py")
    assert result.fixes[0]["kind"] == "reduce_batch_size"


@pytest.mark.parametrize(
    "shown, command",
    [
        ("", "torchrun --nproc_per_node 2 t.py --dataloader_num_workers 12"),
        ("lightning/pytorch/trainer/connectors/data_connector.py:441: the train loader has `num_workers=12`",
         "torchrun --nproc_per_node 2 t.py"),
        ("DataLoader config: batch_size: 8, num_workers: 16, pin_memory: true", "torchrun --nproc_per_node 2 t.py"),
    ],
)
def test_a_training_kill_puts_the_workers_first_where_the_run_shows_them(tmp_path, shown, command):
    from triage_helpers import write

    from triage import diagnose

    log = "\n".join([
        shown,
        "step 3/8 loss 3.6713 (0.1s)",
        "E1201 10:00:01.000000 100 torch/distributed/elastic/multiprocessing/api.py:900] failed "
        "(exitcode: -9) local_rank: 1 (pid: 4242) of binary: /usr/bin/python3",
    ])
    result = diagnose([write(tmp_path / "run.log", log + "\n")], command=command)
    assert result.category == "host_oom"
    assert [fix["kind"] for fix in result.fixes][:2] == ["reduce_dataloader_workers", "reduce_batch_size"]


def test_a_node_the_scheduler_lost_is_hardware_and_the_fix_names_the_node(tmp_path):
    from triage import diagnose

    log = tmp_path / "sft-4411.err"
    log.write_text(
        "[rank3]:[E603 17:43:31.127351301 ProcessGroupNCCL.cpp:1895] [PG ID 0 PG GUID 0(default_pg) Rank 3] "
        "Process group watchdog thread terminated with exception: NCCL error: remote process exited or there "
        "was a network error, NCCL version 2.21.5\n"
        "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.\n"
        "srun: error: Node failure on gpu-c19\n"
        "slurmstepd: error: *** JOB 4411 ON gpu-c18 CANCELLED AT 2026-06-03T17:45:02 DUE TO NODE FAILURE, SEE "
        "SLURMCTLD LOG FOR DETAILS ***\n")
    result = diagnose([log])
    assert result.category == "hardware"
    assert any("--exclude=gpu-c19" in note for note in result.fixes[0]["notes"])


def test_an_orchestrators_eviction_outranks_the_peers_connection_errors(tmp_path):
    from triage import diagnose

    describe = tmp_path / "describe-pod-ft-master-0.txt"
    describe.write_text("Name:             ft-master-0\nStatus:           Failed\nReason:           Evicted\n"
                        "Message:          The node was low on resource: ephemeral-storage. Threshold quantity: "
                        "94490066534, available: 80229784Ki.\n")
    worker = tmp_path / "ft-worker-0.log"
    worker.write_text(
        "2026-09-03T16:31:40.514Z [rank8]: torch.distributed.DistBackendError: NCCL error in: "
        "../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, remote process exited or there was a network "
        "error, NCCL version 2.21.5\n"
        "2026-09-03T16:32:20.771Z [rank8]: torch.distributed.DistNetworkError: failed to recv, got 0 bytes\n")
    result = diagnose([describe, worker])
    assert result.category == "storage"
    assert [fix["kind"] for fix in result.fixes][:2] == ["free_disk", "fix_path"]
    describe.write_text("    Last State:     Terminated\n      Reason:       OOMKilled\n      Exit Code:    137\n")
    assert diagnose([describe, worker]).category == "host_oom"


@pytest.mark.parametrize("line, flag, new", [
    ("Encountered 2071 samples longer than max_length=512 (truncation_strategy='delete'); they were dropped.",
     "--max_length 1024", 1024),
    ("[prep] 48 rows, 0 after min_chars=400", "--min_chars 200", 200),
])
def test_it_relaxes_the_limit_of_a_filter_that_left_no_rows(line, flag, new):
    command = "torchrun --nproc_per_node 2 sft.py --max_length 512 --min_chars 400 --lr 1e-5"
    one = fix("fix_config", "data_pipeline", command, message="num_samples should be a positive integer value, but "
              "got num_samples=0", facts={"filter_line": line})
    assert flag in one["command"] and one["check"]["passed"]
    assert str(new) in one["title"]


def test_a_script_started_without_a_launcher_is_told_to_start_under_one():
    one = fix("fix_rendezvous", "rendezvous", "python finetune.py --epochs 3", message="KeyError: 'LOCAL_RANK'",
              evidence=["KeyError: 'LOCAL_RANK'"])
    assert one["title"] == "Start the script under a distributed launcher"
    assert one["notes"][0] == "torchrun --nproc_per_node <GPUs per node> finetune.py --epochs 3"


def test_one_rank_refusing_an_allocation_of_gigabytes_puts_its_outlying_input_first(tmp_path):
    from triage import diagnose

    lost = ("[rank0]: RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed by "
            "peer [127.0.0.1]:3310\n")
    big = ("[rank2]: Traceback (most recent call last):\n"
           '[rank2]:   File "/srv/asr/train.py", line 210, in step\n'
           "[rank2]:     logits = model(feats)\n"
           '[rank2]:   File "/usr/lib/python3.11/site-packages/torch/nn/functional.py", line 5900, in attention\n'
           "[rank2]:     attn = torch.softmax(scores, dim=-1)\n"
           "[rank2]: RuntimeError: [enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate "
           "memory: you tried to allocate {n} bytes. Error code 12 (Cannot allocate memory)\n")
    log = tmp_path / "run.log"
    log.write_text(lost + big.format(n=52_000_000_000))
    outlier = diagnose([log], command="torchrun --nproc-per-node 3 train.py")
    assert outlier.category == "host_oom"
    assert [fix["kind"] for fix in outlier.fixes][:2] == ["fix_data_file", "reduce_seq_len"]
    log.write_text(lost + big.format(n=400_000_000))  # a few hundred MB: a larger shard against a cap
    assert diagnose([log], command="torchrun --nproc-per-node 3 train.py").fixes[0]["kind"] != "fix_data_file"


def test_host_memory_refused_at_the_scripts_attention_scores_line_is_the_sequence_length(tmp_path):
    from triage import diagnose

    log = tmp_path / "run.log"
    log.write_text("[rank1]: Traceback (most recent call last):\n"
                   '[rank1]:   File "/srv/asr/model.py", line 88, in forward\n'
                   "[rank1]:     scores = torch.matmul(q, k.transpose(-1, -2)) / self.scale\n"
                   "[rank1]: RuntimeError: [enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't "
                   "allocate memory: you tried to allocate 9000000000 bytes. Error code 12 (Cannot allocate memory)\n")
    result = diagnose([log], command="torchrun --nproc-per-node 2 train.py --max_len 4096")
    assert [fix["kind"] for fix in result.fixes][:2] == ["reduce_seq_len", "fix_data_file"]
    # a dense table the script builds itself: the batch and that line
    log.write_text(log.read_text().replace("scores = torch.matmul(q, k.transpose(-1, -2)) / self.scale",
                                           "table = torch.zeros(vocab * 512, vocab * 512)"))
    assert diagnose([log], command="torchrun --nproc-per-node 2 train.py").fixes[0]["kind"] == "reduce_batch_size"
