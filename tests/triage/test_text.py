"""Raw log bytes become clean text: any encoding, ANSI colours, \\r rewrites; secrets never leave the engine."""

from __future__ import annotations

import json

from triage_helpers import write

from triage import diagnose
from triage.text import clean_line, mask_secrets


def test_it_masks_tokens_and_passwords_in_urls():
    text = (
        "HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz123456 WANDB_API_KEY=0123456789abcdef0123456789abcdef01234567 "
        "OPENAI sk-proj-abcdefghijklmnopqrstuvwx AKIAABCDEFGHIJKLMNOP https://bob:s3cretpass@host.example/x"
    )
    masked = mask_secrets(text)
    for secret in (
        "hf_abcdefghijklmnopqrstuvwxyz123456",
        "0123456789abcdef0123456789abcdef01234567",
        "sk-proj-abcdefghijklmnopqrstuvwx",
        "AKIAABCDEFGHIJKLMNOP",
        "s3cretpass",
    ):
        assert secret not in masked


def test_it_masks_secrets_in_everything_the_diagnosis_returns(tmp_path):
    log = write(
        tmp_path / "x.log",
        (
            "Traceback (most recent call last):\n"
            '  File "/w/train.py", line 3, in <module>\n'
            "    login(token)\n"
            "OSError: Can't load tokenizer for 'org/private'. token=hf_SECRETSECRETSECRETSECRET1234 "
            "url=https://alice:hunter2hunter2@hub.example.com/org\n"
        ),
    )
    result = diagnose([log], command="HF_TOKEN=hf_CMDSECRETCMDSECRETCMDSECRET99 torchrun train.py")
    dumped = json.dumps(result.to_dict())
    assert "hf_SECRETSECRETSECRETSECRET1234" not in dumped
    assert "hunter2hunter2" not in dumped
    assert "hf_CMDSECRETCMDSECRETCMDSECRET99" not in dumped
    assert result.category == "model_load"


def test_it_survives_binary_garbage_and_other_encodings(tmp_path):
    garbage = bytes(range(256)) * 50
    log = write(
        tmp_path / "g.log",
        garbage
        + b"\n\xff\xfe caf\xe9 \xf0\x9f\x94\xa5 emoji\n"
        + "KeyError: 'conversations' ✨\n".encode()
        + "Schlüssel\n".encode("latin-1"),
    )
    result = diagnose([log])
    assert result.category == "data_schema"


def test_it_strips_ansi_colours():
    assert (
        clean_line(b"\x1b[31mRuntimeError\x1b[0m: CUDA error: \x1b[1mmisaligned address\x1b[0m")
        == "RuntimeError: CUDA error: misaligned address"
    )


def test_it_keeps_the_last_rewrite_of_a_progress_bar():
    line = b" 10%|#         | 1/10 [00:01<00:09]\r 20%|##        | 2/10 [00:02<00:08]\r 30%|###       | 3/10"
    assert clean_line(line).strip().startswith("30%")


def test_it_finds_an_error_written_after_carriage_returns(tmp_path):
    log = write(
        tmp_path / "cr.log",
        b"  5%|5 | 5/100\r  6%|6 | 6/100\rtorch.OutOfMemoryError: CUDA out of memory. "
        b"Tried to allocate 20.00 MiB\n",
    )
    assert diagnose([log]).category == "gpu_oom"


def test_it_masks_a_block_exactly_as_line_by_line():
    from triage.text import mask_block, mask_secrets

    text = (
        "step 1 loss 0.5\n"
        "export HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz0123\n"
        "İstanbul node ok\n"
        "pushing to https://alice:s3cretpass@git.example.com/repo.git\n"
        "no secrets here\n"
    ) * 3
    expected = "".join(mask_secrets(line) for line in text.splitlines(keepends=True))
    assert mask_block(text) == expected
    assert "s3cretpass" not in mask_block(text)
    assert mask_block(text.replace("İ", "I")) == expected.replace("İ", "I")


def test_it_leaves_progress_lines_alone_and_masks_quoted_keys():
    from triage.text import mask_secrets

    progress = "[rank0]: step 12 loss=1.2 tokens/s=1843 tokenizer=LlamaTokenizerFast keys=['input_ids']"
    assert mask_secrets(progress) == progress
    assert mask_secrets('{"api_key": "abcdef123456"}') == '{"api_key": "***"}'
    assert mask_secrets("'hub_token': 'secretvalue99'") == "'hub_token': '***'"
