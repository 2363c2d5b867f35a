"""Model, tokenizer or weights that could not be loaded."""

from __future__ import annotations

import re

from triage.rules import HINT, ROOT, rule

_MISSING_KEYS = re.compile(r"Missing key\(s\) in state_dict: ((?:\"[^\"]+\"(?:, )?)+)")


def _names_differ(text: str, frames: list[dict]):
    """Only names missing or unexpected, no size mismatch: the checkpoint comes from another model class,
    under a wrapper's prefix, or from another path; not from another config of the same model."""
    if "size mismatch" in text or not re.search(r"(?:Missing|Unexpected) key\(s\) in state_dict", text):
        return None
    missing = _MISSING_KEYS.search(text)
    if missing and "Unexpected key(s)" not in text:
        indices = [re.search(r"\.(\d+)\.", key) for key in re.findall(r'"([^"]+)"', missing.group(1))]
        first = min(int(index.group(1)) for index in indices) if indices and all(indices) else 0
        if first >= 1:
            # only whole layers past the checkpoint's last are missing: the model was built deeper than the
            # weights were saved (a config that does not belong to these weights)
            return ("model_load", ("fix_path", "fix_config"),
                    f"the model is built with more layers than the checkpoint holds (only layers from {first} on "
                    "are missing): point at the weights saved with this config, or set the config's depth to the "
                    "checkpoint's")
    return ("model_load", ("fix_code", "fix_path"),
            "the checkpoint's parameter names do not match the model's: it was saved from another model class "
            "or under a wrapper's prefix (`module.`, `_orig_mod.`), or the path points at another checkpoint")


_SHAPES = re.compile(r"shape torch\.Size\(\[(\d+)[^\]]*\]\) from checkpoint, the shape in current model is "
                     r"torch\.Size\(\[(\d+)")


_ADDED_TOKENS = 64  # rows a training run adds to a vocabulary for its special tokens, at most
_WIDTHS = re.compile(r"shape torch\.Size\(\[(\d+), (\d+)\]\) from checkpoint, the shape in current model is "
                     r"torch\.Size\(\[(\d+), (\d+)\]")


def _sharded_rows(text: str, frames: list[dict]):
    """Embedding rows a whole multiple apart (50304 vs 25152) are not added tokens: the checkpoint was saved
    with another tensor-parallel size (each rank holds 1/TP of the vocabulary), a setting to match. The same
    rows with another width are no vocabulary at all: the checkpoint is another model's (hidden size)."""
    width = _WIDTHS.search(text)
    if width and width.group(1) == width.group(3) and width.group(2) != width.group(4):
        return ("model_load", ("fix_path", "fix_config"),
                f"the checkpoint's embeddings have the model's {width.group(1)} rows but another width "
                f"({width.group(2)} vs {width.group(4)}): it was saved from a model of another size (hidden size), "
                "another run's checkpoint; point at this model's checkpoint or build the model it was saved from")
    found = _SHAPES.search(text)
    if not found:
        return None
    saved, current = int(found.group(1)), int(found.group(2))
    if 0 < saved - current <= _ADDED_TOKENS:
        # a handful of rows more than the model: tokens added for training (a pad token, chat markers); the
        # loading code resizes the embeddings to that tokenizer first
        return ("model_load", ("fix_code", "fix_config", "fix_path"),
                f"the checkpoint has {saved - current} more embedding rows than the model: tokens were added when it "
                "was trained; resize the model's token embeddings to that tokenizer (len(tokenizer)) before loading")
    big, small = max(saved, current), min(saved, current)
    if small == 0 or big == small or big % small or big // small not in (2, 4, 8, 16):
        return None
    return ("model_load", ("fix_config", "fix_path"),
            f"the checkpoint's embedding rows ({saved}) are {big // small}x the model's ({current}): it was saved "
            "with another tensor-parallel size; set the same parallel sizes or reshard the checkpoint first")


def _weights_only_default(text: str, frames: list[dict]):
    """torch >= 2.6 loads with weights_only=True by default and refuses any pickled class it was not told
    to allow: a readable file that an older torch loaded, refused by a newer one."""
    if not re.search(r"Unsupported global: GLOBAL [\w.]+|not an allowed global", text):
        return None
    return ("version_mismatch", ("fix_code", "pin_versions"),
            "torch.load now defaults to weights_only=True and refuses a class pickled in the file: load it with "
            "weights_only=False if you trust it, or allow the class with torch.serialization.add_safe_globals")


