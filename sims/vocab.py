"""The project's vocabulary, in one place: processors, workload partitions, FDM phases and designs, units.

Pure data and pure functions (no NumPy, no MPI): ``sims`` and ``analysis``
both import it, and the config schema's enums are checked against it by a test
(``tests/test_vocab.py``). Terms are the source papers' own (PerDome, PeaPaw,
PEACH, the FDM-Seismology thesis).
"""

from __future__ import annotations

import math
import re

#: A study, case, platform or run name: it becomes a directory or a file name, so it is one path component of
#: letters, digits, '_', '.' and '-' that starts with a letter or digit (anchored: no trailing newline).
NAME = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9_.-]*\Z")
#: The same rule as a JSON-schema pattern (ECMA regex: ``$`` does not match before a final newline there).
NAME_PATTERN = "^[A-Za-z0-9][A-Za-z0-9_.-]*$"


def is_name(value: object) -> bool:
    """Whether ``value`` is a safe :data:`NAME` (a string, one path component, no control characters)."""
    return isinstance(value, str) and NAME.match(value) is not None


#: The two processors of a heterogeneous platform: rank 0 plays ``host``, rank 1 ``accel``.
ROLES: tuple[str, str] = ("host", "accel")
#: kernel classes with a measured compute ceiling (sims.bench.ceilings), what each is measured on, and the
#: precisions measured
CEILING_CLASSES = {
    "vector": "independent element-wise FMA chains (2 flops per FMA), in-cache",
    "gemm": "the backend's matrix product C = A B (2 n^3 flops), square n x n",
}
CEILING_DTYPES = ("float32", "float64")
#: memory-access classes with a measured bandwidth ceiling of their own (strided access moves far fewer bytes
#: per second than the streaming triad ``t_b`` measures), and what each is measured on
BANDWIDTH_CLASSES = {
    "transpose": "the backend's out-of-place transpose E = D^T (the LA and PEACH transpose kernel), square "
                 "n x n, 2 s n^2 bytes counted",
}

#: The workload partitions (WPs) of PerDome/PeaPaw with a fixed name, in the papers' order.
#: ``CO`` host only, ``GO`` accelerator only, ``p-DP`` the balanced data partition, ``CP`` a code
#: partition (phases split between the processors), ``CP-reverse`` the opposite code partition.
WPS: tuple[str, ...] = ("CO", "GO", "p-DP", "CP", "CP-reverse")

_DP = re.compile(r"^DP\((?P<alpha>[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\)$")


def dp_variant(alpha: float) -> str:
    """The variant name of the data partition with fraction ``alpha`` of the data on the accelerator."""
    if not (math.isfinite(alpha) and 0.0 <= alpha <= 1.0):
        raise ValueError(f"alpha must be a number in [0, 1], got {alpha!r}")
    return f"DP({alpha:g})"


def parse_alpha(variant: str) -> float | None:
    """The ``alpha`` of a ``DP(alpha)`` variant, or None for any other variant."""
    m = _DP.match(str(variant))
    return float(m.group("alpha")) if m else None


def variant_order(variant: str, alpha: float | None = None) -> tuple[int, float, str]:
    """Sort key: fixed WPs in the papers' order, then DP(alpha) variants by alpha, then anything else."""
    if variant in WPS:
        return (0, float(WPS.index(variant)), variant)
    a = parse_alpha(variant) if alpha is None else alpha
    if a is not None and not math.isnan(a):
        return (1, float(a), variant)
    return (2, 0.0, str(variant))


def balanced_alpha(time_host: float, time_accel: float) -> float:
    """The accelerator's share of a divisible workload that makes both processors finish together.

    ``time_host``/``time_accel`` are each processor's time for the *whole*
    workload (its roofline time ``max(N_f t_f, N_b t_b)`` with the characterised
    ``t_f``/``t_b``); a share ``alpha`` on the accelerator takes ``alpha *
    time_accel`` there and ``(1 - alpha) * time_host`` on the host, equal at
    ``alpha = time_host / (time_host + time_accel)`` (PeaPaw's p-DP).
    """
    if not (time_host > 0 and time_accel > 0):
        raise ValueError(f"balanced_alpha needs positive times, got host {time_host!r}, accel {time_accel!r}")
    return time_host / (time_host + time_accel)


def data_parallel_alpha(variant: str, alpha_pdp: float | None, case: str, wps: tuple[str, ...]) -> float:
    """The accelerator's share of a data-parallel WP: CO 0, GO 1, p-DP the balanced split, DP(alpha) alpha."""
    if variant == "CO":
        return 0.0
    if variant == "GO":
        return 1.0
    if variant == "p-DP":
        if alpha_pdp is None:
            raise ValueError("p-DP needs the characterised platform to choose its split")
        return alpha_pdp
    parsed = parse_alpha(variant)
    if parsed is None or not 0.0 <= parsed <= 1.0:
        raise ValueError(
            f"unknown {case} variant {variant!r}; allowed: {', '.join(wps)} or DP(alpha) with 0 <= alpha <= 1"
        )
    return parsed


def roofline_time(flops: float, nbytes: float, t_f: float, t_b: float) -> float:
    """A processor's roofline time for ``flops`` and ``nbytes``: ``max(N_f t_f, N_b t_b)``."""
    return max(flops * t_f, nbytes * t_b)


#: Run statuses of a record.
STATUSES: tuple[str, ...] = ("ok", "failed", "skipped")

#: The phases an FDM time step is timed in, on every rank (``time_<phase>_s`` in records).
FDM_PHASES: tuple[str, ...] = ("velocity", "stress", "pack", "unpack", "halo", "h2d")
#: The FDM model's predicted parts (``compute`` covers the velocity and stress updates).
FDM_MODEL_PARTS: tuple[str, ...] = ("compute", "pack", "unpack", "halo", "h2d")
#: Halo data-marshaling designs of the FDM-Seismology thesis (ch. 4).
MARSHALING: tuple[str, ...] = ("host-staging", "device-pack", "gpu-aware")

#: Units of the quantities that appear in records, validation tables and the report.
UNITS: dict[str, str] = {
    "time": "s", "energy": "J", "power": "W", "flops": "flop", "bytes": "byte",
    "perf": "flop/s", "intensity": "flop/byte", "t_f": "s/flop", "t_b": "s/byte",
    "e_f": "J/flop", "e_b": "J/byte", "p_s": "W", "efficiency": "flop/J", "mlups": "MLUP/s",
}
