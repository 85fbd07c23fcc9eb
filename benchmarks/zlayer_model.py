"""Why the C-PML's z layers cost more than their traffic: a one-core model, compiled by Numba and by a C compiler.

Run from the repository root (about 5 s; the C half needs ``cc`` and is skipped, with a line saying so,
without it)::

    python benchmarks/zlayer_model.py

The model is the order-2 velocity half-step of ``sims.fdm.kernels_numba`` on a 184^3 grid (halo 2, the
layout of the solver's fields), one core, with the z layers of a 12-cell C-PML at both ends of every row
stored as the solver stores them: one 28-cell segment per pair of rows (the high layer of row ``j - 1``,
4 ghost cells, the low layer of row ``j``), three memory-variable components. It is a model, not the
solver: no x or y layers, no stress half-step, no halo exchange. It exists to answer one question with
measurements: is the z layers' cost a matter of the code generator (Numba/LLVM) or of the memory system?
The same loops are timed as Numba compiles them (with the project's ``noalias`` jit) and as
``cc -O3 -march=native`` compiles them, each in one process, the variants alternating within a repetition:

* ``bulk``: the bulk rows only;
* ``pass``: per plane, its bulk rows, then one z segment per pair of rows (the solver's structure);
* ``per-row``: the z segment right after each bulk row (its data still in L1);
* ``pass, psi only``: the pass with its wavefield accesses redirected to the same 8 segments of one plane
  (9 rows), which stay in L1, so that only the memory variables come from memory;
* ``pass, fields only``: the pass with its memory-variable accesses redirected to 8 segments in L1;
* ``pass + prefetch`` (C only): the pass, with each bulk row prefetching its pair's memory-variable
  segment, so that the pass finds it in cache.

Printed per code generator: the median time of the half-step over the repetitions with its range, the time
above ``bulk``, and the z layers' compulsory traffic (three components read and written) in time at the
bandwidth the ``bulk`` variant reaches in the same run (48 B a point); last, one JSON line of the times above
``bulk``. The Numba half gets the segment length, the difference's coefficients and the strides at run time,
as the solver's kernels do; the C half has them as compile-time constants (its best case). ``CC`` names
another compiler.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

N = 184  # interior points per axis
W = 12  # C-PML width
SEG = 2 * W + 4  # merged segment: high layer, 2 + 2 ghost cells, low layer
REPS = 21
VARIANTS = {"bulk": 0, "pass": 1, "per-row": 2, "pass, psi only": 3, "pass, fields only": 4}
C_VARIANTS = {**VARIANTS, "pass + prefetch": 5}


def _numba_model():
    """The model's kernel compiled by Numba (the project's ``noalias`` jit, as the solver's kernels), from the
    solver's own inline row and z-segment functions."""
    import numpy as np
    from numba import uint64

    from sims.backends.jit import jit
    from sims.fdm.kernels_numba import _psiz, _velocity_row2

    R, P = N + 4, (N + 4) ** 2
    opts = {"noalias": True, "boundscheck": False, "error_model": "numpy"}

    @jit(inline="always", **opts)
    def segment(X, Y, Z, XZ, YZ, ZZ, S, A, B, Wt, i, j, mode, n, c1, c2):
        C = uint64(N * (N + 1) * SEG)
        q0 = uint64(i * P + (j - 1) * R + N - W + 2)
        p0 = uint64(((i - 2) * (N + 1) + j - 2) * SEG)
        if mode == 3:
            q0 = uint64(3 * P + (j & 7) * R + N - W + 2)
        if mode == 4:
            p0 = uint64((j & 7) * SEG)
        w0 = uint64(0)
        _psiz(X, Wt, S, XZ, q0, p0, w0, n, A, B, c1, c2, False)  # the solver's z-segment loops, as it calls them
        _psiz(Y, Wt, S, YZ, q0, p0 + C, w0, n, A, B, c1, c2, False)
        _psiz(Z, Wt, S, ZZ, q0, p0 + C + C, w0, n, A, B, c1, c2, True)

    @jit(**opts)
    def kern(X, Y, Z, XX, YY, ZZ, XY, XZ, YZ, bc, bf, S, A, B, Wt, mode, n, c1, c2, stride_p, stride_r):
        for i in range(2, N + 2):
            for j in range(2, N + 2):
                _velocity_row2(X, Y, Z, XX, YY, ZZ, XY, XZ, YZ, bc, bf, uint64(i * P + j * R + 2), uint64(2), uint64(N),
                               stride_p, stride_r)  # the solver's order-2 bulk row
                if mode == 2:
                    segment(X, Y, Z, XZ, YZ, ZZ, S, A, B, Wt, i, j, mode, n, c1, c2)
            if mode == 1 or mode == 3 or mode == 4:
                for j in range(2, N + 2):
                    segment(X, Y, Z, XZ, YZ, ZZ, S, A, B, Wt, i, j, mode, n, c1, c2)

    rng = np.random.default_rng(1)
    fields = [(rng.random(R**3, dtype=np.float32) * 1e-3) for _ in range(9)]
    bc = rng.random(R, dtype=np.float32) * 1e-2
    bf = bc.copy()
    S = np.zeros(3 * N * (N + 1) * SEG, np.float32)
    A = np.full(SEG, 0.25, np.float32)
    B = np.full(SEG, 0.5, np.float32)
    Wt = np.full(SEG, 1e-3, np.float32)
    times: dict[str, list[float]] = {k: [] for k in VARIANTS}
    for rep in range(REPS + 1):  # repetition 0 compiles and warms up, not kept
        for name, mode in VARIANTS.items():
            t0 = time.perf_counter()
            kern(*fields, bc, bf, S, A, B, Wt, mode, np.uint64(SEG), np.float32(1.0), np.float32(0.0),
                 np.uint64(P), np.uint64(R))
            if rep:
                times[name].append(time.perf_counter() - t0)
    return times


