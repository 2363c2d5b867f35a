"""Story (issue 12): the verdict in one sentence, the change to make on the first screen, evidence from the
right file, and a folder upload that keeps each rank's path."""
import tarfile
from pathlib import Path

from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from jobs import folderupload, logfiles, presenters
from jobs.models import Incident
from jobs.topfix import top_fix
from tests.pages.factories import add_artifact, sample_diagnosis


def test_the_headline_says_who_what_where_and_what_followed():
    data = sample_diagnosis(256, memory_points=5)
    assert presenters.headline(data) == (
        "Rank 137 ran out of GPU memory in the backward pass; the launcher then stopped the other 255 ranks.")
    for rank in data["ranks"]:
        if rank["rank"] != 137:
            rank["events"].append({"kind": "error", "text": "Watchdog caught collective operation timeout", "seq": 9})
    assert presenters.headline(data).endswith("; 255 ranks then timed out waiting for it.")


def test_the_headline_names_the_exception_where_it_tells_the_story_and_quotes_it_once():
    data = sample_diagnosis(2)
    headline = presenters.headline(data)
    assert headline.startswith("Rank 1 found training rows in a format the script does not expect (KeyError 'conversations')")
    assert "\"'" not in headline and headline.count("Rank 1") == 1
    data["failing_rank"] = None
    assert presenters.headline(data).startswith("The job found training rows")


def test_the_verdict_states_the_rank_once_and_puts_the_change_first(alice_client, alpha, make_incident):
    incident = make_incident(alpha, diagnosis=sample_diagnosis(2), command="torchrun --nproc_per_node=2 train_tiny.py")
    body = alice_client.get(reverse("jobs:incident_detail", args=[incident.pk])).content.decode()
    verdict = body[body.index('id="verdict"'):body.index('id="evidence"')]
    assert "First failing rank" not in verdict
    assert verdict.index('class="headline"') < verdict.index('class="raw-exception"') < verdict.index('id="top-fix"')
    top = verdict[verdict.index('id="top-fix"'):]
    assert 'id="top-fix-copy"' in top and 'data-copy-target="top-fix-copy"' in top


def test_the_top_fix_is_the_first_that_applies_with_one_thing_to_copy():
    shown = [
        {"kind": "reduce_batch_size", "title": "already done", "applicable": False, "command": "x"},
        {"kind": "increase_shm", "title": "More shared memory", "shell": ["docker run --shm-size 16g ..."]},
    ]
    top = top_fix(shown)
    assert top["title"] == "More shared memory" and top["copy"] == "docker run --shm-size 16g ..."
    assert top["copy_label"] == "Run"
    assert top_fix([]) is None


def test_evidence_comes_from_the_file_it_names_not_another_ranks_file_of_the_same_name(alpha, make_incident):
    incident = make_incident(alpha)
    for rank in range(4):
        add_artifact(incident, f"run-logs/attempt_0/{rank}/stderr.log", f"rank {rank} line\n")
    artifacts = list(incident.artifacts.all())
    artifact, _ = logfiles.find_artifact(artifacts, "logs/run-logs/attempt_0/3/stderr.log")
    assert artifact.original_name == "run-logs/attempt_0/3/stderr.log"
    assert logfiles.find_artifact(artifacts, "stderr.log") == (None, "")  # four candidates: none guessed


def test_repeated_lines_from_many_ranks_are_shown_once_with_a_count(alpha, make_incident):
    data = sample_diagnosis(2)
    data["evidence"] = [{"source": f"r{r}.log", "line": 40, "text": f"[rank{r}]: Watchdog caught collective operation "
                         f"timeout: WorkNCCL(SeqNum={r})"} for r in range(5)]
    items = presenters.evidence(data, [], with_context=False)
    assert len(items) == 1 and items[0]["repeats"] == 4


