"""A platform characterised more than once: its replicates pooled into one platform file, with their spread.

Every run of a study shares the study's one characterisation, so an error in it moves every prediction at once,
and a bootstrap over the runs cannot see it. The workflow therefore characterises each platform in several
independent processes at different moments of the study (``characterize.replicates``: the first before the runs,
the others after them). Each replicate writes its raw samples (``<platform>.<k>.json``) and its own platform file
(``<platform>.<k>.yaml``); this module pools them into the study's platform file::

    python -m sims.bench.replicates --spec '<platform spec JSON>' --out results/<study>/platforms/<p>.yaml \\
        results/<study>/platforms/replicates/<p>.1.json results/<study>/platforms/replicates/<p>.2.json

Every parameter of the pooled file is computed from all the replicates' samples
(:func:`sims.bench.document.document`), and every parameter (a mapping with a numeric ``value``) gets

- ``replicates``: its value in each replicate's own platform file, in replicate order;
- ``replicate_spread``: the largest over the smallest of those (1 = they agree exactly);
- ``replicates_disagree``: true where the parameter has samples in each replicate and two replicates' samples lie
  apart by more than either replicate's own range (every sample of one beyond every sample of the other, with a
  gap wider than each one's spread), their values more than :data:`DISAGREE_RATIO` apart: the machine (or the
  measurement) moved between them beyond the noise of either.

The file's ``replicates`` section lists the replicates (file, when, where) and the parameters that disagree.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path
from typing import Any

from sims.platform_file import parameter_at as _at
from sims.platform_file import parameter_samples as _samples
from sims.platform_file import parameters as _parameters

#: two replicates "disagree" when the gap between their samples (every sample of one beyond every sample of the
#: other) is wider than either replicate's own range of samples, and their values differ by more than this factor
#: (a shift of a few tenths of a per cent between two tight sample sets is real and matters to no model)
DISAGREE_RATIO = 1.03


def disagree(samples: list[list[float]], values: list[float]) -> bool:
    """Whether two replicates' samples lie apart beyond their own noise (see the module notes)."""
    finite = [v for v in values if v and math.isfinite(v)]
    if len(finite) < 2 or max(finite) / min(finite) <= DISAGREE_RATIO:
        return False
    for i in range(len(samples)):
        for j in range(i + 1, len(samples)):
            a, b = sorted(samples[i]), sorted(samples[j])
            if len(a) < 2 or len(b) < 2:
                continue
            gap = max(b[0] - a[-1], a[0] - b[-1])
            if gap > max(a[-1] - a[0], b[-1] - b[0]):
                return True
    return False


def annotate(pooled: dict[str, Any], singles: list[dict[str, Any]], files: list[str]) -> dict[str, Any]:
    """``pooled`` with every parameter's replicate values, spread and disagreement (module notes) and the
    ``replicates`` section; ``singles`` are the replicates' own documents, ``files`` where they are."""
    flagged = []
    for path, param in _parameters(pooled):
        others = [_at(d, path) for d in singles]
        values = [float(o["value"]) if isinstance(o, dict) and isinstance(o.get("value"), (int, float)) else math.nan
                  for o in others]
        finite = [v for v in values if math.isfinite(v) and v > 0]
        param["replicates"] = [None if math.isnan(v) else v for v in values]
        param["replicate_spread"] = max(finite) / min(finite) if len(finite) >= 2 else None
        bad = disagree([_samples(o) for o in others], values)
        param["replicates_disagree"] = bad
        if bad:
            flagged.append(".".join(path))
    pooled["replicates"] = {
        "count": len(singles),
        "method": ("every parameter computed from the samples of every replicate; each replicate characterised the "
                   "platform in a process of its own at its own moment of the study (the first before the runs, the "
                   "others after them); 'replicates' holds a parameter's value in each replicate alone, "
                   "'replicate_spread' the largest over the smallest, 'replicates_disagree' whether two replicates' "
                   "samples lie apart by more than either one's own range, their values more than "
                   f"{DISAGREE_RATIO:g}x apart"),
        "files": [{"file": f, "measured_at": d.get("measured_at"), "hostname": d.get("hostname")}
                  for f, d in zip(files, singles, strict=True)],
        "disagree": flagged,
    }
    return pooled


def merge(raw_paths: list[str], spec: dict[str, Any], out: str | None = None) -> dict[str, Any]:
    """The pooled, annotated platform document of the replicates whose raw samples are at ``raw_paths``; the
    replicates' own files (``<raw>.yaml``) are named relative to ``out``'s directory."""
    from sims.bench.document import RAW_FORMAT, document

    raws = []
    for path in raw_paths:
        try:
            raw = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ValueError(f"{path}: not a replicate's raw measurements ({exc})") from None
        if not isinstance(raw, dict) or raw.get("format") != RAW_FORMAT:
            raise ValueError(f"{path} is not a replicate's raw measurements (format {RAW_FORMAT})")
        raws.append(raw)
    singles = [document([raw], spec) for raw in raws]
    base = Path(out).resolve().parent if out else Path.cwd()
    files = [os.path.relpath(Path(p).with_suffix(".yaml").resolve(), base) for p in raw_paths]
    return annotate(document(raws, spec), singles, files)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sims.bench.replicates", description=__doc__.splitlines()[0])
    parser.add_argument("--spec", required=True, help="the platform's characterisation spec as JSON text")
    parser.add_argument("--out", required=True, help="the pooled platform file to write")
    parser.add_argument("raw", nargs="+", help="each replicate's raw measurements (<platform>.<k>.json)")
    args = parser.parse_args(argv)
    import yaml

    from sims.atomic import atomic_write_text

    try:
        doc = merge(args.raw, json.loads(args.spec), args.out)
    except (OSError, ValueError, KeyError) as exc:
        print(f"hetval: characterize: the replicates cannot be pooled: {exc}", file=sys.stderr)
        return 2
    atomic_write_text(args.out, yaml.safe_dump(doc, sort_keys=False))
    flagged = doc["replicates"]["disagree"]
    print(f"[hetval characterize] {doc['platform']}: {len(args.raw)} replicates pooled -> {args.out}; "
          + (f"{len(flagged)} parameter(s) whose replicates disagree beyond their noise: {', '.join(flagged)}"
             if flagged else "the replicates agree within their noise on every parameter with samples"), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
