"""What every column of the validation tables means, written into each Parquet file: the field metadata of a
column holds its ``unit`` (where it has one) and a one-line ``description``; the file's metadata holds the
table's name and the one definition of tightness. A reader needs no source to understand a file::

    pyarrow.parquet.read_schema("runs.parquet").field("tightness").metadata[b"description"]

Units are also in the column names where a family of columns shares one (``_s`` seconds, ``_j`` joules,
``perf_*`` flop/s); where a unit varies by row (PEACH's rates: flop/s for MatrixMultiply, byte/s for
MatrixTranspose) the metadata names the column that says which (``work_unit``). JSON text that names a run's
parameters (``params``) becomes an Arrow struct.
"""

from __future__ import annotations

import json

import pandas as pd
import pyarrow as pa

from analysis.scoring.metrics import TIGHTNESS
from sims.vocab import FDM_MODEL_PARTS, FDM_PHASES, ROLES

_RANKING = {
    "kendall_tau": ("", "Kendall tau-b between the measured and the predicted order of the alternatives (1: same order)"),
    "pairwise_agreement": ("", "share of pairs of alternatives the model orders as measured (a predicted tie counts half)"),
    "top1_agreement": ("", "1 when the model's pick is the measured best (shared among tied picks)"),
    "selection_penalty": ("", "time (or energy) lost by following the model's pick: (measured of pick - best) / best"),
    "profile_error": ("", "distance between the measured and the predicted profiles, each normalised (0: same shape)"),
    "tightness_median": ("", "median tightness of the group's alternatives (" + TIGHTNESS + ")"),
}
_PHASE = "seconds per run of this FDM phase, its slowest rank"

