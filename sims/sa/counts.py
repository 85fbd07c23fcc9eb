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

#: Elements per block of the NumPy PowAdd (:func:`sims.sa.kernels._powadd_xp`). Its (32, block) float32 buffers
#: p and x are 2 x 32 x block x 4 bytes = 512 KiB at 2048: L2 resident; measured best of 512..16384 on a Xeon
#: (SPR) core: 5.5 GF/s at 2048, 5.2-5.4 at 512-4096, 2.9 at 8192, 2.1 at 16384.
NUMPY_POWADD_BLOCK = 2048
#: Elements of one in-place ufunc call over the NumPy PowAdd's (32, block) buffer.
NUMPY_POWADD_CALL = POWADD_TERMS * NUMPY_POWADD_BLOCK
#: The NumPy PowAdd as the basic blocks it runs, per element, in order (Kannan et al.'s instruction mix per basic
#: block; NumPy runs every ufunc call as a loop of its own, so each call is one basic block and the blocks run one
#: after the other): element-operations per element of ``e``'s columns by kind, and the bytes each block moves to
#: or from memory. The 63 multiplications and 32 adds are the paper's counted flops; the copy of ``e``'s 32 rows
#: into the buffer and the fill of the power buffer with ``one`` are moves the NumPy form executes and the compiled
#: forms do not; the adds run as 32 calls of one row (:data:`NUMPY_POWADD_BLOCK` elements), ``short_add``.
NUMPY_POWADD_BLOCKS = (
    {"ops": {"move": POWADD_TERMS}, "bytes": POWADD_TERMS * 4},  # copy e's 32 rows (read from memory)
    {"ops": {"move": POWADD_TERMS}, "bytes": 0},  # fill the power buffer with one
    {"ops": {"mul": POWADD_TERMS * POW_EXPONENT}, "bytes": 0},  # 63 in-place multiplies
    {"ops": {"short_add": POWADD_TERMS}, "bytes": 8},  # 32 row adds into d (read and written)
)
