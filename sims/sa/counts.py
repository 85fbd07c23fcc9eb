"""Static counts of the synthetic application (PeaPaw §6.3.1), by the papers' counting rules.

Per element ``i``: VecAdd ``a[i] = b[i] + c[i]`` and PowAdd
``for j in range(32): d[i] += pow(e[j][i], 63)``. Each add or multiply is one
flop; each float32 element accessed is 4 bytes. Pure: the kernels, the runner
and the validation job's per-operation model all read these numbers.
"""

from __future__ import annotations

PHASES = ("vecadd", "powadd")
VECADD_FLOPS = 1
VECADD_BYTES = 12
POWADD_TERMS = 32
POW_EXPONENT = 63
POWADD_FLOPS = POWADD_TERMS * (POW_EXPONENT + 1)  # 2048
POWADD_BYTES = 256  # POWADD_TERMS * 8, as counted in the paper

#: The compute ceiling each phase runs against (:mod:`sims.bench.ceilings`): both are element-wise float32 code.
#: The bound counts their bytes as the papers count them: VecAdd's 12 B per element is its compulsory traffic;
#: PowAdd's 256 B counts 8 B per term (its compulsory traffic is 136 B: 32 rows of e, d read and written), which
#: does not move the bound while PowAdd is compute-bound (2048 flops per element; on every processor
#: characterised here the ridge is below 8 flop/B).
PHASE_KERNELS = {"vecadd": "vector", "powadd": "vector"}
DTYPE = "float32"
#: (flops, bytes) per element of each phase.
PHASE_COUNTS = {"vecadd": (VECADD_FLOPS, VECADD_BYTES), "powadd": (POWADD_FLOPS, POWADD_BYTES)}
#: Operations per element of each phase, by kind (the per-operation model of Kannan et al.):
#: VecAdd one add; PowAdd 32 x (63 multiplications + 1 add).
PHASE_OPERATIONS = {"vecadd": {"add": 1, "mul": 0},
                    "powadd": {"add": POWADD_TERMS, "mul": POWADD_TERMS * POW_EXPONENT}}