COLUMNS: dict[str, tuple[str, str]] = {
    **_RANKING,
    # projection.parquet (analysis.models.panwar: Panwar's device selection, thesis §3.4.2)
    "time_host_measured_s": ("s", "median measured time of the whole workload run on the host alone"),
    "time_accel_measured_s": ("s", "median measured time of the whole workload run on the accelerator alone"),
    "time_host_projected_s": ("s", "Panwar's projection of the workload on the host: max(compute, global, local)"),
    "time_accel_projected_s": ("s", "Panwar's projection of the workload on the accelerator: max(compute, global, "
                               "local)"),
    "picked": ("", "the processor the projection recommends (the smaller projected time)"),
    "relative_error": ("", "||T'_actual - T'_projected|| / sqrt(2), the time vectors over the processors scaled to "
                       "unit length (0: the processors' relative times right; 1 at most)"),
    "tightness_rounds": ("fraction", "the tightness with the model calibrated from its end points' repetitions of each "
                                     "round alone (PEACH: the study's own calibration, measured at each moment)"),
    # splits.parquet (analysis.scoring.splits: how to split one workload, each paper's answer)
    "method": ("", "whose answer: the measured best alpha, PEACH's eq. 13 (eq. 15 for energy), PerDome/PeaPaw's p-DP "
                   "balance (eq. 19) or the per-operation model's fastest predicted alpha"),
    "alpha_run": ("", "the swept alpha nearest the answer: the split a user of the grid would run"),
    # scorecard.parquet (analysis.scoring.scorecard; the verdict rule: docs/scorecard.md)
    "fingerprint": ("", "the machine the row speaks for: the fingerprint of the machine its platform was "
                        "characterised on (sims.fingerprint)"),
    "same_verdict": ("", "both machines' verdicts are the same"),
    "workload_class": ("", "memory- or compute-bound (the run's intensity against its platform's host balance "
                           "t_b / t_f), or the FDM scale band by ranks"),
    "runs": ("", "runs whose tightness was scored in this row"),
    "groups": ("", "groups of alternatives scored for ranking in this row"),
    "distinguishable_groups": ("", "groups whose alternatives the measurements can tell apart (noise-aware)"),
    "kendall_tau_median": ("", "median Kendall tau over the distinguishable groups"),
    "top1_noise_aware_rate": ("", "share of distinguishable groups where the model's pick is among the measured "
                                  "best within noise"),
    "top1_noise_aware_lo": ("", "lower end of the Clopper-Pearson interval (uncertainty.level) of top1_noise_aware_rate"),
    "top1_noise_aware_hi": ("", "upper end of the Clopper-Pearson interval (uncertainty.level) of top1_noise_aware_rate"),
    "heldout_error": ("", "median relative error of the analytical model at the held-out largest scale (scaling fits)"),
    "bounds_verdict": ("", "trusted, not trusted, undecided or not enough data: the tightness interval against the "
                           "model kind's band"),
    "ranking_verdict": ("", "trusted, not trusted, undecided or not enough data: tau and top-1 intervals against the "
                            "rule"),
    "verdict": ("", "both, trust for bounds, trust for predictions, trust for ranking, undecided, neither, or not "
                    "enough data (docs/scorecard.md)"),
    "rounds_reps": ("", "the round each ok repetition was measured in, in rep order beside time_reps_s (NaN: not "
                        "recorded)"),
    "model_kind": ("", "bound (tightness at most 1 expected) or predictor (tightness near 1 expected): which band the "
                       "tightness interval is judged against"),
    "interval_level": ("", "the level whose own interval is the widest: characterisation (its replicates), runs, "
                           "repetitions or study"),
    "width_characterisation": ("fraction", "width of the tightness interval with only the characterisation "
                                           "replicates resampled"),
    "width_runs": ("fraction", "width of the tightness interval with only the runs resampled"),
    "width_repetitions": ("fraction", "width of the tightness interval with only each run's repetitions resampled"),
    "width_study": ("fraction", "width of the tightness interval with only the study-level shift drawn: what two "
                                "studies differ by beyond their replicates and rounds (the shipped between-study "
                                "spread)"),
    "replicates": ("", "characterisation replicates whose predictions the interval resampled (0: one "
                       "characterisation)"),
    "decide": ("", "for an undecided aspect: the edge its interval straddles and what would settle it"),
    "pooled_snapshots": ("", "history snapshots of this study, code, configuration and machine the pooled verdict "
                             "rests on (fewer than 2: none)"),
    "pooled_tightness_median": ("fraction", "random-effects mean of the snapshots' median tightness (log scale, "
                                            "between-snapshot variance included)"),
    "pooled_tightness_lo": ("fraction", "lower end of the pooled tightness interval (uncertainty.level)"),
    "pooled_tightness_hi": ("fraction", "upper end of the pooled tightness interval (uncertainty.level)"),
    "pooled_tau2": ("", "between-snapshot variance of the log median tightness (DerSimonian-Laird)"),
    "pooled_kendall_tau_median": ("", "random-effects mean of the snapshots' median Kendall tau"),
    "pooled_kendall_tau_lo": ("", "lower end of the pooled Kendall tau interval"),
    "pooled_kendall_tau_hi": ("", "upper end of the pooled Kendall tau interval"),
    "pooled_top1_rate": ("", "noise-aware top-1 hits over distinguishable groups, summed over the snapshots"),
    "pooled_top1_lo": ("", "lower end of the pooled top-1 rate's Clopper-Pearson interval"),
    "pooled_top1_hi": ("", "upper end of the pooled top-1 rate's Clopper-Pearson interval"),
    "pooled_bounds_verdict": ("", "the tightness verdict of the pooled interval"),
    "pooled_ranking_verdict": ("", "the ranking verdict of the pooled intervals"),
    "pooled_verdict": ("", "the row's verdict pooled over the snapshots (docs/scorecard.md)"),
    "contradicts": ("", "an aspect trusted on one side and not trusted on the other"),
    "a_in_b": ("", "A's median tightness lies in B's interval"),
    "b_in_a": ("", "B's median tightness lies in A's interval"),
    "evidence": ("", "which part of the report holds the row's evidence (wp, peach, fdm)"),
    "study": ("", "the study the run belongs to"),
    "case": ("", "the case (sa, la, peach, fdm, published or a plugin's)"),
    "platform": ("", "the platform (rank layout) the run ran on"),
    "variant": ("", "the alternative: a workload partition (CO, GO, p-DP, CP, CP-reverse), DP(alpha), or a design"),
    "size": ("", "the problem size as an integer (SA: elements per vector; LA: n_mm^2 + n_tr^2; PEACH: n)"),
    "size_label": ("", "what the size is, in the case's own words"),
    "alpha": ("fraction", "share of the data (or work) on the accelerator"),
    "params": ("", "the run's parameters (what defines it besides its case and variant)"),
    "run_id": ("", "the run's identity: a hash of its spec"),
    "model": ("", "the model that predicted the row"),
    "quantity": ("", "what the alternatives are ranked by: time or energy"),
    "axis": ("", "the axis the group ranks along (wp: the workload partitions; alpha: the DP sweep; FDM: designs, "
                 "decompositions)"),
    "n_reps": ("", "ok repetitions of the run"),
    "n_alternatives": ("", "alternatives ranked in the group"),
    "n_reps_min": ("", "fewest repetitions of any alternative in the group"),
    "tightness": ("fraction", TIGHTNESS),
    "tightness_min": ("fraction", "smallest tightness in the group"),
    "tightness_max": ("fraction", "largest tightness in the group"),
    "tightness_time": ("fraction", "the published prediction's tightness by time (" + TIGHTNESS + ")"),
    "tightness_energy": ("fraction", "the published prediction's tightness by energy (" + TIGHTNESS + ")"),
    "best_measured": ("", "the measured fastest (or least-energy) alternative(s)"),
    "best_predicted": ("", "the model's pick(s)"),
    "best_measured_noise_aware": ("", "the alternatives the measurements cannot tell apart from the fastest "
                                      "(one-sided Mann-Whitney U test)"),
    "distinguishable": ("", "false when every alternative is within noise of the fastest: the ranking is not "
                            "distinguishable and its scores are scores of noise"),
    "top1_noise_aware": ("", "1 when the model's pick is among the best within noise"),
    "selection_penalty_noise_aware": ("", "the selection penalty, 0 for a pick within noise of the best"),
    "axis_wp": ("", "the run is one of the fixed workload partitions (ranked along the wp axis)"),
    "axis_alpha": ("", "the run is a DP(alpha) split (ranked along the alpha axis)"),
    "flops": ("flop", "static flop count of the run (the paper's counting rules)"),
    "bytes": ("byte", "static byte count of the run (the paper's counting rules)"),
    "series": ("", "one configuration measured at several scales (FDM: grid, order, boundary, design, backend over "
                   "ranks, the fastest decomposition at each; WP cases: a variant over size)"),
    "parameter": ("", "the scale parameter p of the empirical fit (ranks or size)"),
    "n_scales": ("", "distinct scales measured"),
    "scales": ("", "the scales measured"),
    "hypothesis": ("", "the fitted Extra-P normal-form function of p (seconds), selected by leave-one-scale-out "
                       "cross-validation"),
    "adj_r2": ("", "adjusted R² of the fit over every repetition"),
    "smape": ("fraction", "symmetric mean absolute percentage error of the fit at the measured medians"),
    "cv_smape": ("fraction", "mean SMAPE of the left-out scale's median, leaving each scale out in turn"),
    "poor_fit": ("", "true when the adjusted R² is below 0.9 or there were fewer than 3 scales"),
    "fit_note": ("", "why the fit is flagged, empty when it is not (scaling fits: too few scales or a poor fit; "
                     "per-operation model rows: a cost fit with R² below 0.95, or a multiplication cost that moved "
                     "more than 1.2x between the characterisation's repetitions)"),
    "extrapolated": ("", "the fit at 2x and 4x the largest scale with its 95 % prediction interval"),
    "heldout_scale": ("", "the largest scale, left out of the held-out fit"),
    "scale_values": ("", "the series' scales (ranks or size), ascending"),
    "measured_medians_s": ("s", "measured median time at each scale"),
    "analytical_s": ("s", "the analytical model's time at each scale"),
    "fit_residuals": ("fraction", "(measured median - fit) / measured median at each scale, of the fit over every scale"),
    "curve_p": ("", "scales the fit is drawn at, from the smallest to 4x the largest"),
    "curve_s": ("s", "the fit over every scale at curve_p"),
    "curve_lo_s": ("s", "its 95 % prediction interval at curve_p, lower end (NaN without a degree of freedom)"),
    "curve_hi_s": ("s", "its 95 % prediction interval at curve_p, upper end"),
    "heldout_measured_s": ("s", "measured median time at the held-out scale"),
    "heldout_empirical_s": ("s", "the fit over the smaller scales, predicting the held-out scale"),
    "heldout_empirical_lo_s": ("s", "its 95 % prediction interval, lower end (null without a degree of freedom)"),
    "heldout_empirical_hi_s": ("s", "its 95 % prediction interval, upper end"),
    "heldout_empirical_error": ("fraction", "|empirical - measured| / measured at the held-out scale"),
    "heldout_empirical_hypothesis": ("", "the function fitted over the smaller scales"),
    "analytical_model": ("", "the analytical model compared"),
    "heldout_analytical_s": ("s", "the analytical model's time for the same run"),
    "heldout_analytical_error": ("fraction", "|analytical - measured| / measured at the held-out scale (for a bound: "
                                             "how far the run stays from it)"),
    "traffic": ("byte", "memory traffic the bound counts: per phase, the compulsory traffic of its kernel class "
                        "(a BLAS product: A, B and C once; element-wise code: its counted bytes)"),
    "intensity": ("flop/byte", "operational intensity the bound uses: flops / traffic"),
    "perf_measured": ("flop/s", "measured performance: flops / median time"),
    "perf_predicted": ("flop/s", "the model's bound on performance"),
    "energy_source": ("", "where the energy came from (rapl, nvml, trace, published; none = not measured)"),
    "efficiency_measured": ("flop/J", "measured energy efficiency: flops / median energy"),
    "efficiency_predicted": ("flop/J", "the model's bound on energy efficiency"),
    "efficiency_error": ("fraction", "published efficiency prediction: predicted / measured - 1"),
    "rate_error": ("fraction", "published rate prediction: predicted / measured - 1"),
    "rel_error": ("fraction", "(predicted - measured) / measured"),
    "time_rel_error": ("fraction", "PEACH's predicted time: (predicted - measured) / measured"),
    "energy_rel_error": ("fraction", "PEACH's predicted energy: (predicted - measured) / measured"),
    "work": ("work_unit", "the workload's work W (flop for MatrixMultiply, byte for MatrixTranspose: see work_unit)"),
    "work_unit": ("", "the unit of work, rates and efficiencies of the row (flop or byte)"),
    "precision": ("", "the floating-point precision the run's work computed in (float32 or float64)"),
    "rate_measured": ("work_unit/s", "measured rate W / time (the unit per row: see work_unit)"),
    "rate_predicted": ("work_unit/s", "PEACH eq. 7's rate (the unit per row: see work_unit)"),
    "eta_measured": ("work_unit/J", "measured efficiency W / energy (the unit per row: see work_unit)"),
    "eta_predicted": ("work_unit/J", "PEACH eq. 12's efficiency (the unit per row: see work_unit)"),
    "R_C": ("work_unit/s", "PEACH's host rate, from the curve's alpha = 0 run"),
    "R_G": ("work_unit/s", "PEACH's accelerator rate, from the curve's alpha = 1 run"),
    "P0": ("W", "PEACH's base (idle) power"), "Pd_C": ("W", "PEACH's host dynamic power"),
    "Pd_G": ("W", "PEACH's accelerator dynamic power"),
    "alpha_best_measured": ("fraction", "the alpha of the measured best point of the curve"),
    "alpha_best_predicted": ("fraction", "the alpha of the model's best grid point"),
    "alpha_continuous": ("fraction", "PEACH's continuous optimum (eq. 13 by time, eq. 15 by energy)"),
    "error_median": ("fraction", "median relative error of PEACH's prediction at the curve's interior alphas"),
    "error_max": ("fraction", "largest relative error at the interior alphas"),
    "endpoint": ("", "the run is the curve's alpha = 0 or 1 point (it calibrates the model)"),
    "frequency": ("", "the (f_C, f_G) pair the run was set to, or default"),
    "workload": ("", "PEACH's workload (MatrixMultiply, MatrixTranspose)"),
    "processor": ("", "host, accel, or node (both)"),
    "bl": ("flop/byte", "machine balance t_b / t_f (PeaPaw eq. 27)"),
    "ceiling": ("", "the compute ceiling(s) its phases run against (kernel class and precision)"),
    "perop_fit_r2": ("", "per-operation model: the smallest R² of the cost fits (add and mul; on a NumPy "
                         "processor also move and short_add) of the processors the run used (null for other models)"),
    "perop_fit_spread": ("", "per-operation model: the largest spread (largest / smallest over the "
                             "characterisation's repetitions) of the float32 multiplication cost of the processors "
                             "the run used (null for other models, or a platform file without repetitions)"),
    "p_category": ("", "PeaPaw's P-Paw category of the platform"), "p_guideline": ("", "its guideline"),
    "e_category": ("", "PeaPaw's E-Paw category (needs e_f, e_b, p_s from a meter)"),
    "guideline_wps": ("", "the run WPs the guideline prescribes"),
    "follows": ("", "whether the measured best WP is one the guideline prescribes (n/a: none of them ran)"),
    "least_energy": ("", "the least-energy WP and whether it follows E-Paw"),
    "grid": ("", "the FDM grid (JSON: shape, spacing)"), "decomposition": ("", "ranks per axis (JSON)"),
    "marshaling": ("", "the halo data-marshaling design"), "boundary": ("", "absorbing boundary (none, cpml(width))"),
    "backend": ("", "numpy, numba or cupy"), "ranks": ("", "MPI ranks"), "nodes": ("", "nodes the ranks span"),
    "threads_per_rank": ("", "threads each rank's kernels run (Numba parallel loops)"),
    "messages_intra_node": ("", "halo messages per exchange between ranks on one node (every rank and neighbour), "
                                "counted from the decomposition and the nodes, not measured"),
    "messages_inter_node": ("", "halo messages per exchange between ranks on different nodes (ranks placed in "
                                "consecutive blocks per node; counted, not measured): each costs the inter-node "
                                "ping-pong in both FDM models"),
    "links": ("", "which links the run's halos used, from those counts: none, intra-node, inter-node or both"),
    "order": ("", "space order of the stencil (2 or 4)"), "steps": ("", "time steps in the measured loop"),
    "points": ("", "grid points updated per step"),
    "fixed": ("", "what the group holds fixed while ranking along its axis"),
    "mlups_measured": ("MLUP/s", "million lattice-point updates per second, measured"),
    "mlups_predicted": ("MLUP/s", "million lattice-point updates per second, the FDM model"),
    "noise_floor": ("fraction", "the study's run-to-run drift: a high quantile (0.9) of the relative differences between "
                                "runs of identical code (FDM designs that differ only in name); an alternative within it "
                                "of the fastest counts as tied with it"),
    "noise_floor_pairs": ("", "how many pairs of identical-code runs the drift was measured from"),
    "worst_phase": ("", "the phase whose prediction is furthest (in seconds) from its measured median: which term "
                        "is wrong when the total is"),
    "worst_phase_error_s": ("s", "that phase's predicted minus measured seconds (slowest rank, whole run)"),
    "error": ("", "why the run failed"), "status": ("", "ok, failed or skipped"),
    "started_at": ("", "when the run's newest record started (UTC)"),
    "paper": ("", "the source paper"), "where": ("", "the table or section of the claim"),
    "unit": ("", "the unit of the claim's numbers"), "inputs": ("", "the tables the claim is recomputed from"),
    "note": ("", "how the paper rounds or what it leaves out"),
    "published": ("", "the paper's number, as printed"), "ours": ("", "the number recomputed from the paper's inputs"),
    "reproduced": ("", "whether ours equals the paper's within the claim's tolerance"),
    "published_value": ("unit", "the paper's number, in the row's unit (null when it is not a number: an ordering, a category)"),
    "ours_value": ("unit", "our number recomputed from the paper's inputs, in the row's unit (null when not a number)"),
    "tolerance": ("", "how close ours must come: relative, absolute (same sign) or exact"),
    "difference": ("", "ours against the paper's on the tolerance's scale: ours / published - 1 (relative) or "
                       "ours - published"),
    "reason": ("", "why a claim is not reproduced: both numbers, their difference and the tolerance"),
    "application": ("", "the published study's application"), "source": ("", "the paper and table of the row"),
    "same_configuration": ("", "whether the paper predicted at the configuration it measured"),
}


