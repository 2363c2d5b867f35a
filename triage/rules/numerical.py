"""The run diverged: NaN/inf loss, fp16 loss scale collapse."""

from __future__ import annotations

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
            "nan loss",
            "NaN loss",
            "nan detected",
            "NaN detected",
            "returned nan",
            "detected inf",
            "detected nan",
        ],
        r"FloatingPointError|[Ll]oss (?:is|became|=) ?(?:nan|NaN|inf)\b|[Ll]oss=(?:nan|inf)\b|'loss': (?:nan|inf)|"
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
