"""Cutting the per-device batch never changes the global batch (property-based)."""
from hypothesis import given, settings
from hypothesis import strategies as st

from triage.commandline import parse_command, world_size
from triage.fixes import FixContext, build_fixes
from triage.fixes.batch import plan_batch


@given(st.integers(1, 4096), st.integers(1, 512), st.one_of(st.none(), st.integers(1, 4096)))
def test_it_plans_a_smaller_batch_with_the_same_product(batch, accumulation, target):
    new_batch, new_accumulation = plan_batch(batch, accumulation, target)
    assert new_batch * new_accumulation == batch * accumulation
    assert batch % new_batch == 0
    assert new_batch < batch or batch == 1
    if target is None and batch > 1:
        assert new_batch <= batch // 2


@given(
    batch=st.integers(1, 256), accumulation=st.one_of(st.none(), st.integers(1, 64)),
    nproc=st.integers(1, 16), nnodes=st.integers(1, 4), equals=st.booleans(),
    launcher=st.sampled_from(["torchrun", "deepspeed", "python -m torch.distributed.run"]),
)
@settings(max_examples=150, deadline=None)
def test_it_keeps_the_global_batch_in_the_rewritten_command(batch, accumulation, nproc, nnodes, equals, launcher):
    sep = "=" if equals else " "
    world_flags = f"--num_gpus{sep}{nproc} --num_nodes{sep}{nnodes}" if launcher == "deepspeed" else \
        f"--nproc_per_node{sep}{nproc} --nnodes{sep}{nnodes}"
    accum = f" \\\n    --gradient_accumulation_steps{sep}{accumulation}" if accumulation else ""
    command = (f"{launcher} {world_flags} train.py \\\n    --model_name_or_path gpt2 \\\n"
               f"    --per_device_train_batch_size{sep}{batch}{accum} \\\n    --learning_rate 2e-5\n")
    (fix, *_) = build_fixes(["reduce_batch_size"], FixContext(category="gpu_oom", command=command))
    assert fix["kind"] == "reduce_batch_size"
    before, after = parse_command(command), parse_command(fix["command"])
    world = world_size(before)[0]
    assert world == nproc * nnodes == world_size(after)[0]
    old_global = batch * (accumulation or 1) * world
    new_batch = int(after.value("per_device_train_batch_size"))
    new_global = new_batch * int(after.value("gradient_accumulation_steps") or 1) * world
    assert new_global == old_global
    assert new_batch < batch or batch == 1
    # nothing else moved: the same learning rate, model and launcher flags, the same line structure
    assert after.value("learning_rate") == "2e-5" and after.value("model_name_or_path") == "gpt2"
    assert [f.value for f in after.launcher_flags] == [f.value for f in before.launcher_flags]
    if batch > 1:
        assert f"= {old_global}" in fix["notes"][0] and f"x {world} =" in fix["notes"][0]
        assert fix["global_batch"]["total"] == old_global


def test_a_corrected_command_that_changes_the_global_batch_is_not_shown():
    from triage.fixes.batch import _global_batch_kept
    from triage.fixes.common import verify

    original = "torchrun --nproc_per_node 4 train.py --per_device_train_batch_size 8 --gradient_accumulation_steps 2"
    ctx = FixContext(category="gpu_oom", command=original)
    wrong = {"command": original.replace("batch_size 8", "batch_size 4"), "diff": None,
             "changes": [{"where": "script", "flag": "--per_device_train_batch_size", "old": "8", "new": "4"}]}
    problem = _global_batch_kept(ctx, wrong, 8 * 2 * 4, 4)
    assert problem == "global batch not kept: 4 x 2 x 4 != 64"
    shown = verify(ctx, dict(wrong), [problem])
    assert shown["command"] is None and shown["check"]["passed"] is False
    right = dict(wrong, command=wrong["command"].replace("steps 2", "steps 4"))
    assert _global_batch_kept(ctx, right, 64, 4) is None


def test_the_batch_is_read_and_cut_in_the_config_section_named_after_the_script(tmp_path):
    # one team config with a section per script: pretrain_ddp.py reads `pretrain:`, not the probe's or the
    # fine-tune's batch
    from triage.fixes import FixContext, build_fixes

    config = {"pretrain": {"batch_size": 1024, "knn_monitor": {"batch_size": 256}},
              "finetune": {"per_device_train_batch_size": 32}}
    ctx = FixContext(category="host_oom", command="prlimit --as=2147483648 timeout 60 python pretrain_ddp.py "
                     "--config config.yaml", configs={"config.yaml": config}, world_size=2)
    fix = build_fixes(["reduce_batch_size"], ctx)[0]
    assert fix["title"].startswith("Cut the per-device batch 1024 -> 512")
    assert {"where": "config", "file": "config.yaml", "key": "pretrain.batch_size", "new": 512} in fix["changes"]
