"""Adaptive repetitions (sims.timing.Until): when a measurement stops, and the platform file's record of why."""

from __future__ import annotations

import itertools

import pytest

from sims.bench.stopping import Tally, stop_rule
from sims.timing import Until, measure


def test_a_tight_measurement_stops_at_its_share():
    u = Until(at_least=3, at_most=6, precision=0.05, budget_s=10.0)
    assert u.verdict([[1.0, 1.001]], 0) is None  # below the share
    assert u.verdict([[1.0, 1.001, 0.999]], 0) == "narrow"


def test_a_noisy_measurement_goes_on_to_its_cap():
    u = Until(at_least=3, at_most=5, precision=0.05, budget_s=10.0)
    series = [1.0, 1.3, 0.8]
    assert u.half_width(series) > 0.05
    assert u.verdict([series], 0) is None
    assert u.verdict([series + [1.2]], 0) is None
    assert u.verdict([series + [1.2, 0.9]], 0) == "at most"


def test_a_long_measurement_keeps_its_share():
    u = Until(at_least=3, at_most=6, precision=0.05, budget_s=2.0)
    assert u.verdict([[0.5, 0.8, 0.6]], 0) == "budget"  # a fourth would take it past 2 s


def test_every_judged_rank_must_be_narrow():
    u = Until(at_least=3, at_most=6, precision=0.05, budget_s=10.0)
    assert u.verdict([[1.0, 1.0, 1.0], [1.0, 1.5, 0.7]], 0) is None


def test_a_slow_first_repetition_is_taken_as_a_warm_up_once():
    u = Until(at_least=3, at_most=6, precision=0.05, budget_s=10.0, extra_warmup=1)
    assert u.verdict([[2.0, 1.0, 1.01]], 0) == "warm-up"
    assert u.verdict([[2.0, 1.0, 1.01]], 1) is None  # taken once already: now it is noise to repeat past


def test_the_half_width_is_students():
    # two samples a factor e apart: log sd = 1/sqrt(2); t(0.975, 1) = 12.706
    import math

    u = Until()
    assert u.half_width([1.0, math.e]) == pytest.approx(math.expm1(12.7062 * (1 / math.sqrt(2)) / math.sqrt(2)),
                                                        rel=1e-3)
    assert u.half_width([1.0]) == math.inf


@pytest.mark.parametrize("bad", [dict(at_least=0), dict(at_least=4, at_most=3), dict(precision=0.0),
                                 dict(budget_s=-1.0)])
def test_an_impossible_rule_is_refused(bad):
    with pytest.raises(ValueError, match="Until needs"):
        Until(**bad)


def _clocked(monkeypatch, durations):
    """measure() under a clock whose every timed region lasts the next of ``durations``."""
    import sims.timing as timing

    it = iter(durations)
    now = itertools.count()
    state = {"t": 0.0}

    def perf_counter():
        next(now)
        return state["t"]

    def work():
        state["t"] += next(it)

    monkeypatch.setattr(timing.time, "perf_counter", perf_counter)
    return work


def test_measure_stops_once_narrow(monkeypatch):
    from mpi4py import MPI

    work = _clocked(monkeypatch, [9.0] + [1.0, 1.001, 0.999] + [5.0] * 10)
    m = measure(MPI.COMM_SELF, work, lambda: None, 1, 3, 1.0,
                until=Until(at_least=3, at_most=6, precision=0.05, budget_s=100.0))
    assert [round(r.own_s, 3) for r in m.repetitions] == [1.0, 1.001, 0.999]
    assert m.stopped == "narrow" and m.extra_warmups == 0


def test_measure_redoes_a_first_repetition_still_warming_up(monkeypatch):
    from mpi4py import MPI

    work = _clocked(monkeypatch, [1.0] + [3.0, 1.0, 1.0, 1.0] + [5.0] * 10)
    m = measure(MPI.COMM_SELF, work, lambda: None, 1, 3, 1.0,
                until=Until(at_least=3, at_most=6, precision=0.05, budget_s=100.0))
    assert [r.own_s for r in m.repetitions] == [1.0, 1.0, 1.0]
    assert m.extra_warmups == 1 and m.stopped == "narrow"


def test_measure_without_a_rule_keeps_fixed_counts(monkeypatch):
    from mpi4py import MPI

    work = _clocked(monkeypatch, [1.0, 3.0, 1.0, 2.0])
    m = measure(MPI.COMM_SELF, work, lambda: None, 0, 4, 1.0)
    assert len(m.repetitions) == 4 and m.stopped == "fixed"


def test_the_tally_says_how_many_and_why():
    from sims.timing import Measurement, Repetition

    t = Tally(stop_rule({"repetitions": 3, "max_repetitions": 6, "precision": 0.05}))
    t.add("ceilings", Measurement([Repetition(1.0, [1.0])] * 3, stopped="narrow"))
    t.add("ceilings", Measurement([Repetition(1.0, [1.0])] * 6, stopped="at most", extra_warmups=1))
    doc = t.document()
    assert doc["steps"]["ceilings"] == {"measurements": 2, "repetitions": {"3": 1, "6": 1},
                                        "stopped": {"narrow": 1, "at most": 1}, "extra_warmups": 1}
    assert "at least 3, at most 6" in doc["rule"]
    assert stop_rule({"repetitions": 3, "precision": None}) is None
    assert "fixed" in Tally(None).document()["rule"]
