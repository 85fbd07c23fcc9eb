"""Fused GPU kernels of the elastic update: one CuPy ``ElementwiseKernel`` per half-step and box.

The reference kernels (:mod:`sims.fdm.kernels_xp`) build each update from
array expressions, so on CuPy every difference, product and sum is its own
kernel launch with its own temporary array in device memory. Here each
half-step of a box is **one** kernel: every thread reads its point's
neighbours (the shifted views of the reference, passed as inputs), computes
all the components of the half-step in registers and writes each updated
field once; each C-PML slab is one more kernel that updates its memory
variables and corrects the fields.

The kernel text is generated from the same update table as the reference and
performs the same float32 operations in the same order; it is compiled with
``--fmad=false`` so that no multiply-add is contracted, which keeps a GPU
run's seismograms bitwise equal to the NumPy reference. The generated
statements use only names, ``+ - *`` and parentheses, so the very text handed
to CuPy is also evaluated by :func:`evaluate` with NumPy arrays: that is how
it is tested on a machine without a GPU (``tests/fdm/test_fused.py``), and
how the stand-in CuPy of the GPU-path tests runs it. **No GPU has run these
kernels here.**
"""

from __future__ import annotations

import re
from functools import cache

import numpy as np

from . import kernels_xp as KX
from .kernels_xp import VELOCITY_TERMS

#: options of every fused kernel: no contracted multiply-adds, so results match the reference bit for bit
OPTIONS = ("--fmad=false",)


def _name(field: str, axis: int, d: int) -> str:
    return f"{field}_0" if d == 0 else f"{field}_{'xyz'[axis]}{'p' if d > 0 else 'm'}{abs(d)}"


def _diff(field: str, axis: int, forward: bool, order: int, views: dict) -> str:
    """The staggered difference of the reference (:func:`kernels_xp.diff`) as text; records the views it reads."""
    a = 1 if forward else 0
    shifts = (a, a - 1) if order == 2 else (a, a - 1, a + 1, a - 2)
    names = [_name(field, axis, d) for d in shifts]
    for d, n in zip(shifts, names, strict=True):
        views[n] = (field, axis, d)
    if order == 2:
        return f"({names[0]} - {names[1]})"
    return f"(c1 * ({names[0]} - {names[1]}) + c2 * ({names[2]} - {names[3]}))"


def velocity_statements(order: int) -> tuple[list[tuple[str, str, str]], dict]:
    """``(kind, target, expression)`` statements of the fused bulk velocity update, and the views they read."""
    views: dict = {}
    out = []
    for tgt, weight in ((0, "bc"), (1, "bc"), (2, "bf")):
        terms = [_diff(src, ax, fwd, order, views) for axis in range(3)
                 for (t, src, ax, fwd, _stag) in VELOCITY_TERMS[axis] if t == tgt]
        name = ("vx", "vy", "vz")[tgt]
        out.append(("out", name, f"{name} + ({weight} * ({' + '.join(terms)}))"))
    return out, views


def stress_statements(order: int) -> tuple[list[tuple[str, str, str]], dict]:
    """The fused bulk stress update (the reference's :func:`kernels_xp.stress`)."""
    views: dict = {}
    exx, eyy, ezz = (_diff(v, a, False, order, views) for a, v in enumerate(("vx", "vy", "vz")))
    out = [("local", "exx", exx), ("local", "eyy", eyy), ("local", "ezz", ezz),
           ("out", "sxx", "sxx + (l2m * exx + lam * (eyy + ezz))"),
           ("out", "syy", "syy + (l2m * eyy + lam * (exx + ezz))"),
           ("out", "szz", "szz + (l2m * ezz + lam * (exx + eyy))")]
    for tgt, (f1, a1), (f2, a2), mu in (("sxy", ("vx", 1), ("vy", 0), "mu_c"), ("sxz", ("vx", 2), ("vz", 0), "mu_f"),
                                         ("syz", ("vy", 2), ("vz", 1), "mu_f")):
        out.append(("out", tgt, f"{tgt} + ({mu} * ({_diff(f1, a1, True, order, views)} + "
                                f"{_diff(f2, a2, True, order, views)}))"))
    return out, views


def pml_statements(phase: str, axis: int, order: int) -> tuple[list[tuple[str, str, str]], dict]:
    """The C-PML correction of one axis's slab (the reference's ``velocity_pml`` / ``stress_pml``): per memory
    variable ``psi = b psi + a D``, then each target ``+= weight psi``. Profiles ``a_c b_c a_f b_f``."""
    views: dict = {}
    out = []
    if phase == "velocity":
        weights = ("bc", "bc", "bf")
        for c, (tgt, src, ax, fwd, stag) in enumerate(VELOCITY_TERMS[axis]):
            s = "c" if stag == "centre" else "f"
            out.append(("out", f"p{c}", f"b_{s} * p{c} + a_{s} * {_diff(src, ax, fwd, order, views)}"))
            name = ("vx", "vy", "vz")[tgt]
            out.append(("out", name, f"{name} + ({weights[tgt]} * p{c})"))
        return out, views
    vel = ("vx", "vy", "vz")
    out.append(("out", "p0", f"b_c * p0 + a_c * {_diff(vel[axis], axis, False, order, views)}"))
    for n, name in enumerate(("sxx", "syy", "szz")):
        out.append(("out", name, f"{name} + ({'l2m' if n == axis else 'lam'} * p0)"))
    shear = ((("sxy", "vy", "mu_c"), ("sxz", "vz", "mu_f")), (("sxy", "vx", "mu_c"), ("syz", "vz", "mu_f")),
             (("sxz", "vx", "mu_f"), ("syz", "vy", "mu_f")))[axis]
    for c, (tgt, src, mu) in enumerate(shear, start=1):
        out.append(("out", f"p{c}", f"b_f * p{c} + a_f * {_diff(src, axis, True, order, views)}"))
        out.append(("out", tgt, f"{tgt} + ({mu} * p{c})"))
    return out, views


