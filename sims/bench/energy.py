"""Energy parameters from metered (or trace-attached) characterisation samples.

Idle power from sleeping windows, and Choi et al.'s regression
``E = e_f N_f + e_b N_b + p_s T`` over the intensity sweep's samples. Used by
characterisation (a meter during the run) and by ``hetval attach-trace
--platform-file`` (a trace that came later). No side effects at import.
"""

from __future__ import annotations

import statistics
from typing import Any

from sims.bench import sweep
from sims.vocab import UNITS


def idle_summary(samples: list[dict[str, float | None]], method: str) -> dict[str, Any]:
    """Idle power from per-window watts (``energy_j``, ``energy_host_j``, ``energy_accel_j`` per second): medians."""

    def med(key: str) -> float | None:
        vals = [s[key] for s in samples if s[key] is not None]
        return float(statistics.median(vals)) if vals else None

    return {"value": med("energy_j"), "unit": UNITS["power"], "host": med("energy_host_j"), "accel": med("energy_accel_j"),
            "obtained": "measured", "samples_w": [s["energy_j"] for s in samples], "method": method}


def energy_fit(times: dict[int, list[float]], joules: dict[int, list[float]], n: int | dict[int, int],
               source: str) -> dict[str, Any] | None:
    """Choi et al.'s regression of the sweep's measured energy on flops, bytes and time.

    ``times`` are, per sweep point ``k``, the durations the energy readings cover, per execution: the
    metered wall-clock window divided by the executions in it; ``n`` the elements of every point, or of each. Static power is drawn for the whole
    window (barriers included), so this - not the processor's busy time - is the ``T`` of
    ``E = e_f N_f + e_b N_b + p_s T``; regressing on the busy time biases ``p_s`` upward.
    """
    F, B, T, E = [], [], [], []
    for k, ts in sorted(times.items()):
        for t, e in zip(ts, joules.get(k, []), strict=False):
            if e is not None:
                f, b = sweep.counts(n[k] if isinstance(n, dict) else n, k)
                F.append(f)
                B.append(b)
                T.append(t)
                E.append(e)
    if len(E) < 4:
        return None
    fit = sweep.fit_energy(F, B, T, E)
    fit["source"] = source
    fit["samples"] = [{"flops": f, "bytes": b, "time_s": t, "energy_j": e} for f, b, t, e in zip(F, B, T, E, strict=True)]
    return fit


def energy_parameters(fit: dict[str, Any] | None) -> dict[str, Any]:
    if fit is None:
        return {"e_f": None, "e_b": None, "p_s": None}
    common = {"obtained": "fitted", "method": f"least squares E = e_f N_f + e_b N_b + p_s T on the intensity sweep "
              f"({fit['source']})", "r2": fit["r2"], "unphysical": fit["unphysical"]}
    return {
        "e_f": {"value": fit["e_f"], "unit": UNITS["e_f"], **common},
        "e_b": {"value": fit["e_b"], "unit": UNITS["e_b"], **common},
        "p_s": {"value": fit["p_s"], "unit": UNITS["p_s"], **common},
        "energy_fit": {k: fit[k] for k in ("r2", "residuals_j", "samples", "unphysical")},
    }
