"""A memory map of a file shorter than its index says: a data file cut short (data_corrupt), or a weights file
when the map is the model's loading (model_load)."""

from __future__ import annotations

import pytest

from triage import diagnose

SITE = "/usr/local/lib/python3.10/dist-packages"


@pytest.mark.parametrize("frame, category", [
    (("/opt/lm/data/indexed.py", "_do_init", "self._buf = np.memmap(self._bin_path, mode='r', order='C')"),
     "data_corrupt"),
    ((f"{SITE}/transformers/modeling_utils.py", "from_pretrained", "state = load_state_dict(resolved_file)"),
     "model_load"),
])
def test_a_mapped_file_shorter_than_its_index(tmp_path, frame, category):
    path, function, code = frame
    log = tmp_path / "run.log"
    log.write_text("\n".join([
        "Traceback (most recent call last):",
        '  File "/opt/lm/pretrain.py", line 30, in <module>',
        "    main()",
        f'  File "{path}", line 210, in {function}',
        f"    {code}",
        f'  File "{SITE}/numpy/core/memmap.py", line 268, in __new__',
        "    mm = mmap.mmap(fid.fileno(), bytes, access=acc, offset=start)",
        "ValueError: mmap length is greater than file size",
    ]) + "\n")
    result = diagnose([log])
    assert result.category == category