def test_a_folder_keeps_each_files_path_so_ranks_stay_apart(alice_client, alice, monkeypatch):
    import jobs.uploads

    monkeypatch.setattr(jobs.uploads, "_enqueue", lambda pk: None)
    files = [SimpleUploadedFile("stderr.log", f"[rank{r}] hello\n".encode()) for r in range(3)]
    response = alice_client.post(reverse("jobs:upload"), {
        "logs": files,
        "log_paths": [f"job/attempt_0/{r}/stderr.log" for r in range(3)],
    }, HTTP_ACCEPT="application/json")
    assert response.status_code == 201, response.content
    incident = Incident.objects.get(pk=response.json()["id"])
    assert sorted(a.original_name for a in incident.artifacts.all()) == [
        f"job/attempt_0/{r}/stderr.log" for r in range(3)]


def test_folder_paths_are_cleaned_and_a_mismatched_list_is_ignored(tmp_path: Path):
    assert folderupload.clean_path("a\\b/./c.log") == "a/b/c.log"
    assert folderupload.clean_path("../etc/passwd") == "" and folderupload.clean_path("a/\x00b") == ""
    files = [SimpleUploadedFile("x.log", b"1\n"), SimpleUploadedFile("y.log", b"2\n")]
    assert folderupload.bundle(files, ["only-one/x.log"], tmp_path) == files
    bundled = folderupload.bundle(files, ["x.log", "dir/sub/y.log"], tmp_path)
    assert bundled[0] is files[0] and bundled[1].name == "dir.tar"
    with tarfile.open(bundled[1].temporary_file_path()) as archive:
        assert archive.getnames() == ["dir/sub/y.log"]
    bundled[1].close()


def test_the_top_fix_never_writes_its_environment_twice():
    command = "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True torchrun train.py --per_device_train_batch_size 4"
    fix = {"kind": "fix_config", "title": "Grow segments", "command": command,
           "env": [("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True"), ("NCCL_DEBUG", "INFO")]}
    assert top_fix([fix])["copy"] == "NCCL_DEBUG=INFO " + command
    assert top_fix([{"kind": "set_nccl_env", "env": {"NCCL_P2P_DISABLE": "1"}}])["copy"] == "NCCL_P2P_DISABLE=1"
    converter = {"kind": "convert_data_format", "title": "Convert", "command": "torchrun train.py",
                 "shell": ["python -m triage convert-data --to sharegpt a.json b.json"]}
    assert top_fix([converter])["copy"].splitlines() == [converter["shell"][0], "torchrun train.py"]


def test_the_rank_only_link_finds_the_line_in_a_combined_log(alice_client, alpha, make_incident):
    import re

    diagnosis = sample_diagnosis(2)
    diagnosis["evidence"] = [{"source": "log.txt", "line": 6, "text": "KeyError: 'conversations'"}]
    incident = make_incident(alpha, diagnosis=diagnosis)
    from tests.pages.factories import two_rank_log

    add_artifact(incident, "log.txt", two_rank_log())
    body = alice_client.get(reverse("jobs:incident_detail", args=[incident.pk])).content.decode()
    link = re.search(r'class="rank-link" href="([^"]+)"', body).group(1).replace("&amp;", "&")
    page = alice_client.get(link).content.decode()
    assert "KeyError: &#x27;conversations&#x27;" in page and "No lines here" not in page


def test_a_per_rank_file_offers_no_rank_filter_that_would_find_nothing(alice_client, alpha, make_incident):
    diagnosis = sample_diagnosis(2)
    diagnosis["evidence"] = [{"source": "attempt_0/1/stderr.log", "line": 2, "text": "KeyError: 'conversations'"}]
    incident = make_incident(alpha, diagnosis=diagnosis)
    add_artifact(incident, "attempt_0/1/stderr.log", "Traceback (most recent call last):\nKeyError: 'conversations'\n")
    body = alice_client.get(reverse("jobs:incident_detail", args=[incident.pk])).content.decode()
    evidence = body[body.index('id="evidence"'):body.index('id="timeline-h"')]
    assert 'class="log-link"' in evidence and 'class="rank-link"' not in evidence
    assert ">rank 1</span>" in evidence  # the rank is still named, once, from the verdict