def describe(column: str) -> tuple[str, str] | None:
    """(unit, description) of a validation column, families included; None for a column this does not know."""
    if column in COLUMNS:
        return COLUMNS[column]
    for end, which in (("_lo", "lower"), ("_hi", "upper")):
        if column.endswith(end) and describe(column[: -len(end)]):
            unit, what = describe(column[: -len(end)])  # type: ignore[misc]
            return unit, f"{which} end of the bootstrap interval (uncertainty.level) of: {what}"
    if column.endswith("_replicates") and describe(column[: -len("_replicates")]):
        unit, what = describe(column[: -len("_replicates")])  # type: ignore[misc]
        return unit, f"per characterisation replicate, as its own platform file predicts: {what}"
    if column.endswith("_median_s") and column[:-len("_median_s")] in FDM_PHASES:
        return "s", _PHASE + " (median over the repetitions)"
    if column.endswith("_pred_s") and column[:-len("_pred_s")] in (*FDM_MODEL_PARTS, *FDM_PHASES):
        return "s", (f"the FDM model's {column[:-len('_pred_s')]} term for the run (a phase: its slowest rank, as "
                     "measured; the analytical model gives compute, not velocity and stress)")
    for role, whose in (("host", "on the host"), ("accel", "on the accelerator")):
        base = column.replace(f"_{role}", "", 1)  # a per-processor column: the run-level one, of that part
        if f"_{role}" in column and not column.startswith(("time", "energy")) and base in COLUMNS:
            unit, what = COLUMNS[base]
            return unit, f"{what} - {whose} (NaN when it is idle)" if base.startswith(("intensity", "perf")) \
                else f"{what} - {whose}"
    for prefix, unit in (("time", "s"), ("energy", "J")):
        if column.startswith(prefix) and column.endswith(("_s", "_j")):
            stat = next((w for w in ("median", "min", "max", "iqr", "predicted", "measured") if w in column), "value")
            who = next((w for w in ROLES if f"_{w}_" in column), "")
            reps = column.endswith(("reps_s", "reps_j"))
            what = (f"every ok repetition's {prefix}, in rep order" if reps else
                    f"{stat} {prefix}" + (f" of the {who}'s part" if who else "") + " over the repetitions")
            return unit, what
    return None


