"""Every secret form, in every placement a log, command or config puts it, is masked; look-alikes are kept."""

from __future__ import annotations

import pytest

from triage.secrets import Masker, mask_secrets, safe_cut
from triage.text import mask_block as text_mask_block  # the old import keeps working

# (name, secret value that must disappear, text carrying it)
_HEX40 = "0123456789abcdef0123456789abcdef01234567"
_JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJydW5uZXIifQ.c2lnbmF0dXJlLXZhbHVlLTEyMw"
FORMS = [
    ("hf token", "hf_Zq8mWv3LkP0aRt6YuI2oNs4DfG7hJx1c", "HF_TOKEN=hf_Zq8mWv3LkP0aRt6YuI2oNs4DfG7hJx1c"),
    ("openai", "sk-proj-Vn3Kd8Qa1Zx7Lm2Pw9Rt4Ys6", "OPENAI_API_KEY is sk-proj-Vn3Kd8Qa1Zx7Lm2Pw9Rt4Ys6"),
    ("aws access key id", "AKIAQ7RTX2MZK4WPLN3B", "aws_access_key_id = AKIAQ7RTX2MZK4WPLN3B"),
    ("aws secret env", "Fq9vL2mXk8Rz3Tb7Wn1Yp5Hs0Jd4Gc6Ae2Uo8Ii",
     "AWS_SECRET_ACCESS_KEY=Fq9vL2mXk8Rz3Tb7Wn1Yp5Hs0Jd4Gc6Ae2Uo8Ii"),
    ("boto json", "Mx4Bn7Vc2Zl9Kj3Hg8Fd1Sa6Qw5Er0Ty",
     '{"AccessKeyId": "ASIAV2NC7XQ4PLMZ8RTB", "SecretAccessKey": "Mx4Bn7Vc2Zl9Kj3Hg8Fd1Sa6Qw5Er0Ty"}'),
    ("django secret key", "dj-4u!x9$kq2@lz7#pm0^vb3", "SECRET_KEY=dj-4u!x9$kq2@lz7#pm0^vb3"),
    ("github classic", "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8", "git clone with ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"),
    ("github fine-grained", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH",
     "GH=github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH"),
    ("gitlab", "glpat-x7Yq2Lp9Wm4Zr1Tk8Vb3", "token glpat-x7Yq2Lp9Wm4Zr1Tk8Vb3 used"),
    ("slack", "xoxb-1234567890-abcdefghij", "SLACK xoxb-1234567890-abcdefghij"),
    ("google api key", "AIzaSyD4k8Lm2Nq7Rs1Tv5Wx9Yz3Ab6Cd0Ef2Gh", "key AIzaSyD4k8Lm2Nq7Rs1Tv5Wx9Yz3Ab6Cd0Ef2Gh"),
    ("stripe", "sk_live_4eC39HqLyjWDarjtT1zdp7dc", "billing sk_live_4eC39HqLyjWDarjtT1zdp7dc"),
    ("jwt", _JWT, f"session {_JWT} accepted"),
    ("bearer header", "Zx81-tokvalue.Qa27", "Authorization: Bearer Zx81-tokvalue.Qa27"),
    ("bearer in dict", "Pm3Kd9Lw2Qx7Rz", "headers={'Authorization': 'Bearer Pm3Kd9Lw2Qx7Rz'}"),
    ("basic header", "dXNlcjpwYXNzd29yZA==", "authorization: Basic dXNlcjpwYXNzd29yZA=="),
    ("wandb login", _HEX40, f"wandb login {_HEX40}"),
    ("wandb relogin", _HEX40, f"$ wandb login --relogin {_HEX40}"),
    ("wandb env", _HEX40, f"WANDB_API_KEY={_HEX40}"),
    ("redis empty user", "r3disPw!", "broker redis://:r3disPw!@cache.internal:6379/0"),
    ("postgres @ and / in password", "p@ss/w0rd", "DATABASE_URL=postgres://svc:p@ss/w0rd@db.internal:5432/app"),
    ("upper-case scheme", "Hunt3rTwo", "POSTGRESQL://Admin:Hunt3rTwo@DB.EXAMPLE/prod"),
    ("mongodb srv", "m0ngoPass", "mongodb+srv://ml:m0ngoPass@cluster0.example.net/db"),
    ("db password flag", "Qv7pLx2", "python dump.py --db-password Qv7pLx2 --out x"),
    ("token flag equals", "tk_88hh22jj", "train.py --hub_token=tk_88hh22jj --push"),
    ("quoted password flag", "two words", "cli --admin-password 'two words' next"),
    ("yaml password", "Yml!pass99", "  password: Yml!pass99"),
    ("dbPassword camel", "camelPass77", "dbPassword=camelPass77"),
    ("azure account key", "Rk8+Lm2/Qx7=", "DefaultEndpointsProtocol=https;AccountName=ml;AccountKey=Rk8+Lm2/Qx7=;"),
    ("query string", "qsecret123", "GET /api?user=x&access_token=qsecret123&page=2"),
    ("client secret json", "cs-9f8e7d6c", '"client_secret": "cs-9f8e7d6c"'),
    ("pem one line", "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC",
     '"private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\\n-----END PRIVATE KEY-----\\n"'),
]


