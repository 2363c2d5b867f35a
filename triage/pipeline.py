"""diagnose(inputs) -> Diagnosis: the pipeline sources -> scan -> decide -> fixes/timeline/fingerprint."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from triage import fixes as fix_builders
from triage import memory as memory_module
from triage.collect import Collector
from triage.commandline import (
    launch_shape,
    node_layout,
    node_offset,
    parse_command,
    parse_script,
    srun_per_node,
    with_launcher_config,
)
from triage.commandline.files import named_files
from triage.decide import Verdict, decide
from triage.diagnosis import Diagnosis, Evidence, RootCause
from triage.fingerprint import fingerprint
from triage.fixes.common import (
    config_items,
    deepspeed_config,
    lookup,
    nested_setting,
    training_configs,
    zero_offloads,
)
from triage.fixes.config_fixes import engine_in_job
from triage.fixes.memory_fixes import SEQ_KEYS
from triage.fixes.version_fixes import RENAMES
from triage.inputs import launcher_from_command, load_config, load_data_sample
from triage.limits import Limits
from triage.nodeoffsets import node_offsets
from triage.progress import furthest, phase_of_frames
from triage.rules import DEFAULT_FIXES, rereads
from triage.rules import config as config_rules
from triage.rules import data as data_rules
from triage.rules import exceptions as exception_rules
from triage.rules import numerical as numerical_rules
from triage.sources import open_sources
from triage.text import mask_deep, mask_secrets
from triage.timeline import rank_statuses

# confidence = floor + weight x slope (+ a little when the whole traceback was read), capped: a matched
# rule of weight 0.9 reads about 0.9; the unknown verdict stays at UNKNOWN_CONFIDENCE; no log is ever certain
CONFIDENCE_FLOOR = 0.35
CONFIDENCE_PER_WEIGHT = 0.6
CONFIDENCE_TRACEBACK = 0.05
CONFIDENCE_CAP = 0.97
UNKNOWN_CONFIDENCE = 0.1



def diagnose(
    paths: Sequence[str | Path],
    command: str | None = None,
    config_paths: Sequence[str | Path] = (),
    data_path: str | Path | None = None,
    limits: Limits | None = None,
    names: Mapping[str, str] | None = None,
) -> Diagnosis:
    configs = {Path(path).name: load_config(path) for path in config_paths}
    data_sample = load_data_sample(data_path) if data_path else None
    parsed = parse_command(command) if command else None
    shape = with_launcher_config(launch_shape(parsed) if parsed else None, parsed, configs)
    nproc = shape.per_node if shape and shape.stated else None
    command_world = shape.world if shape and shape.stated else None
    script = parse_script(command) if command else None
    layout = node_layout(script) if script else None
    if layout:  # one line per node, each with its own process count
        command_world = sum(count for _, count in layout.values())
    default_world = shape.world if shape and not shape.stated else None  # bare torchrun: 1, unless logs say more
    memory = memory_module.MemorySeriesCollector()
    collector = Collector(memory, tuple(getattr(memory, "LITERALS", ())), nproc, layout,
                          srun_labels_are_nodes=script is not None and srun_per_node(script),
                          node_offsets=node_offsets(paths, names))
    for source in open_sources(paths, limits, names):
        collector.add(source)
    collected = collector.finish()
    # one node's own launch line: its launcher's local ranks start at that node's first global rank
    collected.launcher.resolve_ranks(node_offset(parsed) if parsed and not layout else 0)
    world_size = _world_size(collected, command_world, default_world)
    verdict = decide(collected, world_size)
    try:
        memory_result = memory.result()
    except Exception:
        memory_result = {"series": [], "oom": None}
    diagnosis = _build(collected, verdict, world_size, command, configs, data_sample, memory_result)
    return Diagnosis.from_dict(mask_deep(diagnosis.to_dict()))


def _world_size(collected, command_world: int | None, default_world: int | None = None) -> int | None:
    """The command's stated size, unless the logs show more ranks; else what the logs say; else the
    launcher's default (bare torchrun: 1) extended to the ranks seen."""
    seen = max(collected.tracks) + 1 if collected.tracks and all(isinstance(r, int) for r in collected.tracks) else 0
    if command_world:
        return max(command_world, seen)
    facts = collected.launcher
    if facts.world_size:
        return facts.world_size
    ranks = [item.rank for item in facts.exits if item.rank is not None]
    if ranks and any(item.root_cause_block for item in facts.exits):
        # The launcher lists only the ranks that failed; every rank that logged counts too.
        return max([*ranks, *collected.tracks]) + 1
    if default_world:
        return max(default_world, seen)
    return None


def _build(
    collected, verdict: Verdict, world_size, command, configs, data_sample, memory_result
) -> Diagnosis:
    """Stage 3: the diagnosis from the verdict: root cause, fixes, estimate, ranks, fingerprint, launcher check."""
    winner = _reread(verdict.candidate, verdict, command, collected, configs)
    winner = _reread_by_world(winner, verdict, world_size)
    winner = _reread_by_hints(winner, collected, verdict.failing_rank)
    winner = _reread_empty_by_filter(winner, command)
    winner = _reread_past_positions(winner, verdict, command, configs)
    winner = _reread_label_count(winner, verdict, command, configs)
    winner = _reread_resumed_checkpoint(winner, verdict, command)
    winner = _reread_old_launch(winner, verdict, command, collected)
    if winner is not None and winner.category == "host_oom" and _offload_shown(collected, command, configs):
        # the job keeps optimizer states or parameters in host RAM: the fix order and the fix itself say so
        winner = replace(winner, facts={**winner.facts, "offload_shown": True})
    if winner is not None and winner.category == "data_schema" and data_sample is not None:
        winner = _read_as(winner, data_rules.header_among_rows(verdict.message, data_sample))
    if winner is None:
        category, confidence, kinds, facts, rule_id = "unknown", UNKNOWN_CONFIDENCE, [], {}, None
    else:
        category, rule_id, facts = winner.category, winner.rule_id, dict(winner.facts)
        filters = [hit for hit in collected.hits if hit.rule.id == "data.filtered_to_nothing"]
        if category == "data_pipeline" and filters:
            facts["filter_line"] = (filters[-1].text or "")[:300]  # the log's own count: the fix relaxes its limit
        kinds = _fix_kinds(winner, collected, verdict, command, configs, world_size)
        confidence = round(
            min(CONFIDENCE_CAP, CONFIDENCE_FLOOR + winner.weight * CONFIDENCE_PER_WEIGHT
                + (CONFIDENCE_TRACEBACK if verdict.root_traceback else 0.0)), 2
        )
    evidence = _evidence(verdict)
    frames = _frame_names(collected)
    context = fix_builders.FixContext(
        category=category,
        command=command,
        configs=configs,
        exception=verdict.exception,
        message=verdict.message,
        evidence=[item.text for item in evidence],
        rule_id=rule_id,
        world_size=world_size,
        frames=frames,
        memory={"series": memory_result.get("series", []), "oom": memory_result.get("oom")},
        data_sample=data_sample,
        facts=facts,
    )
    launcher_rank, wrong, reason = _launcher_check(collected, verdict)
    return Diagnosis(
        category=category,
        confidence=confidence,
        summary=mask_secrets(_summary(category, verdict, winner)),
        launcher=_launcher(collected, command),
        world_size=world_size,
        failing_rank=verdict.failing_rank,
        root_cause=_root_cause(verdict, evidence),
        ranks=rank_statuses(collected, verdict, world_size),
        fixes=_fixes(kinds, context) if kinds else [],
        memory={"series": memory_result.get("series", []),
                "estimate": _estimate(command, configs, facts, category, memory_result, world_size, frames, evidence)},
        fingerprint=fingerprint(
            category,
            rule_id,
            verdict.exception,
            verdict.message,
            verdict.root_traceback.frames if verdict.root_traceback else None,
        ),
        rule_id=rule_id,
        evidence=evidence,
        launcher_root_cause_rank=launcher_rank,
        launcher_verdict_wrong=wrong,
        launcher_verdict_reason=reason,
        facts=facts,
    )


