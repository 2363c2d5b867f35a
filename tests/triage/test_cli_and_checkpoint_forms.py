"""Two launch-time forms: argparse refusing two flags given together, and mmcv refusing a checkpoint path that is
not a file."""

from __future__ import annotations

from triage import diagnose


def test_two_flags_the_parser_keeps_apart_are_the_launch_command(tmp_path):
    log = tmp_path / "train.log"
    log.write_text("usage: train.py [-h] [--gpus GPUS | --gpu-ids GPU_IDS [GPU_IDS ...]] config\n"
                   "train.py: error: argument --gpu-ids: not allowed with argument --gpus\n")
    result = diagnose([log], command="python -m torch.distributed.launch --nproc_per_node 4 train.py cfg.py "
                                     "--gpus 4 --gpu-ids 0 1 2 3")
    assert result.category == "config_invalid"
    assert result.fixes[0]["kind"] == "fix_config"


def test_a_checkpoint_path_that_is_not_a_file_is_the_model_load(tmp_path):
    log = tmp_path / "train.log"
    log.write_text("\n".join([
        "Traceback (most recent call last):",
        '  File "/srv/seg/tools/train.py", line 160, in <module>',
        "    main()",
        '  File "/opt/env/lib/python3.8/site-packages/mmcv/runner/checkpoint.py", line 250, in load_from_local',
        "    raise IOError(f'{filename} is not a checkpoint file')",
        "OSError: pretrain/vit_large_p16_384.pth is not a checkpoint file",
    ]) + "\n")
    result = diagnose([log])
    assert result.category == "model_load"
    assert result.fixes[0]["kind"] == "fix_path"


def test_ddp_on_a_device_past_the_nodes_gpus_is_the_scripts_device_choice(tmp_path):
    site = "/opt/env/lib/python3.10/site-packages"
    log = tmp_path / "node1.log"
    log.write_text("\n".join([
        "[rank9]: Traceback (most recent call last):",
        '[rank9]:   File "/srv/sit/train.py", line 210, in <module>',
        "[rank9]:     loss = model(x, t, y)",
        f'[rank9]:   File "{site}/torch/distributed/utils.py", line 100, in _recursive_to',
        "[rank9]:     stream = _get_stream(target_device)",
        f'[rank9]:   File "{site}/torch/nn/parallel/_functions.py", line 124, in _get_stream',
        "[rank9]:     if _get_stream.streams[device.index] is None:",
        "[rank9]: IndexError: list index out of range",
    ]) + "\n")
    result = diagnose([log], command="torchrun --nnodes 2 --nproc_per_node 8 train.py")
    assert result.category == "code_bug"
    assert result.fixes[0]["kind"] == "fix_code"


OLD_LAUNCH_LOG = """\
Traceback (most recent call last):
  File "src/train.py", line 348, in <module>
    main(args)
  File "/home/u/tracker/util/misc.py", line 417, in init_distributed_mode
    args.gpu = int(os.environ['LOCAL_RANK'])
  File "/usr/lib/python3.7/os.py", line 681, in __getitem__
    raise KeyError(key) from None
KeyError: 'LOCAL_RANK'
"""


def test_local_rank_missing_under_the_old_launcher_without_use_env_is_the_launch_command(tmp_path):
    log = tmp_path / "train.log"
    log.write_text(OLD_LAUNCH_LOG)
    old = diagnose([log], command="python -m torch.distributed.launch --nproc_per_node=4 src/train.py --c x.yaml")
    assert old.category == "config_invalid"
    first = old.fixes[0]
    assert first["kind"] == "fix_config"
    assert first["command"] == "python -m torch.distributed.launch --nproc_per_node=4 --use_env src/train.py --c x.yaml"
    # no launcher at all: the process was never started by one
    plain = diagnose([log], command="python src/train.py --c x.yaml")
    assert plain.category == "rendezvous"


def test_the_old_launch_command_can_come_from_a_shell_prompt_in_the_log(tmp_path):
    log = tmp_path / "issue.md"
    log.write_text("$ python -m torch.distributed.launch --nproc_per_node=4 src/train.py --c x.yaml\n"
                   + OLD_LAUNCH_LOG)
    assert diagnose([log]).category == "config_invalid"