def _struct(values: pd.Series) -> pa.Array | None:
    """JSON objects (text) as one Arrow struct array, or None when they are not all objects. A study's runs share
    a few params texts: each distinct text is parsed and converted once, and the rows take theirs by code."""
    codes, texts = pd.factorize(values, use_na_sentinel=True)
    if (codes < 0).any() and any(v is not None and not (isinstance(v, float) and v != v)
                                 for v in values[codes < 0].tolist()):
        return None  # a missing value other than None or NaN (pandas' NA) is not read as no params
    docs = []
    for text in texts.tolist():
        try:
            doc = json.loads(text)
        except (TypeError, ValueError):
            return None
        if not isinstance(doc, dict):
            return None
        docs.append(doc)
    try:
        arr = pa.array(docs)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None
    # a struct needs fields (Parquet cannot store an empty struct): all-empty params stay text
    if not (pa.types.is_struct(arr.type) and arr.type.num_fields):
        return None
    return arr.take(pa.array(codes, mask=codes < 0))  # a missing text (code -1): a null row


def to_arrow(frame: pd.DataFrame, table: str) -> pa.Table:
    """``frame`` as an Arrow table with every column's unit and description in its field metadata, lists of
    repetitions as ``list<double>``, ``params`` as a struct; the table's name and the tightness definition in the
    schema metadata."""
    out = pa.Table.from_pandas(frame.reset_index(drop=True), preserve_index=False)
    fields, arrays, restructured = [], [], []
    for name, col in zip(out.column_names, out.columns, strict=True):
        if pa.types.is_list(col.type) or pa.types.is_large_list(col.type) or (
                pa.types.is_null(col.type) and name.endswith(("reps_s", "reps_j"))):
            col = col.cast(pa.list_(pa.float64()))
        if name == "params" and len(frame):
            struct = _struct(frame["params"])
            if struct is not None:
                col = pa.chunked_array([struct])
                restructured.append(name)
        meta: dict[str, str] = {}
        known = describe(name)
        if known:
            unit, what = known
            if unit:
                meta["unit"] = unit
            meta["description"] = what
        fields.append(pa.field(name, col.type, metadata=meta or None))
        arrays.append(col)
    meta = dict(out.schema.metadata or {})
    if restructured and b"pandas" in meta:  # pandas would read the struct back as the text it was: say it is not
        doc = json.loads(meta[b"pandas"])
        for c in doc.get("columns", []):
            if c.get("name") in restructured:
                c.update(pandas_type="object", numpy_type="object", metadata=None)
        meta[b"pandas"] = json.dumps(doc).encode()
    schema = pa.schema(fields, metadata={**meta, b"hetval.table": table.encode(), b"hetval.tightness": TIGHTNESS.encode()})
    return pa.Table.from_arrays(arrays, schema=schema)
