"""Empirical scaling fits: hetval's normal-form search (:mod:`analysis.equations.extrap`) beside Extra-P 4 itself.

Extra-P is run as a separate program (its own virtual environment; nothing of it is imported here)::

    python -m venv /opt/extrap-venv && /opt/extrap-venv/bin/pip install extrap
    python benchmarks/bench_extrap.py --extrap /opt/extrap-venv/bin/extrap [--series 200] [--write]

Series whose true function is known are fitted by both, from the same samples:

* **Extra-P's space**: ``c0 + c1 p^i log2(p)^j`` for every ``(i, j)`` of Extra-P 4's default
  single-parameter hypotheses (:data:`EXTRAP_TERMS`), the term worth between a fifth and five
  times ``c0`` at the largest measured scale;
* **strong scaling**: a time that falls with the rank count, ``c0 + c1 p^i log2(p)^j`` with
  ``i`` in {-1/2, -2/3, -3/4, -1} and ``j`` in {0, 1}, the parallel part worth 2 to 20 times the
  serial part at ``p = 2``;
* **two terms**: compute plus communication, ``c0 + c1 / p + c2 log2(p)`` (in neither search's
  one-term space: only its extrapolation is scored);
* **constant**: ``c0`` alone, where any term a search picks was bought by noise.

Extra-P runs twice: as it comes (its default modeller; no negative exponents) and with its own
strong-scaling switch (``--modeler basic --options allow_negative_exponents=True``).

Each series is measured at ``p`` = 2, 4, 8, 16, 32 with ``--reps`` repetitions of multiplicative
Gaussian noise at each ``--noise`` level, and of heavy-tailed noise (:data:`HEAVY`). Scored per family
and noise level: the relative error of the prediction at 2x and 4x the largest scale (64 and 128)
against the true function (median with a bootstrap 95 % interval, and the 90th percentile), how often
each recovers the true term (Wilson 95 % interval), and how often hetval's error is the smaller one
(paired, series by series).
"""

from __future__ import annotations

import argparse
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from fractions import Fraction
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SCALES = (2, 4, 8, 16, 32)
AHEAD = (64, 128)
#: Extra-P 4's default single-parameter hypotheses (its building blocks without the strong-scaling switch):
#: ``(i, j)`` of ``p^i log2(p)^j``
EXTRAP_TERMS = tuple((Fraction(i), j) for i, j in (
    ("0", 1), ("0", 2), ("1/4", 0), ("1/3", 0), ("1/4", 1), ("1/3", 1), ("1/4", 2), ("1/3", 2), ("1/2", 0), ("1/2", 1),
    ("1/2", 2), ("2/3", 0), ("3/4", 0), ("2/3", 1), ("3/4", 1), ("4/5", 0), ("2/3", 2), ("3/4", 2), ("1", 0), ("1", 1),
    ("1", 2), ("5/4", 0), ("5/4", 1), ("4/3", 0), ("4/3", 1), ("3/2", 0), ("3/2", 1), ("3/2", 2), ("5/3", 0),
    ("7/4", 0), ("2", 0), ("2", 1), ("2", 2), ("9/4", 0), ("7/3", 0), ("5/2", 0), ("5/2", 1), ("5/2", 2), ("8/3", 0),
    ("11/4", 0), ("3", 0), ("3", 1)))
STRONG_I = tuple(Fraction(s) for s in ("-1/2", "-2/3", "-3/4", "-1"))


def basis(p, i: Fraction, j: int):
    import numpy as np

    p = np.asarray(p, dtype="float64")
    return p ** float(i) * np.log2(p) ** j


def draw_series(family: str, n: int, rng):
    """``n`` true functions of ``family``: (label, term or None, callable)."""
    import numpy as np

    out = []
    big = float(max(SCALES))
    for _ in range(n):
        c0 = float(rng.uniform(0.5, 5.0))
        if family == "constant":
            out.append(("c0", None, lambda p, c0=c0: np.full(np.shape(p), c0)))
            continue
        if family == "extrap-space":
            i, j = EXTRAP_TERMS[int(rng.integers(len(EXTRAP_TERMS)))]
            c1 = c0 * float(rng.uniform(0.2, 5.0)) / float(basis(big, i, j))
        elif family == "strong-scaling":
            i, j = STRONG_I[int(rng.integers(len(STRONG_I)))], int(rng.integers(2))
            c1 = c0 * float(rng.uniform(2.0, 20.0)) / float(basis(2.0, i, j))
        else:
            c1, c2 = c0 * float(rng.uniform(2.0, 20.0)) * 2.0, c0 * float(rng.uniform(0.05, 0.5))
            out.append(("c0 + c1/p + c2 log2(p)", None,
                        lambda p, c0=c0, c1=c1, c2=c2: c0 + c1 / np.asarray(p, float) + c2 * np.log2(p)))
            continue
        out.append((f"p^({i}) log2(p)^{j}", (i, j), lambda p, c0=c0, c1=c1, i=i, j=j: c0 + c1 * basis(p, i, j)))
    return out


