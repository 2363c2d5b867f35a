"""What a killed process leaves (staging folders, temporary uploads, work folders, artifact files
without rows) is removed by the sweep once it is older than the grace period; nothing live is."""
import os
import time
from pathlib import Path

import pytest

from jobs.staging import staging_root, sweep_orphans, work_root
from jobs.uploads import create_incident
from tests.jobs.upload_builders import RANK_LOG, upload

pytestmark = pytest.mark.django_db


def age(path: Path, seconds: int) -> Path:
    past = time.time() - seconds
    os.utime(path, (past, past))
    return path


def test_the_sweep_removes_old_leftovers_and_keeps_live_files(alice, settings):
    incident = create_incident(team=alice.teams.get(), logs=[upload("rank0.log", RANK_LOG)])
    kept = Path(incident.artifacts.get().file.path)
    age(kept, 7200)
    orphan_dir = Path(settings.MEDIA_ROOT) / "artifacts" / "9" / "999"
    orphan_dir.mkdir(parents=True)
    orphan = orphan_dir / "0123abcd"
    orphan.write_bytes(b"x" * 10)
    age(orphan, 7200)
    fresh_orphan = orphan_dir / "fresh"
    fresh_orphan.write_bytes(b"still being written")
    old_stage = staging_root() / "upload-dead"
    old_stage.mkdir()
    (old_stage / "big.part").write_bytes(b"y" * 1000)
    age(old_stage, 7200)
    live_stage = staging_root() / "upload-live"
    live_stage.mkdir()
    old_work = work_root() / "incident-7-dead"
    old_work.mkdir()
    age(old_work, 7200)
    old_tmp = Path(settings.FILE_UPLOAD_TEMP_DIR) / "tmpabc.upload.log"
    old_tmp.write_bytes(b"z" * 100)
    age(old_tmp, 7200)

    removed = sweep_orphans()

    assert removed == {"staging": 1, "upload_tmp": 1, "work": 1, "artifacts": 1}
    assert kept.exists() and fresh_orphan.exists() and live_stage.exists()
    assert not orphan.exists() and not old_stage.exists() and not old_work.exists() and not old_tmp.exists()
