"""A table's column converted to numbers by pandas meets text: the data's values (data_schema); where the refused
text is a column's own name in the data sample, the file repeats its header among its rows (data_corrupt)."""

from __future__ import annotations

import json

from triage import diagnose

SITE = "/opt/env/lib/python3.11/site-packages"
LOG = f"""\
[rank1]: Traceback (most recent call last):
[rank1]:   File "/srv/ads/fit_ctr.py", line 61, in main
[rank1]:     table = Impressions(args.train_csv)
[rank1]:   File "/srv/ads/fit_ctr.py", line 30, in __init__
[rank1]:     self.x = frame[NUMERIC].astype("float32").to_numpy()
[rank1]:   File "{SITE}/pandas/core/generic.py", line 6781, in astype
[rank1]:     new_data = self._mgr.astype(dtype=dtype, errors=errors)
[rank1]:   File "{SITE}/pandas/core/dtypes/astype.py", line 187, in astype_array
[rank1]:     values = values.astype(dtype, copy=copy)
[rank1]: ValueError: could not convert string to float: '{{value}}'
"""


def _diagnose(tmp_path, value: str, sample: list[dict] | None):
    log = tmp_path / "fit.log"
    log.write_text(LOG.replace("{value}", value))
    data = None
    if sample is not None:
        data = tmp_path / "rows.json"
        data.write_text(json.dumps(sample))
    return diagnose([log], command="torchrun --nproc_per_node 2 fit_ctr.py", data_path=data)


ROWS = [{"views": "3", "dwell": "1.5", "label": "0"}, {"views": "views", "dwell": "dwell", "label": "label"}]


def test_text_in_a_numeric_column_converted_by_pandas_is_the_data(tmp_path):
    result = _diagnose(tmp_path, "n/a", None)
    assert result.category == "data_schema"
    assert result.fixes[0]["kind"] == "fix_data_file"


def test_a_column_name_among_the_values_is_a_repeated_header(tmp_path):
    result = _diagnose(tmp_path, "views", ROWS)
    assert result.category == "data_corrupt"
    assert [fix["kind"] for fix in result.fixes][:1] == ["fix_data_file"]


def test_other_text_with_a_sample_stays_the_values_type(tmp_path):
    result = _diagnose(tmp_path, "n/a", ROWS)
    assert result.category == "data_schema"