def _read_as(winner, meant):
    """The winner under another reading (category, fixes, summary), or as it was when there is none."""
    if meant is None:
        return winner
    return replace(winner, category=meant[0], fixes=list(meant[1]), summary=meant[2])


# a JSON Lines reader: one record parsed per line (a config is parsed whole, once)
_PARSES_A_LINE = re.compile(r"json\.loads\(\s*(?:line|ln|l|raw|row|rec|record|text_line)\b|"
                            r"for\s+\w+\s+in\s+\w+.*json\.loads\(")


def _reread(winner, verdict: Verdict, command: str | None, collected=None, configs=None):
    """The winner, reinterpreted by what the launch command shows: a parse error in the config file it
    names, a division by a setting it gives as 0."""
    if winner is None or (not command and not configs):
        return winner
    cmd = parse_command(command or "")
    meant = None
    if winner.category == "data_corrupt":
        frames = list(verdict.root_traceback.frames) if verdict.root_traceback else []
        configs, data = named_files(cmd)
        reads_rows = exception_rules.reading_data(frames) or any(
            _PARSES_A_LINE.search(str(frame.get("code", ""))) for frame in frames)
        meant = config_rules.unreadable_config(verdict.exception, reads_rows, configs, data)
    elif winner.rule_id == "config.ranks_built_different_models":
        meant = config_rules.models_differ_on_one_node(_one_node(cmd, command) or _part_of_a_node(
            cmd, verdict.failing_rank, _differing_ranks(collected)))
    elif winner.category == "code_bug":
        frames = list(verdict.root_traceback.frames) if verdict.root_traceback else []
        flag_zeros = [flag.key for flag in cmd.script_flags if (flag.value or "").strip() in ("0", "0.0")]
        config_zeros = list(_zero_settings_on_the_line(configs, frames))
        zeroed = config_rules.zero_setting(verdict.exception, flag_zeros, config_zeros)
        if zeroed is not None:
            winner = replace(winner, facts={**winner.facts, "zero_settings": (flag_zeros + config_zeros)[:3]})
        meant = zeroed or config_rules.checkpointing_without_input_grads(
            winner.rule_id, verdict.message, {flag.key for flag in cmd.script_flags})
        if meant is None and winner.rule_id == "code.shapes" and _EMPTY_SIZE.search(verdict.message or "") \
                and _zero3_job(cmd, configs):
            meant = config_rules.PARTITIONED_WEIGHTS
            winner = replace(winner, facts={**winner.facts, "partitioned_weights": True})
        if meant is None and exception_rules.own_model_raised(frames):
            sizes = _size_settings(configs)
            meant = config_rules.sizes_set_by_config(winner.rule_id, verdict.message, sizes)
            if meant is not None:
                winner = replace(winner, facts={**winner.facts, "size_settings": sizes[:4]})
    return _read_as(winner, meant)


def _reread_past_positions(winner, verdict: Verdict, command: str | None, configs):
    """An input past the model's positions, read again against the job's length setting."""
    if winner is None or winner.rule_id != "code.shapes" or winner.category != "data_pipeline":
        return winner
    limit = config_rules.position_limit(verdict.message)
    if limit is not None:
        winner = replace(winner, facts={**winner.facts, "max_positions": limit})
    setting, value = _job_setting(command, configs, SEQ_KEYS)
    return _read_as(winner, config_rules.length_past_positions(limit, setting, value) if setting else None)


def _reread_label_count(winner, verdict: Verdict, command: str | None, configs):
    """A class label past the head, read again against the job's class count."""
    if winner is None or verdict.exception != "IndexError" or "out of bounds" not in (verdict.message or ""):
        return winner
    setting, value = _job_setting(command, configs, config_rules.LABEL_COUNT_KEYS)
    return _read_as(winner, config_rules.labels_past_head(verdict.message, setting, value) if setting else None)


# the run loads its own earlier state: a library's resume path, or the script's own resume code
_RESUME_FRAME = re.compile(r"resum|restore_(?:run|state|train|checkpoint|ckpt)|_load_from_checkpoint|_load_optimizer_and_scheduler|_load_rng_state|"
                           r"_load_zero_checkpoint|load_optimizer_state|_load_checkpoint\b", re.IGNORECASE)
# a launch that resumes: --resume PATH, --resume_from_checkpoint PATH, RESUME=PATH (not a false/none value)
_RESUME_SETTING = re.compile(r"(?:--|\b)resume(?:_from_checkpoint|_from|-from|_ckpt|_path)?(?:[=\s]+)"
                             r"(?!(?:false|none|no|0|\"\"|'')(?:\s|$))\S", re.IGNORECASE)


