"""Each rule family has a matching and a non-matching fixture (tests/triage/fixtures/rules/)."""

from __future__ import annotations

import pytest
from triage_helpers import FIXTURES

from triage import diagnose
from triage.rules import registry

RULES = FIXTURES / "rules"

# module -> (category of the matching fixture, rule id prefix, failing rank or None)
EXPECTED = {
    "data": ("data_schema", "data.", 1),
    "memory": ("gpu_oom", "memory.", 0),
    "dataloader": ("dataloader_worker", "dataloader.", None),
    "nccl": ("nccl_timeout", "nccl.", 3),
    "rendezvous": ("rendezvous", "rendezvous.", None),
    "versions": ("version_mismatch", "versions.", None),
    "config": ("config_invalid", "config.", None),
    "cuda": ("cuda_error", "cuda.", None),
    "hardware": ("hardware", "hardware.", None),
    "storage": ("storage", "storage.", None),
    "model_load": ("model_load", "model_load.", None),
    "numerical": ("numerical", "numerical.", None),
    "exceptions": ("code_bug", "exception.", None),
    "code": ("code_bug", "code.", 0),
}


@pytest.mark.parametrize("module", sorted(EXPECTED))
def test_it_recognises_the_matching_fixture(module):
    category, prefix, rank = EXPECTED[module]
    result = diagnose([RULES / f"{module}_match.log"])
    assert result.category == category
    assert result.rule_id.startswith(prefix)
    if rank is not None:
        assert result.failing_rank == rank
    assert result.root_cause is not None and result.root_cause.evidence
    assert result.fixes, "a recognised failure always proposes fixes"


@pytest.mark.parametrize("module", sorted(EXPECTED))
def test_it_stays_quiet_on_the_non_matching_fixture(module):
    result = diagnose([RULES / f"{module}_nomatch.log"])
    assert not (result.rule_id or "").startswith(EXPECTED[module][1])
    assert result.category == "unknown"


def test_it_never_lets_a_cascade_win_over_the_rank_that_broke():
    result = diagnose([RULES / "cascades_match.log"])
    assert result.category == "data_schema"
    assert result.failing_rank == 1
    statuses = {rank.rank: rank.status for rank in result.ranks}
    assert statuses[0] == "cascade"


def test_it_does_not_call_a_lone_cascade_a_root_cause():
    result = diagnose([RULES / "cascades_nomatch.log"])
    assert result.category == "unknown"


def test_it_uses_only_taxonomy_slugs():
    taxonomy = {
        "data_schema",
        "data_corrupt",
        "data_pipeline",
        "gpu_oom",
        "host_oom",
        "dataloader_worker",
        "nccl_timeout",
        "nccl_error",
        "rendezvous",
        "version_mismatch",
        "config_invalid",
        "cuda_error",
        "hardware",
        "storage",
        "model_load",
        "numerical",
        "code_bug",
        "unknown",
    }
    kinds = {
        "convert_data_format",
        "fix_data_file",
        "reduce_batch_size",
        "increase_grad_accum",
        "enable_gradient_checkpointing",
        "enable_mixed_precision",
        "shard_more",
        "reduce_seq_len",
        "reduce_dataloader_workers",
        "increase_shm",
        "increase_timeout",
        "set_nccl_env",
        "fix_rendezvous",
        "pin_versions",
        "rename_flag",
        "fix_config",
        "free_disk",
        "fix_path",
        "fix_numerics",
        "debug_cuda",
        "replace_hardware",
        "fix_code",
    }
    for rule in registry():
        assert rule.category in taxonomy, rule.id
        assert set(rule.fixes) <= kinds, rule.id


def test_it_tells_a_vocabulary_size_mismatch_from_another_bad_checkpoint(tmp_path):
    head = (
        "Traceback (most recent call last):\n"
        '  File "merge_lora.py", line 41, in <module>\n'
        "    model = PeftModel.from_pretrained(base, args.adapter)\n"
        "RuntimeError: Error(s) in loading state_dict for PeftModelForCausalLM:\n"
    )
    vocab = tmp_path / "vocab.log"
    vocab.write_text(head + "\tsize mismatch for base_model.model.model.embed_tokens.weight: copying a param "
                     "with shape torch.Size([32002, 4096]) from checkpoint, the shape in current model is "
                     "torch.Size([32000, 4096]).\n")
    other = tmp_path / "other.log"
    other.write_text(head + "\tsize mismatch for base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight: "
                     "copying a param with shape torch.Size([16, 4096]) from checkpoint, the shape in current "
                     "model is torch.Size([8, 4096]).\n")
    matched, unmatched = diagnose([vocab]), diagnose([other])
    assert (matched.rule_id, matched.fixes[0]["kind"]) == ("model_load.vocab_size", "fix_code")
    assert unmatched.category == "model_load" and unmatched.rule_id != "model_load.vocab_size"