#: The heavy-tailed noise level: 3 % Gaussian, and 8 % of the repetitions 1.5 to 4 times slower (a shared machine's
#: repetitions: most within a few per cent, a few several times slower)
HEAVY = "heavy"


def samples(series, reps: int, noise: float | str, rng):
    """Per series: (p, y) arrays, ``reps`` noisy repetitions at every scale."""
    import numpy as np

    p = np.repeat(np.asarray(SCALES, dtype="float64"), reps)
    out = []
    for _, _, f in series:
        if noise == HEAVY:
            y = f(p) * (1.0 + 0.03 * rng.standard_normal(len(p)))
            slow = rng.random(len(p)) < 0.08
            y[slow] *= 1.0 + rng.uniform(0.5, 3.0, int(slow.sum()))
        else:
            y = f(p) * (1.0 + float(noise) * rng.standard_normal(len(p)))
        out.append((p, y))
    return out


def noise_label(noise: float | str) -> str:
    return noise if isinstance(noise, str) else f"{noise:.0%}"


def noise_level(text: str) -> float | str:
    return HEAVY if text == HEAVY else float(text)


def write_text_input(path: Path, data) -> None:
    """Extra-P's text input format: one region per series, one DATA line per scale."""
    lines = ["PARAMETER p", "", "POINTS " + " ".join(str(s) for s in SCALES), ""]
    for k, (p, y) in enumerate(data):
        lines += [f"REGION s{k:05d}", "METRIC time"]
        for s in SCALES:
            lines.append("DATA " + " ".join(repr(float(v)) for v in y[p == s]))
    path.write_text("\n".join(lines) + "\n")


_MODEL = re.compile(r"^(s\d{5}): (.+)$")


#: Extra-P's command-line options per way of running it
EXTRAP_WAYS = {"Extra-P": [], "Extra-P -exp": ["--modeler", "basic", "--options", "allow_negative_exponents=True"]}


def run_extrap(exe: str, data, workdir: Path, options: list[str]) -> tuple[dict[int, str], float]:
    """Extra-P's model of every series (python expression text) and the seconds it took."""
    src = workdir / "series.txt"
    write_text_input(src, data)
    t = time.perf_counter()
    proc = subprocess.run([exe, "--text", str(src), "--disable-progress", *options, "--print",
                           "{callpath}: {model:python}"], capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"extrap failed ({proc.returncode}): {proc.stderr[-2000:]}")
    models = {}
    for line in proc.stdout.splitlines():
        m = _MODEL.match(line.strip())
        if m:
            models[int(m.group(1)[1:])] = m.group(2)
    if len(models) != len(data):
        raise SystemExit(f"extrap printed {len(models)} models for {len(data)} series")
    return models, seconds


def extrap_predict(expr: str, p):
    """Evaluate an Extra-P model printed as Python (``+``, ``*``, ``**``, ``log2`` over ``p`` only)."""
    import numpy as np

    if not re.fullmatch(r"[0-9eE+\-*/(). plog2]+", expr):
        raise ValueError(f"unexpected model text {expr!r}")
    return eval(expr, {"__builtins__": {}}, {"p": np.asarray(p, dtype="float64"), "log2": np.log2})  # noqa: S307


def extrap_term(expr: str) -> tuple[Fraction, int] | None:
    """The ``(i, j)`` of a one-term Extra-P model; None for a constant, ``"many"`` for more than one term."""
    terms = [t for t in re.split(r"(?<![eE*])\+", expr.replace("+-", "-")) if "p" in t]
    if not terms:
        return None
    if len(terms) > 1:
        return "many"  # type: ignore[return-value]
    i = re.search(r"(?<!log2\()p\*\*\(([^)]+)\)", terms[0])
    j = re.search(r"log2\(p\)\*\*\(([^)]+)\)", terms[0])
    return (Fraction(i.group(1)) if i else Fraction(0), int(Fraction(j.group(1))) if j else 0)


def median_ci(x, rng) -> tuple[float, float, float]:
    """The median of ``x`` with its bootstrap 95 % interval (SciPy's percentile bootstrap)."""
    import numpy as np
    from scipy.stats import bootstrap

    x = np.asarray(x, dtype="float64")
    res = bootstrap((x,), np.median, confidence_level=0.95, n_resamples=2000, method="percentile", random_state=rng)
    return float(np.median(x)), float(res.confidence_interval.low), float(res.confidence_interval.high)


def wilson(k: int, n: int) -> tuple[float, float]:
    from scipy.stats import binomtest

    ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    return float(ci.low), float(ci.high)


