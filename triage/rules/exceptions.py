"""The fallback classifier: a category for an exception that no specific rule recognised.

It reads, in this order, what any Python exception carries whatever form the log printed it in:
1. the exception class (`OutOfMemoryError`, `JSONDecodeError`, `NameError`, ...),
2. keywords of its message (`must be divisible`, `unexpected keyword argument`, `num_samples=0`),
3. where it was raised: the library module of the class or of the raising frame (`deepspeed/runtime/config`,
   `transformers/training_args`, `datasets/`, `torch/distributed/elastic/rendezvous`) versus the user's
   own code, and data-handling frames (`__getitem__`, `preprocess`, `collate`).
Each answer carries a lower weight than a specific rule and says what it was based on (`basis`), so the
page can explain "classified by the message keywords ...". Nothing here is fitted to one case's wording:
every entry is a phrase libraries use across many messages.
"""

from __future__ import annotations

import builtins
import math
import re

from triage.rules.packages import installed_software, missing_module

_DATA_FRAMES = re.compile(
    r"__getitem__|getitem|preprocess|collat|tokeni[sz]e(?!r)|_map_single|formatting|format_|"
    r"convert|dataset|data_?loader|load_data|build_data|fetch|__iter__|apply_chat|template|align|"
    r"[/\\](?:data|datasets?)[/\\]|(?:read|load)_?(?:rows|records|samples|examples|jsonl?|lines|shards?|tokens)|(?<![A-Za-z])encode(?:_[a-z]+)?\b|"
    # (a reader of the team's own record files, named for what they hold: read_episodes, load_pairs, parse_clips)
    r"\b(?:read|load|parse)_(?!conf|config|settings|args|ckpt|checkpoint|model|weights|state|tokenizer|vocab|"
    r"pretrained|adapter|lora|env|yaml|json\b)[a-z]+s\b",
    re.IGNORECASE,
)
# an evaluation's metric code: what fails there is the metric's own code, not the data it is handed
_METRIC_FRAMES = re.compile(r"compute_metrics|metric_fn|_metrics?$|^metrics?_", re.IGNORECASE)
_WORKER_SETUP = re.compile(r"worker_init|seed_worker|_init_fn$|set_seed|seed_everything|seed_all", re.IGNORECASE)
# a row's field holding null or a number where the data code expects text or a list
_SCALAR_FIELD = re.compile(
    r"^'(?:NoneType|int|float|bool)' object (?:is not (?:iterable|subscriptable)|has no attribute "
    r"'(?:strip|split|lower|upper|endswith|startswith|replace|encode|format|join|keys|items|get|append)')|"
    # a nested record or a list where the code expects a string
    r"^'(?:dict|list)' object has no attribute '(?:strip|split|lower|upper|endswith|startswith|replace|encode|"
    r"format|join)'|"
    r"expected (?:str|string)\b.{0,30}\b(?:got|not) '?(?:NoneType|int|float)|"
    r"can only concatenate str \(not \"(?:NoneType|int|float)\"\)|"
    # a field stored as one string where the code pads or extends a list of ids ("[12, 7]" written as text)
    r"can only concatenate (?:str \(not \"list\"\) to str|list \(not \"str\"\) to list)"
)
_ENV_KEY = re.compile(r"^'[A-Z][A-Z0-9_]{1,60}'$")
# the variables only a distributed launcher sets (torchrun, srun with them exported)
LAUNCHER_VARIABLES = ("LOCAL_RANK", "RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
_LAUNCHER_ENV = re.compile(rf"^'(?:{'|'.join(LAUNCHER_VARIABLES)})'$")
_OS_MODULE = re.compile(r"[/\\]os\.py$|^<frozen os>$")
# a string where a number belongs ("must be real number, not str", torch.tensor(["3.5"]))
_TEXT_FOR_NUMBER = re.compile(r"must be real number, not str|too many dimensions 'str'|"
                              r"could not convert string to float: ")
# a record id: a short prefix and a number ('p00827', 'doc-1942', 'q_77301'), no dots (never a weight's name)
_RESHAPE = re.compile(r"cannot reshape array of size (\d{1,15}) into shape \(([\d,\s]{1,80})\)")
_DEVICE_STREAMS = re.compile(r"[/\\]torch[/\\]nn[/\\]parallel[/\\]_functions\.py _get_stream$")
_TABLE_LIBRARY = re.compile(r"[/\\](?:pandas|pyarrow|polars)[/\\]")
_RECORD_ID_KEY = re.compile(r"^'[A-Za-z]{1,8}[-_:#]?\d{3,12}'$")
# a key that is a value, not a field name: a word with capitals, accents or spaces ('Zürich', 'New York'), or a
# single character (a letter or digit missing from a character vocabulary)
_VALUE_KEY = re.compile(r"^'(?:[^']|(?=[^']*(?:[A-Z]|[^\x00-\x7f]| ))[^']{1,80})'$")
# the field names training datasets carry across SFT, preference and RL recipes: a KeyError naming one is
# a record without the field the recipe reads
_DATASET_KEY = re.compile(
    r"^'(?:conversations?|messages|prompt|chosen|rejected|completion|response|instruction|input|output|text|"
    r"query|question|answer|solution|ground_truth|reward_model|data_source|extra_info|system|history|"
    r"user|assistant|human|gpt|role|content|from|value|image|images|video|audio|label|labels|tools)'$",
    re.IGNORECASE,
)
# the failing source line reads a field of each record it loops over: "[r for r in ds.rows if len(r[f]) > 1]"
_ROW_LOOP = re.compile(
    r"\bfor\s+(\w+)\s+in\s+[\w.()\[\]]*?(?:rows|records|examples|samples|dataset|data|lines|items|shard|split)\b"
    r"[\w.()\[\]]*(?=.*\b\1\[)|\b(\w+)\[[^\]]+\].*\bfor\s+\2\s+in\s+[\w.()\[\]]*?"
    r"(?:rows|records|examples|samples|dataset|data|lines|items|shard|split)\b|"
    # a comprehension reading one named field of each item it loops over: [int(r["num_frames"]) for r in kept]
    r"\b(\w+)\[[\"'][\w\-]{1,60}[\"']\].*\bfor\s+\3\s+in\s+\w",
    re.IGNORECASE,
)
_RESUMING = re.compile(r"resum", re.I)
# what Python's own operations raise at the script's line (list.index, unpacking, max() of nothing): not a
# check it wrote (int('') of a setting is still the setting's)
_BUILTIN_VALUE_ERROR = re.compile(r"is not in list|substring not found|values to unpack|math domain error|"
                                  r"arg is an empty sequence|empty separator")
# a tensor method asked of a library's output object ("'BaseModelOutputWithPooling' object has no attribute 'norm'")
_OUTPUT_NOT_TENSOR = re.compile(
    r"^'\w*Output\w*' object has no attribute '(?:norm|size|shape|view|reshape|float|half|to|cpu|cuda|detach|mean|"
    r"sum|unsqueeze|squeeze|dim|numpy|item|softmax|log_softmax|argmax|matmul|t|T|dtype|device|clone|contiguous)'")
_LIBRARY_GETATTR = re.compile(r"^[A-Z]\w+ has no attribute '?\w+'?")
_ASSERTS_SETTINGS = re.compile(r"^\s*assert\b.*\b(?:self\.)?(?:args|config|cfg|training_args|hparams|opt|opts|"
                               r"train_config|model_args|data_args)\.\w+")
_BY_RANK = re.compile(r"\b\w*(?:rank|node|host|gpu|device|worker|by_\w+)\w*\[", re.IGNORECASE)
_NUMBER_FROM_TEXT = re.compile(r"^(?:invalid literal for int\(\) with base \d+|could not convert string to float): ")
_READS_NAMES = re.compile(r"\b(?:listdir|scandir|iterdir|glob|basename)\b|\.(?:stem|name)\b")
_EINVAL_NO_FILE = re.compile(r"\s*\[Errno 22\] Invalid argument\s*$")
# a line that reads or writes a file (EINVAL there is the file's: a truncated or sparse copy)
_FILE_CALL = re.compile(r"open|load|read|write|save|seek|mmap|path|file|dump", re.IGNORECASE)
_SHAPE_BUG = re.compile(r"shape '\[[^\]]*\]' is invalid for input of size \d+|"
                        r"mat1 and mat2 shapes cannot be multiplied|view size is not compatible with input tensor")
_SITE = re.compile(r"site-packages|dist-packages|/lib/python\d|<frozen|/usr/lib/|\\lib\\|\.pyx\b")  # .pyx: Cython (numpy, pandas)
_CODE_BUGS = {
    "NameError",
    "UnboundLocalError",
    "AttributeError",
    "ZeroDivisionError",
    "IndentationError",
    "SyntaxError",
    "TabError",
    "RecursionError",
    "NotImplementedError",
    "TypeError",
    "IndexError",
    "AssertionError",
    "StatisticsError",  # statistics.mean([]) in the team's own metric code
}
_DATA_CORRUPT = {
    "JSONDecodeError",
    "UnicodeDecodeError",
    "ArrowInvalid",
    "ParserError",
    "DatasetGenerationError",
    "ArrowTypeError",
    "EmptyDataError",
    "UnidentifiedImageError",  # PIL cannot decode the file: not an image, or a damaged one
    "DecompressionBombError",
    "BadZipFile",
    "BadGzipFile",
    "ReadError",  # tarfile: a damaged or truncated shard
    "LibsndfileError",  # soundfile cannot decode an audio file: another format under a .wav name, or cut short
    "InvalidDataError",  # PyAV (FFmpeg) cannot demux or decode a video or audio file
}
# torch re-raises an exception from a DataLoader worker or a DataParallel replica under the same class,
# with "Caught X in DataLoader worker process N." and the original traceback as its message: the words
# are about where it was caught, not what went wrong
REraised = re.compile(r"^Caught \w+ in (?:DataLoader worker process|replica) \d+")
_VERSION = {"ImportError", "ModuleNotFoundError"}
# config libraries' own errors (omegaconf/Hydra, pydantic-validated configs, Lightning's misconfiguration)
_CONFIG_CLASS = re.compile(
    r"^(?:Config\w*Error|Misconfiguration\w*|MissingMandatoryValue|InterpolationResolutionError|"
    r"InterpolationKeyError|ConfigCompositionException|ValidationError|InvalidConfig\w*|"
    # torch.compile given a backend name this install does not have (`--dynamo_backend tensorrt` on CPU)
    r"InvalidBackend)$"
)
# launchers' and supervisors' restatements of a child's failure (mp.spawn's ProcessRaisedException and
# ProcessExitedException carry the child's traceback or exit in their message): never the origin
WRAPPERS = frozenset({"ChildFailedError", "CalledProcessError", "KeyboardInterrupt", "SystemExit",
                      # Ray Train's driver: "The Ray Train run failed. Please inspect the previous error messages"
                      "TrainingFailedError",
                      "ProcessRaisedException", "ProcessExitedException"})
# ... and the process group's own error, which usually restates another rank's failure
_CASCADE = WRAPPERS | {"DistBackendError"}
# exceptions that gather every rank's own error (printed after them, "(RANK N)"): read like any other, but
# weighed under the errors they gather
_GATHERING = {"CheckpointException"}
_GATHERING_WEIGHT = 0.2
CASCADE_EXCEPTIONS = frozenset(_CASCADE)

WEIGHT = 0.3
_ON_BEHALF = {"__getattr__", "__getattribute__", "__getitem__", "_raise_attribute_error"}
_SOFT_KEYWORDS = {"data_schema", "data_corrupt", "data_pipeline", "config_invalid", "version_mismatch", "model_load"}

# (category, fix kinds, weight, message pattern): the first that matches the message wins.
_KEYWORDS: list[tuple[str, list[str], float, re.Pattern]] = [
    (c, f, w, re.compile(p, re.IGNORECASE))
    for c, f, w, p in [
        # a rename across file systems (a staging folder on tmpfs, the output on disk): the paths, not a full disk
        ("storage", ["fix_path", "fix_code"], 0.5, r"invalid cross-device link|\bEXDEV\b|\[Errno 18\]"),
        # stacking or joining an empty list of tensors: a shard, batch or filter that kept nothing
        ("data_pipeline", ["fix_data_file", "fix_config"], 0.45,
         r"expects a non-empty TensorList|expected a non-empty list of Tensors"),
        ("gpu_oom", ["reduce_batch_size", "enable_gradient_checkpointing", "shard_more"], 0.6,
         r"(?:cuda|gpu|hip|device|xpu|npu)\b.{0,40}out of memory|out of memory.{0,60}(?:cuda|gpu|tried to allocate)"),
        ("host_oom", ["reduce_batch_size", "reduce_dataloader_workers", "fix_config"], 0.5,
         r"cannot allocate memory|std::bad_alloc|out of (?:host|cpu) memory|\bENOMEM\b"),
        ("dataloader_worker", ["increase_shm", "reduce_dataloader_workers"], 0.5,
         r"dataloader worker|shared memory|/dev/shm|\bshm\b|bus error"),
        ("hardware", ["replace_hardware"], 0.55,
         r"\becc error|uncorrectable|\bxid\b|fallen off the bus|nvlink|hardware error|gpu is lost"),
        ("cuda_error", ["debug_cuda"], 0.5,
         r"device-side assert|illegal memory access|cublas_status|cudnn_status|cuda error|cuda driver|"
         r"no kernel image|misaligned address|launch failure|unspecified launch"),
        # numpy refusing to write a float result into an integer array in place (`a -= mean` on int16 readings):
        # the data was stored as integers where the pipeline works in floats
        ("data_schema", ["convert_data_format", "fix_data_file", "fix_code"], 0.5,
         r"cannot cast ufunc '\w+' output from dtype\('float\d*'\) to dtype\('u?int\d*'\)"),
        # numpy reading a binary file whose byte count is not a whole number of its dtype's items (np.memmap,
        # np.frombuffer, np.fromfile): a file cut short in a copy, or written with another item size
        ("data_corrupt", ["fix_data_file", "convert_data_format"], 0.5,
         r"not a multiple of the data-type size|buffer size must be a multiple of element size|"
         r"buffer is smaller than requested size"),
        # a media or archive reader that finds no header of its kind at the start of the file (zeroed, cut, or
        # another kind of file under the name): the file is damaged
        ("data_corrupt", ["fix_data_file"], 0.5,
         r"file does not start with RIFF id|not a WAVE file|Not a gzipped file|Not a JPEG file|"
         r"file signature not found|Format not recognised|Error opening .{0,80}: Format not recognised"),
        # an STFT window longer than the transform (win_length > n_fft) or a hop of 0: the audio settings
        ("config_invalid", ["fix_config"], 0.5, r"expected 0 < win_length <= n_fft|expected 0 < hop_length"),
        # torch's STFT that once defaulted to real output now requires return_complex: code written for an
        # older torch
        ("version_mismatch", ["fix_code", "pin_versions"], 0.5, r"requires the return_complex parameter be given"),
        # DeepSpeed comparing what the ranks are about to do (ZeRO-3's parameter fetches) and finding rank 0 on
        # other parameters than a peer: the ranks run different code (an evaluation or generation on the main
        # process only)
        ("code_bug", ["fix_code"], 0.5, r"disagreement between rank\d+ and rank\d+"),
        # an embedding built with a padding id past its own rows: the model config's pad/start token id does not
        # fit its vocab_size (a config copied from another checkpoint)
        ("config_invalid", ["fix_config"], 0.5, r"Padding_idx must be within num_embeddings"),
        # an .npz archive without the array the loader asks for: the file was exported with other array names
        ("data_schema", ["convert_data_format", "fix_data_file"], 0.5, r"is not a file in the archive"),
        # torch.topk asked for more items than the dimension has: k comes from a setting (top-k experts, top-k
        # metrics) larger than what it picks from
        ("config_invalid", ["fix_config"], 0.5, r"selected index k out of range"),
        # numpy's sliding window longer than the series it slides over: a file shorter than context + horizon
        ("data_pipeline", ["fix_data_file", "fix_code", "reduce_seq_len"], 0.5,
         r"window shape cannot be larger than input array shape"),
        # a model config's own size check against the batch ("The defined number of input channels (5) in the
        # config has to be the same as the number of channels in the batch input (4)"): the setting
        ("config_invalid", ["fix_config"], 0.5,
         r"in the config (?:has to|must) (?:be the same as|match)|defined in the config (?:does not|doesn't) match"),
        # an operator DTensor has no sharding rule for: the model runs an op on a sharded tensor that must run on
        # the local or full tensor (the model's code), or the layer must be left unsharded (the plan)
        ("code_bug", ["fix_code", "fix_config"], 0.5, r"does not have a sharding strategy registered"),
        # a feature that needs another backend in the process group ("A CPU backend must be enabled for async
        # save; try initializing process group with 'cpu:gloo,cuda:nccl'"): the job's setup, not the rendezvous
        ("config_invalid", ["fix_config", "fix_code"], 0.5,
         r"backend must be enabled|try initiali[sz]ing (?:the )?process group with"),
        # ranks that never all arrived at start-up: the job did not form (not a hung collective)
        ("rendezvous", ["fix_rendezvous", "increase_timeout"], 0.5,
         r"initiali[sz]\w* (?:the )?process group|store[ _]based barrier|clients joined|waiting for (?:clients|workers)"),
        ("nccl_timeout", ["increase_timeout", "set_nccl_env"], 0.5,
         r"(?:collective|watchdog|allreduce|all_reduce|barrier|broadcast|allgather|nccl|gloo).{0,80}"
         r"(?:timed? ?out|timeout)|(?:timed? ?out|timeout).{0,60}(?:collective|barrier|allreduce|nccl|gloo)"),
        ("nccl_error", ["set_nccl_env"], 0.5,
         r"\bnccl\b.{0,40}(?:error|failure|failed|warn|abort)|nccl(?:System|Internal|InvalidUsage|UnhandledCuda)Error"),
        ("rendezvous", ["fix_rendezvous"], 0.5,
         r"address already in use|eaddrinuse|rendezvous|master_addr|master_port|tcpstore|"
         r"name or service not known|name does not resolve|can't resolve|connection refused|no route to host|"
         r"nodename nor servname|failed to (?:connect|bind)|"
         # a server the job starts beside the trainer (a vLLM generation server, a reward model) not reachable
         # at the host and port the trainer was given
         r"(?:server|endpoint|host)\b.{0,30}\b(?:can't|cannot|could not) be reached|is unreachable"),
        # a rank waiting at communicator setup for the id rank 0 posts when it reaches its first collective: rank 0
        # was still busy (preparing the data on the main process), and the peers' wait ran out
        # (weak: when the rank that never posted raised something, that is the cause)
        ("nccl_timeout", ["increase_timeout", "fix_code", "fix_rendezvous"], 0.3,
         r"ncclUniqueId|c10d key-value store|store->get|socket timeout"),
        ("storage", ["free_disk", "fix_path"], 0.5,
         r"no space left|disk quota|read-only file system|input/output error|errno 28|errno 122|"
         # a write the file system cut short (a full disk, a file size limit): numpy's "N requested and M written"
         r"\d+ requested and \d+ written"),
        ("numerical", ["fix_numerics"], 0.5,
         r"\bnan\b|\binf(?:inite)?\b.{0,30}(?:loss|grad)|(?:loss|grad\w*).{0,40}\b(?:nan|inf)\b|loss scale|"
         r"overflow.{0,30}(?:grad|loss)|non-finite"),
        ("model_load", ["fix_path", "fix_config"], 0.5,
         r"size mismatch for|can't load (?:the )?(?:tokenizer|model|config)|does not appear to have a file|"
         r"missing key\(s\) in state_dict|unexpected key\(s\) in state_dict|not a valid model identifier|"
         r"repository not found|gated repo|couldn't connect to|offline mode|safetensors|checkpoint.{0,40}(?:corrupt|invalid)|"
         r"unrecognized (?:configuration|model)|error\(s\) in loading state_dict|pretrained|path_or_model_id|"
         r"not the path to a directory|repo_id"),
        ("version_mismatch", ["pin_versions"], 0.5,
         r"unexpected keyword argument|cannot import name|no module named|undefined symbol|"
         r"(?:make sure|ensure) (?:that )?(?:you have )?[\w-]+ (?:is )?installed|pip install [\w-]|"
         r"python \d\.\d+\+? (?:is )?not (?:yet )?supported|not yet supported|"
         r"requires? (?:\w+ ?)?(?:version|>=|==)|is not supported (?:in|by) (?:this|the installed|your) version|"
         r"(?:upgrade|update|downgrade) (?:your |the )?\w+|was (?:removed|deprecated|renamed)|"
         r"(?:is|are) no longer supported|"
         r"has no attribute '\w+'.{0,40}(?:module|version)|incompatible version|version mismatch|"
         r"compiled (?:against|with) .{0,40}version"),
        # a sample longer than the length limit a recipe sets: raise the limit, or filter the long samples
        ("data_pipeline", ["fix_config", "fix_data_file"], 0.45,
         r"(?:sequence|prompt|input|response)[ _]?length\W{0,3}\d*.{0,30}\b(?:larger|longer|greater|more) than|"
         r"exceeds? (?:the )?max(?:imum)?[ _](?:length|seq|prompt|tokens)"),
        ("config_invalid", ["fix_config"], 0.45,
         r"must be divisible|should be divisible|not divisible|must (?:evenly )?divide|divides? .{0,40}evenly|has to be (?:greater|less|divisible|between)|"
         r"must be (?:greater|less|a multiple|one of|set|specified|provided)|cannot be (?:used|set|enabled) (?:together|with)|"
         r"mutually exclusive|only one of|incompatible with|not compatible|is not supported (?:with|when|for|on)|"
         r"requires? (?:an? |the )?`?[\w.]+`? (?:to be|be) (?:set|specified|provided|enabled|given)|"
         r"(?<!\[Errno 22\] )invalid (?:value|choice|argument|config)|unknown (?:argument|option|parameter|keys?)|"
         r"unrecognized arguments|is not a valid [A-Z]\w{2,40}, please select one of|"
         r"unrecognized keys?|extra (?:fields|inputs) (?:are )?not permitted|should be set (?:through|via|in|with)|"
         r"batch[ _]size|gradient[ _]accumulation|num_generations|train_micro_batch|mixed precision|"
         r"\bbf16\b|\bfp16\b|\bfsdp\b|zero stage|deepspeed config|expected all tensors to be on the same device|"
         r"\b[48]-?bit\b|quantiz|device_map|\byou (?:can't|cannot|can not|must|should|need to|have to)\b|"
         r"should be (?:a )?(?:positive|non-negative|greater|less|one of|between|at least|at most)|"
         r"only (?:works?|supported|available|runs?) (?:with|on|for) (?:gpus?|cuda)|"
         # a feature the GPU model lacks (float8 before SM89, bf16 before Ampere): a setting for another GPU
         r"\b(?:sm_?|SM ?)\d{2,3}\+? or (?:later|newer|above|higher)|compute capability (?:>= ?|of )?\d|"
         r"(?:is )?not available on this (?:machine|device|platform|system|hardware)|"
         r"\b(?:unknown|unsupported|invalid|unrecognized) [\w ]{0,20}(?:type|mode|value|option|strategy|choice|"
         r"method|scheduler|optimizer|loss)\b|"
         r"make sure (?:you|to|that)|\btry (?:increasing|decreasing|reducing|lowering|raising|setting)\b|\beither (?:set|pass|use|disable|enable|remove|provide|specify)\b|"
         r"\byou (?:have )?set `?[\w.]+`? to\b|\b(?:training |launch )?argument `?\w*`? ?is set to\b"),
        # a split or file that holds no rows at all ("Instruction 'validation' corresponds to no data!")
        ("data_corrupt", ["fix_data_file", "fix_path"], 0.45, r"corresponds to no data"),
        # a tuple of the wrong length: an override or hook returning fewer or more values than its caller takes
        # (a Trainer's prediction_step returning (loss, preds) where (loss, logits, labels) is unpacked)
        ("code_bug", ["fix_code"], 0.4, r"(?:not enough|too many) values to unpack \(expected \d+"),
        ("data_schema", ["convert_data_format", "fix_data_file"], 0.45,
         r"column|valid samples|conversations|\bmessages\b|dataset format|data format|instruction|role tag|"
         r"features? .{0,20}(?:missing|expected)|schema"),
        ("data_corrupt", ["fix_data_file"], 0.45,
         r"json ?decode|decode error|can't decode|parse error|arrow|corrupt|malformed|unterminated|expecting value|"
         r"invalid (?:json|utf|byte|start byte)|cannot identify image|image file is truncated|crc check|"
         r"not a gzip|bad zip|unexpected end of (?:data|file|stream)|ended before the end-of-stream|"
         r"compressed file ended|ran out of input|truncated (?:file|archive|record|shard)|"
         r"bad (?:header|magic)\b|(?:invalid|wrong|unexpected|bad) magic(?: number)?|"
         r"invalid data found when processing input"),
        ("data_pipeline", ["fix_data_file", "fix_config"], 0.4,
         r"num_samples=0|empty dataset|dataset is empty|tokeniz|chat.?template|collat|padding|truncation|"
         r"sequence length|max_length|max_seq|dataset|\bsamples?\b"),
    ]
]

# the library a class or a raising frame belongs to, and what a failure inside it usually means
_MODULES: list[tuple[re.Pattern, str, list[str]]] = [
    (re.compile(r"torch[/.]distributed[/.]elastic[/.]rendezvous|rendezvous|c10d_rendezvous|TCPStore"),
     "rendezvous", ["fix_rendezvous"]),
    (re.compile(r"deepspeed[/.]runtime[/.](?:config|zero[/.]config|swap_tensor)|training_args|accelerate[/.]utils[/.]dataclasses|"
                r"(?:hf_)?argparser|fsdp_utils|accelerator\.py|accelerate[/.]commands[/.]config|"
                r"transformers[/.]optimization|lr_scheduler"), "config_invalid", ["fix_config"]),
    # torch.compile's tracer and backends failing on a model or an option combination (dynamic shapes with DDP's
    # graph splitting, checkpointing): compiling is a setting to turn off or change, or a release to move to
    (re.compile(r"torch[/.]_(?:dynamo|inductor)[/.]"), "config_invalid", ["fix_config", "pin_versions"]),
    # an optimizer's argument checks ("Invalid beta parameter at index 1: 1.0", "Invalid learning rate")
    (re.compile(r"torch[/.]optim[/.](?!lr_scheduler)"), "config_invalid", ["fix_config"]),
    # an adapter library's injection and config code: the adapter settings (target modules, ranks) do not fit
    (re.compile(r"peft[/.](?:tuners|config\.py|mapping)"), "config_invalid", ["fix_config"]),
    (re.compile(r"(?:^|[/.])datasets[/.]|data[/.]loader|data[/.]converter|data[/.]processor|data_utils|dataset\.py|"
                r"collator|tokenization_utils"), "data_pipeline", ["fix_data_file", "convert_data_format"]),
    # a model's own configuration class (or the auto mapping) rejecting a checkpoint's config.json: the
    # checkpoint is newer than the installed library (rope_scaling fields, an unknown model_type)
    (re.compile(r"transformers[/\\.]models[/\\.]\w+[/\\.]configuration_\w+"), "version_mismatch", ["pin_versions"]),
    (re.compile(r"modeling_utils|from_pretrained|safetensors|configuration_utils|hub\.py|file_download|"
                # a fine-tuning library's checkpoint readers (torchtune's checkpointer, a converter's)
                r"_checkpointer\.py|convert_checkpoint|checkpoint_utils"),
     "model_load", ["fix_path", "fix_config"]),
    # torch.distributed's checkpointing and sharding APIs are loading and configuration, not communication
    (re.compile(r"torch[/.]distributed[/.]checkpoint"), "model_load", ["fix_path", "fix_config"]),
    (re.compile(r"torch[/.]distributed[/.](?:fsdp|_shard|_tensor|tensor|_composable|device_mesh|pipelining)"),
     "config_invalid", ["fix_config"]),
    (re.compile(r"torch[/.]distributed[/.](?!elastic)|ProcessGroup"), "nccl_error", ["set_nccl_env"]),
]


# a framework's own source checkout (an editable install, a container's /opt/NeMo): its package folder
_CHECKOUT = re.compile(r"[/\\](?:nemo|megatron|nemo_aligner|llamafactory|axolotl|swift|openrlhf|verl|trl|peft|"
                       r"transformers|deepspeed|accelerate|colossalai|torchtune|torchtitan|fairseq|fairseq2|composer|"
                       r"llmfoundry|lightning|pytorch_lightning|unsloth|unsloth_zoo|xtuner|mmengine|litgpt)[/\\]"
                       r"(?:[\w.-]+[/\\])*[\w.-]+\.py$")


# a model's own code that transformers downloaded with it (trust_remote_code): the model's authors', not the team's
_REMOTE_CODE = re.compile(r"[/\\]transformers_modules[/\\]")


def library_file(path: str) -> bool:
    """An installed library's or the interpreter's file, or a framework's source checkout, not the user's
    own code."""
    return bool(_SITE.search(path)) or path.startswith("<") or bool(_CHECKOUT.search(path)) \
        or bool(_REMOTE_CODE.search(path))


# "cannot import name 'x' from 'pkg' (/path/pkg/__init__.py)": Python says which file it imported
_FROM_FILE = re.compile(r"cannot import name ['\"](\w+)['\"] from ['\"]([\w.]+)['\"] \(([^()\n]+\.py)\)")


def own_module(text: str, frames: list[dict]):
    """A module that is no package, imported by the script's own code: the project's own file is missing
    from this process's copy of the code or path (an unsynced node, another working directory). Or an
    attribute the script looked up by a name from a setting (`getattr(torch, cfg.dtype)`): the setting.
    (category, fixes, summary), or None when the module is installed software or a library imports it."""
    shadow = _FROM_FILE.search(text or "")
    if shadow and not library_file(shadow.group(3)):
        name, module, path = shadow.groups()
        stray = "." not in module and path.replace("\\", "/").endswith(f"/{module}.py")
        if installed_software(module) and not stray:
            return None  # a package's own checkout (an editable install): the versions disagree
        if stray and installed_software(module):
            return ("code_bug", ("fix_path", "fix_code"),
                    f"a file of the project, {path}, has the name of the package {module!r} and hides it: rename "
                    "or remove that file (often a stray copy in the job folder of one node)")
        return ("code_bug", ("fix_code", "fix_path"),
                f"the project's own module {module!r} ({path}) has no {name!r}: the code on this node is another "
                "version of it")
    named = _DYNAMIC_ATTRIBUTE.search(text or "")
    if named and _names_from_a_value(named.group(1), frames):
        return ("config_invalid", ("fix_config",),
                f"the script looks up an attribute of {named.group(1)!r} by a name taken from a setting or an "
                f"environment variable, and {named.group(2)!r} is no such name (a misspelt dtype, optimizer or "
                "class name): correct the setting")
    module = missing_module(text)
    while frames and "importlib" in str(frames[-1].get("file", "")):  # import_module(name): the caller imports
        frames = frames[:-1]
    if module is None or installed_software(module) or not frames or library_file(str(frames[-1].get("file", ""))):
        return None
    return ("code_bug", ("fix_path", "fix_code"),
            f"the script imports its own module {module!r}, which is not on this process's path: the node's copy "
            "of the code lacks it, or the job runs from another directory or PYTHONPATH")


_DYNAMIC_ATTRIBUTE = re.compile(r"module '([\w.]+)' has no attribute '(\w+)'")


def own_code(frames: list[dict]) -> str:
    """The code line of the script's last own frame ("" when every frame is a library's)."""
    own = [frame for frame in frames if not library_file(str(frame.get("file", "")))]
    return str(own[-1].get("code", "")) if own else ""


# torch's own layers and ops, which a model's forward calls into (not a library's model code)
_TORCH_LAYERS = re.compile(r"[/\\]torch[/\\](?:nn|_tensor|functional|autograd|_dynamo|utils|overrides)")


def above_torch_layers(frames: list[dict]) -> list[dict]:
    """The frames that are not torch's own layers and ops: the innermost is the code that called into them."""
    return [frame for frame in frames if not _TORCH_LAYERS.search(str(frame.get("file", "")))]


def own_model_raised(frames: list[dict]) -> bool:
    """Below torch's layers and ops, the innermost frame is the script's own code (its model's forward, its
    loss), not a library's model."""
    inner = above_torch_layers(frames)
    return bool(inner) and not library_file(str(inner[-1].get("file", "")))


def loads_a_model(frames: list[dict]) -> bool:
    """The traceback runs through model or checkpoint loading (from_pretrained, load_state_dict, ...)."""
    return any(_MODEL_LOADING.search(f"{frame.get('function', '')} {frame.get('file', '')}") for frame in frames)


def _names_from_a_value(module: str, frames: list[dict]) -> bool:
    """The script's own line is `getattr(torch, <not a literal>)`: the name came from a setting."""
    code = own_code(frames)
    alias = re.escape(module.rsplit(".", 1)[-1])
    return bool(re.search(rf"\bgetattr\(\s*[\w.]*\b{alias}\s*,\s*(?![\"'])", code))


_MODEL_LOADING = re.compile(r"from_pretrained|load_state_dict|load_checkpoint|_load_pretrained|load_model|load_adapter")


def reading_data(frames: list[dict]) -> bool:
    """The traceback runs through a dataset's reading code (a DataLoader fetch, __getitem__, a data module)
    and not through model or checkpoint loading."""
    names = [str(frame.get("function", "")) + " " + str(frame.get("file", "")) for frame in frames]
    return any(_DATA_FRAMES.search(name) for name in names) and not loads_a_model(frames)


def classify(
    exception: str, message: str, frames: list[dict], full_name: str | None = None
) -> tuple[str, list[str], float] | None:
    """(category, fix kinds, weight) for an exception no rule recognised, or None."""
    found = explain(exception, message, frames, full_name)
    return None if found is None else found[:3]


def explain(
    exception: str, message: str, frames: list[dict], full_name: str | None = None
) -> tuple[str, list[str], float, str] | None:
    """classify() plus the basis of the answer, in words."""
    found = _explain(exception, message, frames, full_name)
    if found is not None and exception in _GATHERING:
        return found[0], found[1], min(found[2], _GATHERING_WEIGHT), found[3] + " (it gathers the ranks' own errors)"
    return found


def _explain(
    exception: str, message: str, frames: list[dict], full_name: str | None = None
) -> tuple[str, list[str], float, str] | None:
    if not exception or (exception in _CASCADE and exception != "DistBackendError"):
        return None
    message = message or ""
    if exception == "DistBackendError":
        # the process group's own error: usually a restatement of another rank's failure, so only what
        # its message says (a communicator that never formed, a timeout) classifies it, with a low weight
        keyword = _by_keywords(message)
        if keyword is None or keyword[0] not in ("rendezvous", "nccl_timeout"):
            return None
        category, fixes, _weight, words = keyword
        return category, fixes, 0.3, f"the message keywords {words!r}"
    if REraised.match(message):
        message = ""
    # Python's attribute machinery raises on behalf of the caller: `obj.generate` on a DDP wrapper
    # fails in torch's Module.__getattr__, but the bug is the line that asked for it
    asked_os = bool(frames) and bool(_OS_MODULE.search(str(frames[-1].get("file", ""))))  # os.environ[...]
    # a library's own __getattr__ refusing a name (its message has no quotes: "TokenizersBackend has no attribute
    # batch_encode_plus"): the installed release dropped or renamed what the script asks for
    library_refused_name = exception == "AttributeError" and bool(frames) and bool(_LIBRARY_GETATTR.match(
        message.strip())) and library_file(str(frames[-1].get("file", ""))) \
        and str(frames[-1].get("function", "")).endswith("__getattr__")
    untrimmed = frames
    while frames and frames[-1].get("function", "").rsplit(".", 1)[-1] in _ON_BEHALF:
        frames = frames[:-1]
    user_frames = [frame for frame in frames if not library_file(str(frame.get("file", "")))]
    raised_in_user_code = bool(frames) and frames[-1] in user_frames
    in_metrics = any(_METRIC_FRAMES.search(str(frame.get("function", ""))) for frame in user_frames[-2:])
    # a DataLoader worker's start-up hook (seeding) is the script's own code, not the data it reads
    if library_refused_name and user_frames:
        return ("version_mismatch", ["fix_code", "pin_versions"], 0.5,
                "a library object no longer has the attribute the script asks for (removed or renamed in the "
                "installed release)")
    in_worker_setup = bool(user_frames) and bool(_WORKER_SETUP.search(str(user_frames[-1].get("function", ""))))
    if in_worker_setup and (exception in _CODE_BUGS or exception in ("ValueError", "OverflowError")):
        return "code_bug", ["fix_code"], 0.4, f"a {exception} in the DataLoader worker's start-up hook"
    in_data = not in_metrics and any(
        _DATA_FRAMES.search(frame.get("function", "") + " " + frame.get("file", "")) for frame in frames[-4:]
    )
    if exception == "TypeError" and _COLLATE_FOUND_OBJECT.search(message):
        # the default collate meeting an object of a library's or the script's own class (a graph, an image
        # object): the script batches objects that need their own loader or collate_fn
        return ("code_bug", ["fix_code"], 0.45,
                "the default collate cannot batch the dataset's objects: the script needs the loader or collate_fn "
                "made for them")
    cut = _RESHAPE.search(message) if in_data and exception == "ValueError" else None
    if cut and int(cut.group(1)) < math.prod(int(n) for n in re.findall(r"\d+", cut.group(2))):
        # numpy reshaping the bytes a data file gave into the shape its header or the code expects, with fewer
        # values than the shape holds: the file is shorter than it says (cut by a copy or a sync)
        return ("data_corrupt", ["fix_data_file"], 0.45,
                "a data file holds fewer values than its shape: it was cut short")
    if exception == "IndexError" and frames and _DEVICE_STREAMS.search(
            f"{frames[-1].get('file', '')} {frames[-1].get('function', '')}"):
        # DDP copying inputs to its device looks the device up among the node's GPUs: an index past them is a
        # device the script chose (its global rank as device_ids on a second node)
        return ("code_bug", ["fix_code", "fix_config"], 0.5,
                "DDP's device is past the node's GPUs: the script gives it the global rank instead of the local one")
    if exception == "TemplateError":
        # a chat template's own raise_exception: the conversation does not fit the template's rules
        return ("data_pipeline", ["convert_data_format", "fix_data_file", "fix_config"], 0.55,
                "a chat template rejected a conversation (TemplateError)")
    if exception == "UndefinedError" and _TURN_NOT_A_DICT.search(message):
        # the template walks the conversation's turns and reads turn.role / turn['content']: these turns are
        # plain strings (or numbers), so the rows are not in the chat format the template expects
        return ("data_schema", ["convert_data_format", "fix_config"], 0.55,
                "the conversation's turns are plain values, not {role, content} messages")
    if exception in ("TemplateSyntaxError", "UndefinedError"):
        return "data_pipeline", ["fix_config"], 0.5, f"the chat template itself is broken ({exception})"
    if _zero3_meets_quantized(frames):
        # ZeRO-3 partitions every parameter at load time (zero.Init); a 4-/8-bit quantized weight being built
        # inside that partitioning fails in DeepSpeed's own code whatever the message: the two do not combine
        return ("config_invalid", ["fix_config", "pin_versions"], 0.5,
                "DeepSpeed ZeRO-3 partitioning met a 4-/8-bit quantized weight while the model loaded: quantized "
                "(QLoRA) training runs with ZeRO-2 or without zero.Init, or needs releases that support it")
    if exception in _COMPILER_REFUSALS and "_dynamo" in (full_name or "") + " ".join(
            str(frame.get("file", "")) for frame in frames[-3:]):
        # torch.compile cannot trace what the script's model does (data-dependent control flow under fullgraph,
        # an unsupported Python construct): rewrite that code, or compile without fullgraph
        return ("code_bug", ["fix_code", "fix_config"], 0.45,
                f"torch.compile could not trace the script's code ({exception})")
    if exception in ("ValueError", "IndexError") and frames and _RANDOM_MODULE.search(str(frames[-1].get("file", ""))):
        # random.sample / choice / randrange refusing the script's arguments (a bucket smaller than the sample)
        return ("code_bug", ["fix_code"], 0.45,
                f"the random module refused the script's call ({frames[-1].get('function')})")
    if exception == "ValueError" and frames and _OPTIMIZER_FILE.search(str(frames[-1].get("file", ""))):
        # the optimizer refusing the parameter groups the script built (a parameter in two groups, an empty list)
        return ("code_bug", ["fix_code"], 0.45, "the optimizer refused the parameter groups the script built")
    if exception == "OverflowError" and _OUT_OF_RANGE_ID.search(message) \
            and any("decode" in str(frame.get("function", "")) for frame in frames[-4:]):
        # token ids that cannot be ids: labels padded with -100 handed to decode() (metrics, predictions)
        return ("code_bug", ["fix_code"], 0.5,
                "negative ids (labels padded with -100) were handed to the tokenizer's decode(): replace -100 with "
                "the pad token id first")
    if _CONFIG_CLASS.match(exception):
        return "config_invalid", ["fix_config"], 0.55, f"the exception class {exception}"
    if exception in _DATA_CORRUPT or (full_name or "").lstrip("_") == "csv.Error":
        # (the csv module's only class is a bare `Error`: an unbalanced quote, a NUL byte, a field past the limit)
        return "data_corrupt", ["fix_data_file"], 0.6, f"the exception class {full_name or exception}"
    if exception == "OutOfMemoryError" or (exception == "MemoryError" and "cuda" in message.lower()):
        return ("gpu_oom", ["reduce_batch_size", "enable_gradient_checkpointing", "shard_more"], 0.8,
                f"the exception class {exception}")
    if exception == "MemoryError":
        return "host_oom", ["reduce_batch_size", "reduce_dataloader_workers"], 0.55, "the exception class MemoryError"
    if exception in _VERSION:
        own = own_module(message, frames)
        if own is not None:
            return own[0], list(own[1]), 0.5, "a module of the project's own code, not an installed package"
        return "version_mismatch", ["pin_versions"], 0.55, f"the exception class {exception}"
    if exception in ("NameError", "UnboundLocalError", "SyntaxError", "IndentationError", "TabError") and (
        raised_in_user_code or not frames
    ):
        return "code_bug", ["fix_code"], 0.45, f"the exception class {exception} in the script's own code"
    signature = _signature_change(exception, message, frames)
    if signature is not None:
        return signature
    if exception == "KeyError" and in_data and _VALUE_KEY.match(message.strip()) and raised_in_user_code:
        # a lookup of a value (a word in a vocabulary, a label in a map), not of a record's field
        return ("data_pipeline", ["fix_code", "fix_data_file"], 0.45,
                "the script's lookup table (vocabulary, label map) lacks a value the data holds")
    if exception == "KeyError" and re.fullmatch(r"-?\d{1,6}", message.strip()) and raised_in_user_code \
            and _BY_RANK.search(str(user_frames[-1].get("code", ""))):
        # a number as the key of a mapping the script keyed by rank, node or device (`paths_by_rank[0]`): the
        # mapping lacks that entry (built on another node, or keyed by global rank where the local one is used)
        return ("code_bug", ["fix_code"], 0.45,
                f"the script looks up {message.strip()} in a mapping it built by rank or index, which lacks it")
    if exception == "KeyError" and _RECORD_ID_KEY.match(message.strip()) and raised_in_user_code:
        # a record's id ('p00827', 'doc-1942') missing from a table the script built from another file (a
        # corpus, an index): the files disagree (one exported from another version), not the lookup's code
        return ("data_pipeline", ["fix_data_file", "fix_path"], 0.45,
                f"the data refers to {message.strip()}, which the table it is looked up in (built from another "
                "file) does not hold: the files come from different versions")
    reads_records = bool(frames) and bool(_ROW_LOOP.search(str(frames[-1].get("code", ""))))
    if exception == "KeyError" and (in_data or reads_records or _DATASET_KEY.match(message.strip())):
        return "data_schema", ["convert_data_format", "fix_data_file"], 0.5, "a KeyError in data-handling frames"
    if exception in ("FileNotFoundError", "IsADirectoryError", "NotADirectoryError") and _loads_checkpoint(message, frames):
        return "model_load", ["fix_path"], 0.5, f"a {exception} while loading a model or checkpoint"
    if exception in ("FileNotFoundError", "IsADirectoryError", "NotADirectoryError"):
        return "storage", ["fix_path"], 0.45, f"the exception class {exception}"
    if exception == "OSError" and message.lstrip().startswith("[Errno 22]") and _loads_checkpoint(message, frames) \
            and not any(_RESUMING.search(str(frame.get("code", ""))) for frame in user_frames):
        # torch.load / safetensors seeking past the end of a cut model file (the job's own resume state,
        # cut while it was saved, is the storage's: the EINVAL rule below)
        return ("model_load", ["fix_path", "fix_data_file"], 0.45,
                "the operating system refused a read of a checkpoint file (EINVAL: a truncated or partial copy)")
    if exception == "OSError" and _EINVAL_NO_FILE.match(message) and frames and not library_file(
            str(frames[-1].get("file", ""))) and not _FILE_CALL.search(str(frames[-1].get("code", ""))):
        # EINVAL naming no file, raised at the script's own line: a system call given a bad argument
        # (a CPU set past the node's cores, a signal number), the script's code
        return "code_bug", ["fix_code"], 0.45, "the script's own system call was given an invalid argument (EINVAL)"
    if exception == "OSError" and message.lstrip().startswith("[Errno 22]"):
        # EINVAL from the OS on a file: a truncated or sparse file, a name the filesystem refuses
        return "storage", ["fix_path"], 0.4, "the operating system refused an operation on a file (EINVAL)"
    if exception == "OSError" and _NO_SUCH_FILE.search(message) and not _loads_checkpoint(message, frames):
        # a library's own OSError for a missing file (h5py/HDF5: "unable to open file ... errno = 2, error
        # message = 'No such file or directory'"): the path, as a FileNotFoundError would be
        return "storage", ["fix_path"], 0.45, "a file the job opens does not exist at its path"
    if exception == "OSError" and message.lstrip().startswith("[Errno 36]"):
        # ENAMETOOLONG: a path the job built grew past the filesystem's 255-byte name limit
        return "storage", ["fix_path"], 0.5, "a file name longer than the filesystem allows (ENAMETOOLONG)"
    if exception == "FileExistsError" and user_frames and _MAKES_FOLDER.search(str(user_frames[-1].get("code", ""))) \
            and "exist_ok" not in str(user_frames[-1].get("code", "")):
        # the script creates a folder without exist_ok: in a job of several ranks the second to get there finds
        # it made by the first (with exist_ok=True the same error would mean a file in the folder's place)
        return ("code_bug", ["fix_code", "fix_path"], 0.5,
                "every rank creates the same folder without exist_ok: create it with exist_ok=True, or on one rank "
                "before a barrier")
    if exception in ("PermissionError", "FileExistsError"):
        return "storage", ["fix_path"], 0.45, f"the exception class {exception}"
    if exception == "StopIteration" and in_data:
        return ("data_corrupt", ["fix_data_file", "fix_config"], 0.45,
                "the data loader had nothing to give (an empty file or shard)")
    if exception == "ValueError" and frames and _COLLECTIVE_API.search(str(frames[-1].get("file", ""))) \
            and _ARGUMENT_CHECK.search(str(frames[-1].get("function", ""))) and user_frames:
        # torch.distributed's collective functions checking their own arguments (a gather list on a rank that
        # is not the destination, an object list of the wrong length): the script's call does not fit the rank
        return ("code_bug", ["fix_code"], 0.45,
                f"torch.distributed refused the arguments the script passed on this rank ({frames[-1].get('function')})")
    if exception in ("ValueError", "AssertionError") and frames and _VALIDATING.search(
        str(frames[-1].get("function", ""))
    ):
        return ("config_invalid", ["fix_config"], 0.45,
                f"a {exception} raised by an argument check ({frames[-1].get('function')})")
    if exception == "TypeError" and _WRONG_TYPE.search(message) and user_frames \
            and _READS_CONFIG.search(str(user_frames[-1].get("code", ""))) and not in_data:
        # `os.path.join(out, cfg["run_tag"])` and "... not 'int'": the config file gave the setting another type
        # (YAML reads 0612 as a number, `yes` as a boolean, an empty value as null)
        return ("config_invalid", ["fix_config"], 0.5,
                "a setting read from the config has another type than the code expects (YAML typing: quote it)")
    if exception == "TypeError" and _TEXT_SETTING.search(message) and not raised_in_user_code and not in_data:
        # a library comparing a number setting with a string: YAML reads `1e-4` as text (no dot before the e)
        return ("config_invalid", ["fix_config"], 0.5,
                "a numeric setting arrived as text (YAML reads 1e-4 as a string): write 1.0e-4 or cast it")
    if exception in ("AttributeError", "TypeError", "NameError") and frames \
            and "transformers_modules" in str(frames[-1].get("file", "")) \
            and any(_TRANSFORMERS_FILE.search(str(frame.get("file", ""))) for frame in frames):
        # a model's own code (trust_remote_code, cached under transformers_modules) driven by the installed
        # transformers: written for another release of it (an attribute set later, a renamed hook)
        return ("version_mismatch", ["pin_versions", "fix_code"], 0.5,
                "the model's own code (trust_remote_code) was written for another transformers release")
    if exception == "AssertionError" and frames and _FINITE_CHECK.search(str(frames[-1].get("code", ""))):
        # `assert torch.isfinite(loss)` (a loss-checking hook, a script's guard): the values went NaN/inf
        return "numerical", ["fix_numerics"], 0.55, "an assertion that the loss is finite failed"
    if exception == "AssertionError" and frames and not raised_in_user_code \
            and _ASSERTS_SETTINGS.search(str(frames[-1].get("code", ""))):
        # a library's own assert on the arguments it was started with (`assert device_count() ==
        # self.args.num_infer_workers`): the job's settings contradict each other or the hardware
        return ("config_invalid", ["fix_config"], 0.45,
                "a library's assertion on the job's settings failed: they contradict each other or the hardware")
    refused = _REFUSED_CALL.search(message)
    if refused and user_frames and f".{refused.group(1)}(" in str(user_frames[-1].get("code", "")):
        # "Calling `cuda()` is not supported for 4-bit models" and the script's own line is `model.cuda()`:
        # the script asks the object for something it refuses, whatever the message says about settings
        return ("code_bug", ["fix_code"], 0.5,
                f"the script's own line calls {refused.group(1)}(), which this object refuses")
    if exception in ("ValueError", "TypeError") and _SAME_OBJECT.search(message) and user_frames:
        # "`model` and `ref_model` cannot be the same object": the script passed one object for two roles
        return ("code_bug", ["fix_code"], 0.45, "the script passed the same object where two distinct ones belong")
    if exception == "RuntimeError" and _SHAPE_BUG.search(message) and not in_data and called_from_user_code(frames):
        # a tensor op at the script's own line given a shape it cannot take (a view/reshape with sizes written
        # for a full batch, meeting the last partial one; matrices that do not chain); before the keywords:
        # "view size is not compatible with ..." is about a tensor, not a setting
        return "code_bug", ["fix_code"], 0.35, "a tensor shape the script's own line cannot reshape or multiply"
    if exception == "AttributeError" and _OUTPUT_NOT_TENSOR.search(message) and raised_in_user_code:
        # the script calls a tensor method on what a library call returned, and got the library's output object:
        # the release changed what that call returns (transformers 5 returns ModelOutput objects from
        # get_image_features and kin); take the tensor out of it, or pin the release the code was written for
        return ("version_mismatch", ["fix_code", "pin_versions"], 0.5,
                "a library call returns an output object where the script expects a tensor (its return type changed "
                "between releases)")
    if exception == "ValueError" and raised_in_user_code and _UNPACK_COUNT.search(message) \
            and _SPLITS_A_ROW.search(str(user_frames[-1].get("code", ""))):
        # `src, tgt = line.split("\t")` meeting a row with another number of fields (a column added by another
        # exporter, a tab inside a field): the file's layout, not the code
        return ("data_schema", ["fix_data_file", "convert_data_format", "fix_code"], 0.45,
                "a row of the file has another number of fields than the script splits it into")
    keyword = _by_keywords(message)
    if keyword is not None:
        category, fixes, weight, words = keyword
        # a bug class raised by the user's own code: words about data, configs or versions in its message
        # ("'dict' object has no attribute 'truncated'") describe the bug's variables, not the cause
        # (NotImplementedError is raised on purpose, to refuse a setting: its words are the cause)
        # (an assertion's message is its author's own words about the condition it checks: "bad header")
        weak = (exception in _CODE_BUGS and exception not in ("NotImplementedError", "AssertionError")
                and raised_in_user_code and category in _SOFT_KEYWORDS)
        if not weak:
            return category, fixes, weight, f"the message keywords {words!r}"
    if exception == "KeyError" and _LAUNCHER_ENV.match(message.strip()) and asked_os:
        # os.environ['LOCAL_RANK'] unset: the process was not started by a distributed launcher (a plain
        # `python train.py` under sbatch, a launcher that sets other names): the job never formed
        return ("rendezvous", ["fix_rendezvous", "fix_config"], 0.5,
                f"the launcher's variable {message.strip()} is not set: the process was started without a distributed "
                "launcher (torchrun, or srun with the rank variables exported), so it cannot join the job")
    if exception == "KeyError" and _ENV_KEY.match(message.strip()) and asked_os:
        # os.environ['RUN_TAG'] on a node where it is not set
        return ("config_invalid", ["fix_config", "fix_code"], 0.5,
                f"an environment variable the script reads ({message.strip()}) is not set in this process")
    if exception in ("TypeError", "ValueError") and _FIELD_TYPE.search(message.strip()):
        # "chosen should be an str but got <class 'list'>": a record's field holds another type than the
        # recipe reads (conversational message lists where the trainer wants plain text, or the reverse)
        return ("data_schema", ["convert_data_format", "fix_data_file"], 0.45,
                "a field of the records has another type than the trainer expects")
    # (a reward function reads the dataset's answer column: its rows are data too)
    # (or a table's column converted by pandas/pyarrow: `df[cols].astype("float32")` meets the file's text)
    in_rows = in_data or any(_REWARD_FRAME.search(str(frame.get("function", ""))) for frame in user_frames[-2:]) \
        or any(_TABLE_LIBRARY.search(str(frame.get("file", ""))) for frame in frames[-6:])
    if in_rows and exception in ("TypeError", "ValueError") and _TEXT_FOR_NUMBER.search(message.strip()):
        return ("data_schema", ["fix_data_file", "convert_data_format"], 0.4,
                "a row holds text where the data code expects a number")
    if exception == "TypeError" and _ROW_NOT_A_RECORD.search(message) and frames \
            and _FIELD_SUBSCRIPT.search(str(frames[-1].get("code", ""))):
        # `row["text"]` on a row that is a list (a JSON array per line, or a file of lists): not records
        return ("data_schema", ["convert_data_format", "fix_data_file"], 0.45,
                "a row is a list where the code reads named fields: the file does not hold records")
    if in_rows and exception == "ValueError" and _NOT_IN_LIST.match(message.strip()):
        # `labels.index(row["intent"])`: the data holds a class the label list does not know
        return ("data_schema", ["fix_data_file", "fix_code"], 0.4,
                "the data holds a value the code's list of known values does not have (an unknown label)")
    if (in_rows or _on_a_field(exception, message, user_frames)) and exception in ("TypeError", "AttributeError") \
            and _SCALAR_FIELD.search(message.strip()):
        return ("data_schema", ["fix_data_file", "convert_data_format"], 0.4,
                "a row's field is null or a number where the data code expects text or a list")
    if in_data and exception == "AssertionError" and raised_in_user_code:
        return ("data_pipeline", ["fix_data_file"], 0.35,
                "an assertion of the script's own data code rejected a row or batch")
    if in_metrics and (exception in _CODE_BUGS or exception == "KeyError"):
        return "code_bug", ["fix_code"], 0.4, f"a {exception} in the evaluation's metric code"
    between = None if in_data else _between_libraries(exception, frames)  # (data handed through: the data's)
    if between is not None:
        return between
    if exception in _CODE_BUGS and raised_in_user_code and not in_data and exception != "AssertionError":
        # the script's own function raised a bug class, whatever library called it back (an lr lambda under
        # the scheduler, a callback under the trainer): the function is the script's
        return "code_bug", ["fix_code"], 0.4, f"a {exception} in the script's own code"
    if exception in ("ValueError", "RuntimeError") and frames and not in_data \
            and not raised_in_user_code and _loads_checkpoint("", frames):
        # a library's checkpoint loader refusing what it found (keys, layout, metadata it does not expect): a
        # checkpoint written by another tool or release, or the path of another kind of checkpoint
        return ("model_load", ["fix_path", "fix_config"], 0.35,
                f"a {exception} raised while a library loaded a checkpoint")
    if exception in _NETWORK_ERRORS and any(_HUB_DOWNLOAD.search(str(frame.get("file", ""))) for frame in frames):
        # the connection to the model hub dropped or timed out during a download: the model's files, not the
        # ranks' network (a local copy with HF_HUB_OFFLINE=1, a mirror, or a retry)
        return ("model_load", ["fix_path", "fix_config"], 0.45,
                f"a {exception} while downloading the model's files from the hub")
    module = _by_module(full_name, frames)
    if module is not None:
        category, fixes, where = module
        return category, fixes, 0.35, f"where it was raised ({where})"
    if exception == "KeyError" and frames and not raised_in_user_code \
            and _RESTORES.search(str(frames[-1].get("function", ""))):
        # a library's own checkpoint-restoring function missing an entry it expects ('step', 'optimizer',
        # 'model'): the file given to it is another kind of checkpoint (a released inference file, another
        # trainer's layout)
        return ("model_load", ["fix_path", "fix_config"], 0.45,
                "the checkpoint lacks an entry the library's restore function expects: it is another kind of "
                "checkpoint than the one that library writes")
    if exception in _CODE_BUGS or exception == "KeyError":
        if raised_in_user_code or not frames:
            return "code_bug", ["fix_code"], (0.4 if frames else 0.25), f"a {exception} in the script's own code"
        if in_data and exception in ("IndexError", "TypeError", "ValueError"):
            return ("data_pipeline", ["fix_data_file", "convert_data_format"], 0.35,
                    f"a {exception} in data-handling frames")
        return "code_bug", ["fix_code"], WEIGHT, f"a {exception} inside a library called by the script"
    if exception in ("RuntimeError", "ValueError") and _SIZES_DISAGREE.search(message) and frames:
        if in_data:
            # a collate or preprocessing step whose pieces of one row or batch disagree in length
            return ("data_pipeline", ["fix_data_file", "fix_code"], 0.35,
                    "tensor sizes that disagree inside the data-handling code (a row whose parts differ in length)")
        if called_from_user_code(frames) and not any(
                _MODEL_LOADING.search(str(frame.get("function", ""))) for frame in frames):
            # a torch op or loss called at the script's own line with tensors whose sizes do not fit
            return ("code_bug", ["fix_code"], 0.35,
                    "a tensor op the script's own line calls was given tensors whose sizes do not fit")
    if exception == "ValueError" and in_data:
        return "data_pipeline", ["fix_data_file", "convert_data_format"], 0.35, "a ValueError in data-handling frames"
    if exception == "RuntimeError" and _TENSOR_TERMS.search(message) and _tensor_op_at_own_line(untrimmed):
        # a tensor op at the script's own line refused its arguments with a message no rule knows (an index past
        # a table, an index of the wrong dtype): in the data code, the rows it was handed; elsewhere, the line
        if in_data:
            return ("data_pipeline", ["fix_data_file", "fix_code"], 0.3,
                    "a tensor op in the data-handling code refused what a row or batch gave it")
        return "code_bug", ["fix_code"], 0.3, "a tensor op at the script's own line refused its arguments"
    own_class = _own_class(exception, full_name, message, in_data) if raised_in_user_code else None
    if own_class is not None:
        return own_class
    if exception == "ValueError" and raised_in_user_code and _NUMBER_FROM_TEXT.search(message) \
            and _READS_NAMES.search(str(user_frames[-1].get("code", ""))):
        # `int(name.split("-")[1])` over os.listdir(): a folder holds an entry the script's naming scheme did not
        # foresee ("checkpoint-latest"); the parsing code, then the stray entry
        return ("code_bug", ["fix_code", "fix_path"], 0.45,
                "the script parses numbers out of file or folder names, and one entry does not follow that scheme")
    if exception == "ValueError" and raised_in_user_code and _NUMBER_FROM_TEXT.search(message) \
            and user_frames[-1].get("code") and not _A_SETTING.search(str(user_frames[-1].get("code", ""))):
        # Python's own int()/float() refusing a string at the script's line (parsing a model's answer, a
        # field of free text): the parsing code assumed a form the text does not always have
        return ("code_bug", ["fix_code"], 0.35,
                "the script's own line converts text to a number, and the text was not one")
    if exception == "ValueError" and raised_in_user_code and not _BUILTIN_VALUE_ERROR.search(message):
        # scripts validate their arguments with ValueError
        return "config_invalid", ["fix_config"], 0.25, "a ValueError raised by the script's own checks"
    caller = next((frame for frame in reversed(frames) if not TORCH_FILE.search(str(frame.get("file", "")))), None)
    if exception == "RuntimeError" and caller is not None and user_frames and caller is not user_frames[-1] \
            and library_file(str(caller.get("file", ""))) and _TENSOR_TERMS.search(message) \
            and not str(caller.get("code", "")).lstrip().startswith("raise"):
        # a library's own line handing torch tensors torch refuses (a dtype, a device), with the script only at
        # the top: the library and the installed torch (or another library) disagree, a release pairing
        return ("version_mismatch", ["pin_versions", "fix_code"], 0.2,
                "a library's own call into torch was refused with tensors it built: the installed releases disagree")
    return None


# a script line that calls torch.distributed itself (its failures are the job's network or peers, not the line),
# or raises on purpose (a wrapper that reports a failure elsewhere)
_DISTRIBUTED_CALL = re.compile(r"^\s*raise\b|\bdist\.|distributed\.|all_reduce|all_gather|broadcast|barrier|reduce_scatter|"
                               r"init_process_group|\.backward\(|\.step\(")
# a message about tensors (torch's ops describe what they refused in these words)
_TENSOR_TERMS = re.compile(r"tensor|dimension|\bdim\b|\bsize\b|shape|dtype|scalar type|\bindex|indices|channels|"
                           r"storage|out of bounds|out of range", re.IGNORECASE)
# torch's collective API module (its argument checks), not the elastic launcher or the checkpointing code
_COLLECTIVE_API = re.compile(r"torch[/\\]distributed[/\\]distributed_c10d\.py$")
_ARGUMENT_CHECK = re.compile(r"^_?(?:validate|check|ensure)\w*")
# tensors whose sizes disagree: torch's own words for it across ops and losses
_SIZES_DISAGREE = re.compile(
    r"size \(?torch\.Size\(\[[\d, ]*\]\)\)? must be the same as input size|"
    r"The (?:expanded )?size of (?:the )?tensor (?:a )?\(\d+\) must match the (?:existing )?size|"
    r"Expected input batch_?size \(\d+\) to match target batch_?size \(\d+\)|"
    r"stack expects each tensor to be equal size|Sizes of tensors must match except in dimension"
)
# torch's own Python layers between a script's call and the raise (functional, the loss and layer modules)
_TORCH_OP = re.compile(r"torch[/\\](?:nn[/\\]|functional\.py|_tensor\.py|_refs|autograd[/\\])")


def _tensor_op_at_own_line(frames: list[dict]) -> bool:
    """The raise is at the script's own line (or in torch's op layers it called), and that line is neither a
    raise of its own nor a call into torch.distributed."""
    if not frames or not called_from_user_code(frames):
        return False
    return not _DISTRIBUTED_CALL.search(own_code(frames))


def called_from_user_code(frames: list[dict]) -> bool:
    """The exception was raised at the script's own line, or in torch's op layers it called directly."""
    index = len(frames) - 1
    while index >= 0 and _TORCH_OP.search(str(frames[index].get("file", ""))):
        index -= 1
    return index >= 0 and not library_file(str(frames[index].get("file", "")))


# torch.compile's refusals to trace (torch._dynamo.exc)
_COMPILER_REFUSALS = frozenset({"UserError", "Unsupported", "UncapturedHigherOrderOpError"})
_OUT_OF_RANGE_ID = re.compile(r"number too small to fit in target type|out of range integral type conversion|"
                              r"can't convert negative int to unsigned")
_SAME_OBJECT = re.compile(r"(?:cannot|can't|must not|should not) be the same (?:object|instance)")
# Python's random module and numpy's generators (their Cython files, named without a folder in tracebacks)
_RANDOM_MODULE = re.compile(r"[/\\]lib[/\\]python3\.\d+[/\\]random\.py$|numpy[/\\.]random[/\\.]|"
                            r"(?:^|[/\\])(?:mtrand|_mt19937|_generator|bit_generator)\.pyx$")
_OPTIMIZER_FILE = re.compile(r"torch[/\\]optim[/\\]optimizer\.py$")
# the one argument a call left out, named like a dataset field: "missing 1 required positional argument: 'solution'"
_MISSING_FIELD = re.compile(r"missing 1 required (?:positional|keyword-only) argument: ('\w+')")
_SIGNATURE = re.compile(
    r"takes (?:from )?\d+ (?:to \d+ )?positional arguments? but \d+ (?:were|was) given|"
    r"missing \d+ required (?:positional|keyword-only) arguments?|unexpected keyword argument|"
    r"got multiple values for (?:keyword )?argument"
)
_FIELD_TYPE = re.compile(r"^`?\w+`? (?:should|must) be (?:an? )?(?:str|string|list|dict|int)\b.{0,20}\bbut got\b")
_REWARD_FRAME = re.compile(r"reward", re.IGNORECASE)
_ROW_NOT_A_RECORD = re.compile(r"list indices must be integers or slices, not str")
_FIELD_SUBSCRIPT = re.compile(r"\w\[['\"]\w+['\"]\]")
_MISSING_ATTRIBUTE = re.compile(r"has no attribute '(\w+)'")


def _on_a_field(exception: str, message: str, user_frames: list[dict]) -> bool:
    """The script's own line calls the missing attribute right on a record's field (`r["sql"].split()`,
    `row.get("text").strip()`): the field holds another type in this row, whatever function reads it."""
    named = _MISSING_ATTRIBUTE.search(message) if exception == "AttributeError" else None
    if named is None or not user_frames:
        return False
    code = str(user_frames[-1].get("code", ""))
    attribute = re.escape(named.group(1))
    return bool(re.search(rf"(?:\w\[['\"]\w+['\"]\]|\.get\(\s*['\"]\w+['\"][^)]*\))\.{attribute}\b", code))


_NOT_IN_LIST = re.compile(r"^'[^']{1,80}' is not in list$")
# a value of the wrong type handed to a function that wants text or a path
_WRONG_TYPE = re.compile(r"(?:must be|expected) (?:an? )?(?:str|string|bytes|os\.PathLike)\b.{0,60}"
                         r"not '?(?:int|float|bool|NoneType)'?|can only concatenate str \(not \"(?:int|float|bool)\"\)")
# the line reads a value out of a loaded config mapping: cfg["run_tag"], config.get("out"), hparams['name']
_READS_CONFIG = re.compile(r"\b(?:cfg|conf|config|configs|settings|hparams|hp|yaml_cfg|opts)\s*(?:\[|\.get\()")
_UNPACK_COUNT = re.compile(r"(?:too many|not enough) values to unpack \(expected \d+")
_SPLITS_A_ROW = re.compile(r"=.{0,120}\.r?split\(")
# a line that reads a setting: the config, the environment, the parsed arguments
_A_SETTING = re.compile(r"\b(?:cfg|conf|config|configs|settings|hparams|hp|opts|args|params)\b\s*(?:\[|\.)|"
                        r"environ|getenv")
# a comparison of a number with a string inside a library: a setting that should be a number is text
_TEXT_SETTING = re.compile(r"not supported between instances of '(?:float|int)' and 'str'|"
                           r"not supported between instances of 'str' and '(?:float|int)'")
_FINITE_CHECK = re.compile(r"\bassert\b.{0,40}\b(?:isfinite|isnan|isinf|math\.isfinite)\(|\bassert\b.{0,40}\bnot\b.{0,30}\bnan\b")
_TRANSFORMERS_FILE = re.compile(r"(?:site|dist)-packages[/\\]transformers[/\\]")
# a library refusing a method call outright: "Calling `cuda()` is not supported for ...", "`.to` is not supported"
_REFUSED_CALL = re.compile(r"(?:Calling )?`\.?(\w+)(?:\(\))?` is not supported\b")
# jinja's complaint when a chat template reads a message field from a turn that is not a mapping
_TURN_NOT_A_DICT = re.compile(r"'(?:str|int|float|list|NoneType|None) object' has no attribute '(?:role|content|from|value)'")
# functions that check arguments or configs before anything runs
_VALIDATING = re.compile(r"^(?:__post_init__|_?validate\w*|_?check_(?:args|arguments|config|params)\w*|_?verify_\w*args)$")
_LIBRARY_ATTRIBUTE = re.compile(r"^'(?!NoneType|str|int|float|list|dict|tuple)[A-Z]\w+' object has no attribute")


_ZERO3_PARTITION = re.compile(r"deepspeed[/\\]runtime[/\\]zero[/\\]partition_parameters\.py")
_QUANTIZER = re.compile(r"quantizer_bnb|bitsandbytes[/\\]|[/\\]quantizers[/\\]|Params4bit|Linear(?:4|8)bit")


def _zero3_meets_quantized(frames: list[dict]) -> bool:
    names = [f"{frame.get('file', '')} {frame.get('function', '')}" for frame in frames]
    return any(_ZERO3_PARTITION.search(name) for name in names) and any(_QUANTIZER.search(name) for name in names)


_MODULE_GETATTR = re.compile(r"torch[/\\]nn[/\\]modules[/\\]module\.py$")
_PACKAGE = re.compile(r"(?:site|dist)-packages[/\\]([A-Za-z_][\w]*)")


# a line calling a function of an installed package by its module path (`torch.distributed.init_process_group(`)
_CALLS_PACKAGE = re.compile(r"\b(torch|transformers|deepspeed|accelerate|peft|trl|datasets|vllm|bitsandbytes)"
                            r"(?:\.\w+)+\(")


def _between_libraries(exception: str, frames: list[dict]):
    """A TypeError raised by one installed library's API (torch.distributed) when another installed
    library (DeepSpeed) called it: the two releases no longer agree on what is passed, whatever the
    raising module's own category would be."""
    if exception != "TypeError" or len(frames) < 2:
        return None
    raised = _PACKAGE.search(str(frames[-1].get("file", "")))
    called = _CALLS_PACKAGE.search(str(frames[-1].get("code", "")))
    if raised is not None and called is not None and called.group(1) != raised.group(1) \
            and any(not library_file(str(frame.get("file", ""))) for frame in frames):
        # Python binds the arguments at the caller's line: a library's line calling another package's function
        # (`torch.distributed.init_process_group(backend="nccl", **kwargs)`) that refuses them
        return ("version_mismatch", ["pin_versions", "fix_config"], 0.4,
                f"{raised.group(1)} called {called.group(1)} with arguments it refuses: the two releases disagree")
    caller = _PACKAGE.search(str(frames[-2].get("file", "")))
    if raised is None or caller is None or raised.group(1) == caller.group(1):
        return None
    if not any(not library_file(str(frame.get("file", ""))) for frame in frames):
        return None  # no frame of the script: nothing says which side the user holds
    return ("version_mismatch", ["pin_versions", "fix_config"], 0.4,
            f"a TypeError in {raised.group(1)} when {caller.group(1)} called it: the two releases disagree")


def _signature_change(exception: str, message: str, frames: list[dict]):
    """A call across the boundary between two versions: a library's trainer calling the user's override
    with a new signature, or library code calling another library with an argument it does not know."""
    if not frames:
        return None
    last_two = frames[-2:]
    library = [frame for frame in last_two if _SITE.search(frame.get("file", ""))]
    missing = _MISSING_FIELD.search(message)
    if exception == "TypeError" and missing and _DATASET_KEY.match(missing.group(1)) \
            and _SITE.search(frames[-1].get("file", "")):
        # a trainer calling the team's function (a reward function, a formatting function) with the dataset's
        # columns as arguments: the function takes a field the dataset has no column for
        return ("data_schema", ["convert_data_format", "fix_code"], 0.5,
                f"the trainer passes the dataset's columns to the team's function, which needs {missing.group(1)}: "
                "the dataset has no such column")
    if exception == "TypeError" and _SIGNATURE.search(message) and library:
        return ("version_mismatch", ["pin_versions", "fix_code"], 0.45,
                "a call between library code and the script with a signature one side does not have")
    if exception == "AttributeError" and _LIBRARY_ATTRIBUTE.search(message) and _SITE.search(frames[-1].get("file", "")):
        if len(frames) > 1 and _MODULE_GETATTR.search(str(frames[-1].get("file", ""))) \
                and not library_file(str(frames[-2].get("file", ""))):
            # torch's Module.__getattr__ only reports the lookup: the script's own line asked its module for an
            # attribute the class does not define (a renamed head, a layer never built)
            return ("code_bug", ["fix_code"], 0.4,
                    "the script's own line asks a model for an attribute its class does not define")
        return ("version_mismatch", ["pin_versions"], 0.4,
                "a library object lacking an attribute another library expects")
    return None


_CHECKPOINT_FRAMES = re.compile(r"serialization\.py|load_state_dict|from_pretrained|modeling_utils|load_checkpoint|"
                                r"safetensors|torch\.load|_load_from", re.I)
_CHECKPOINT_FILES = re.compile(r"\.(?:pt|pth|bin|ckpt|safetensors)\b|checkpoint|config\.json|adapter_", re.I)


# default_collate refusing an object of a dotted class (`torch_geometric.data.data.Data`, `PIL.Image.Image`); a
# None or a string is what a row gave, not the loader the script chose
_COLLATE_FOUND_OBJECT = re.compile(r"default_collate: batch must contain .{0,80}; found <class '[A-Za-z_]\w*\.[\w.]+'>")


# a file of torch itself (its Python layers, its C extension wrappers)
TORCH_FILE = re.compile(r"[/\\]torch[/\\]")
_NO_SUCH_FILE = re.compile(r"errno = 2\b|No such file or directory")
_MAKES_FOLDER = re.compile(r"\b(?:makedirs|mkdir)\(")

# a library function that restores a run or a model from a checkpoint it reads
_RESTORES = re.compile(r"restore|load_checkpoint|load_state_dict|load_model|resume", re.IGNORECASE)


def _loads_checkpoint(message: str, frames: list[dict]) -> bool:
    if _CHECKPOINT_FILES.search(message):
        return True
    return any(_CHECKPOINT_FRAMES.search(frame.get("file", "") + " " + frame.get("function", ""))
               for frame in frames[-4:])


_NETWORK_ERRORS = frozenset({"ConnectionError", "ConnectionResetError", "ProtocolError", "ReadTimeout",
                             "ConnectTimeout", "ReadTimeoutError", "ConnectTimeoutError", "MaxRetryError", "SSLError",
                             "RemoteDisconnected", "ChunkedEncodingError", "IncompleteRead", "TimeoutError"})
_HUB_DOWNLOAD = re.compile(r"[/\\]huggingface_hub[/\\]|[/\\]modelscope[/\\]hub[/\\]")


def _by_keywords(message: str):
    text = message[:2000]
    for category, fixes, weight, pattern in _KEYWORDS:
        match = pattern.search(text)
        if match:
            return category, fixes, weight, match.group(0)[:60]
    return None


_BUILTIN_CLASSES = frozenset(name for name, value in vars(builtins).items()
                             if isinstance(value, type) and issubclass(value, BaseException))
_OWN_EXCEPTION_NAME = re.compile(r"(?:Error|Exception|Failure)$")
# what a project's own exception class is about, by its name
_OWN_CONFIG_CLASS = re.compile(r"Config|Setting|Option|Argument|Param|Hparam", re.IGNORECASE)
_OWN_DATA_CLASS = re.compile(r"Pars(?:e|ing)|Format|Decod|Schema|Record|Row|Sample|Example|Token|Vocab|Label|"
                             r"Annotation|Manifest|Shard|Dataset|Data(?!base)|Smiles|Sequence|Corpus|Field",
                             re.IGNORECASE)
# a value that shows the file was damaged: NUL bytes (as a repr writes them) or replacement characters
_DAMAGED_BYTES = re.compile(r"(?:\\x00){3,}|(?:\\u0000){3,}|\x00{3,}|\ufffd{3,}")


def _own_class(exception: str, full_name: str | None, message: str, in_data: bool):
    """How the name and message of an exception class the project defined and raised itself (not a builtin's
    or installed software's) classify it, or None."""
    if exception in _BUILTIN_CLASSES or not _OWN_EXCEPTION_NAME.search(exception):
        return None
    if full_name and installed_software(full_name):
        return None
    if _OWN_CONFIG_CLASS.search(exception):
        return "config_invalid", ["fix_config"], 0.4, f"the project's own {exception} about its settings"
    if _DAMAGED_BYTES.search(message) and (in_data or _OWN_DATA_CLASS.search(exception)):
        return ("data_corrupt", ["fix_data_file"], 0.45,
                f"the project's own {exception} on a value full of NUL bytes: the data file is damaged")
    if _OWN_DATA_CLASS.search(exception):
        return ("data_schema", ["fix_data_file", "convert_data_format", "fix_code"], 0.35,
                f"the project's own {exception}: a row its data code cannot read")
    if in_data:
        return ("data_pipeline", ["fix_data_file", "fix_code"], 0.3,
                f"the project's own {exception} in its data-handling code")
    return "code_bug", ["fix_code"], 0.3, f"the project's own {exception}, raised by its code"


def _by_module(full_name: str | None, frames: list[dict]):
    places = []
    if full_name and "." in full_name:
        places.append(full_name)
    places += [frame.get("file", "") for frame in reversed(frames[-3:])]
    for place in places:
        for pattern, category, fixes in _MODULES:
            if pattern.search(place):
                return category, fixes, place.rsplit("/", 1)[-1][:80]
    return None