def _reread_resumed_checkpoint(winner, verdict: Verdict, command: str | None):
    """A checkpoint that reads as cut short or damaged while the run resumes from its own earlier save: the
    save did not finish (preempted, the disk filled, a copy still running), which is the storage's doing, not
    a model that cannot be loaded. Loading pretrained weights keeps its model_load reading."""
    if winner is None or winner.rule_id != "model_load.corrupt_checkpoint" or winner.category != "model_load":
        return winner
    frames = list(verdict.root_traceback.frames) if verdict.root_traceback else []
    in_frames = any(_RESUME_FRAME.search(f"{frame.get('function', '')} {frame.get('code', '')}") for frame in frames)
    if not in_frames and not _RESUME_SETTING.search(command or ""):
        return winner
    winner = replace(winner, facts={**winner.facts, "resumed_checkpoint": True})
    return _read_as(winner, ("storage", ("fix_path", "free_disk"),
                             "the checkpoint the run resumes from is cut short or damaged: its save did not finish "
                             "(the job was stopped mid-save, the disk filled, or a copy was still running); resume "
                             "from the previous complete checkpoint and make saves atomic"))


_OLD_LAUNCH = re.compile(r"-m\s+torch\.distributed\.launch\b")
_USE_ENV = re.compile(r"--use[-_]env\b")


def _reread_old_launch(winner, verdict: Verdict, command: str | None, collected):
    """The script reads LOCAL_RANK from the environment, and the job was started with the old
    `python -m torch.distributed.launch` without --use_env: that launcher passes --local_rank as an argument
    instead, so the launch command is what to change (not a process started without any launcher)."""
    if winner is None or winner.category != "rendezvous" or verdict.exception != "KeyError" \
            or "LOCAL_RANK" not in (verdict.message or ""):
        return winner
    launch = command or collected.launcher.state.get("old_launch_command") or ""
    if not _OLD_LAUNCH.search(launch) or _USE_ENV.search(launch):
        return winner
    winner = replace(winner, facts={**winner.facts, "old_launch_without_env": True})
    return _read_as(winner, ("config_invalid", ("fix_config", "fix_code"),
                             "the old torch.distributed.launch passes --local_rank as an argument and sets LOCAL_RANK "
                             "only with --use_env: add --use_env (or launch with torchrun), or read --local_rank"))


def _job_setting(command: str | None, configs, keys: tuple[str, ...]) -> tuple[str | None, str | None]:
    """(name, value) of the first of these settings the command or a training config sets, as the fixes read it."""
    context = fix_builders.FixContext(category="", command=command, configs=configs or {})
    cmd = parse_command(command or "")
    for setting in keys:
        value, _ = lookup(context, cmd, (setting,))
        if value is not None:
            return setting, value
    # a team's config nests its settings in sections (data: {max_len: 320})
    for setting in keys:
        nested = nested_setting(context, (setting,))
        if nested is not None:
            return setting, nested[2]
    return None, None


def _zero_settings_on_the_line(configs, frames: list[dict]) -> dict[str, str]:
    """Settings of the job's config files that are 0 and that the raising line of the script's own code names
    (`s * warmup ** -1.5` with `warmup: 0`): {name: "0"}."""
    code = exception_rules.own_code(frames)
    if not code or not configs:
        return {}
    words = set(re.findall(r"[A-Za-z_]\w*", code))
    return {str(key): "0" for key, value in config_items(dict(configs))
            if isinstance(value, int | float) and not isinstance(value, bool) and value == 0
            and _named_on_the_line(str(key), words)}


# a size of 0 in a shape mismatch: a ZeRO-3 parameter outside a gather is an empty placeholder
_EMPTY_SIZE = re.compile(r"size of tensor \w \(0\)|shapes cannot be multiplied \(\d+x0 and|and 0x\d+\)")
_ZERO3_NAME = re.compile(r"z(?:ero)?[-_]?3|stage[-_]?3", re.IGNORECASE)


def _config_context(configs):
    """The job's configs as the fix builders' readers take them (training_configs, deepspeed_config)."""
    return fix_builders.FixContext(category="", configs=configs or {})


def _zero3_job(cmd, configs) -> bool:
    """The job runs DeepSpeed ZeRO stage 3: its DeepSpeed or accelerate config says so, or the file it names does."""
    name, conf = deepspeed_config(_config_context(configs), cmd)
    zero = (conf or {}).get("zero_optimization") if isinstance(conf, dict) else None
    if isinstance(zero, dict) and str(zero.get("stage")) == "3":
        return True
    for _, other in config_items(dict(configs or {})):
        if isinstance(other, dict) and str(other.get("zero_stage")) == "3":
            return True
    return bool(name and _ZERO3_NAME.search(str(name).rsplit("/", 1)[-1]))


def _size_settings(configs) -> list[str]:
    """The settings of the job's training configs that size a layer or a tensor (integers or lists of them),
    the model's own section first (`model: {edge_dim: 6}` before `data: {image_size: 128}`)."""
    found: list[tuple[bool, str]] = []

    def walk(node, in_model: bool, depth: int) -> None:
        if depth > 8 or not isinstance(node, Mapping):
            return
        for key, value in list(node.items())[:500]:
            name = str(key)
            sized = isinstance(value, int) and not isinstance(value, bool) or (
                isinstance(value, list) and value and all(isinstance(item, int) for item in value))
            if sized and config_rules.SIZE_KEY.search(name) and not config_rules.NOT_A_LAYER_SIZE.search(name):
                found.append((not in_model, name))
            walk(value, in_model or bool(_MODEL_SECTION.search(name)), depth + 1)

    for _, conf in training_configs(_config_context(configs)):
        walk(conf, False, 0)
    return list(dict.fromkeys(name for _, name in sorted(found, key=lambda item: item[0])))


_MODEL_SECTION = re.compile(r"model|net|arch|encoder|decoder|backbone|head", re.IGNORECASE)


def _named_on_the_line(key: str, words: set[str]) -> bool:
    """The setting's name, or its stem (`warmup` for `warmup_steps`, `save_every` for `save_every_steps`), is a
    word of the line."""
    return key in words or any(len(word) >= 4 and (key.startswith(word + "_") or word.startswith(key + "_"))
                               for word in words)


def _differing_ranks(collected) -> set[int]:
    """The ranks that DDP told their model's shapes differ from rank 0's."""
    if collected is None:
        return set()
    return {hit.rank for hit in collected.hits
            if hit.rule.id == "config.ranks_built_different_models" and hit.rank is not None}