_LOADER_FRAMES = re.compile(r"serialization|torch[/\\]|from_pretrained|load_state_dict|checkpoint|modeling|"
                            r"safetensors|peft|accelerate|deepspeed|transformers", re.IGNORECASE)


# the script's own line assigning what torch.load / pickle.load returns to a name for prepared data
_LOADS_DATA_INTO = re.compile(
    r"^\s*(?:self\.)?\w*(?:cache|rows|tokens|tokenized|feats|features|logits|embeddings|embeds|shard|samples|"
    r"examples|dataset|batches)\w*\s*=\s*(?:torch|pickle|joblib)\.load\(", re.IGNORECASE)


_SPAWNED_CHILD = re.compile(r"[/\\]multiprocessing[/\\]spawn\.py (?:_main|spawn_main)$")


def _what_the_pickle_was(text: str, frames: list[dict]):
    """torch's new weights_only default refusing a class; or a file the script unpickles itself (a cache of
    rows, not a checkpoint: no loader of a library in the traceback) that was cut short."""
    refused = _weights_only_default(text, frames)
    if refused is not None:
        return refused
    if frames and _SPAWNED_CHILD.search(f"{frames[-1].get('file', '')} {frames[-1].get('function', '')}"):
        # a spawned child reading its start-up payload from the parent's pipe: the parent died (was killed)
        # while handing it over, so the payload was cut; no file is damaged, the parent's death is the failure
        return False
    from triage.rules.exceptions import own_code

    if _LOADS_DATA_INTO.search(own_code(frames)):
        # `cache = torch.load(path)`, `feats = torch.load(...)`: the file holds prepared data, not weights
        return ("data_corrupt", ("fix_data_file",),
                "a file of prepared data the script loads (a cache of rows, features or teacher outputs) is cut "
                "short or damaged: rebuild it")
    if ("UnpicklingError" in text or "pickle data was truncated" in text or "Ran out of input" in text) \
            and frames and not any(_LOADER_FRAMES.search(str(frame.get("file", ""))) for frame in frames):
        return ("data_corrupt", ("fix_data_file",),
                "a file the script unpickles itself (a cache of prepared rows) is cut short or damaged: rebuild it")
    return None


# an embedding table of ids that are not a tokenizer's (items, classes, users, timesteps, node types) called at
# the script's own line: `self.item_emb(items)`, `self.class_embedding(y)`
_OTHER_IDS_TABLE = re.compile(
    r"\b(?:self\.)?((?:item|class|label|user|cond|time|timestep|type|segment|speaker|expert|node|atom|bond|entity|"
    r"relation|cat|category|domain|lang|style|genre|product|region|site|field)\w*_?emb\w*)\(", re.IGNORECASE)


def _table_of_other_ids(text: str, frames: list[dict]):
    """The id past the table is not a token's: the script's own ids (an off-by-one, a table sized without the
    extra row it indexes) and its code, not a tokenizer that does not fit the model."""
    from triage.rules.exceptions import own_code

    table = _OTHER_IDS_TABLE.search(own_code(frames))
    if table is None:
        return None
    return ("code_bug", ("fix_code", "fix_config"),
            f"an id is past the end of the embedding table {table.group(1)}, which is not a tokenizer's vocabulary: the "
            "script's ids (an off-by-one, a null or padding id) or the size it gave that table")


_KNOWN_CONFIG_FOR_OTHER_TASK = re.compile(
    r"Unrecognized configuration class <class '(?:transformers\.models\.[\w.]+\.)(\w+)'> for this kind of "
    r"AutoModel: (\w+)")


def _wrong_kind_of_model(text: str, frames: list[dict]):
    """transformers knows the model's config class (it ships under transformers.models) but the Auto class asked
    for has no model of that kind (a decoder-only GPT-2 for AutoModelForSeq2SeqLM): the path or the task is
    wrong, not the release."""
    found = _KNOWN_CONFIG_FOR_OTHER_TASK.search(text)
    if found is None:
        return None
    return ("model_load", ("fix_path", "fix_config"),
            f"the model folder holds a {found.group(1).removesuffix('Config')} model, which {found.group(2)} cannot "
            "build: point the job at a model of the kind the task needs, or use the Auto class made for this model")