C_SOURCE = r"""
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#define N %(N)d
#define W %(W)d
#define SEG %(SEG)d
#define REPS %(REPS)d
#define R ((uint64_t)(N + 4))
#define P (R * R)
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
/* sims.fdm.kernels_numba._psiz: the order-4 form of the difference with c1 = 1, c2 = 0 */
static inline void psiz(float *restrict T, const float *restrict Wt, float *restrict S, const float *restrict F,
                        uint64_t q0, uint64_t p0, const float *restrict A, const float *restrict B, int forward) {
  const float c1 = 1.0f, c2 = 0.0f;
  for (uint64_t k = 0; k < SEG; k++) {
    uint64_t q = q0 + k, p = p0 + k;
    float d = forward ? c1 * (F[q + 1] - F[q]) + c2 * (F[q + 2] - F[q - 1])
                      : c1 * (F[q] - F[q - 1]) + c2 * (F[q + 1] - F[q - 2]);
    S[p] = B[k] * S[p] + A[k] * d; T[q] += Wt[k] * S[p];
  }
}
/* sims.fdm.kernels_numba._velocity_row2 */
static inline void row(float *restrict X, float *restrict Y, float *restrict Z, const float *restrict XX,
                       const float *restrict YY, const float *restrict ZZ, const float *restrict XY,
                       const float *restrict XZ, const float *restrict YZ, const float *restrict bc,
                       const float *restrict bf, uint64_t q0, uint64_t w0, uint64_t n) {
  for (uint64_t k = 0; k < n; k++) { uint64_t q = q0 + k, w = w0 + k;
    X[q] += bc[w] * ((XX[q + P] - XX[q]) + (XY[q] - XY[q - R]) + (XZ[q] - XZ[q - 1])); }
  for (uint64_t k = 0; k < n; k++) { uint64_t q = q0 + k, w = w0 + k;
    Y[q] += bc[w] * ((XY[q] - XY[q - P]) + (YY[q + R] - YY[q]) + (YZ[q] - YZ[q - 1])); }
  for (uint64_t k = 0; k < n; k++) { uint64_t q = q0 + k, w = w0 + k;
    Z[q] += bf[w] * ((XZ[q] - XZ[q - P]) + (YZ[q] - YZ[q - R]) + (ZZ[q + 1] - ZZ[q])); }
}
static const uint64_t C = (uint64_t)N * (N + 1) * SEG;
static inline void segment(float **f, float *S, const float *A, const float *B, const float *Wt, int i, int j, int mode) {
  uint64_t q0 = i * P + (j - 1) * R + N - W + 2, p0 = ((uint64_t)(i - 2) * (N + 1) + j - 2) * SEG;
  if (mode == 3) q0 = 3 * P + (j & 7) * R + N - W + 2;
  if (mode == 4) p0 = (uint64_t)(j & 7) * SEG;
  psiz(f[0], Wt, S, f[7], q0, p0, A, B, 0);
  psiz(f[1], Wt, S, f[8], q0, p0 + C, A, B, 0);
  psiz(f[2], Wt, S, f[5], q0, p0 + 2 * C, A, B, 1);
}
static void kern(float **f, const float *bc, const float *bf, float *S, const float *A, const float *B,
                 const float *Wt, int mode) {
  for (int i = 2; i < N + 2; i++) {
    for (int j = 2; j < N + 2; j++) {
      row(f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8], bc, bf, i * P + j * R + 2, 2, N);
      if (mode == 2) segment(f, S, A, B, Wt, i, j, mode);
      if (mode == 5) {
        uint64_t p0 = ((uint64_t)(i - 2) * (N + 1) + j - 2) * SEG;
        for (int c = 0; c < 3; c++) for (int b = 0; b < SEG; b += 16) __builtin_prefetch(S + p0 + c * C + b, 1, 2);
      }
    }
    if (mode == 1 || mode >= 3) for (int j = 2; j < N + 2; j++) segment(f, S, A, B, Wt, i, j, mode == 5 ? 1 : mode);
  }
}
int main(void) {
  const int modes[6] = {0, 1, 2, 3, 4, 5};
  float *f[9];
  srand(1);
  for (int a = 0; a < 9; a++) {
    f[a] = aligned_alloc(64, sizeof(float) * R * R * R);
    for (uint64_t q = 0; q < R * R * R; q++) f[a][q] = 1e-3f * (float)rand() / RAND_MAX;
  }
  float bc[N + 4], bf[N + 4], A[SEG], B[SEG], Wt[SEG];
  for (int k = 0; k < N + 4; k++) bc[k] = bf[k] = 1e-2f * (float)rand() / RAND_MAX;
  for (int k = 0; k < SEG; k++) { A[k] = 0.25f; B[k] = 0.5f; Wt[k] = 1e-3f; }
  float *S = aligned_alloc(64, sizeof(float) * (3 * C + 64));
  for (uint64_t q = 0; q < 3 * C + 64; q++) S[q] = 0.f;
  for (int rep = 0; rep <= REPS; rep++)
    for (int v = 0; v < 6; v++) {
      double t0 = now(); kern(f, bc, bf, S, A, B, Wt, modes[v]); double t = now() - t0;
      if (rep) printf("%%d %%.9f\n", v, t);
    }
  return 0;
}
"""