def _part_of_a_node(cmd, rank: int | None, differing: set[int]) -> bool:
    """Only some ranks of one node built another model: the node's files are the same for all of its ranks, so
    each rank sized its model by something of its own (a shard's labels), not by a file that differs by node."""
    shape = launch_shape(cmd)
    per_node = shape.per_node if shape.stated else None
    if rank is None or not per_node or per_node < 2 or not differing:
        return False
    node = set(range(rank - rank % per_node, rank - rank % per_node + per_node)) - {0}
    return bool(node - differing) and differing <= node | {rank}


def _one_node(cmd, command: str) -> bool:
    """The command is one launch (torchrun, accelerate, deepspeed, no wrapper) that states its process count
    and runs one node."""
    shape = launch_shape(cmd)
    return (len(parse_script(command).launches) == 1 and shape.stated and shape.nodes == 1
            and cmd.launcher in ("torchrun", "accelerate", "deepspeed") and not cmd.wrappers)


def _reread_by_world(winner, verdict: Verdict, world_size: int | None):
    """The winner, reinterpreted by the job's size: a numbered part missing only on the last rank."""
    if winner is None or winner.category not in ("storage", "data_corrupt", "data_pipeline"):
        return winner
    meant = config_rules.rank_beyond_prepared_parts(verdict.exception, verdict.message, verdict.failing_rank,
                                                    world_size)
    return _read_as(winner, meant)


def _reread_by_hints(winner, collected, failing_rank: int | None):
    """The winner, reinterpreted by a hint line elsewhere in the log, or on the first failing rank's own
    lines (rules/rereads.py)."""
    if winner is None:
        return None
    own = {hit.rule.id for hit in collected.hits if failing_rank is not None and hit.rank == failing_rank}
    meant = rereads.reread(winner.rule_id, winner.category, {hit.rule.id for hit in collected.hits}, own)
    if meant is not None and meant is rereads.EMPTY_RANK_DATA:
        winner = replace(winner, facts={**winner.facts, "rank_data_empty": True})
    return _read_as(winner, meant)


# a launch setting that filters rows by a limit (min_caption_words=5, --max_len 512), with its value when it has one
_FILTER_LIMIT = r"(?:^|[\s-])(?:min|max)_\w*(?:words|len|length|chars|tokens|score)"
_FILTER_SETTING = re.compile(_FILTER_LIMIT + r"\b|(?:^|[\s-])filter\w*[=\s]", re.IGNORECASE)
_FILTER_VALUE = re.compile(_FILTER_LIMIT + r"[=\s]+\d+", re.IGNORECASE)


def _reread_empty_by_filter(winner, command: str | None):
    """A rank whose data came out empty, in a job whose command sets a row filter's limit: the filter left it
    nothing (data_pipeline, its limit first, which the fix relaxes), not an empty file."""
    if winner is None or not command or not winner.facts.get("rank_data_empty"):
        return winner
    if not _FILTER_SETTING.search(command):
        return winner
    value = _FILTER_VALUE.search(command)
    if value is not None:
        winner = replace(winner, facts={**winner.facts, "filter_line": value.group(0).strip(" -")})
    return _read_as(winner, ("data_pipeline", ("fix_config", "fix_data_file"),
                             "the rank its peers waited for had no rows left after the command's filter setting, so "
                             "it never reached their collective: relax the filter's limit (or rebalance the shards)"))


def _launcher(collected, command) -> str:
    return (
        (collected.launcher.launchers[0] if collected.launcher.launchers else None)
        or launcher_from_command(parse_command(command) if command else None)
        or _launcher_from_frames(collected)
    )


def _root_cause(verdict: Verdict, evidence: list[Evidence]) -> RootCause | None:
    """The originating exception: with a matched rule, its rank and the evidence that decided; without
    one, whatever the log raised (the floor: never 'unknown' without the exception the log holds)."""
    winner, tb = verdict.candidate, verdict.root_traceback
    if winner is None and tb is None and verdict.death is not None:
        # no exception anywhere: how the launcher saw the rank end is the root the log holds
        return RootCause(rank=verdict.failing_rank, exception=None, message=verdict.message, frames=[],
                         evidence=evidence[:1])
    if winner is None and tb is None:
        return None
    frames = [
        {key: frame[key] for key in ("file", "line", "function") if key in frame} for frame in (tb.frames if tb else [])
    ][-30:]
    if winner is None:
        rank = verdict.failing_rank
        evidence = [Evidence(item["source"], item["line"], item["text"][:1000]) for item in tb.evidence()]
    else:
        rank = winner.rank if winner.rank is not None else verdict.failing_rank
        evidence = evidence[:6]
    return RootCause(
        rank=rank, exception=verdict.exception, message=(verdict.message or "")[:2000] or None,
        frames=frames, evidence=evidence,
    )


def _fixes(kinds: list[str], context) -> list[dict]:
    try:
        return fix_builders.build_fixes(kinds, context)
    except Exception:  # concrete fixes are a bonus; the kinds and reasons must survive a builder bug
        return [
            {"kind": kind, "title": kind.replace("_", " "), "why": "", "command": None, "env": {}, "verified": None}
            for kind in kinds
        ]


def _estimate(command, configs, facts, category, memory_result, world_size, frames, evidence):
    if not _memory_matters(category, memory_result):
        return None
    try:
        return memory_module.estimate(
            command, configs, facts, oom=memory_result.get("oom"), world_size=world_size,
            frames=frames, evidence=" ".join(item.text for item in evidence)[:20000],
        )
    except Exception:  # the estimate is an extra; a model it cannot size must not cost the diagnosis
        return None


def _launcher_check(collected, verdict: Verdict) -> tuple[int | None, bool, str | None]:
    """Does the launcher's own Root Cause block name another rank than the verdict?"""
    launcher_rank = collected.launcher.root_cause_rank
    wrong = launcher_rank is not None and verdict.failing_rank is not None and launcher_rank != verdict.failing_rank
    reason = (
        f"the launcher names rank {launcher_rank} (earliest error file), but {verdict.reason}: rank {verdict.failing_rank}"
        if wrong
        else None
    )
    return launcher_rank, wrong, reason


def _frame_names(collected) -> list[str]:
    """'file in function' of the logged tracebacks' frames: which script ran (HF Trainer or a custom loop)
    and which attention kernel, for the fix builders and the memory estimate."""
    return [f"{frame.get('file', '')} in {frame.get('function', '')}"
            for tb in collected.tracebacks[:50] for frame in tb.frames][:2000]


def _memory_matters(category: str, memory_result: dict) -> bool:
    """The memory estimate belongs to memory incidents and to logs that hold memory readings."""
    return category in ("gpu_oom", "host_oom") or bool(memory_result.get("series")) or bool(memory_result.get("oom"))


