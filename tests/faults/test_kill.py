"""SIGKILL each stage of the workflow at a random point: one plain re-invocation heals everything
(tests/faults/killing.py says what is checked; benchmarks/bench_faults.py repeats it many times). The trials
run in the background beside tests that check no measurement (``kill_trials`` in tests/conftest.py)."""

from __future__ import annotations

import pytest

from tests.conftest import kill_results
from tests.faults import killing


@pytest.mark.slow
@pytest.mark.mpi
@pytest.mark.parametrize("stage", sorted(killing.STAGES))
def test_a_killed_stage_heals_in_one_plain_invocation(stage):
    done, life = kill_results()
    t = done[stage]
    assert t.killed, (f"{stage}: the process ended before the kill in each of {t.attempts} attempts "
                      f"({life[stage]:.2f} s life, the last at {t.waited_s:.2f} s)")
    assert t.healed, f"{stage}: rc {t.rc}, {t.problems}\n{t.output}"
