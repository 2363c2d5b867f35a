"""Data problems: wrong schema, unreadable files, preprocessing failures."""

from __future__ import annotations

import re

from triage.rules import HINT, ROOT, rule
from triage.rules.exceptions import library_file, loads_a_model

_FIELDS = (
    r"conversations?|messages|text|instruction|input|output|prompt|chosen|rejected|response|completion|"
    r"question|answer|answers|labels?|image|images|content|role|from|value|query|system|history|"
    r"input_ids|attention_mask|context|target|source|sentence|dialog|dialogue|turns|human|gpt|audio|"
    r"sentence1|sentence2|caption|tools|id"
)


def _exception_from_class(match: re.Match) -> dict:
    found = re.search(r"<class '([\w.]+)'>:?\s*(.*)", match.string)
    if not found:
        return {}
    return {"exception": found.group(1).rsplit(".", 1)[-1], "message": found.group(2).strip() or match.string}


_MODEL_FILE_FRAMES = re.compile(r"from_pretrained|tokenization_utils|configuration_utils|modeling_utils|"
                                r"_from_pretrained|load_adapter|peft_model|generation[/\\]configuration")


def _model_files(text: str, frames: list[dict]):
    """A JSON file that a model, tokenizer or adapter loader reads (tokenizer.json, config.json): a damaged
    model folder, not training data."""
    if not any(_MODEL_FILE_FRAMES.search(str(frame.get("function", "")) + " " + str(frame.get("file", "")))
               for frame in frames[-8:]):
        return None
    return ("model_load", ("fix_path",),
            "a JSON file of the model folder (tokenizer.json, config.json, ...) is damaged or cut short: copy the "
            "folder again, or point the path at a complete one")


def _ragged_rows(text: str, frames: list[dict]):
    """torch.tensor() over rows of unequal length, called by the script itself with no tokenizer or collator
    in the traceback: a row of the data file has another number of values than the others. A column of words
    where the batch wants numbers ("too many dimensions 'str'": labels given as text) is the data's format."""
    if "too many dimensions 'str'" in text:
        return ("data_schema", ("convert_data_format", "fix_data_file"),
                "a column the batch turns into a tensor holds text (labels as words, not ids)")
    if "expected sequence of length" not in text or not frames or library_file(str(frames[-1].get("file", ""))):
        return None
    if any(re.search(r"tokeniz|collat|pad", str(frame.get("function", "")) + str(frame.get("file", "")), re.I)
           for frame in frames):
        return None
    return ("data_schema", ("fix_data_file",),
            "a row of the data has another number of values than the others, so the script cannot stack the rows "
            "into one tensor")


def _mapped_weights(text: str, frames: list[dict]):
    """A memory map cut short while loading a model's weights (safetensors maps its file): the checkpoint's."""
    if loads_a_model(frames) or any("safetensors" in str(frame.get("file", "")) for frame in frames):
        return ("model_load", ("fix_path",), "a weights file is shorter than its header says: a cut download or copy")
    return None


def _stacked_in_a_forward(text: str, frames: list[dict]):
    """The stack is the script's own model's forward (its tensors, sized by its layers), not the collate of a
    batch's samples: tensors the model built at unequal sizes."""
    own = [frame for frame in frames if not library_file(str(frame.get("file", "")))]
    if not own or own[-1] is not frames[-1] or str(own[-1].get("function", "")) != "forward":
        return None
    return ("code_bug", ("fix_code", "fix_config"),
            "the model's own forward stacks tensors of unequal sizes (two of its layers or embeddings are built "
            "at different widths)")


CACHE_RACE_MEANING = (
    "data_pipeline", ("fix_path", "fix_code"),
    "two processes built the same datasets cache at once (a cache shared between nodes, or ranks not waiting for "
    "the main process): give each node its own cache (HF_DATASETS_CACHE on local disk) or build it once before "
    "the others start (main_process_first)")
# a file gone from the datasets library's ".incomplete" build folder (data.cache_built_twice)
_CACHE_RACE = re.compile(r"(?:No such file or directory|FileNotFoundError|does not exist)[^\n]{0,300}\.incomplete[/\\']")