def operation(statements) -> str:
    """The CUDA body of an ``ElementwiseKernel`` (float32 locals, in-place outputs)."""
    return "\n".join(f"float {t} = {e};" if kind == "local" else f"{t} = {e};" for kind, t, e in statements)


_STATEMENT = re.compile(r"^\s*(?:float\s+)?([A-Za-z_]\w*)\s*=\s*(.+);\s*$")
_SAFE = re.compile(r"^[\w\s+\-*().]+$")


def evaluate(op: str, names: dict) -> None:
    """Run the kernel body ``op`` (the text of :func:`operation`) with NumPy arrays: each statement's expression
    on the whole arrays, outputs written in place. The grammar is names, ``+ - *`` and parentheses only."""
    for line in op.splitlines():
        m = _STATEMENT.match(line)
        if not m or not _SAFE.match(m.group(2)):
            raise ValueError(f"not a fused-kernel statement: {line!r}")
        target, expr = m.groups()
        value = eval(expr, {"__builtins__": {}}, names)  # noqa: S307 - a generated grammar of names and + - * ( )
        if line.lstrip().startswith("float ") or target not in names:
            names[target] = value
        else:
            names[target][...] = value


class _Kernel:
    """One fused kernel: CuPy's ``ElementwiseKernel`` on a GPU, :func:`evaluate` with NumPy arrays."""

    def __init__(self, xp, name: str, inputs: tuple[str, ...], outputs: tuple[str, ...], op: str) -> None:
        self.inputs, self.outputs, self.op = inputs, outputs, op
        self.gpu = None
        if xp is not np and hasattr(xp, "ElementwiseKernel"):
            params = ", ".join(f"float32 {n}" if n in ("c1", "c2") else f"T {n}" for n in inputs)
            self.gpu = xp.ElementwiseKernel(params, ", ".join(f"T {n}" for n in outputs), op, name, options=OPTIONS)

    def __call__(self, args: dict) -> None:
        if self.gpu is not None:
            self.gpu(*(args[n] for n in self.inputs), *(args[n] for n in self.outputs))
        else:
            evaluate(self.op, dict(args))


@cache
def _kernel(xp, phase: str, order: int, axis: int | None) -> tuple[_Kernel, dict]:
    if axis is None:
        statements, views = (velocity_statements if phase == "velocity" else stress_statements)(order)
        weights = ("bc", "bf") if phase == "velocity" else ("l2m", "lam", "mu_c", "mu_f")
    else:
        statements, views = pml_statements(phase, axis, order)
        weights = (("bc", "bf") if phase == "velocity" else ("l2m", "lam", "mu_c", "mu_f")) + ("a_c", "b_c", "a_f", "b_f")
    outputs = tuple(dict.fromkeys(t for kind, t, _ in statements if kind == "out"))
    inputs = (*sorted(views), *weights, *(("c1", "c2") if order == 4 else ()))
    name = f"hetval_{phase}_{'bulk' if axis is None else 'pml_' + 'xyz'[axis]}_o{order}"
    return _Kernel(xp, name, inputs, outputs, operation(statements)), views


def _views(F: dict, views: dict, lo, hi) -> dict:
    """The reference's shifted views of the box, by the names the kernel text reads them under."""
    return {name: F[field][KX._box(lo, hi, KX._e(axis, d))] for name, (field, axis, d) in views.items()}


#: the material profiles each phase reads, by the name the kernel text reads them under
_WEIGHTS = {"velocity": {"bc": "b_c", "bf": "b_f"},
            "stress": {"l2m": "l2m", "lam": "lam", "mu_c": "mu_c", "mu_f": "mu_f"}}


def _weights(P: dict, lo, hi, phase: str) -> dict:
    return {name: KX._zrow(P[src], lo, hi) for name, src in _WEIGHTS[phase].items()}


def bind(xp, phase: str, F: dict, P: dict, lo, hi, c1: float, c2: float, slab=None) -> tuple[_Kernel, dict]:
    """One fused kernel and its arguments over the box ``[lo, hi)`` (array indices): the bulk update of
    ``phase``, or with ``slab = (axis, psi, origin, profile)`` the C-PML correction of that axis's layer (the
    reference's ``velocity_pml`` / ``stress_pml``). The arguments are views of the fields, allocated once: a
    run binds each kernel once and launches it every step with ``kernel(args)``."""
    order = 2 if c2 == 0.0 else 4
    kernel, views = _kernel(xp, phase, order, None if slab is None else slab[0])
    args = {**_views(F, views, lo, hi), **_weights(P, lo, hi, phase), "c1": np.float32(c1), "c2": np.float32(c2)}
    if slab is not None:
        axis, psi, origin, prof = slab
        for row, name in enumerate(("a_c", "b_c", "a_f", "b_f")):
            args[name] = KX._profile(prof, axis, row, lo, hi)
        for c in range(3):
            args[f"p{c}"] = KX._psi_view(psi, c, origin, lo, hi)
    for name in kernel.outputs:
        if name not in args:
            args[name] = F[name][KX._box(lo, hi)]
    return kernel, args
