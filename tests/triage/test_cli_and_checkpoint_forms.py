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
