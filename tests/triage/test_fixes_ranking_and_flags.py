"""Fixes propose only flags the script takes, say what to change in code otherwise (with the log's value),
and are ranked from the evidence: ruled out last with the reason, the same change shown once."""
from triage.fixes import FixContext, build_fixes

WATCHDOG = ("[rank1]:[E1201 10:02:03] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=41, "
            "OpType=ALLREDUCE, NumelIn=1, Timeout(ms)=12000) ran for 12004 milliseconds before timing out.")
CUSTOM_FRAMES = ["/home/kim/ddp_loop.py in main", "/opt/venv/lib/python3.11/site-packages/torch/nn/parallel/"
                 "distributed.py in forward"]
HF_FRAMES = ["/opt/venv/lib/python3.11/site-packages/transformers/trainer.py in train", "/srv/sft/train.py in main"]


def _fixes(category, kinds, command, **extra):
    return build_fixes(kinds, FixContext(category=category, command=command, **extra))


def test_a_custom_loop_gets_a_code_change_with_the_timeout_that_fired_not_an_hf_flag():
    (fix, *_) = _fixes("nccl_timeout", ["increase_timeout"], "torchrun --nproc_per_node 2 ddp_loop.py --lr 3e-4",
                       message=WATCHDOG, evidence=[WATCHDOG], frames=CUSTOM_FRAMES)
    assert "--ddp_timeout" not in (fix["command"] or "")
    assert fix["title"].startswith("Raise the collective timeout 12 s -> 3600 s")
    code = [c for c in fix["changes"] if c["where"] == "code"]
    assert code and "timedelta(seconds=3600)" in code[0]["hint"] and "the log shows 12 s" in code[0]["hint"]


def test_an_hf_trainer_script_gets_its_ddp_timeout_flag():
    (fix, *_) = _fixes("nccl_timeout", ["increase_timeout"], "torchrun --nproc_per_node 2 train.py --bf16 True",
                       message=WATCHDOG, evidence=[WATCHDOG], frames=HF_FRAMES)
    assert fix["command"].endswith("--ddp_timeout 3600") and fix["check"]["passed"] is True


def test_a_custom_batch_flag_is_rewritten_and_accumulation_goes_to_the_code():
    (fix, *_) = _fixes("gpu_oom", ["reduce_batch_size"], "torchrun --nproc_per_node 2 loop.py --batch 8 --epochs 1",
                       frames=["/home/u/loop.py in main"])
    assert fix["command"] == "torchrun --nproc_per_node 2 loop.py --batch 4 --epochs 1"
    assert [c["key"] for c in fix["changes"] if c["where"] == "code"] == ["gradient_accumulation_steps"]
    assert fix["check"]["passed"] is True  # the batch kept counts the accumulation done in code


def test_a_fix_the_log_rules_out_goes_last_with_the_reason_and_the_same_change_shows_once():
    command = "torchrun --nproc_per_node 8 train.py --per_device_train_batch_size 1 --output_dir out"
    fixes = _fixes("gpu_oom", ["reduce_batch_size", "increase_grad_accum", "enable_gradient_checkpointing"], command)
    assert fixes[0]["kind"] == "enable_gradient_checkpointing"
    assert fixes[0]["rank_reason"].startswith("#1")
    for last in fixes[1:]:  # both batch fixes: nothing left to cut
        assert last["kind"] in ("reduce_batch_size", "increase_grad_accum") and last["applicable"] is False
        assert "already 1" in last["ruled_out"] and "ruled out" in last["rank_reason"]
    assert all(f.get("rank_reason") for f in fixes)
    command = "torchrun --nproc_per_node 8 train.py --per_device_train_batch_size 8 --output_dir out"
    fixes = _fixes("gpu_oom", ["reduce_batch_size", "increase_grad_accum"], command)
    assert [f["kind"] for f in fixes] == ["reduce_batch_size"] and fixes[0]["also_kinds"] == ["increase_grad_accum"]


def test_workers_already_zero_and_data_that_parses_are_ruled_out():
    command = "torchrun --nproc_per_node 2 train.py --dataloader_num_workers 0 --data_path d.jsonl"
    (workers,) = _fixes("host_oom", ["reduce_dataloader_workers"], command)
    assert workers["applicable"] is False and "already 0" in workers["ruled_out"]
    rows = [{"conversations": [{"from": "human", "value": "hi"}]}] * 3
    fixes = _fixes("data_pipeline", ["fix_data_file", "fix_path"], command, data_sample=rows)
    assert [f["kind"] for f in fixes] == ["fix_path", "fix_data_file"]
    assert "parses" in fixes[-1]["ruled_out"] and fixes[-1]["rank_reason"].startswith("#2, last: ruled out")


def test_a_host_ram_kill_under_zero_offload_to_cpu_puts_the_offload_setting_first(tmp_path):
    import json

    from triage import diagnose

    log = tmp_path / "node1.out"
    log.write_text("E1020 19:37:58.902000 7101 torch/distributed/elastic/multiprocessing/api.py:869] failed "
                   "(exitcode: -9) local_rank: 5 (pid: 90417) of binary: /opt/env/bin/python3.11\n"
                   "[INFO] step 40/2000 loss 1.21\n")
    config = tmp_path / "ds_config.json"
    config.write_text(json.dumps({"zero_optimization": {"stage": 3, "offload_param": {"device": "cpu"},
                                                        "offload_optimizer": {"device": "cpu"}}}))
    offloaded = diagnose([log], config_paths=[config])
    assert offloaded.category == "host_oom" and offloaded.fixes[0]["kind"] == "fix_config"
    config.write_text(json.dumps({"zero_optimization": {"stage": 3}}))
    assert diagnose([log], config_paths=[config]).fixes[0]["kind"] != "fix_config"
