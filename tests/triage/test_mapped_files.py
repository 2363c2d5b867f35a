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


@pytest.mark.parametrize("size, category", [(5000, "data_corrupt"), (30000, "data_pipeline")])
def test_a_data_file_with_fewer_values_than_its_shape_is_cut_short(tmp_path, size, category):
    log = tmp_path / "run.log"
    log.write_text("\n".join([
        "Traceback (most recent call last):",
        '  File "/srv/shelf/data.py", line 61, in __getitem__',
        "    img = self.read_image(self.paths[i])",
        '  File "/srv/shelf/data.py", line 44, in read_image',
        "    return np.frombuffer(raw, dtype=np.uint8).reshape(h, w, 3)",
        f"ValueError: cannot reshape array of size {size} into shape (64,96,3)",
    ]) + "\n")
    assert diagnose([log]).category == category
