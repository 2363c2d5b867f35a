"""Story: every diagnosed incident lands in its team's knowledge base, grouped by what stays the same
when the failure happens again (Sentry-style: a fine and a coarse hash, any one joins)."""
import pytest

from knowledge import services
from knowledge.grouping import signature
from knowledge.models import Problem, ProblemHash, ProblemOccurrence
from tests.knowledge.conftest import diagnosis

pytestmark = pytest.mark.django_db

OOM = {"category": "gpu_oom", "exception": "OutOfMemoryError"}


def oom_message(size, gpu, free):
    return f"CUDA out of memory. Tried to allocate {size} GiB. GPU {gpu} has a total capacity of 79.15 GiB of which {free} GiB is free."


def test_it_groups_two_incidents_of_one_failure_into_one_problem(alpha, recorded_incident):
    first = recorded_incident(alpha)
    second = recorded_incident(alpha)
    problem = Problem.objects.get()
    assert problem.occurrences == 2
    assert set(problem.incidents.values_list("pk", flat=True)) == {first.pk, second.pk}
    assert problem.title == "KeyError: 'conversations'"
    assert (problem.category, problem.exception, problem.status) == ("data_schema", "KeyError", "open")
    assert problem.first_seen == first.created_at and problem.last_seen == second.created_at
    assert set(problem.hashes.values_list("kind", flat=True)) == {"fine", "coarse"}


def test_it_groups_runs_that_differ_in_paths_hosts_ranks_sizes_and_timings(alpha, recorded_incident):
    frames_a = [{"file": "/home/ana/proj/train.py", "line": 88, "function": "main"},
                {"file": "/opt/env/lib/python3.11/site-packages/torch/autograd/__init__.py", "function": "backward"}]
    frames_b = [{"file": "/scratch/u7/run3/train.py", "line": 91, "function": "main"},
                {"file": "/usr/lib/python3/dist-packages/torch/autograd/__init__.py", "function": "backward"}]
    recorded_incident(alpha, oom_message("3.26", 5, "2.19"), frames=frames_a, failing_rank=5, job_id="j1",
                      cluster="gpu-node-07", **OOM)
    recorded_incident(alpha, oom_message("1.96", 2, "1.02"), frames=frames_b, failing_rank=2, job_id="j2",
                      cluster="dgx12", **OOM)
    problem = Problem.objects.get()
    assert problem.occurrences == 2
    # The title is made of masked parts only: neither job's numbers leak into it.
    assert "3.26" not in problem.title and "1.96" not in problem.title
    assert problem.title.startswith("OutOfMemoryError: CUDA out of memory. Tried to allocate <size>. GPU <n>")


def test_it_keeps_different_failures_apart(alpha, recorded_incident):
    recorded_incident(alpha, "'alpha_field'")
    recorded_incident(alpha, "'beta_field'")
    recorded_incident(alpha, "Watchdog caught collective operation timeout", category="nccl_timeout",
                      exception="RuntimeError")
    assert sorted(Problem.objects.values_list("occurrences", flat=True)) == [1, 1, 1]


def test_the_coarse_hash_joins_a_run_whose_own_code_changed(alpha, recorded_incident):
    before = [{"file": "/w/train.py", "function": "load_rows"}]
    after = [{"file": "/w/train_v2.py", "function": "read_samples"}]
    recorded_incident(alpha, frames=before)
    recorded_incident(alpha, frames=after)
    assert signature(diagnosis(frames=before)).fine != signature(diagnosis(frames=after)).fine
    assert Problem.objects.get().occurrences == 2
    # Both fine hashes now lead to the problem.
    assert ProblemHash.objects.filter(kind="fine").count() == 2


def test_it_never_lets_two_teams_share_a_problem(alpha, bravo, recorded_incident):
    alpha_incident = recorded_incident(alpha)
    bravo_incident = recorded_incident(bravo)
    assert Problem.objects.count() == 2
    assert alpha_incident.problems.get().team == alpha
    assert bravo_incident.problems.get().team == bravo


def test_it_records_the_same_incident_only_once(alpha, recorded_incident):
    incident = recorded_incident(alpha)
    again = services.record(incident, incident.diagnosis)
    services.record(incident, incident.diagnosis)
    assert again == Problem.objects.get()
    assert again.occurrences == 1
    assert ProblemOccurrence.objects.count() == 1


def test_it_moves_a_rediagnosed_incident_to_its_new_problem(alpha, recorded_incident):
    recorded_incident(alpha)
    incident = recorded_incident(alpha)
    incident.diagnosis.data = diagnosis("'messages'")
    incident.diagnosis.save()
    services.record(incident, incident.diagnosis)
    counts = sorted(Problem.objects.values_list("title", "occurrences"))
    assert counts == [("KeyError: 'conversations'", 1), ("KeyError: 'messages'", 1)]
    assert incident.problems.get().title == "KeyError: 'messages'"


def test_it_leaves_an_incident_without_a_diagnosis_out(alpha, make_incident):
    incident = make_incident(alpha, diagnosis={})
    assert services.record(incident, incident.diagnosis) is None
    assert not Problem.objects.exists()


