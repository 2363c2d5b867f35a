"""A line elsewhere in the log (a hint rule's) that changes what the winning root means.

Each entry: the root rules it applies to, the category those roots must have been given (None: any), the
hint that must be in the log, and what the root then means (category, fix kinds, summary). An entry in
OWN_RANK_REREADS applies only when the hint is a line of the rank found to have failed first.
"""

from __future__ import annotations

REREADS = (
    # a checkpoint or data file that reads as cut short, after a warning that the disk was almost full
    (("model_load.corrupt_checkpoint", "data.truncated_array", "data.json_decode", "data.arrow_invalid"), None,
     "storage.low_disk_warning",
     ("storage", ("free_disk", "fix_path"), "a file written while the disk was almost full (a warning said so) is cut short")),
    # a download the hub found incomplete ("Consistency check failed: file should be of size ..."), after the
    # hub warned there was not enough free disk space for it: the disk, not the network or the repo
    (("exception.OSError", "model_load.cant_load"), "model_load", "storage.low_disk_warning",
     ("storage", ("free_disk", "fix_path"), "a download left incomplete after a warning that the disk was almost full")),
    # a --local-rank refused by a script whose usage offers --local_rank: the launchers' spelling changed
    # with torch 2.0, not a launch passing an argument the script never takes
    (("versions.unused_cli_args",), "config_invalid", "versions.usage_takes_local_rank",
     ("version_mismatch", ("rename_flag", "fix_code", "pin_versions"),
      "torch 2.x launchers pass --local-rank; the script only takes --local_rank")),
    # an operator "not implemented" (or an extension that fails to load) after the extension said at import
    # that it was built for another torch/CUDA: the wheels disagree, nothing in the script is wrong
    (("exception.NotImplementedError", "exception.ImportError", "exception.OSError"), None,
     "versions.extension_built_for_other_torch",
     ("version_mismatch", ("pin_versions",),
      "a compiled extension built for another torch/CUDA has none of its operators on this install")),
    # a platform call vLLM cannot answer (NotImplementedError from its platform interface) after vLLM said at
    # import that it found no device platform: the vLLM build does not fit the installed torch/CUDA
    (("exception.NotImplementedError", "exception.RuntimeError", "exception.AttributeError"), None,
     "versions.no_device_platform",
     ("version_mismatch", ("pin_versions", "fix_config"),
      "vLLM runs on no device platform (its build does not fit the installed torch/CUDA); its platform calls fail")),
    # a None where an image was expected ("'NoneType' object has no attribute 'shape'"), after the image decoder
    # said a file was corrupt: cv2.imread returns None for a file it cannot decode
    (("exception.AttributeError", "exception.TypeError"), None, "data.image_decoder_error",
     ("data_corrupt", ("fix_data_file",),
      "an image file the decoder reported corrupt came back as None; find and replace the file")),
)


EMPTY_RANK_DATA = ("data_corrupt", ("fix_data_file", "fix_code"),
                   "the rank its peers waited for read no rows from its data file or shard (empty), so it never "
                   "reached their collective; restore the file, and make the loader refuse an empty shard")
OWN_RANK_REREADS = (
    # peers timed out waiting for a rank whose own output says its data file or shard held no rows: the empty
    # file kept it out of the collective (it ran no steps, or other steps), not a slow network
    (("nccl.watchdog_timeout", "exception.RuntimeError", "exception.DistBackendError"), "nccl_timeout",
     "data.rank_read_nothing", EMPTY_RANK_DATA),
)


def reread(rule_id: str, category: str, hints: set[str],
           own_hints: set[str] = frozenset()) -> tuple[str, tuple[str, ...], str] | None:
    """What the root means given the hint rules that matched elsewhere in the log (and on the first failing
    rank's own lines), or None."""
    for entries, seen in ((REREADS, hints), (OWN_RANK_REREADS, own_hints)):
        for roots, given, hint, meaning in entries:
            if rule_id in roots and given in (None, category) and hint in seen:
                return meaning
    return None
