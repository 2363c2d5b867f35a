"""The files a launch command hands the script: its configs and its data."""
from __future__ import annotations

import re

from .parse import LaunchCommand

# a flag that names a configuration: --config, --cfg_file, --deepspeed, --ds_config, --fsdp_config, --recipe
_CONFIG_KEY = re.compile(r"config|cfg|deepspeed|^ds_|settings|hparams|recipe|conf$")
_STRUCTURED = re.compile(r"\.(?:json|ya?ml|toml)$", re.IGNORECASE)
_DATA_FILE = re.compile(r"\.(?:jsonl?|parquet|csv|tsv|arrow|txt)$", re.IGNORECASE)


def named_files(cmd: LaunchCommand) -> tuple[list[str], list[str]]:
    """(config files, data files): JSON/YAML/TOML files passed under a config-like flag, and every other
    data-like file the script's flags or positional words name."""
    configs, data = [], []
    for flag in cmd.script_flags:
        value = (flag.value or "").strip()
        if not value:
            continue
        if _STRUCTURED.search(value) and _CONFIG_KEY.search(flag.key):
            configs.append(value)
        elif _DATA_FILE.search(value):
            data.append(value)
    for index in cmd.positionals:
        word = cmd.line.tokens[index].value if index < len(cmd.line.tokens) else ""
        if _DATA_FILE.search(word or ""):
            (configs if _STRUCTURED.search(word) and _CONFIG_KEY.search(word.lower()) else data).append(word)
    return configs, data