def test_it_survives_losing_the_race_to_create_the_problem(alpha, recorded_incident, make_incident, monkeypatch):
    recorded_incident(alpha)
    real_lookup, calls = services._lookup, []

    def stale_lookup(team_id):
        find = real_lookup(team_id)

        def lookup(kind, value):
            calls.append(1)
            # The first lookups miss, as if another worker inserted the hash just after we looked.
            return None if len(calls) <= 2 else find(kind, value)
        return lookup

    monkeypatch.setattr(services, "_lookup", stale_lookup)
    incident = make_incident(alpha, diagnosis=diagnosis())
    problem = services.record(incident, incident.diagnosis)
    assert Problem.objects.count() == 1
    assert problem.occurrences == 2


def test_a_resolved_problem_that_comes_back_is_regressed(alice, alpha, recorded_incident):
    first = recorded_incident(alpha)
    problem = first.problems.get()
    services.update(problem, user=alice, status="resolved", resolution="Convert the data.")
    assert Problem.objects.get().status == "resolved"
    recorded_incident(alpha)
    problem.refresh_from_db()
    assert problem.status == "regressed"
    assert problem.regressions == 1 and problem.regressed_at is not None
    assert problem.resolution == "Convert the data." and problem.resolved_by == alice


def test_wont_fix_stays_wont_fix_when_it_happens_again(alice, alpha, recorded_incident):
    problem = recorded_incident(alpha).problems.get()
    services.update(problem, user=alice, status="wont_fix", resolution="Known flaky node.")
    recorded_incident(alpha)
    problem.refresh_from_db()
    assert problem.status == "wont_fix" and problem.regressions == 0


def test_merge_moves_incidents_and_hashes_and_undo_puts_them_back(alice, alpha, recorded_incident):
    a1, a2 = recorded_incident(alpha, "'alpha_field'"), recorded_incident(alpha, "'alpha_field'")
    b1 = recorded_incident(alpha, "'beta_field'")
    target, source = a1.problems.get(), b1.problems.get()
    [action] = services.merge(target, [source], user=alice)
    target.refresh_from_db()
    source.refresh_from_db()
    assert target.occurrences == 3 and source.merged_into == target and source.occurrences == 0
    assert action.kind == "merge" and action.actor == alice and action.incident_ids == [b1.pk]
    # A new incident of the merged-in failure now joins the target.
    b2 = recorded_incident(alpha, "'beta_field'")
    assert b2.problems.get() == target
    services.undo(action, user=alice)
    target.refresh_from_db()
    source.refresh_from_db()
    assert source.merged_into is None
    assert set(source.incidents.values_list("pk", flat=True)) == {b1.pk}
    assert set(target.incidents.values_list("pk", flat=True)) == {a1.pk, a2.pk, b2.pk}
    assert (target.occurrences, source.occurrences) == (3, 1)
    b3 = recorded_incident(alpha, "'beta_field'")
    assert b3.problems.get() == source  # its hashes went back with it
    with pytest.raises(services.GroupingError):
        services.undo(action, user=alice)


def test_merge_refuses_another_teams_problem(alpha, bravo, recorded_incident):
    mine, theirs = recorded_incident(alpha).problems.get(), recorded_incident(bravo).problems.get()
    with pytest.raises(services.GroupingError):
        services.merge(mine, [theirs])
    assert Problem.objects.get(pk=theirs.pk).merged_into is None


def test_split_moves_chosen_incidents_to_a_new_problem_and_undo_rejoins_them(alice, alpha, recorded_incident):
    loop = [{"file": "/w/train.py", "function": "custom_loop"}]
    straggler = [{"file": "/w/train.py", "function": "sync_step"}]
    timeout = {"category": "nccl_timeout", "exception": "RuntimeError"}
    first = recorded_incident(alpha, "Timed out waiting 12000ms for send", frames=loop, **timeout)
    second = recorded_incident(alpha, "Timed out waiting 9000ms for send", frames=straggler, **timeout)
    problem = first.problems.get()
    assert second.problems.get() == problem  # joined by the coarse hash: a person knows better
    new, action = services.split(problem, [second.pk], user=alice, title="Straggler on two nodes")
    problem.refresh_from_db()
    assert (problem.occurrences, new.occurrences) == (1, 1)
    assert new.title == "Straggler on two nodes" and new.title_edited
    assert list(new.incidents.values_list("pk", flat=True)) == [second.pk]
    # The split-off incident's own (fine) hash went with it: the next straggler joins the new problem.
    third = recorded_incident(alpha, "Timed out waiting 15000ms for send", frames=straggler, **timeout)
    assert third.problems.get() == new
    with pytest.raises(services.GroupingError):
        services.split(problem, [first.pk])  # would leave the problem empty
    services.undo(action, user=alice)
    problem.refresh_from_db()
    new.refresh_from_db()
    assert set(problem.incidents.values_list("pk", flat=True)) == {first.pk, second.pk}
    assert new.merged_into == problem


def test_a_person_can_rename_a_problem_and_go_back_to_the_automatic_title(alpha, recorded_incident):
    problem = recorded_incident(alpha).problems.get()
    services.rename(problem, "  LongChat loader fed alpaca rows ")
    recorded_incident(alpha)
    problem.refresh_from_db()
    assert problem.title == "LongChat loader fed alpaca rows" and problem.title_edited
    services.rename(problem, "")
    assert problem.title == "KeyError: 'conversations'" and not problem.title_edited