def _c_model() -> dict[str, list[float]] | str:
    """The same model compiled by ``cc -O3 -march=native``; its times, or why it could not run."""
    cc = shutil.which(os.environ.get("CC", "cc"))
    if cc is None:
        return "no C compiler (cc) on PATH: the C half is skipped"
    with tempfile.TemporaryDirectory() as tmp:
        src, exe = Path(tmp, "zlayer.c"), Path(tmp, "zlayer")
        src.write_text(C_SOURCE % {"N": N, "W": W, "SEG": SEG, "REPS": REPS})
        build = subprocess.run([cc, "-O3", "-march=native", "-std=c11", "-o", str(exe), str(src)],
                               capture_output=True, text=True, check=False)
        if build.returncode != 0:
            return f"{cc} could not build the model: {build.stderr.strip()[:300]}"
        out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    names = list(C_VARIANTS)
    times: dict[str, list[float]] = {k: [] for k in names}
    for line in out.splitlines():
        v, t = line.split()
        times[names[int(v)]].append(float(t))
    return times


def _report(label: str, times: dict[str, list[float]]) -> dict[str, float]:
    bulk = statistics.median(times["bulk"])
    gbs = 48 * N**3 / bulk / 1e9
    psi_bytes = 3 * N * (N + 1) * SEG * 4 * 2
    print(f"[zlayer_model] {label}: bulk rows at {gbs:.1f} GB/s (48 B a point); the z layers' memory variables "
          f"({psi_bytes / 1e6:.1f} MB read and written) take {psi_bytes / (gbs * 1e9) * 1e3:.2f} ms at that rate")
    out = {}
    for name, ts in times.items():
        m = statistics.median(ts)
        out[name] = m - bulk
        extra = "" if name == "bulk" else f"; above bulk {1e3 * (m - bulk):5.2f} ms"
        print(f"  {name:18s} {1e3 * m:6.2f} ms (min {1e3 * min(ts):6.2f}, max {1e3 * max(ts):6.2f}){extra}")
    return out


def main() -> None:
    for var in ("OMP_NUM_THREADS", "NUMBA_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    print(f"[zlayer_model] {N}^3, order-2 velocity half-step, {W}-cell z layers at both ends of every row, one core, "
          f"{REPS} repetitions, variants alternating ...", flush=True)
    extra = {"Numba": _report("Numba", _numba_model())}
    c = _c_model()
    if isinstance(c, str):
        print(f"[zlayer_model] {c}")
    else:
        extra["cc -O3 -march=native"] = _report("cc -O3 -march=native", c)
    print("[zlayer_model] time above bulk, ms: " + json.dumps(
        {k: {n: round(1e3 * v, 2) for n, v in e.items() if n != "bulk"} for k, e in extra.items()}))


if __name__ == "__main__":
    from record import run_writing

    sys.exit(run_writing("zlayer_model", "FDM z-layer model", main))