_FIELD_NOT_FOUND = re.compile(r"No match for FieldRef\.Name\(")


def _offset_overflow(text: str):
    """Arrow's 32-bit offsets overflowed: one column of one chunk passed 2 GiB (images or long documents
    kept as one list); nothing in a file is unreadable, the chunking settings are what to change. A build
    that lost a file from its ".incomplete" folder is two builds of one cache (data.cache_built_twice)."""
    if _CACHE_RACE.search(text):
        return CACHE_RACE_MEANING
    if _FIELD_NOT_FOUND.search(text):
        # Arrow projecting a column the file does not have ("No match for FieldRef.Name(tenure_days)"): the
        # file's columns, not unreadable bytes
        return ("data_schema", ("convert_data_format", "fix_data_file"),
                "a data file lacks a column the job reads (renamed or dropped in a re-export)")
    if "offset overflow" not in text:
        return None
    return ("data_pipeline", ("fix_config",),
            "a column of one Arrow chunk grew past 2 GiB (offset overflow): write smaller batches "
            "(writer_batch_size / preprocessing batch size) or keep large fields (images) out of the table")


RULES = [
    rule(
        "data.missing_field",
        "data_schema",
        ROOT,
        ["KeyError"],
        rf"KeyError: ['\"]({_FIELDS})['\"]",
        ["convert_data_format", "fix_data_file"],
        0.8,
        "a training sample lacks the field {missing_key!r} that the script reads",
        facts=lambda m: {"missing_key": m.group(1)},
    ),
    rule(
        "data.missing_column",
        "data_schema",
        ROOT,
        ["olumn"],
        r"(?:Column|column)s? (?:to remove )?\[?'?([\w\-]+)'?\]? (?:not in the dataset|not found|does not exist)|"
        r"[Cc]annot find (?:the )?column|does not have (?:a |the )?column|missing (?:the )?(?:required )?column|"
        r"expected the dataset to have the columns? \[",
        ["convert_data_format"],
        0.8,
        "the dataset does not have the columns the script expects",
        facts=lambda m: {"missing_key": m.group(1)} if m.group(1) else {},
    ),
    rule(
        "data.role_tags",
        "data_schema",
        ROOT,
        ["role tag"],
        r"Invalid role tag",
        ["convert_data_format", "fix_data_file"],
        0.85,
        "the conversation turns in the data do not follow the roles the loader expects",
    ),
    rule(
        "data.template_roles",
        "data_pipeline",
        ROOT,
        ["roles must alternate", "alternate user/assistant"],
        # a chat template's own check (raise_exception in the Jinja template): a preprocessing failure
        r"[Rr]oles must alternate|alternate user/assistant",
        ["fix_data_file", "convert_data_format"],
        0.85,
        "the model's chat template refuses a conversation whose turns do not alternate user/assistant (two "
        "turns of one role in a row, or a system turn the template does not allow)",
    ),
    rule(
        "data.format_mismatch",
        "data_schema",
        ROOT,
        ["dataset format", "data format", "Unknown dataset", "formatting"],
        r"(?:[Uu]nsupported|[Ii]nvalid|[Uu]nknown|[Uu]nexpected) (?:dataset|data) format|"
        r"does not match the (?:expected )?(?:dataset|data) format",
        ["convert_data_format"],
        0.7,
        "the data is not in the format the loader expects",
    ),
    rule(
        # a fine-tuning framework refusing a dataset of one kind (preference pairs, pre-training text) for a stage
        # that takes another (SFT): the stage chosen, or the dataset's declared kind
        "data.wrong_stage",
        "data_schema",
        ROOT,
        ["not applicable in the current", "not supported in the current"],
        r"dataset (?:is|are) not (?:applicable|supported) (?:in|for) the current (?:training )?stage",
        ["fix_config", "convert_data_format"],
        0.8,
        "the dataset is of a kind (preference pairs, plain text) the chosen training stage does not take: "
        "choose the stage that trains on it, or give this stage a dataset of its kind",
    ),
    rule(
        # a streaming dataset (webdataset) refusing to hand every rank the same shard list: the pipeline must
        # split its shards by node and worker in a multi-process job
        "data.shards_not_split",
        "data_pipeline",
        ROOT,
        ["reconfigured for multinode", "reconfigured for multi-node", "nodesplitter"],
        r"(?:input )?pipeline needs to be reconfigured for multi-?node training|nodesplitter",
        ["fix_code", "pin_versions"],
        0.75,
        "the streaming dataset refuses to give every rank the same shards: build its pipeline with a node "
        "splitter (split_by_node, then split_by_worker) or with resampled shards",
    ),
    rule(
        # TRL's DPO tokenizer finding the prompt tokens of chosen and rejected differ by more than the merge at
        # their end: the pairs repeat the (templated) prompt inside chosen/rejected, where TRL expects the
        # responses alone beside a prompt column
        "data.preference_prompt_differs",
        "data_pipeline",
        ROOT,
        ["might only differ on the last token"],
        r"[Cc]hosen and rejected prompt_input_ids might only differ on the last token",
        ["convert_data_format", "pin_versions", "fix_data_file"],
        0.8,
        "the preference pairs repeat the prompt inside chosen/rejected with differences: keep the prompt in its "
        "own column and only the responses in chosen/rejected (or a TRL release that tokenizes them apart)",
    ),
    rule(
        "data.json_decode",
        "data_corrupt",
        ROOT,
        [
            "JSONDecodeError",
            "Expecting",
            "Unterminated string",
            "Extra data: line",
            "Invalid control character",
        ],
        r"JSONDecodeError|Expecting (?:',' delimiter|value|property name|':' delimiter): line \d+|"
        r"Unterminated string starting at|Extra data: line \d+|Invalid control character at",
        ["fix_data_file"],
        0.85,
        "a data file is not valid JSON",
        within=_model_files,
    ),
    rule(
        "data.arrow_invalid",
        "data_corrupt",
        ROOT,
        [
            "ArrowInvalid",
            "JSON parse error",
            "Failed to read file",
            "DatasetGenerationError",
            "ArrowTypeError",
        ],
        r"ArrowInvalid|ArrowTypeError|JSON parse error|Failed to read file|DatasetGenerationError(?!Cast)",
        ["fix_data_file"],
        0.92,
        "the datasets library could not parse a data file",
        facts=_exception_from_class,
        within=lambda text, frames: _offset_overflow(text),
    ),
    rule(
        "data.map_ragged",
        "data_pipeline",
        ROOT,
        ["expected length"],
        r"Column \d+ named \w+ expected length \d+ but got length \d+",
        ["fix_data_file", "convert_data_format"],
        0.93,
        "the preprocessing returned samples of unequal length that cannot form one column",
    ),
    rule(
        "data.collate_ragged",
        "data_pipeline",
        ROOT,
        ["stack expects each tensor", "each element in list of batch should be of equal size"],
        r"stack expects each tensor to be equal size|each element in list of batch should be of equal size",
        # ragged samples reach the default collate because nothing pads them: the collator is the fix;
        # the data itself only when a few rows are malformed
        ["fix_code", "fix_data_file", "convert_data_format"],
        0.93,
        "samples of unequal size reached the default collate, which cannot stack them into one batch",
        within=_stacked_in_a_forward,
    ),
    rule(
        "data.cast_columns",
        "data_schema",
        ROOT,
        ["DatasetGenerationCastError", "must have the same columns", "CastError", "Couldn't cast"],
        r"DatasetGenerationCastError|All the data files must have the same columns|CastError|Couldn't cast",
        ["convert_data_format", "fix_data_file"],
        0.93,
        "the data files do not share one set of columns",
    ),
    rule(
        "data.unicode",
        "data_corrupt",
        ROOT,
        ["UnicodeDecodeError", "codec can't decode"],
        r"UnicodeDecodeError|codec can't decode byte",
        ["fix_data_file"],
        0.8,
        "a data file is not valid text",
    ),
    rule(
        "data.pandas_parse",
        "data_corrupt",
        ROOT,
        ["Error tokenizing data", "ParserError", "EOF inside string"],
        r"Error tokenizing data|ParserError|EOF inside string",
        ["fix_data_file"],
        0.75,
        "a CSV data file cannot be parsed",
    ),
    rule(
        "data.truncated_array",
        "data_corrupt",
        ROOT,
        ["Failed to read all data", "No data left in file", "not fully written", "mmap length is greater than",
         "cannot mmap an empty file"],
        # (a memory map of a file shorter than its index or header says: a tokenized .bin cut short, an empty file)
        r"Failed to read all data for array|No data left in file|file seems not fully written|"
        r"mmap length is greater than file size|cannot mmap an empty file",
        ["fix_data_file"],
        0.8,
        "a data file (a .npy/.npz shard, a memory-mapped token file) is shorter than its header or index says: a cut "
        "or partial copy",
        within=_mapped_weights,
    ),
    rule(
        "data.chat_template",
        "data_pipeline",
        ROOT,
        ["chat_template", "chat template"],
        r"chat_template is not set|[Cc]annot use chat template|no chat template|chat template (?:is not|was not) "
        r"(?:set|defined)|chat_template is (?:null|None|empty)\b",
        ["fix_config"],
        0.85,
        "the tokenizer has no chat template, so the conversations cannot be formatted",
    ),
    rule(
        "data.template_without_generation_markers",
        "data_pipeline",
        ROOT,
        ["{% generation %}", "generation %}", "training-compatible"],
        # assistant-only loss asks the chat template to mark the assistant's turns ({% generation %} ...
        # {% endgeneration %}) for the loss mask; this template has no such marks
        r"\{%-?\s*generation\s*-?%\}|not training-compatible",
        ["fix_config", "fix_code"],
        0.85,
        "assistant-only loss needs a chat template that marks the assistant turns ({% generation %}); this one "
        "does not: use a template with the marks, or turn assistant-only loss off",
    ),
    rule(
        "data.all_labels_masked",
        "data_pipeline",
        ROOT,
        ["-100", "response key", "response template", "response_template"],
        # completion-only training masks everything before the response marker; when the marker (written for
        # another model's chat format) never occurs, every label is -100 and nothing would be learned
        r"[Aa]ll (?:the )?labels .{0,40}(?:are|is|were) -100|labels? (?:are|is) all -100|"
        r"[Cc]ould not find response (?:key|template)|response_?template .{0,60}not (?:found|in)",
        ["fix_config", "fix_data_file"],
        0.8,
        "every label is masked (-100): the response marker the masking looks for never occurs in the formatted "
        "text (a marker written for another model's chat format)",
    ),
    rule(
        "data.map_worker_died",
        "data_pipeline",
        ROOT,
        ["abruptly died"],
        r"One of the subprocesses has abruptly died",
        ["reduce_dataloader_workers"],
        0.85,
        "a worker process of a datasets.map preprocessing step died (usually memory with many num_proc)",
    ),
    rule(
        "data.image_tokens_mismatch",
        "data_pipeline",
        ROOT,
        ["features and image tokens", "features and video tokens", "image tokens"],
        # vision-language models: the text's image placeholder tokens and the vision tower's features disagree,
        # most often because truncation (max_length) cut placeholders off a long sample
        r"(?:[Ii]mage|[Vv]ideo) features and (?:image|video) tokens do not match|"
        r"[Nn]umber of (?:image|video) tokens .{0,40}(?:does not|doesn't) match",
        ["fix_config", "fix_data_file"],
        0.8,
        "the sample's image placeholder tokens and the image features disagree: truncation (max_length / "
        "cutoff_len) cut the placeholders of a long sample, or a sample's placeholders do not match its images",
    ),
    rule(
        "data.none_in_batch",
        "data_pipeline",
        ROOT,
        ["Could not infer dtype of NoneType"],
        # torch.tensor() over a batch holding None: most often a tokenizer without a pad token id, padding
        # in the script's own collate function
        r"Could not infer dtype of NoneType",
        ["fix_code", "fix_config"],
        0.75,
        "a batch holds None where a number belongs: most often the tokenizer has no pad token id and the "
        "collate pads with it (set tokenizer.pad_token), or a row lacks a field",
    ),
    rule(
        "data.padding",
        "data_pipeline",
        ROOT,
        ["activate truncation", "expected sequence of length"],
        r"activate truncation and/or padding|expected sequence of length \d+",
        # the tokenizer call's or collator's padding setting, or the team's own collator that stacks a field
        # (labels) it never pads
        ["fix_config", "fix_code"],
        0.75,
        "the tokenizer/collator cannot batch the samples (padding or truncation)",
        within=_ragged_rows,
    ),
    rule(
        "data.input_channels",
        "data_schema",
        ROOT,
        ["channels, but got"],
        # the batch's feature or channel count is not what the model's first layer was built for (80 mel bins
        # for a 40-bin model, grayscale images for an RGB one): the data's layout, or the model's setting
        r"expected input\[[^\]]{1,60}\] to have \d+ channels, but got \d+ channels",
        ["fix_data_file", "convert_data_format", "fix_config"],
        0.65,
        "the samples do not have the channel or feature count the model's first layer expects: re-extract or "
        "convert the data to that layout, or build the model for the data's",
    ),
    rule(
        "data.text_not_string",
        "data_schema",
        ROOT,
        ["text input must be of type"],
        # the tokenizer was handed a field that is not text (a list of chat messages, a null, a number)
        r"text input must be of type",
        ["convert_data_format", "fix_data_file", "fix_code"],
        0.7,
        "a text field of the data is not a string (a list of chat messages, a null or a number went to the "
        "tokenizer): convert the field, or have the dataset code turn it into text",
    ),
    rule(
        "data.label_out_of_range",
        "data_schema",
        ROOT,
        ["is out of bounds"],
        # cross_entropy / nll_loss on CPU ("Target 4 is out of bounds."): a class label outside the model's
        # classes, 1-based labels or a num_labels that does not match the data (on a GPU: a device assert)
        r"Target -?\d+ is out of bounds",
        ["fix_data_file", "fix_config", "convert_data_format"],
        0.8,
        "a class label is outside the model's label range (1-based labels, or num_labels smaller than the data's)",
    ),
    rule(
        "data.no_pad_token",
        "data_pipeline",
        ROOT,
        ["padding token"],
        r"does not have a padding token",
        ["fix_code", "fix_config"],
        0.8,
        "the tokenizer has no pad token: set one in the script (tokenizer.pad_token = tokenizer.eos_token) "
        "or add a pad token and resize the embeddings",
    ),
    rule(
        "data.image_decoder_error",
        "data_corrupt",
        HINT,
        ["libpng error", "Corrupt JPEG data", "Premature end of JPEG", "Not a JPEG file"],
        # the image library's own complaint about a file it could not decode (OpenCV returns None for it; the
        # script fails a line later on the None: rules/rereads.py reads that failure as the file's)
        r"libpng error: (?:IDAT|Read Error|bad|CRC|Not a PNG)|Premature end of JPEG file|Not a JPEG file|"
        r"Corrupt JPEG data: premature end",
        ["fix_data_file"],
        0.05,
        "the image decoder reported a corrupt file",
    ),
    rule(
        "data.float64_values",
        "data_schema",
        ROOT,
        ["Found dtype Double", "found Double", "got Double and Float", "double != float"],
        # numbers read from numpy/pandas arrive as float64 and meet float32 weights or losses
        r"Found dtype Double but expected Float|expected scalar type Float but found Double|"
        r"must have the same dtype, but got Double and Float|to have the same dtype, but got: double != float",
        ["convert_data_format", "fix_code"],
        0.6,
        "the batch holds float64 values (numpy/pandas data) where the model works in float32: store or cast the "
        "features and targets as float32",
    ),
    rule(
        "data.values_out_of_range",
        "data_schema",
        ROOT,
        ["should be within", "must be within", "must be in the range", "should be in the range"],
        # a library's own explanation of an index error (LayoutLM: "The `bbox` coordinate values should be within
        # 0-1000 range"): the data's values are in another unit or scale (pixels, not normalised coordinates)
        r"values? (?:should|must) be (?:within|in) (?:the )?(?:range )?\[?\d+ ?(?:-|to|,) ?\d+\]?",
        ["convert_data_format", "fix_data_file", "fix_code"],
        0.85,
        "the data's values lie outside the range the model takes (coordinates in pixels where the model takes "
        "0-1000, ids past a table): convert them to the model's scale where the data is prepared",
    ),
    rule(
        "data.float_class_targets",
        "data_schema",
        ROOT,
        ["expected target dtype to be Long", "for argument #2 'target'", "not implemented for"],
        # a classification loss (cross-entropy, NLL) handed float class labels: the label column was stored as
        # 0.0/1.0 (a score export, a float cast in the converter) where the loss takes class indices
        r"expected target dtype to be Long(?: or Byte)?, but got (?:Float|Double|Half|BFloat16)|"
        r"expected scalar type Long but got scalar type (?:Float|Double) for argument #2 'target'|"
        # (on CUDA the same loss names its kernel: "nll_loss_forward_reduce_cuda_kernel_2d_index" not implemented)
        r"\"nll_loss\w*\" not implemented for '(?:Float|Double|Half|BFloat16)'",
        ["convert_data_format", "fix_code"],
        0.65,
        "the classification loss got float labels where it takes class indices: store the label column as "
        "integers (or cast it: labels.long()), or use a regression loss if the labels are scores",
    ),
    rule(
        "data.integer_targets",
        "data_schema",
        ROOT,
        ["Found dtype Long but expected Float", "Found dtype Int but expected Float"],
        # a regression or similarity loss (MSE, cosine) handed integer targets: the score column was stored as
        # whole numbers (0/1, 1-5 ratings) where the loss takes floats
        r"Found dtype (?:Long|Int) but expected (?:Float|Half|BFloat16)",
        ["convert_data_format", "fix_code"],
        0.6,
        "the loss got integer targets where it takes floats: the label/score column holds whole numbers; store it "
        "as floats (0.0-1.0) or cast it in the collator",
    ),
    rule(
        "data.empty_batch",
        "data_pipeline",
        ROOT,
        ["tensor of 0 elements"],
        # a model's own reshape given a batch of no rows: more processes than samples, or an uneven split whose
        # last rank got nothing (accelerate's even_batches=False, split_between_processes on a short list)
        r"cannot reshape tensor of 0 elements into shape \[0,",
        ["fix_config", "fix_code"],
        0.7,
        "a batch with no rows reached the model: the data was split over more processes than it has rows (or "
        "unevenly, with the last rank left empty); pad the split (even_batches) or skip empty batches",
    ),
    rule(
        "data.no_mask_token",
        "data_pipeline",
        ROOT,
        ["mask token"],
        # the masked-LM collator on a tokenizer built for causal LM (no [MASK]): the objective or the
        # tokenizer is the wrong one for this model
        r"does not have a mask token which is necessary for masked language modeling",
        ["fix_config", "fix_code"],
        0.8,
        "the masked-language-modeling collator needs a mask token this tokenizer lacks: train causal LM "
        "(mlm=False) or use a tokenizer with a mask token",
    ),
    rule(
        "data.chat_template_frames",
        "data_pipeline",
        HINT,
        ["apply_chat_template"],
        r"apply_chat_template",
        ["fix_config"],
        0.3,
        "the failure is inside the tokenizer's chat template",
    ),
    rule(
        "data.format_conversion_frames",
        "data_schema",
        HINT,
        ["Converting format of dataset", "align_dataset", "convert_"],
        r"Converting format of dataset|in (?:align_dataset|convert_\w*(?:format|alpaca|sharegpt)\w*)\b",
        ["convert_data_format"],
        0.25,
        "the failure happened while converting the dataset's format",
    ),
    rule(
        "data.parallel_map",
        "data_pipeline",
        HINT,
        ["num_proc="],
        r"\(num_proc=(\d{2,})\)",
        ["reduce_dataloader_workers"],
        0.2,
        "a multi-process datasets.map step was running",
        facts=lambda m: {"num_proc": int(m.group(1))},
    ),
    rule(
        "data.no_loss",
        "data_schema",
        ROOT,
        ["did not return a loss"],
        r"The model did not return a loss from the inputs",
        ["convert_data_format", "fix_config"],
        0.75,
        "the batches carry no labels, so the model returns no loss",
    ),
    rule(
        "data.empty",
        "data_pipeline",
        ROOT,
        ["num_samples=0", "dataset is empty", "Dataset is empty", "empty dataset", " left", " remain"],
        r"num_samples=0|[Dd]ataset is empty|empty dataset|"
        r"\b[Nn]o (?:training |train |valid |usable )?(?:rows|samples|examples|records|pairs|sequences) "
        r"(?:left|remain(?:ing|ed)?)\b",
        ["fix_path", "fix_data_file", "convert_data_format"],
        0.75,
        "the dataset is empty after loading or filtering",
    ),
    rule(
        "data.filtered_to_nothing",
        "data_pipeline",
        HINT,
        ["kept 0", " 0 after", "filter", "Filter", "discard", "Discard", "dropp", "Dropp", "skipp", "Skipp",
         "kept=0", "kept: 0"],
        # (a script's key=value counters: "kept=0 dropped_long=64")
        r"\b[Kk]ept[=:] ?0\b[^\n]{0,40}\b(?:dropped|filtered|removed|skipped)\w{0,12}[=:] ?[1-9]|"
        r"\b[Kk]ept 0 ?(?:/|of|out of) ?\d+|"
        # a script's own count before and after its limits: "48 rows, 0 after max_words=16"
        r"\b[1-9]\d* (?:rows|samples|examples|records|pairs|sequences),? 0 (?:left |kept |remain\w* )?after\b|"
        r"\b0 (?:rows |samples |examples |pairs |records )?(?:left |remain\w* )?after "
        r"(?:the )?(?:length |token |size |quality )?filter|(?:[Ff]iltered (?:out|away) (?:all|every)|"
        r"(?:[Aa]ll|[Ee]very) (?:rows|samples|examples|pairs|records|sequences) (?:were |was )?(?:filtered|dropped|removed))|"
        # rows dropped for their length: with an empty dataset after it, the length limit emptied it
        r"(?:[Dd]iscard|[Dd]ropp|[Ff]ilter|[Ss]kipp|[Rr]emov)\w*\W{1,3}[^\n]{0,80}(?:exceed|longer than|too long|over)"
        r"[^\n]{0,30}(?:max_length|max_seq|cutoff_len|model_max_length|max_len|length)|"
        # the same said the other way round: "N samples longer than max_length=512 ...; they were dropped"
        r"(?:longer than|exceed\w*) [^\n]{0,20}(?:max_length|max_seq\w*|cutoff_len|model_max_length|max_len)"
        r"[^\n]{0,80}\b(?:dropped|discarded|removed|skipped|filtered|deleted)\b|"
        # a framework's count after its filter pass: "filter dataset len: 0", "filtered dataset size = 0"
        r"\b[Ff]ilter\w* (?:dataset |data )?(?:len|length|size)\s*[:=]\s*0\b|"
        # a trainer's own pass that drops rows the length limit cut to nothing (TRL: "Dropping fully truncated
        # examples")
        r"(?:[Dd]ropping|[Rr]emoving|[Ff]iltering(?: out)?) (?:fully |overly )?(?:truncated|too[ -]long|overlong) "
        r"(?:examples|samples|rows|sequences)",
        ["fix_config", "fix_data_file"],
        0.2,
        "a length or quality filter left no rows: its limits (max length, thresholds) are too strict for the data",
    ),
    rule(
        "data.rank_read_nothing",
        "data_corrupt",
        HINT,
        [" 0 rows", " 0 samples", " 0 examples", " 0 records", " 0 lines", " 0 documents", " 0 sequences",
         " 0 conversations", " 0 pairs", " 0 train", " 0 training", " 0 usable"],
        # a process's own report that its file or shard held nothing ("rank1: loaded 0 rows from shard 1");
        # on a rank its peers waited for, the empty file is why it never reached their collective
        r"(?:\b(?:[Ll]oaded|[Rr]ead|[Gg]ot|[Ff]ound|has|with)\s+|[:=]\s*)0\s+(?:train(?:ing)?\s+|usable\s+)?"
        r"(?:rows|samples|examples|records|lines|documents|sequences|conversations|pairs)\b"
        r"(?![^\n]{0,20}(?:skipped|dropped|filtered|invalid|missing|failed))",
        ["fix_data_file", "fix_code"],
        0.2,
        "the rank read no rows from its data (an empty file or shard)",
    ),
    rule(
        "data.untruncated_sequence",
        "data_pipeline",
        HINT,
        ["longer than the specified maximum sequence length"],
        # the tokenizer's once-only warning that a row was encoded past the model's limit without truncation:
        # where memory then runs out, that row's length (not the batch) is what filled it
        r"Token indices sequence length is longer than the specified maximum sequence length for this model "
        r"\((\d+) > (\d+)\)",
        ["reduce_seq_len", "fix_data_file"],
        0.05,
        "a row was tokenized far past the model's maximum length (no truncation)",
        facts=lambda match: {"sequence_tokens": int(match.group(1)), "model_max_tokens": int(match.group(2))},
    ),
    rule(
        "data.no_valid_samples",
        "data_schema",
        ROOT,
        ["valid sample", "no valid", "No valid", "valid examples"],
        r"(?:[Cc]annot|[Cc]ould not|[Cc]ouldn't) find (?:any )?valid (?:samples|examples)|[Nn]o valid (?:samples|examples|data)",
        ["convert_data_format", "fix_data_file"],
        0.8,
        "no row of the dataset survived conversion: the rows are not in the format registered for the dataset",
    ),
    rule(
        "data.cache_built_twice",
        "data_pipeline",
        ROOT,
        [".incomplete/", ".incomplete\\", ".incomplete'"],
        # a file under the datasets library's ".incomplete" build folder vanished: another process building the
        # same cache (another node on a shared file system, ranks not waiting for the main process) finished and
        # renamed the folder under this one
        _CACHE_RACE.pattern,
        CACHE_RACE_MEANING[1],
        0.85,
        CACHE_RACE_MEANING[2],
    ),
    rule(
        "data.file_not_found",
        "data_pipeline",
        ROOT,
        ["not found", "does not exist", "No such file"],
        r"(?:[Dd]ata(?:set)?|[Ff]ile|[Pp]ath)\b[^\n]{0,120}\.(?:jsonl?|csv|parquet|arrow|txt|tsv)['\"]?\.? "
        r"(?:not found|does not exist)|[Dd]ataset [\w\-/.'\"]{1,200} (?:not found|does not exist|doesn't exist)",
        ["fix_path", "fix_data_file"],
        0.8,
        "the data file or dataset the run names does not exist at that path",
    ),
]


# the value a number conversion refused, as Python and pandas quote it
_REFUSED_VALUE = re.compile(r"(?:could not convert string to float|invalid literal for int\(\) with base \d+): "
                            r"'([^']{1,80})'")


def header_among_rows(message: str | None, sample) -> tuple[str, tuple[str, ...], str] | None:
    """A number conversion that refused a column's own name (`could not convert string to float: 'I1'`), where the
    data sample's records have that column: the file repeats its header line among its rows (parts concatenated
    with their headers). (category, fixes, summary) or None."""
    found = _REFUSED_VALUE.search(message or "")
    rows = sample if isinstance(sample, list) else [sample]
    columns = {str(key) for row in rows[:50] if isinstance(row, dict) for key in row}
    if found is None or found.group(1) not in columns:
        return None
    return ("data_corrupt", ("fix_data_file", "convert_data_format"),
            f"the file repeats its header line among its rows (parts concatenated with their headers): the column "
            f"name '{found.group(1)}' is read as a value; drop the repeated header lines")
