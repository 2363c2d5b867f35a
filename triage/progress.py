"""Progress lines (tqdm bars, step counters, NCCL INFO chatter) sampled by the scanner: each rank's
first and last progress, its step and the phase it was in (loading, data, training)."""

from __future__ import annotations

import re

from triage import rules, timestamps
from triage.collected import Collected, Hit
from triage.ranks import split_prefix
from triage.text import clean_line, decode, strip_ansi

STEP = re.compile(r"(\d+)/(\d+) \[")
# a script's own counter: "step 6 loss 0.34", "global_step=40", "iter: 120", "'step': 40"
STEP_WORD = re.compile(r"\b(?:global_step|step|iter(?:ation)?)['\"]?\s?[:=#]?\s?(\d{1,9})\b", re.I)
PHASE_LOADING = re.compile(r"Loading checkpoint shards|Loading model|from_pretrained|Loading weights", re.I)
PHASE_DATA = re.compile(
    r"Running tokenizer|Converting format|\bMap\b|Tokeniz|Generating train split|num_proc", re.I
)


def record_progress(out: Collected, source: str, lineno: int, raw: bytes, rank_hint, max_hits: int) -> None:
    text = clean_line(raw)
    prefixed = split_prefix(text)
    rank = prefixed.rank if prefixed.rank is not None else rank_hint
    if "NCCL INFO" in prefixed.text:
        out.seq += 1
        for item, _match in rules.matching(prefixed.text):
            if item.sampled and len(out.hits) < max_hits:
                out.hits.append(Hit(item, rank, source, lineno, prefixed.text[:1000], out.seq, None))
        return
    track = out.track(rank) if rank is not None else out.unranked
    step_match = STEP.search(prefixed.text) or STEP_WORD.search(prefixed.text)
    step = int(step_match.group(1)) if step_match else None
    item = (lineno, prefixed.text[:300], timestamps.parse(prefixed.text, out.year), step)
    track.progress_count += 1
    if track.first_progress is None:
        track.first_progress = item
    if track.last_progress is None or lineno >= track.last_progress[0]:
        track.last_progress = item
    # a bar redrawn with carriage returns keeps its earlier frames on the same line, and a traceback
    # printed right after a bar ends up behind its last '\r': the phase is that of the last frame saying one
    # a phase only moves forward: another node's (or file's) loading lines, read later, do not undo the
    # training this rank had reached
    for segment in _frames(raw, prefixed.text):
        phase = phase_of(segment)
        if phase is not None and _FURTHER.get(phase, 0) >= _FURTHER.get(track.phase, -1):
            track.phase = phase


PHASES = ("loading", "data", "training")  # in the order a run moves through them
_FURTHER = {name: index for index, name in enumerate(PHASES)}


def furthest(phases) -> str | None:
    """The phase furthest along of those given (None when none is)."""
    known = [name for name in phases if name in _FURTHER]
    return max(known, key=_FURTHER.__getitem__) if known else None


def phase_of(text: str) -> str | None:
    if PHASE_LOADING.search(text):
        return "loading"
    if PHASE_DATA.search(text):
        return "data"
    if STEP.search(text) or "loss" in text:
        return "training"
    return None


# functions whose presence in a traceback says what the process was doing when it died
_LOADING_FUNCTIONS = re.compile(
    r"from_pretrained|load_state_dict|_load_pretrained_model|load_checkpoint|load_model|safe_open|"
    r"^load$|_load_state_dict_into|load_shard|init_empty_weights|get_peft_model|prepare_model"
)
_TRAINING_FUNCTIONS = re.compile(
    r"backward|_inner_training_loop|training_step|train_step|train_batch|optimizer_step|_run_epoch|"
    r"fit_loop|run_training_epoch|advance|training_loop|compute_loss|get_batch_samples|^step$|"
    # DDP's own forward: the wrapped model run for a training step
    r"^_run_ddp_forward$"
)


def phase_of_frames(frames: list[dict]) -> str | None:
    """The phase a traceback's frames show: the innermost loading or training function decides."""
    for frame in reversed(frames):
        function = str(frame.get("function") or "")
        if _LOADING_FUNCTIONS.search(function):
            return "loading"
        if _TRAINING_FUNCTIONS.search(function):
            return "training"
    return None


def _frames(raw: bytes, cleaned: str) -> list[str]:
    """The line's frames in order: each '\r'-separated part as printed (a bar glued in front of a rank's
    traceback stays visible here), then the cleaned line."""
    parts = [strip_ansi(decode(part)) for part in raw.rstrip(b"\r\n")[:4096].split(b"\r") if part.strip()]
    return [*parts, cleaned] if parts else [cleaned]
