"""The run diverged: NaN/inf loss, fp16 loss scale collapse."""

from __future__ import annotations

import re

from triage.rules import HINT, ROOT, rule

RULES = [
    rule(
        "numerical.ctc_infinite",
        "numerical",
        ROOT,
        ["CTC", "ctc"],
        # a CTC loss of inf: a transcript longer than its input frames (after the model's downsampling) has no
        # alignment at all; the rows, not the optimizer (zero_infinity=True only hides them)
        r"(?i)\bctc(?:[ _]loss)?\b[^\n]{0,30}?\b(?:is|=|became|went|of)\s*[+]?inf\b",
        ["fix_data_file", "fix_config"],
        0.75,
        "the CTC loss is infinite: a transcript is longer than its input frames, so no alignment exists; drop "
        "or fix those rows (or set zero_infinity=True to skip them)",
    ),
    rule(
        "numerical.loss_scale",
        "numerical",
        ROOT,
        ["loss scale", "Loss scale"],
        r"Current loss scale already at minimum|[Ll]oss scale.{0,40}(?:at minimum|reached minimum)",
        ["fix_numerics", "enable_mixed_precision"],
        0.9,
        "fp16 training overflowed until the loss scale hit its minimum",
    ),
    rule(
        "numerical.nan",
        "numerical",
        ROOT,
        [
            "FloatingPointError",
            "oss is ",
            "oss became",
            "oss = nan",
            "oss=nan",
            "oss = inf",
            "'loss': nan",
            "'loss': inf",
            "oss: nan",
            "oss: inf",
            "oss: NaN",
            "nan loss",
            "NaN loss",
            "nan detected",
            "NaN detected",
            "returned nan",
            "detected inf",
            "detected nan",
        ],
        r"FloatingPointError|[Ll]oss (?:is|became|=) ?(?:nan|NaN|inf)\b|[Ll]oss=(?:nan|inf)\b|'loss': (?:nan|inf)|"
        # a trainer's progress line: "Loss: nan (nan)" (the value and its running mean)
        r"\b[Ll]oss: (?:nan|NaN|inf)\b|"
        r"(?:nan|NaN) (?:loss|detected)|returned nan values|detected (?:inf|nan)",
        ["fix_numerics"],
        0.7,
        "the loss became NaN/inf",
    ),
    rule(
        "numerical.grad_norm_nan",
        "numerical",
        ROOT,
        ["'grad_norm': nan", "'grad_norm': 'nan'", "grad_norm=nan", "grad_norm: nan", "'grad_norm': inf",
         '"grad_norm": NaN', '"grad_norm": nan', '"grad_norm": Infinity', '"grad_norm": inf'],
        # the Trainer's log dict: the gradient norm turned NaN (the loss often reads 0.0 from then on, since
        # the fp16 scaler skips every step); weaker than an exception, which is the root when there is one
        # (JSON log lines too: "grad_norm": NaN, as Python's json writes it)
        r"['\"]grad_norm['\"]: ['\"]?(?:nan|NaN|inf|Infinity)\b|grad_norm[=:] ?(?:nan|inf)\b",
        ["fix_numerics"],
        0.5,
        "the gradient norm became NaN/inf: training diverged (fp16 overflow, a learning rate too high)",
    ),
    rule(
        "numerical.scaler_frames",
        "numerical",
        HINT,
        ["_update_scale", "loss_scale_update", "check_overflow"],
        r"in (?:_update_scale|_overflow_check_and_loss_scale_update|check_overflow|update_scale)\b",
        ["fix_numerics"],
        0.35,
        "the failure is inside the fp16 loss scaler",
    ),
]


# a named term of the loss and its value, as a script prints them ("ce=4.78 aux=nan", "kl: nan, ce: 4.70")
_LOSS_TERM = re.compile(r"\b([A-Za-z][\w.]{0,24})\s*[=:]\s*(nan|-?inf|-?\d+(?:\.\d+)?(?:e[-+]?\d+)?)\b", re.IGNORECASE)
_NOT_A_TERM = re.compile(r"^(?:(?:global_)?steps?|epochs?|iters?|iteration|updates?|rank|batch|lr|learning_rate|grad_norm|gnorm|grad|"
                         r"micro[-_]?batch|tokens?|samples?|t|scale|loss_scale|process|v_num|"
                         r"(?:val|valid|eval|test)\w*|\w*time|cost|eta|"
                         # the total the terms add up to is not one of them
                         r"(?:train_|total_|avg_)?loss)$", re.IGNORECASE)


def non_finite_terms(message: str) -> list[str]:
    """The loss terms the message prints as NaN/inf, where at least one other term is finite (else [])."""
    terms = [(name, value.lower()) for name, value in _LOSS_TERM.findall(message) if not _NOT_A_TERM.match(name)]
    bad = {name for name, value in terms if value.lstrip("-") in ("nan", "inf")}
    good = {name for name, value in terms if value.lstrip("-") not in ("nan", "inf")}
    return sorted(bad) if bad and good - bad else []