def _placements(text: str) -> list[str]:
    """Where a secret sits: alone, mid-line, in brackets, after a rank prefix, in ANSI, at the end."""
    return [
        text,
        f"[rank3]: {text}",
        f"2026-11-03 12:00:01 INFO launcher: {text} (continuing)",
        f"prefix\t{text}\tsuffix",
        f"  {text}",
        f"({text})",
        f"{text}\nnext line",
        f"line before\n{text}",
        f"{text} " * 2,
    ]


@pytest.mark.parametrize(("name", "secret", "text"), FORMS, ids=[form[0] for form in FORMS])
def test_every_form_in_every_placement_is_masked(name, secret, text):
    for placed in _placements(text):
        masked = mask_secrets(placed)
        assert secret not in masked, f"{name}: {placed!r} -> {masked!r}"
        assert text_mask_block(placed) == masked


@pytest.mark.parametrize(
    "text",
    [
        "[rank0]: step 12 loss=1.2 tokens/s=1843 tokenizer=LlamaTokenizerFast keys=['input_ids']",
        "pad_token=<pad> eos_token: </s> max_new_tokens: 512",
        "--max-tokens 4096 --pad-token 0 --num-tokens 12",
        "https://huggingface.co/meta/model/resolve/main/config.json",
        "File \"/opt/conda/lib/python3.11/site-packages/torch/distributed/run.py\", line 12",
        "key=loss value=0.23",
        "RuntimeError: CUDA error: an illegal memory access was encountered",
    ],
)
def test_look_alikes_are_kept(text):
    assert mask_secrets(text) == text


def test_pem_private_key_blocks_are_masked_across_pieces():
    body = ["MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo", "4lgOEePzNm0tRgeLezV6ffAt0gunVTLw7onL", "Rnrq0/IzW7yWR7QkrmBL"]
    text = "before\n-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(body) + "\n-----END RSA PRIVATE KEY-----\nafter\n"
    masked = mask_secrets(text)
    assert all(line not in masked for line in body)
    assert masked.count("\n") == text.count("\n")  # line numbers of the evidence stay right
    assert masked.startswith("before\n") and masked.endswith("after\n")
    masker = Masker()  # fed line by line, as the upload service does block by block
    pieces = "".join(masker.feed(line) for line in text.splitlines(keepends=True))
    assert pieces == masked


def test_a_token_in_a_very_long_line_is_cut_nowhere_near_it():
    filler = "x " * 600_000
    line = filler + "HF_TOKEN=hf_Zq8mWv3LkP0aRt6YuI2oNs4DfG7hJx1c " + filler
    cut = safe_cut(line[: len(filler) + 20])
    assert 0 < cut <= len(filler)  # before the name, so the whole secret lands in the next piece
    assert "hf_Zq8mWv3LkP0aRt6YuI2oNs4DfG7hJx1c" not in mask_secrets(line)


def test_masking_is_idempotent():
    for _, _, text in FORMS:
        once = mask_secrets(text)
        assert mask_secrets(once) == once


def test_masking_from_many_threads_at_once_gives_the_same_result():
    from concurrent.futures import ThreadPoolExecutor

    block = ("step 1 loss 2.0\n" * 2000 + "export HF_TOKEN=hf_Zq8mWv3LkP0aRt6YuI2oNs4DfG7hJx1c\n") * 20
    expected = Masker().feed_bytes(block.encode())
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda _: Masker().feed_bytes(block.encode()), range(64)))
    assert all(result == expected for result in results) and b"hf_Zq8m" not in expected


def test_the_standard_library_scan_masks_exactly_as_hyperscan(monkeypatch):
    from triage import secrets

    placed = "".join(f"{line}\n" for _, _, text in FORMS for line in _placements(text))
    block = ("step 1 loss 2.0 tokens/s=1843\n" * 50 + placed) * 3
    fast = Masker().feed_bytes(block.encode())
    monkeypatch.setattr(secrets, "_hyperscan", None)
    assert Masker().feed_bytes(block.encode()) == fast
    assert all(secret.encode() not in fast for _, secret, _ in FORMS)


def test_a_switch_under_a_secret_like_name_is_kept():
    from triage.secrets import mask_secrets

    line = "--mm_use_im_patch_token False --use_auth_token true --hub_token s3cr3t-v4lue"
    assert mask_secrets(line) == "--mm_use_im_patch_token False --use_auth_token true --hub_token ***"
