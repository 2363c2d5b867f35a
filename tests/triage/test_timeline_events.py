"""Story: the timeline's events carry their time and file, and the failing rank's deciding line is one of them."""
from tests.fixtures.logtree import write_logdir
from triage import diagnose


def _ranks(tmp_path, **kwargs):
    root = write_logdir(tmp_path, world=4, failing=3, extras=False, **kwargs)
    result = diagnose([root / "run-logs"]).to_dict()
    return result, {rank["rank"]: rank for rank in result["ranks"]}


def test_the_failing_ranks_deciding_line_is_on_its_lane(tmp_path):
    result, ranks = _ranks(tmp_path)
    assert result["failing_rank"] == 3
    root = result["root_cause"]["evidence"][0]
    lines = {(event["source"], event["line"]) for event in ranks[3]["events"]}
    assert (root["source"], root["line"]) in lines


def test_progress_events_name_their_file_and_carry_wall_clock_time(tmp_path):
    _, ranks = _ranks(tmp_path, straggler=1)
    for number, rank in ranks.items():
        progress = [e for e in rank["events"] if e["kind"] in ("progress", "last_progress")]
        assert progress and all(e["source"].endswith(f"attempt_0/{number}/stderr.log") for e in progress)
        assert all(isinstance(e["t"], float) for e in progress)
    assert ranks[1]["last_step"] == 4 and ranks[0]["last_step"] == 6  # the straggler stopped two steps early


def test_a_timestamped_first_line_has_its_time(tmp_path):
    _, ranks = _ranks(tmp_path)
    started = [e for e in ranks[0]["events"] if e["kind"] == "started"]
    assert started and isinstance(started[0]["t"], float)
