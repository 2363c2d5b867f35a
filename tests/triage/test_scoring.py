"""The scorer's marks: what counts as a hit for each mark, and what is not scored at all."""

from __future__ import annotations

import json

from triage_helpers import ROOT, write

from triage.scoring import BARS, CaseResult, Score, case_arguments, mark_case, score_corpus, short_exception

TRUTH = {"category": "data_schema", "root_exception": "KeyError", "root_message_contains": "Conversations",
         "failing_rank": 1, "fix_kinds": ["convert_data_format"]}


def diagnosis(**fields):
    data = {"category": "data_schema", "failing_rank": 1,
            "root_cause": {"exception": "builtins.KeyError", "message": "'conversations'"},
            "fixes": [{"kind": "convert_data_format"}, {"kind": "fix_code"}]}
    data.update(fields)
    return data


def test_it_gives_every_mark_to_a_diagnosis_that_matches_the_label():
    assert mark_case(TRUTH, diagnosis()) == dict.fromkeys(
        ["category", "exception", "message", "rank", "fix_any", "fix_first"], True)


def test_it_reads_the_short_class_name_of_an_exception():
    assert short_exception("torch.distributed.DistNetworkError: EADDRINUSE") == "DistNetworkError"
    assert short_exception("KeyError") == "KeyError"
    assert short_exception("") is None and short_exception(None) is None


def test_it_misses_each_mark_on_its_own():
    marks = mark_case(TRUTH, diagnosis(category="code_bug", failing_rank=0,
                                       root_cause={"exception": "ValueError", "message": "bad"},
                                       fixes=[{"kind": "fix_code"}, {"kind": "convert_data_format"}]))
    assert marks == {"category": False, "exception": False, "message": False, "rank": False,
                     "fix_any": True, "fix_first": False}


def test_it_wants_no_exception_where_the_label_has_none():
    truth = dict(TRUTH, root_exception=None)
    assert mark_case(truth, diagnosis(root_cause={"exception": None, "message": "conversations"}))["exception"]
    assert not mark_case(truth, diagnosis())["exception"]


def test_it_scores_only_the_marks_the_label_allows():
    truth = {"category": "host_oom", "root_exception": "KeyError", "root_message_contains": "x",
             "failing_rank": None, "fix_kinds": [], "evidence_in_log": False}
    assert mark_case(truth, {}) == {"category": False}


def test_it_passes_logs_folders_command_configs_and_data_to_the_cli(tmp_path):
    case = tmp_path / "case"
    for name in ("rank0.log", "truth.json", "command.txt", "ds_config.json", "data_sample.json", "README.md"):
        write(case / name, "{}")
    (case / "logs").mkdir()
    assert case_arguments(case) == [
        str(case / "logs"), str(case / "rank0.log"), "--command-file", str(case / "command.txt"),
        "--config", str(case / "ds_config.json"), "--data", str(case / "data_sample.json")]


def test_it_scores_a_set_through_the_real_cli_and_reports_marks_below_the_bar(tmp_path):
    good = write(tmp_path / "good" / "rank1.log",
                 "[rank1]: Traceback (most recent call last):\n"
                 "[rank1]:   File \"train.py\", line 9, in <module>\n"
                 "[rank1]:     row['conversations']\n"
                 "[rank1]: KeyError: 'conversations'\n").parent
    write(good / "truth.json", json.dumps(dict(TRUTH, fix_kinds=[])))
    unreadable = tmp_path / "empty"
    write(unreadable / "truth.json", json.dumps({"category": "storage", "failing_rank": 3}))
    score = score_corpus(tmp_path, cwd=ROOT)
    assert [result.name for result in score.results] == ["empty", "good"]
    assert score.results[1].marks["category"] and score.results[1].marks["rank"]
    # no diagnosis at all: it scores as an empty one (right only where the label names no exception)
    assert score.results[0].error and score.results[0].marks == {"category": False, "exception": True,
                                                                 "rank": False}
    assert score.rate("category") == 0.5 and score.rate("fix_any") is None
    assert "category 1/2 (50%)" in score.summary()
    assert set(score.below(BARS)) == {"category", "rank"}


def test_it_counts_a_set_without_cases_below_every_bar():
    assert set(Score(corpus="nowhere").below(BARS)) == set(BARS)
    assert not Score("one", [CaseResult("a", {"category": True}, {"category": "x"}, {})]).below(BARS)


def test_in_process_scoring_gives_the_same_diagnoses_as_the_command(tmp_path):
    # one case with a log folder, a command file and a config; one with nothing usable (an error in both)
    case = tmp_path / "tree"
    write(case / "logs" / "attempt_0" / "1" / "stderr.log",
          "Traceback (most recent call last):\n  File \"/job/train.py\", line 9, in <module>\n"
          "    row['conversations']\nKeyError: 'conversations'\n")
    write(case / "command.txt", "torchrun --nnodes 2 --node_rank 1 --nproc_per_node 4 train.py --config cfg.json")
    write(case / "config.json", json.dumps({"per_device_train_batch_size": 4}))
    write(case / "truth.json", json.dumps(TRUTH))
    write(tmp_path / "empty" / "truth.json", json.dumps({"category": "storage"}))
    by_process = score_corpus(tmp_path, cwd=ROOT)
    here = score_corpus(tmp_path, in_process=True)
    assert [r.diagnosis for r in here.results] == [r.diagnosis for r in by_process.results]
    assert [r.marks for r in here.results] == [r.marks for r in by_process.results]
    assert here.results[1].diagnosis["category"] == "data_schema"
    assert bool(here.results[0].error) and bool(by_process.results[0].error)