RULES = [
    rule(
        "model_load.non_strict_load",
        "model_load",
        HINT,
        ["do not match exactly", "does not match exactly", "keys in source state_dict"],
        # a loader that went on without some weights (mmcv/mmengine's load_checkpoint, strict=False) and lists
        # them: the listing under it is a warning (triage.collect demotes it), a new head is expected to differ
        r"state dict do(?:es)? not match exactly|(?:unexpected|missing) keys? in source state_dict",
        ["fix_path"],
        0.05,
        "the checkpoint was loaded without some of its weights (a non-strict load)",
    ),
    rule(
        "model_load.config_without_type",
        "model_load",
        ROOT,
        ["Should have a `model_type`", "Should have a model_type"],
        # the folder given as the model has no config.json (or one without model_type): a wrong or incomplete
        # path, not an old transformers
        r"Unrecognized model in [^\n]{1,300}Should have a `?model_type`? key",
        ["fix_path", "pin_versions"],
        0.92,
        "the model folder has no usable config.json (missing, or without model_type): the path or the copy is wrong",
    ),
    rule(
        "model_load.head_size_mismatch",
        "model_load",
        ROOT,
        ["ignore_mismatched_sizes"],
        r"You set `ignore_mismatched_sizes` to `False`|ignore_mismatched_sizes=True",
        ["fix_config", "fix_code"],
        0.85,
        "the checkpoint's weights have other shapes than the model built from the settings (num_labels, "
        "vocabulary, head): load with matching settings, or ignore_mismatched_sizes=True for a new head",
    ),
    rule(
        "model_load.class_missing",
        "model_load",
        ROOT,
        [
            "does not exist or is not currently imported",
            "Unrecognized model",
            "Unrecognized configuration",
        ],
        r"(?:Tokenizer|Model|Config)? ?class \w+ does not exist or is not currently imported|"
        r"Unrecognized (?:model|configuration class)",
        ["pin_versions"],
        0.9,
        "the installed transformers does not know this model's classes",
        within=_wrong_kind_of_model,
    ),
    rule(
        "model_load.no_tokenizer_files",
        "model_load",
        ROOT,
        ["instantiate the backend tokenizer"],
        # a fast tokenizer built from a folder with neither tokenizer.json nor a slow tokenizer's files: the path
        # names a run's output folder (only checkpoint-N/ inside) or a copy without the tokenizer; or the slow
        # files are there and the package that converts them (sentencepiece, tiktoken) is not installed
        r"Couldn't instantiate the backend tokenizer from one of",
        ["fix_path", "pin_versions"],
        0.85,
        "no tokenizer could be built from the folder given: it holds no tokenizer.json (a run's output folder with "
        "only checkpoint-N/ inside, a copy without the tokenizer), or its slow tokenizer needs sentencepiece",
    ),
    rule(
        "model_load.cant_load",
        "model_load",
        ROOT,
        [
            "Can't load",
            "couldn't connect",
            "not a valid model identifier",
            "OfflineModeIsEnabled",
            "LocalEntryNotFoundError",
            "does not appear to have a file named",
            "HFValidationError",
            "RepositoryNotFoundError",
            "GatedRepoError",
            "is not a checkpoint file",
        ],
        r"Can't load (?:tokenizer|the configuration|config|weights|the model)|couldn't connect to '?https?://huggingface|"
        r"not a valid model identifier|OfflineModeIsEnabled|LocalEntryNotFoundError|"
        r"does not appear to have a file named|HFValidationError|RepositoryNotFoundError|GatedRepoError|"
        # mmcv/mmengine's load_checkpoint: the path is not a file (a download left partial, a wrong name)
        r"\S+ is not a checkpoint file",
        ["fix_path", "pin_versions"],
        0.85,
        "the model or tokenizer files could not be found or downloaded",
    ),
    rule(
        "model_load.hub_unreachable",
        "model_load",
        ROOT,
        ["huggingface.co"],
        r"huggingface\.co.{0,300}(?:Max retries exceeded|ConnectionError|timed out|Connection refused|"
        r"Temporary failure in name resolution)|(?:Max retries exceeded|ConnectionError).{0,300}huggingface\.co",
        ["fix_path"],
        0.75,
        "the Hugging Face Hub could not be reached to download the model",
    ),
    rule(
        # embeddings or output head of another length: tokens were added when the checkpoint
        # (or adapter) was trained, so the model must be resized to the tokenizer before loading
        "model_load.vocab_size",
        "model_load",
        ROOT,
        ["size mismatch for"],
        r"size mismatch for [\w.]*(?:embed_tokens|word_embeddings|wte|embed_in|embed_out|lm_head|shared|"
        r"output_layer|output)\.(?:[\w.]*\.)?weight",
        ["fix_config", "fix_path", "fix_code"],
        0.95,  # more specific than the "Error(s) in loading state_dict" line it continues
        "the checkpoint's embeddings have another vocabulary size than the model: tokens were added when it "
        "was trained; build the model with the tokenizer and vocabulary it was trained with (or resize the "
        "model's token embeddings to that tokenizer) before loading it",
        within=_sharded_rows,
    ),
    rule(
        "model_load.tokenizer_file_newer",
        "model_load",
        ROOT,
        ["untagged enum"],
        # the Rust tokenizers library reading a tokenizer.json whose model section a newer release wrote
        r"did not match any variant of untagged enum (?:ModelWrapper|PreTokenizerWrapper|NormalizerWrapper|"
        r"DecoderWrapper|PostProcessorWrapper)",
        ["pin_versions", "fix_path"],
        0.85,
        "the model's tokenizer.json was written by a newer `tokenizers` release than the installed one: "
        "upgrade tokenizers (and transformers with it)",
    ),
    rule(
        "model_load.optimizer_groups",
        "model_load",
        ROOT,
        ["parameter groups", "parameter group that doesn't match"],
        # an optimizer state saved for another set of parameter groups (another model, LoRA targets, weight
        # decay split) restored into this optimizer
        r"loaded state dict has a different number of parameter groups|loaded state dict contains a parameter "
        r"group that doesn't match the size of optimizer's group",
        ["fix_path", "fix_code"],
        0.8,
        "the optimizer state being restored was saved for other parameter groups: another checkpoint, or the "
        "model or its trainable parameters changed since it was saved",
    ),
    rule(
        "model_load.adapter_missing",
        "model_load",
        ROOT,
        ["adapter_config.json"],
        r"[Cc]an(?:'|no)t find '?adapter_config\.json'?|adapter_config\.json.{0,40}(?:not found|does not exist|"
        r"No such file)",
        ["fix_path"],
        0.85,
        "the adapter path holds no adapter_config.json: it points at the run's root folder or at a checkpoint "
        "that was saved without the adapter",
    ),
    rule(
        "model_load.state_dict",
        "model_load",
        ROOT,
        ["size mismatch for", "Error(s) in loading state_dict", "Missing key(s) in state_dict"],
        r"size mismatch for|Error\(s\) in loading state_dict|Missing key\(s\) in state_dict",
        ["fix_config", "fix_path", "pin_versions"],
        0.85,
        "the checkpoint's weights do not fit the model: it was built with another config (sizes, LoRA rank, "
        "layers) than the one the weights were saved with",
        within=_names_differ,
    ),
    rule(
        "model_load.corrupt_checkpoint",
        "model_load",
        ROOT,
        ["SafetensorError", "PytorchStreamReader failed", "UnpicklingError", "invalid load key", "HeaderTooLarge",
         "deserializing header", "failed finding central directory"],
        r"SafetensorError|PytorchStreamReader failed reading|UnpicklingError|invalid load key|HeaderTooLarge|"
        r"Error while deserializing header|failed finding central directory",
        ["fix_path", "pin_versions"],
        0.85,
        "the checkpoint file is unreadable (truncated, corrupt, or not a checkpoint)",
        reading_data=("data_corrupt", ["fix_data_file"],
                      "a data file the dataset reads is unreadable (truncated, corrupt, or not the expected format)"),
        within=_what_the_pickle_was,
    ),
    rule(
        "model_load.vocab_mismatch",
        "model_load",
        ROOT,
        ["index out of range in self"],
        # torch.nn.functional.embedding's own message: a token id at or beyond the embedding table's size
        r"IndexError: index out of range in self",
        ["fix_code", "fix_config"],
        0.75,
        "a token id is beyond the model's embedding table: the tokenizer (with added tokens) and the model's "
        "vocabulary differ; resize the embeddings to len(tokenizer) or load the matching tokenizer",
        within=_table_of_other_ids,
    ),
]
