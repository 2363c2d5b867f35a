"""Parse, rewrite and check launch commands losslessly (see parse.py, rewrite.py, check.py)."""
from __future__ import annotations

from .check import check
from .parse import Flag, LaunchCommand, Script, normalise_key, parse_command, parse_script, unparse
from .rewrite import Rewrite, unified_diff
from .tokens import Token, TokenLine, quote_like, tokenize
from .world import (
    LaunchShape,
    job_world,
    launch_shape,
    node_layout,
    node_offset,
    srun_per_node,
    with_launcher_config,
    world_size,
)

__all__ = [
    "Flag", "LaunchCommand", "LaunchShape", "Rewrite", "Script", "Token", "TokenLine", "check", "job_world",
    "launch_shape", "node_layout", "node_offset", "normalise_key", "parse_command", "parse_script", "quote_like", "srun_per_node", "tokenize",
    "unified_diff", "unparse", "with_launcher_config", "world_size",
]
