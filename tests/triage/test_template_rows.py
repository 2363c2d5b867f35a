"""A chat template refusing one rank's conversations: that rank's rows come first, and a data sample that
parses does not rule out fixing them (they parse; the template refuses their turns)."""

from __future__ import annotations

import json

from triage import diagnose

SITE = "/opt/env/lib/python3.11/site-packages"


def _log() -> str:
    lines = [f"[rank{rank}]: step 3 loss 2.1{rank}" for rank in range(3)]
    lines += [
        "[rank1]: Traceback (most recent call last):",
        '[rank1]:   File "/srv/chat/sft.py", line 70, in <module>',
        "[rank1]:     trainer.train()",
        f'[rank1]:   File "{SITE}/transformers/tokenization_utils_base.py", line 1650, in apply_chat_template',
        "[rank1]:     rendered_chat = compiled_template.render(",
        f'[rank1]:   File "{SITE}/jinja2/sandbox.py", line 401, in call',
        "[rank1]:     return __context.call(__obj, *args, **kwargs)",
        "[rank1]: jinja2.exceptions.TemplateError: unsupported role function",
        "[rank0]: RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:538] Read error "
        "[127.0.0.1]:5123: Connection reset by peer",
        "[rank2]: RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:538] Read error "
        "[127.0.0.1]:5124: Connection reset by peer",
    ]
    return "\n".join(lines) + "\n"


def test_one_ranks_refused_conversations_come_first(tmp_path):
    log = tmp_path / "sft.log"
    log.write_text(_log())
    sample = tmp_path / "rows.json"
    sample.write_text(json.dumps([{"messages": [{"role": "user", "content": "hi"},
                                                {"role": "function", "content": "{}"}]}]))
    result = diagnose([log], command="torchrun --nproc_per_node 3 sft.py", data_path=sample)
    assert (result.category, result.failing_rank) == ("data_pipeline", 1)
    first = result.fixes[0]
    assert first["kind"] == "fix_data_file"
    assert first["title"] == "Fix or drop the conversations the chat template refuses"
    assert not first.get("ruled_out")
