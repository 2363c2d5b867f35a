"""Story: every diagnosed incident lands in its team's knowledge base, grouped by fingerprint."""
import pytest

from knowledge import services
from knowledge.models import Problem, ProblemOccurrence

pytestmark = pytest.mark.django_db


def test_it_groups_two_incidents_with_equal_fingerprints_into_one_problem(alpha, recorded_incident):
    first = recorded_incident(alpha, "f00d" * 4)
    second = recorded_incident(alpha, "f00d" * 4)
    problem = Problem.objects.get()
    assert problem.occurrences == 2
    assert set(problem.incidents.values_list("pk", flat=True)) == {first.pk, second.pk}
    assert problem.title == "KeyError: 'conversations'"
    assert (problem.category, problem.exception, problem.status) == ("data_schema", "KeyError", "open")
    assert problem.first_seen == first.created_at and problem.last_seen == second.created_at


def test_it_keeps_different_fingerprints_apart(alpha, recorded_incident):
    recorded_incident(alpha, "aaaa" * 4)
    recorded_incident(alpha, "bbbb" * 4)
    assert sorted(Problem.objects.values_list("occurrences", flat=True)) == [1, 1]


def test_it_never_lets_two_teams_share_a_problem(alpha, bravo, recorded_incident):
    alpha_incident = recorded_incident(alpha, "cafe" * 4)
    bravo_incident = recorded_incident(bravo, "cafe" * 4)
    assert Problem.objects.count() == 2
    assert alpha_incident.problems.get().team == alpha
    assert bravo_incident.problems.get().team == bravo
    assert alpha_incident.problems.get() != bravo_incident.problems.get()


def test_it_records_the_same_incident_only_once(alpha, recorded_incident):
    incident = recorded_incident(alpha, "beef" * 4)
    again = services.record(incident, incident.diagnosis)
    services.record(incident, incident.diagnosis)
    assert again == Problem.objects.get()
    assert again.occurrences == 1
    assert ProblemOccurrence.objects.count() == 1


def test_it_moves_a_rediagnosed_incident_to_its_new_problem(alpha, recorded_incident):
    recorded_incident(alpha, "1111" * 4)
    incident = recorded_incident(alpha, "1111" * 4)
    incident.diagnosis.fingerprint = "2222" * 4
    incident.diagnosis.save()
    services.record(incident, incident.diagnosis)
    counts = dict(Problem.objects.values_list("fingerprint", "occurrences"))
    assert counts == {"1111" * 4: 1, "2222" * 4: 1}
    assert incident.problems.get().fingerprint == "2222" * 4


def test_it_leaves_an_incident_without_fingerprint_out(alpha, make_incident):
    from tests.knowledge.conftest import diagnosis

    incident = make_incident(alpha, diagnosis=diagnosis(""))
    assert services.record(incident, incident.diagnosis) is None
    assert not Problem.objects.exists()


def test_it_survives_losing_the_race_to_create_the_problem(alpha, recorded_incident, make_incident, monkeypatch):
    from knowledge.models import ProblemQuerySet
    from tests.knowledge.conftest import diagnosis

    recorded_incident(alpha, "race" * 4)
    real_first, calls = ProblemQuerySet.first, []

    def stale_first(queryset):
        calls.append(1)
        # The first lookup misses, as if another worker inserted the row just after we looked.
        return None if len(calls) == 1 else real_first(queryset)

    monkeypatch.setattr(ProblemQuerySet, "first", stale_first)
    incident = make_incident(alpha, diagnosis=diagnosis("race" * 4))
    problem = services.record(incident, incident.diagnosis)
    assert Problem.objects.count() == 1
    assert problem.occurrences == 2
