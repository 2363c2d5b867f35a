"""Parse and rewrite launch commands losslessly (see parse.py, rewrite.py, tokens.py)."""
from __future__ import annotations

from .parse import Flag, LaunchCommand, normalise_key, parse_command, unparse
from .rewrite import Rewrite
from .tokens import Token, TokenLine, quote_like, tokenize
from .world import world_size

__all__ = [
    "Flag", "LaunchCommand", "Rewrite", "Token", "TokenLine", "normalise_key", "parse_command",
    "quote_like", "tokenize", "unparse", "world_size",
]