def main() -> int:
    import numpy as np

    from analysis.equations import extrap

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--extrap", default=os.environ.get("HETVAL_EXTRAP") or shutil.which("extrap"),
                    help="the extrap executable of an Extra-P 4 install (default: $HETVAL_EXTRAP, then PATH)")
    ap.add_argument("--series", type=int, default=200, help="series per family and noise level")
    ap.add_argument("--reps", type=int, default=5, help="repetitions per scale")
    ap.add_argument("--noise", type=noise_level, nargs="+", default=[0.01, 0.05, 0.2, HEAVY],
                    help="relative standard deviations of the repetitions, or 'heavy' (see HEAVY)")
    ap.add_argument("--seed", type=int, default=2013)
    args = ap.parse_args()
    if not args.extrap or not Path(args.extrap).exists():
        raise SystemExit("no extrap executable: install Extra-P in a virtual environment of its own (python -m venv "
                         "DIR && DIR/bin/pip install extrap) and pass --extrap DIR/bin/extrap")
    version = subprocess.run([args.extrap, "--version"], capture_output=True, text=True, check=False)
    print(f"Extra-P: {(version.stdout or version.stderr).strip()} ({args.extrap}); scales {list(SCALES)}, "
          f"{args.reps} repetitions each; predictions at {list(AHEAD)} (2x and 4x the largest); {args.series} series "
          "per family and noise level")
    rng = np.random.default_rng(args.seed)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for family in ("extrap-space", "strong-scaling", "two-terms", "constant"):
            for noise in args.noise:
                series = draw_series(family, args.series, rng)
                data = samples(series, args.reps, noise, rng)
                t = time.perf_counter()
                fits = {"hetval": [extrap.fit(p, y) for p, y in data]}
                seconds = {"hetval": time.perf_counter() - t}
                for way, options in EXTRAP_WAYS.items():
                    fits[way], seconds[way] = run_extrap(args.extrap, data, Path(tmp), options)
                rows.append(score(family, noise, series, fits, seconds, rng))
    ways = ["hetval", *EXTRAP_WAYS]
    print("\nRelative error of the prediction, median [95 % CI] (90th percentile):\n")
    print("| family | noise | at | " + " | ".join(ways) + " | hetval's error the smaller (vs Extra-P, vs -exp) |")
    print("|---|---|---|" + "---|" * len(ways) + "---|")
    for r in rows:
        for k, ahead in enumerate(AHEAD):
            cells = " | ".join(f"{fmt(r['err'][w][k])} ({r['p90'][w][k]:.0%})" for w in ways)
            print(f"| {r['family']} | {noise_label(r['noise'])} | {ahead} | {cells} | {r['wins'][k]} |")
    print("\nTrue term recovered (the exact exponents i and j; for constant, no term), of the series [Wilson 95 %]:\n")
    print("| family | noise | " + " | ".join(ways) + " |")
    print("|---|---|" + "---|" * len(ways))
    for r in rows:
        if r["terms"]:
            print(f"| {r['family']} | {noise_label(r['noise'])} | " + " | ".join(r["terms"][w] for w in ways) + " |")
    total = {w: sum(r["seconds"][w] for r in rows) for w in ways}
    print(f"\nfit time over {sum(r['n'] for r in rows)} series: " + ", ".join(f"{w} {total[w]:.1f} s" for w in ways)
          + " (Extra-P: one process per family and noise level, start-up included)")
    return 0


def fmt(m: tuple[float, float, float]) -> str:
    return f"{m[0]:.1%} [{m[1]:.1%}, {m[2]:.1%}]"


def score(family, noise, series, fits, seconds, rng) -> dict:
    """Errors at :data:`AHEAD`, paired wins and term recovery of every way of fitting one family and noise level."""
    import numpy as np

    n = len(series)
    ahead = np.asarray(AHEAD, dtype="float64")
    truth = np.array([f(ahead) for _, _, f in series])
    err, terms = {}, {}
    true_terms = [t for _, t, _ in series]
    for way, got in fits.items():
        if way == "hetval":
            pred = np.array([f.predict(ahead) for f in got])
            found = [f.term for f in got]
        else:
            pred = np.array([np.broadcast_to(extrap_predict(got[k], ahead), ahead.shape) for k in range(n)])
            found = [extrap_term(got[k]) for k in range(n)]
        err[way] = np.abs(pred - truth) / np.abs(truth)
        if family != "two-terms":
            hit = sum(f == t for f, t in zip(found, true_terms, strict=True))
            terms[way] = "{}/{} [{:.0%}, {:.0%}]".format(hit, n, *wilson(hit, n))
    wins = []
    for k in range(len(AHEAD)):
        cells = []
        for way in EXTRAP_WAYS:
            a, b = err["hetval"][:, k], err[way][:, k]
            decided = np.abs(a - b) > 1e-9 * np.abs(b)
            w = int(np.sum(a[decided] < b[decided]))
            lo, hi = wilson(w, int(decided.sum())) if decided.any() else (math.nan, math.nan)
            cells.append(f"{w}/{int(decided.sum())} [{lo:.0%}, {hi:.0%}]")
        wins.append(", ".join(cells))
    return {"family": family, "noise": noise, "n": n, "seconds": seconds, "wins": wins, "terms": terms,
            "err": {w: [median_ci(e[:, k], rng) for k in range(len(AHEAD))] for w, e in err.items()},
            "p90": {w: [float(np.percentile(e[:, k], 90)) for k in range(len(AHEAD))] for w, e in err.items()}}


if __name__ == "__main__":
    from record import run_writing

    sys.exit(run_writing("bench_extrap", "Empirical fits: hetval's normal-form search beside Extra-P 4", main))