def _launcher_from_frames(collected) -> str:
    files = [frame.get("file", "") for tb in collected.tracebacks[:200] for frame in tb.frames]
    joined = "\n".join(files)
    if "deepspeed/launcher" in joined or "/deepspeed/" in joined:
        return "deepspeed"
    if "accelerate/commands" in joined or "/accelerate/" in joined:
        return "accelerate"
    if "torch/distributed/run.py" in joined or "torch/distributed/launch" in joined:
        return "torchrun"
    if "slurm" in collected.launcher.launchers:
        return "slurm"
    if files and not collected.prefix_styles and not collected.launcher.exits:
        return "python"
    return "unknown"


_ARGV_LIST = re.compile(r"\[\s*('[^'\n]{1,300}'(?:,\s*'[^'\n]{0,300}'){2,200})")


def _argv_in_launcher_lines(collected) -> str | None:
    """A rank's argv as its launcher printed it (a Python list of quoted strings), as one command line."""
    for item in collected.launcher.exits[:64]:
        found = _ARGV_LIST.search(item.text or "")
        if found:
            return " ".join(re.findall(r"'([^'\n]*)'", found.group(1)))
    return None


_BATCH_ONE = re.compile(r"--(?:per_device_train_batch_size|micro_batch_size|train_micro_batch_size_per_gpu|batch_size)[= ]+1\b")
_CHECKPOINTING_ON = re.compile(r"--gradient_checkpointing(?:[= ]+(?:true|True|1))?(?:\s|$)")
_SEQ_LEN = re.compile(r"--(?:cutoff_len|model_max_length|max_seq_length|max_length|seq_length|max_len)[= ]+(\d+)")
_WORKER_FRAMES = re.compile(r"popen_fork|popen_spawn|multiprocessing|_MultiProcessingDataLoaderIter|worker", re.I)
_WORKER_FLAGS = re.compile(r"(?:--|[\s.])(?:dataloader_num_workers|preprocessing_num_workers|num_workers|num_proc|"
                           # mmcv's per-GPU loader workers (--cfg-options data.workers_per_gpu=8), a repo's threads
                           r"workers_per_gpu|nThreads|n_threads)[= ]+([1-9]\d*)")


def _shows_workers(collected, command: str | None) -> bool:
    """The run used DataLoader / preprocessing workers: a flag with a count, or the log's own lines."""
    if command and _WORKER_FLAGS.search(command):
        return True
    if any(hit.rule.id.startswith(("dataloader.", "data.parallel_map")) for hit in collected.hits):
        return True
    # the allocation that failed was a fork/spawn of a worker process
    return any(
        _WORKER_FRAMES.search(frame.get("file", "") + " " + frame.get("function", ""))
        for tb in collected.tracebacks[-50:]
        if tb.exception in ("OSError", "MemoryError", "RuntimeError")
        for frame in tb.frames[-4:]
    )


def _to_front(kinds: list[str], *front: str) -> list[str]:
    """These kinds first, in this order, then the others as they were."""
    return [*front, *[kind for kind in kinds if kind not in front]]


# functions that build optimizer states or place a model's weights on the GPU, with no activations in play
_BUILDS_STATE = re.compile(r"^_?init_group$|^_?init_state$|_(?:single|multi)_tensor_adamw?$|^_fused_adamw?$|"
                           r"initialize_optimizer_states|_configure_(?:zero_)?optimizer|_create_fp32_partitions|"
                           r"_load_state_dict_into_meta_model|set_module_tensor_to_device|^_?materialize")
_FIRST_COLLECTIVES = 3  # SeqNum: the process group's first collectives
_BULK_ELEMENTS = 1_000_000  # NumelIn: a tensor of real data, not a barrier's or a flag's single element


