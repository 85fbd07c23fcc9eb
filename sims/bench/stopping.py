"""How many timed repetitions each characterisation measurement takes, and the record of why.

Each replicate measures at least its share of ``characterize.repetitions``; a cheap measurement whose interval is
still wider than ``characterize.precision`` goes on (at most ``characterize.max_repetitions``), and a first
repetition that was still warming up is taken as a warm-up (:class:`sims.timing.Until`). :class:`Tally` keeps, per
step, how many repetitions its measurements took and why they stopped: the platform file's ``repetitions``.
"""

from __future__ import annotations

from typing import Any

from sims.timing import Until

#: a measurement goes past its share of the repetitions only while its timed total stays within this many
#: seconds: the cheap, noisy ones (the triad, the FMA chains, the sweep's points) get more repetitions, the long ones
#: (the GEMMs, the transposes) keep their share
EXTENSION_BUDGET_S = 0.25


def stop_rule(spec: dict[str, Any]) -> Until | None:
    """The replicate's adaptive repetitions: at least its share (``repetitions``), at most ``max_repetitions``,
    stopping once narrow to ``precision`` (None: ``repetitions`` of each, as fixed counts)."""
    if spec.get("precision") is None:
        return None
    reps = int(spec["repetitions"])
    return Until(at_least=reps, at_most=max(reps, int(spec.get("max_repetitions") or reps)),
                 precision=float(spec["precision"]), budget_s=EXTENSION_BUDGET_S)


class Tally:
    """How many timed repetitions each step's measurements took and why they stopped: the platform file's
    ``repetitions`` section (fixed counts, or an :class:`~sims.timing.Until`'s narrow / at most / budget)."""

    def __init__(self, until: Until | None) -> None:
        self.until = until
        self.steps: dict[str, dict[str, Any]] = {}

    def add(self, step: str, m: Any) -> None:
        got = self.steps.setdefault(step, {"measurements": 0, "repetitions": {}, "stopped": {}, "extra_warmups": 0})
        got["measurements"] += 1
        n = str(len(m.repetitions))
        got["repetitions"][n] = got["repetitions"].get(n, 0) + 1
        got["stopped"][m.stopped] = got["stopped"].get(m.stopped, 0) + 1
        got["extra_warmups"] += int(m.extra_warmups)

    def document(self) -> dict[str, Any]:
        u = self.until
        rule = ("fixed: each measurement's repetitions as given" if u is None else
                f"at least {u.at_least}, at most {u.at_most} timed repetitions per measurement; stopped once the 95 % "
                f"interval of the mean log time (Student's t) is within {u.precision:.3g} of it, or before one that "
                f"would take the measurement past {u.budget_s:g} s; a first repetition slower than every later one by "
                f"more than that is taken as a warm-up (at most {u.extra_warmup}) and measured again")
        return {"rule": rule, "steps": self.steps}
