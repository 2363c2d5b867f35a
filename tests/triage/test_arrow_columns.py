"""Arrow refusing to read a file is its bytes (data_corrupt); Arrow projecting a column the file does not have is
the file's columns (data_schema)."""

from __future__ import annotations

import pytest

from tests.triage.triage_helpers import diagnose_text


@pytest.mark.parametrize("message, category", [
    ("pyarrow.lib.ArrowInvalid: No match for FieldRef.Name(tenure_days) in customer_id: int64", "data_schema"),
    ("pyarrow.lib.ArrowInvalid: Parquet magic bytes not found in footer. Either the file is corrupted or this "
     "is not a parquet file.", "data_corrupt"),
])
def test_arrow_columns_against_arrow_bytes(tmp_path, message, category):
    text = ("[rank1]: Traceback (most recent call last):\n"
            '[rank1]:   File "/srv/churn/data.py", line 80, in load_shard\n'
            "[rank1]:     table = ds.dataset(path).to_table(columns=cols)\n"
            '[rank1]:   File "pyarrow/error.pxi", line 92, in pyarrow.lib.check_status\n'
            f"[rank1]: {message}\n")
    result = diagnose_text(tmp_path, text, command="torchrun --nproc_per_node 2 train.py")
    assert (result.category, result.failing_rank) == (category, 1)