def _by_evidence(kinds: list[str], winner, collected, command: str | None) -> list[str]:
    """Order fix kinds by what the log and the command show: a fix they do not support moves back."""
    kinds = list(kinds)
    frames = winner.traceback.frames if winner.traceback is not None else []
    if winner.category == "gpu_oom" and any(_BUILDS_STATE.search(str(frame.get("function", ""))) for frame in frames[-12:]):
        # the GPU ran out while the optimizer built its states (AdamW's first step, ZeRO setting up its fp32
        # partitions) or while the weights were placed: no activation is involved, so the batch cannot help;
        # sharding states and weights over more GPUs (a higher ZeRO stage, FSDP full sharding, offload) does
        kinds = _to_front(kinds if "shard_more" in kinds else [*kinds, "shard_more"], "shard_more")
    if "reduce_dataloader_workers" in kinds and winner.category == "host_oom" and _shows_workers(collected, command) \
            and kinds[:1] != ["fix_config"]:
        # (where the job offloads to host RAM, that setting stays first: _fix_kinds)
        kinds = _to_front(kinds, "reduce_dataloader_workers")
    if winner.category == "gpu_oom" and (winner.facts.get("other_processes") or 0) >= 2:
        # the GPU that ran out holds several other processes of gigabytes: the ranks share one GPU (a fixed
        # device_map, no set_device), which no smaller batch fixes
        kinds = _to_front(kinds, "fix_code")
    if winner.category == "gpu_oom" and (winner.facts.get("other_processes") or 0) >= 1 and engine_in_job(
            command, [frame.get("file", "") for frame in (winner.traceback.frames if winner.traceback else [])]):
        # another process holds gigabytes on the GPU that ran out, in a job that runs an inference engine beside
        # training: the engine and a training rank share that GPU (its placement or its memory share first)
        kinds = _to_front(kinds if "fix_config" in kinds else [*kinds, "fix_config"], "fix_config")
    tb = winner.traceback
    if winner.category == "host_oom" and tb is not None and tb.frames \
            and not exception_rules.library_file(str(tb.frames[-1].get("file", ""))) \
            and (winner.facts.get("bytes") or tb.exception == "MemoryError"):
        # one allocation refused at the script's own line in the main process (a dense table, a cache of every
        # window, a buffer sized by the batch): that line first, then the batch; not the DataLoader workers
        kinds = _to_front(kinds, "reduce_batch_size", "fix_code")
        rows = _WHOLE_DATA_ARRAY.search(f"{winner.text or ''} {tb.message or ''}")
        if rows and int(rows.group(1)) >= 10_000:
            # numpy refusing an array over the whole data ("for an array with shape (356977, 432, 4)": a cache of
            # every window, a feature table): no batch size is in it; the memory the job allows it, then building
            # it in chunks (or memory-mapped), then the data that grew
            kinds = _to_front(kinds, "fix_config", "fix_code", "fix_data_file")
        if _ATTENTION_SCORES.search(str(tb.frames[-1].get("code", ""))):
            # the line computes attention scores (queries times keys): square in the sequence length, so an
            # overlong input (an unsegmented recording, a document never truncated) is what filled the memory
            kinds = _to_front(kinds, "reduce_seq_len", "fix_data_file")
    # (no command given: the launcher's own record of a rank's argv, "[ERROR] ... ['python', '-u', 'train.py', ...]
    # exits with return code", says as much about its flags)
    launch = command or _argv_in_launcher_lines(collected)
    if "reduce_batch_size" in kinds and launch and _BATCH_ONE.search(launch):
        kinds.remove("reduce_batch_size")
        for kind in ("reduce_seq_len", "enable_gradient_checkpointing", "shard_more"):
            if kind not in kinds:
                kinds.append(kind)
        if _CHECKPOINTING_ON.search(launch) and "enable_gradient_checkpointing" in kinds:
            kinds.remove("enable_gradient_checkpointing")
        long_seq = _SEQ_LEN.search(launch)
        if long_seq and int(long_seq.group(1)) >= 8192 and "reduce_seq_len" in kinds:
            kinds = _to_front(kinds, "reduce_seq_len")
        kinds.append("reduce_batch_size")  # ruled out by the log: last
    if winner.category == "nccl_timeout" and (winner.facts.get("seq_num") or 99) <= _FIRST_COLLECTIVES \
            and (winner.facts.get("numel_in") or 0) >= _BULK_ELEMENTS:
        # one of the job's first collectives, moving real data (a model's weights broadcast, the first gradient
        # all-reduce), never completed: the transport between the GPUs or nodes (P2P, the interface NCCL
        # chose) fails on bulk data, where a barrier's single element passed; no longer timeout helps
        kinds = _to_front(kinds if "set_nccl_env" in kinds else [*kinds, "set_nccl_env"], "set_nccl_env")
    if winner.category == "nccl_timeout" and (winner.facts.get("out_of_step") is not None
                                              or winner.facts.get("diverged")):
        # one rank waits elsewhere than all the others: the ranks took different paths (uneven data, a
        # rank-conditional collective), which no longer timeout fixes
        kinds = _to_front(kinds, "fix_code", "fix_data_file")
        if command and _RECIPE_RUN.search(command):
            # a framework run from its recipe: the team wrote no loop to skip a step, the recipe's data
            # settings (packing, length grouping, drop_last) gave the ranks different numbers of batches
            kinds = _to_front(kinds, "fix_config")
    if winner.category == "data_pipeline" and any(hit.rule.id == "data.filtered_to_nothing" for hit in collected.hits):
        # the log shows a filter that kept no rows: its limits are the setting to change
        kinds = _to_front(kinds, "fix_config")
    if winner.rule_id in ("dataloader.bus_error", "dataloader.bus_error_shell") and command \
            and _MEMORY_MAPPED.search(command):
        # a bus error where the job memory-maps its data files: a page past the end of a file that was cut or
        # rewritten while mapped raises SIGBUS just as a full /dev/shm does; the mapped files come first
        kinds = _to_front(kinds, "fix_data_file")
    if winner.category in ("host_oom", "gpu_oom") and _untruncated_row(collected):
        # the tokenizer warned that a row ran many times past the model's limit: that one row's activations
        # (attention over tens of thousands of tokens) filled the memory; truncate it, then look at the row
        kinds = _to_front(kinds, "reduce_seq_len", "fix_data_file")
    unknown_flag = str(winner.facts.get("flag") or "").lstrip("-").replace("-", "_")
    if "rename_flag" in kinds and unknown_flag in RENAMES:
        # a parser refusing a flag that a library release renamed: renaming it is the fix, a pin the fallback
        kinds = _to_front(kinds, "rename_flag")
    keyword = winner.facts.get("keyword")
    if "rename_flag" in kinds and "pin_versions" in kinds and keyword:
        on_command_line = bool(command) and re.search(rf"--{re.escape(str(keyword))}\b", command)
        if not on_command_line:
            # a library calling another library with a new argument: the versions disagree, no flag to rename
            kinds.remove("rename_flag")
            kinds.insert(kinds.index("pin_versions") + 1, "rename_flag")
    return kinds


