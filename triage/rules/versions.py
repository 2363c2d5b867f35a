"""Installed library versions that do not fit the script or each other."""

from __future__ import annotations

import difflib
import re

from triage.rules import HINT, ROOT, rule
from triage.rules.arguments import misspelling_of
from triage.rules.exceptions import own_module


def _keyword(match: re.Match) -> dict:
    found = re.search(r"unexpected keyword argument ['‘’\"`]?(\w+)", match.string)
    return {"flag": "--" + found.group(1), "keyword": found.group(1)} if found else {}


def _flags(match: re.Match) -> dict:
    found = re.search(r"\[\s*'(--[\w\-]+)'", match.string)
    return {"flag": found.group(1)} if found else {}


_CHOICE = re.compile(r"invalid choice: '([^']{1,80})' \(choose from ([^)]{1,2000})\)")


# a model's forward() refusing an input every Trainer batch carries: the model class is the team's own and
# does not take the Trainer's interface (library models all accept these)
_TRAINER_INPUT = re.compile(r"\.forward\(\) got an unexpected keyword argument ['‘’\"`]?(?:labels|attention_mask|"
                            r"input_ids|token_type_ids|return_dict)\b")


# a GRPO/RLOO trainer calling the team's reward function with the dataset's columns as keywords
_REWARD_CALL = re.compile(r"\b\w*reward\w*\(\) got an unexpected keyword argument", re.IGNORECASE)


def _refused_keyword(text: str, frames: list[dict]):
    """Who is at fault for an unexpected keyword: the team's reward function or model forward() refusing what
    the trainer passes (their code), or a keyword one or two letters off a current training argument (a
    misspelt setting); None leaves it to a library release that dropped the argument."""
    if _REWARD_CALL.search(text):
        return ("code_bug", ("fix_code",),
                "the reward function does not take the keyword arguments the trainer passes it (prompts, "
                "completions and every dataset column): give it **kwargs")
    if _TRAINER_INPUT.search(text):
        return ("code_bug", ("fix_code",),
                "the model's forward() does not take an input the Trainer passes in every batch: accept it "
                "(and compute the loss from labels) or map the batch in a custom compute_loss")
    found = re.search(r"unexpected keyword argument ['‘’\"`]?(\w+)", text)
    meant = misspelling_of(found.group(1)) if found else None
    if meant is None:
        return None
    return ("config_invalid", ("fix_config",),
            f"the argument {found.group(1)!r} is a misspelling of {meant!r}: correct it in the flags or config")


_LOCAL_RANK_ARG = re.compile(r"unrecognized arguments: (?:.* )?--local[-_]rank\b")


def _local_rank_or_choice(text: str, frames: list[dict]):
    """The script's parser refusing the --local-rank that `python -m torch.distributed.launch` (and
    DeepSpeed's launcher) pass to every process: the launch, not a release; or a misspelt choice."""
    if _LOCAL_RANK_ARG.search(text):
        return ("config_invalid", ("fix_config", "fix_code"),
                "the launcher passes --local-rank to the script, whose argument parser does not take it: launch "
                "with torchrun (or --use-env), or add a --local-rank/--local_rank argument")
    return _misspelled_choice(text, frames)


def _misspelled_choice(text: str, frames: list[dict]):
    """An argparse choice given with another spelling ('full-shard' for 'full_shard', a case or a letter off)
    is a mistyped setting; a value no choice resembles belongs to another release of the script or library."""
    found = _CHOICE.search(text)
    if found is None:
        return None
    def spelt(word: str) -> str:
        return word.strip().strip("'\"").lower().replace("-", "_")
    given = spelt(found.group(1))
    choices = [spelt(choice) for choice in found.group(2).split(",")]
    close = [choice for choice in choices if choice == given or difflib.SequenceMatcher(None, given, choice).ratio() >= 0.85]
    if not close:
        return None
    return ("config_invalid", ("fix_config",),
            f"the value {found.group(1)!r} is a misspelling of the choice {close[0]!r} the script accepts")