def _fix_kinds(winner, collected, verdict: Verdict, command: str | None = None, configs=None,
               world_size: int | None = None) -> list[str]:
    kinds = list(winner.fixes)
    if winner.category == "host_oom" and (_offloads_to_cpu(configs or {}) or winner.facts.get("offload_shown")):
        # ZeRO offload keeps optimizer states (and parameters) in pinned host RAM: that setting is what fills it
        kinds = ["fix_config", "shard_more", "reduce_batch_size"]
    elif winner.category == "host_oom":
        # ranks move through loading, data and training together (every phase ends in a collective), so
        # the furthest phase any rank's output reached is the job's, whichever rank printed it
        phase = furthest(track.phase for track in [*collected.tracks.values(), collected.unranked])
        if phase is None:
            # no progress line said it: the frames of the tracebacks (the victims' included) do
            phase = furthest(phase_of_frames(tb.frames) for tb in collected.tracebacks)
        if phase == "loading":
            # every rank materialising the full checkpoint in RAM at once
            kinds = ["fix_config", "shard_more", "reduce_dataloader_workers"]
        elif phase == "data":
            # preprocessing (tokenize/map with num_proc workers): each worker holds its own copy of the data
            kinds = ["reduce_dataloader_workers", "reduce_batch_size", "fix_config"]
        elif phase == "training":
            # RAM that grows while steps run: the batch and the input pipeline's workers that prepare it
            # (the workers come first where the log or the command shows them: _by_evidence)
            kinds = ["reduce_batch_size", "reduce_dataloader_workers", "fix_config"]
    if winner.category == "host_oom" and _one_rank_refused_an_allocation(collected, verdict, winner, world_size):
        # ranks of a data-parallel job run the same code on the same batch size: one rank alone refused one
        # allocation of gigabytes (the others only lost it), so its own input was the outlier (a record or
        # sequence many times the usual length, a row of a packed shard); that row, and the length limit, first
        # (where the script's own line made the allocation, its buffer and the batch come first: _by_evidence)
        kinds = _to_front(kinds, "fix_data_file", "reduce_seq_len")
    if winner.rule_id == "data.empty" and kinds[:1] == ["fix_path"] and _sets_limits(command, configs):
        # an empty dataset in a job whose command or config sets length limits or filters (block_size 8192,
        # max_duration, an exclude list): those emptied it sooner than a wrong path did
        kinds = _to_front([*kinds, "fix_config"] if "fix_config" not in kinds else kinds, "fix_config")
    if winner.category in ("data_pipeline", "data_schema") and _one_rank_raised_it(collected, verdict):
        # every rank runs the same template / mapping over its own part of the data: one rank alone raising it
        # read a row the others did not have; that row first
        kinds = _to_front(kinds, "fix_data_file")
    if winner.category == "model_load" and winner.rule_id in _SHAPE_LOADS \
            and _only_some_ranks_loaded_another_shape(collected, verdict, winner):
        # every rank builds the same model from the same settings: where only some ranks (one node's) find the
        # checkpoint of another shape, their copy of the file is another model's (a stale or unsynced folder)
        kinds = _to_front(kinds, "fix_path")
    if winner.category == "numerical" and _one_rank_went_non_finite(collected, verdict, world_size):
        # the ranks of a data-parallel job hold the same weights: a loss that is not finite on one rank only
        # may have come from that rank's batch (a value the transform cannot take, an empty sequence pooled to
        # 0/0), so that rank's data is checked next after the numerics
        kinds = [*kinds[:1], "fix_data_file", *kinds[1:]]
        if _FIRST_STEP.search(verdict.message or "") or (
                verdict.failing_rank and _EARLY_STEP.search(verdict.message or "")):
            # (or in the first steps on a rank other than 0, which is not the rank that checks for all of them)
            # at the first step no update has touched the weights yet: no learning rate or optimizer made the
            # value, so the rank's batch (labels all masked, a value the model cannot take) comes first
            kinds = _to_front(kinds, "fix_data_file")
    if winner.category == "numerical" and numerical_rules.non_finite_terms(verdict.message or ""):
        # the script printed its loss by terms and one term alone is NaN/inf while the others are finite: the
        # code of that term (a log of 0, a division by an empty count) made it, not a step too large
        kinds = _to_front([*kinds, "fix_code"] if "fix_code" not in kinds else kinds, "fix_code")
    for kind in DEFAULT_FIXES.get(winner.category, []):
        if kind not in kinds:
            kinds.append(kind)
    seen, out = set(), []
    for kind in kinds:
        if kind not in seen:
            seen.add(kind)
            out.append(kind)
    return _by_evidence(out, winner, collected, command)


# a fine-tuning framework started from its recipe file (its CLI, or its module under a launcher)
_RECIPE_RUN = re.compile(r"(?:^|[\s/])(?:axolotl|llamafactory-cli|llamafactory|llmtuner|swift\s+(?:sft|rlhf|pt)|"
                         r"tune\s+run|lit-gpt|litgpt)\b")
_MEMORY_MAPPED = re.compile(r"\bmmap(?:_mode)?[=\s]+(?!false|False|0\b|none|None)\S|\bmemmap|--mmap\b|\buse_mmap\b",
                            re.IGNORECASE)


def _untruncated_row(collected) -> bool:
    """The tokenizer warned of a row at least four times the model's maximum length."""
    return any(hit.rule.id == "data.untruncated_sequence"
               and hit.facts.get("sequence_tokens", 0) >= 4 * max(hit.facts.get("model_max_tokens", 0), 1)
               for hit in collected.hits)


_FIRST_STEP = re.compile(r"\b(?:step|iteration|iter|batch)[ =:#]{0,3}0\b(?!\.)|\bfirst (?:step|batch|iteration)\b",
                         re.IGNORECASE)


# within the first steps: too few updates for a learning rate to have driven the weights to overflow on one rank
_EARLY_STEP = re.compile(r"\b(?:step|iteration|iter)[ =:#]{0,3}(?:[1-9]|1[0-9])\b(?!\.)", re.IGNORECASE)


def _one_rank_went_non_finite(collected, verdict: Verdict, world_size: int | None) -> bool:
    """The failing rank is the only rank of several that reported a numerical failure."""
    rank = verdict.failing_rank
    if rank is None or max(len(collected.tracks), world_size or 0) < 2:
        return False
    numerical = {hit.rank for hit in collected.hits if hit.rule.category == "numerical"}
    # (a peer's "Connection closed by peer" is a RuntimeError too: the cascade of the failure, not another one)
    cascades = {(hit.source, hit.line) for hit in collected.cascades}
    numerical |= {tb.rank for tb in collected.tracebacks
                  if tb.rank is not None and (tb.source, tb.exc_line) not in cascades
                  and (verdict.root_traceback is None or tb.exception == verdict.root_traceback.exception)}
    return numerical - {None} == {rank}


_WHOLE_DATA_ARRAY = re.compile(r"for an array with shape \((\d{1,12}),")
_ATTENTION_SCORES = re.compile(r"\bq\w*\s*@\s*k\w*|matmul\(\s*q\w*\s*,\s*k\w*|\bk\w*\.transpose\(\s*-[12]\s*,\s*-[12]\s*\)|"
                               r"\battn_(?:weights|scores)\s*=|\battention_scores\s*=")
_REQUESTED = re.compile(r"(?:tried to allocate|allocation of) (\d{1,15}) bytes")
_OUTLIER_BYTES = 4 * 2**30
_ALLOCATION_REFUSED = re.compile(r"can't allocate memory|[Cc]annot allocate memory|memory allocation of \d+ bytes "
                                 r"failed|std::bad_alloc|Unable to allocate")


def _one_rank_refused_an_allocation(collected, verdict: Verdict, winner, world_size: int | None) -> bool:
    """The failing rank is the only rank of several whose process refused one allocation of gigabytes itself (an
    allocator's refusal, not a process the kernel killed): a request that size for one tensor is one outlying
    input (a larger shard only grows the arrays a little: its limit is the setting)."""
    rank = verdict.failing_rank
    if rank is None or max(len(collected.tracks), world_size or 0) < 2:
        return False
    said = f"{verdict.message or ''} {winner.text or ''}"
    request = _REQUESTED.search(said)
    if not _ALLOCATION_REFUSED.search(said) or request is None or int(request.group(1)) < _OUTLIER_BYTES:
        return False
    ranks = {hit.rank for hit in collected.hits if hit.rule.category == "host_oom" and hit.rule.role == "root"}
    ranks |= {tb.rank for tb in collected.tracebacks if tb.exception == "MemoryError"}
    return ranks - {None} == {rank}