RULES = [
    rule(
        "versions.extension_built_for_other_torch",
        "version_mismatch",
        HINT,
        ["was built for", "extensions", "wasn't built with", "wasn't build with", "compiled for"],
        # a compiled extension (xFormers, flash-attn, apex, bitsandbytes) that says at import time it was built
        # for another torch/CUDA, or without CUDA: its operators are missing later (triage.rules.rereads)
        r"(?:was|were) (?:built|compiled) for:? .{0,40}(?:PyTorch|torch|CUDA)|"
        r"can't load (?:C\+\+/)?CUDA extensions|wasn'?t buil[dt] with CUDA support|"
        r"(?:PyTorch|torch) [\d.]+\S* .{0,40}\(you have [\d.]+",
        ["pin_versions"],
        0.05,
        "a compiled extension was built for another torch or CUDA than the installed ones",
    ),
    rule(
        "versions.no_device_platform",
        "version_mismatch",
        HINT,
        ["No platform detected", "UnspecifiedPlatform"],
        # vLLM found none of its device platforms at import: its wheel was built for another torch/CUDA than the
        # installed one (or the CUDA libraries it links cannot load), so its platform calls later raise
        r"No platform detected,? vLLM is running on UnspecifiedPlatform",
        ["pin_versions"],
        0.05,
        "vLLM found no device platform: its build does not fit the installed torch/CUDA",
    ),
    rule(
        "versions.usage_takes_local_rank",
        "version_mismatch",
        HINT,
        ["--local_rank"],
        # the script's usage line offers the underscore spelling that torch 1.x launchers passed; torch 2.x's
        # torch.distributed.launch passes --local-rank (triage.pipeline reads the refusal with it)
        r"usage: \S+ .*\[--local_rank\b",
        ["rename_flag", "fix_code", "pin_versions"],
        0.05,
        "the script takes --local_rank, the spelling launchers passed before torch 2.0",
    ),
    rule(
        "versions.architecture_unknown",
        "version_mismatch",
        ROOT,
        ["does not recognize this architecture"],
        # transformers' own words: "has model type `x` but Transformers does not recognize this architecture
        # ... or because your version of Transformers is out of date" (a model newer than the install)
        r"does not recognize this architecture",
        ["pin_versions"],
        0.9,
        "the checkpoint's model type is newer than the installed transformers",
    ),
    rule(
        "versions.bitsandbytes_setup",
        "version_mismatch",
        ROOT,
        ["CUDA Setup failed", "compiled without GPU support", "libbitsandbytes_cpu", "CUDA SETUP:"],
        r"CUDA Setup failed despite GPU being available|bitsandbytes was compiled without GPU support|"
        r"libbitsandbytes_cpu\.so|CUDA SETUP: (?:Required library|Problem|Something went wrong)",
        ["pin_versions"],
        0.85,
        "bitsandbytes cannot find a CUDA build matching the installed CUDA libraries",
    ),
    rule(
        "versions.missing_library",
        "version_mismatch",
        ROOT,
        ["library but it was not found", "requires the", "pip install"],
        r"requires the [\w\-. ]{1,60} librar(?:y|ies) but (?:it was|they were) not found|"
        r"(?:[Pp]lease|[Yy]ou need to|[Yy]ou must) (?:run )?`?pip install",
        ["pin_versions"],
        0.7,
        "a package the code needs is not installed in this environment",
    ),
    rule(
        "versions.unknown_template",
        "version_mismatch",
        ROOT,
        ["Template", "template"],
        r"[Tt]emplate [\w.\-']{1,60} (?:does not exist|doesn't exist|is not (?:supported|registered|found))|"
        r"[Uu]nknown (?:chat )?template|[Tt]emplate not found",
        ["pin_versions", "fix_config"],
        0.75,
        "the installed release does not know the named chat template (it was added in a newer release, or the name is misspelt)",
    ),
    rule(
        "versions.unexpected_keyword",
        "version_mismatch",
        ROOT,
        ["unexpected keyword argument"],
        r"got an unexpected keyword argument",
        ["rename_flag", "pin_versions"],
        0.8,
        "a function was called with an argument that the installed library version no longer accepts",
        facts=_keyword,
        within=_refused_keyword,
    ),
    rule(
        "versions.unused_cli_args",
        "version_mismatch",
        ROOT,
        ["not used by the HfArgumentParser", "unrecognized arguments", "invalid choice"],
        r"Some specified arguments are not used by the HfArgumentParser|error: unrecognized arguments: --|"
        r"error: argument [\w\-/ ]{1,60}: invalid choice: '",
        ["pin_versions", "rename_flag"],
        0.8,
        "the script's argument parser does not know a command-line flag (renamed/removed or a different checkout)",
        facts=_flags,
        within=_local_rank_or_choice,
    ),
    rule(
        "versions.numpy_abi",
        "version_mismatch",
        ROOT,
        ["Numpy is not available", "_ARRAY_API not found", "compiled using NumPy 1.x", "numpy.dtype size changed"],
        # NumPy 2 installed under packages built against NumPy 1 (torch, pandas, scipy wheels): the import only
        # warns, and the first tensor <-> array conversion fails much later (an evaluation's numpify)
        r"^RuntimeError: Numpy is not available|Failed to initialize NumPy: _ARRAY_API not found|"
        r"compiled using NumPy 1\.x cannot be run in|numpy\.dtype size changed, may indicate binary incompatibility",
        ["pin_versions"],
        0.85,
        "NumPy 2 is installed under packages built against NumPy 1: pin numpy<2 or upgrade the packages that "
        "were built for 1.x",
    ),
    rule(
        "versions.cuda_toolkit_mismatch",
        "version_mismatch",
        ROOT,
        ["CUDAMismatchException", "does not match the version torch was compiled with"],
        # DeepSpeed's op builder (and torch's cpp_extension) compiling an op with a CUDA toolkit other than the
        # one torch was built with
        # (DeepSpeed's note that goes on "but since the APIs are compatible, accepting this combination" is not a
        # failure: the build went ahead)
        r"CUDAMismatchException|[Ii]nstalled CUDA version [\d.]+ does not match the version torch was compiled "
        r"with(?! [\d.]+,? but since the APIs are compatible)|The detected CUDA version \([\d.]+\) mismatches the version that was used to compile PyTorch",
        ["pin_versions"],
        0.85,
        "the CUDA toolkit on the machine differs from the one torch was built with, so extensions cannot be "
        "compiled: install the matching toolkit (or a torch built for it), or use prebuilt ops",
    ),
    rule(
        "versions.cannot_import",
        "version_mismatch",
        ROOT,
        ["cannot import name", "undefined symbol", "No module named", "has no attribute"],
        # (not an optional import the library falls back from: "xformers unavailable ..., using sdpa")
        r"^(?!.*(?:fall(?:ing)? ?back|, using |using \w+ instead|unavailable|not available|optional|skipping|disabled))"
        r".*?(?:cannot import name|undefined symbol|No module named|module '[\w.]+' has no attribute)",
        ["pin_versions"],
        0.75,
        "an installed package does not provide what the script imports",
        within=own_module,
    ),
    rule(
        "versions.build",
        "version_mismatch",
        ROOT,
        [
            "Error building extension",
            "CUDA_HOME",
            "MissingCUDAException",
            "not compiled with CUDA",
            "Found no NVIDIA driver",
            "driver on your system is too old",
        ],
        r"Error building extension|CUDA_HOME (?:does not exist|environment variable is not set)|MissingCUDAException|"
        r"[Nn]ot compiled with CUDA enabled|Found no NVIDIA driver|NVIDIA driver on your system is too old",
        ["pin_versions"],
        0.8,
        "a compiled extension or the CUDA toolkit does not fit the installed PyTorch",
    ),
    rule(
        "versions.requires",
        "version_mismatch",
        ROOT,
        [
            ">=",
            "==",
            "ersion mismatch",
            "is not compatible with",
            "compiled against",
            "compiled with",
            "version is insufficient",
        ],
        r"requires? (?:a )?[\w\-.]+ ?(?:version ?)?(?:>=|==) ?\d|[Vv]ersion mismatch|"
        r"is not compatible with (?:this|the installed)|compiled (?:against|with) .{0,60}but(?! since the APIs)|"
        r"CUDA driver version is insufficient",
        ["pin_versions"],
        0.55,
        "installed versions do not fit each other",
    ),
]