# a setting that limits or filters the rows: max_length, min_words, block_size, max_duration, exclude_days, ratio
_LIMIT_SETTING = re.compile(r"(?:^|_)(?:max|min)(?:_|$)|block_size|length|(?:^|_)len$|duration|ratio|filter|"
                            r"exclude|include|threshold|cutoff", re.IGNORECASE)


def _sets_limits(command: str | None, configs) -> bool:
    """The job's command flags or training config set a row limit or filter."""
    cmd = parse_command(command or "")
    if any(_LIMIT_SETTING.search(flag.key) for flag in cmd.script_flags):
        return True
    return any(_LIMIT_SETTING.search(str(key)) and not isinstance(value, dict | list | bool)
               for _, conf in training_configs(_config_context(configs)) for key, value in config_items(conf))


def _ranks_in_log(collected) -> set[int]:
    """The ranks whose own lines are in the log."""
    return {track for track in collected.tracks if track is not None}


def _one_rank_raised_it(collected, verdict: Verdict) -> bool:
    """Of several ranks whose output is in the log, the failing rank alone raised the root exception (a chat
    template's TemplateError on one rank's conversations)."""
    rank = verdict.failing_rank
    if rank is None or len(_ranks_in_log(collected)) < 2 or verdict.exception != "TemplateError":
        return False
    raised = {tb.rank for tb in collected.tracebacks if tb.exception and tb.exception.endswith(verdict.exception)}
    return raised - {None} == {rank}


_SHAPE_LOADS = ("model_load.state_dict", "model_load.vocab_size", "model_load.head_size_mismatch")


def _only_some_ranks_loaded_another_shape(collected, verdict: Verdict, winner) -> bool:
    """Of several ranks whose output is in the log, only some (the failing rank among them) found the checkpoint
    of another shape; the others printed lines but no such error."""
    rank = verdict.failing_rank
    seen = _ranks_in_log(collected)
    another_shape = winner.rule_id != "model_load.state_dict" or "size mismatch" in (verdict.message or "")
    if rank is None or len(seen) < 2 or not another_shape:
        return False
    loaded = {hit.rank for hit in collected.hits if hit.rule.id == winner.rule_id}
    loaded |= {tb.rank for tb in collected.tracebacks if tb.exception == verdict.exception
               and tb.message and "size mismatch" in tb.message}
    loaded -= {None}
    return rank in loaded and bool(seen - loaded)


_OFFLOAD_FLAG = re.compile(r"offload", re.IGNORECASE)


def _offload_shown(collected, command: str | None, configs=None) -> bool:
    """The log (DeepSpeed's printed config, FSDP's settings), the command, or a recipe's DeepSpeed file name shows
    the job offloading to host RAM."""
    if any(hit.rule.id == "memory.cpu_offload_on" for hit in collected.hits) or (
            command and _OFFLOAD_FLAG.search(command)):
        return True
    return any("deepspeed" in str(key).lower() and isinstance(value, str) and _OFFLOAD_FLAG.search(value)
               for key, value in config_items(dict(configs or {})))


def _offloads_to_cpu(configs: dict) -> bool:
    """A DeepSpeed config among the uploads that offloads optimizer states or parameters to host RAM."""
    return any("cpu" in zero_offloads(config).values() for config in configs.values())


def _evidence(verdict: Verdict) -> list[Evidence]:
    winner = verdict.candidate
    if winner is None:
        death = verdict.death
        return [Evidence(death.source, death.line, death.text[:1000])] if death is not None and death.source else []
    items: list[Evidence] = []
    if winner.source is not None:
        items.append(Evidence(winner.source, winner.line, winner.text[:1000]))
    tb = verdict.root_traceback
    if tb is not None:
        for item in tb.evidence():
            if not any(
                existing.line == item["line"] and existing.source == item["source"] for existing in items
            ):
                items.append(Evidence(item["source"], item["line"], item["text"][:1000]))
    for hit in winner.confirmations:
        items.append(Evidence(hit.source, hit.line, hit.text[:1000]))
    return items[:12]


_NATIVE_CRASH = ("SIGSEGV", "SIGABRT", "SIGILL", "SIGBUS", "SIGFPE")
_LINE_PREFIXES = re.compile(r"^(?:\[[^\]\n]{0,100}\]:?\s*)+")


def _summary(category: str, verdict: Verdict, winner) -> str:
    if winner is None and verdict.exception:
        return (
            f"The job raised {verdict.exception}: {(verdict.message or '')[:160]!r}, which matches no known failure "
            "family; read the evidence lines."
        )
    if winner is None and verdict.death is not None:
        signal = verdict.death.signal or ""
        native = (" A process that dies of this signal without a Python error crashed in native code (a CUDA or C++ "
                  "extension, a data library); rerun it with PYTHONFAULTHANDLER=1 to print the stack of the crash."
                  if signal in _NATIVE_CRASH else "")
        return (f"No known failure signature was found in the logs: {verdict.message}.{native}")
    if winner is None:
        return "No known failure signature was found in the logs; the engine cannot tell what went wrong."
    reporter = winner.rank if winner.rank is not None else verdict.failing_rank
    who = f"Rank {reporter}" if reporter is not None else "The job"
    what = f"raised {verdict.exception}" if verdict.exception else "failed"
    message = (verdict.message or "").strip()
    if not verdict.exception:  # a raw log line: drop its "[E0304 02:40:31 ...] [Rank 2]" prefixes
        message = _LINE_PREFIXES.sub("", message)
    if len(message) > 160:
        message = message[:157] + "..."
    detail = f" {message!r}" if message and verdict.exception else (f": {message}" if message else "")
    values = _Blank({k: v for k, v in winner.facts.items() if isinstance(v, str | int)})
    values.setdefault("signal", "a signal")
    try:
        why = winner.summary.format_map(values) if winner.summary else ""
    except (ValueError, IndexError):
        why = winner.summary
    text = f"{who} {what}{detail}"
    if why:
        text += f" - {why}"
    if verdict.failing_rank is not None and verdict.failing_rank != reporter:
        # Lead with the culprit: the loudest report is a victim's.
        return f"Rank {verdict.failing_rank} failed first ({verdict.reason}). {text}."
    if verdict.failing_rank is None and category == "nccl_timeout":
        text += f". {verdict.reason[:1].upper() + verdict.reason[1:]}" if verdict.reason else ""
    return text + "."


class _Blank(dict):
    def __missing__(self, key: str) -> str:
        return "?"
