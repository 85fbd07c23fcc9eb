"""Panwar's device selection in the report (thesis §3.4.2): per workload run alone on each processor, the
measured and projected times, the pick, the device-selection penalty and the relative error."""

from __future__ import annotations

from typing import TYPE_CHECKING

from analysis.report.common import fmt_sig
from analysis.report.section import SectionOutput

if TYPE_CHECKING:
    import pandas as pd


def projection_block(out: SectionOutput, projection: pd.DataFrame | None) -> None:
    """Panwar's device selection per workload (thesis §3.4.2): which processor the projection picks, what that
    costs, and how far the projected relative times are from the measured ones."""
    out.heading("Device selection (Panwar's projection)", anchor="projection")
    if projection is None or not len(projection):
        out.para("No workload ran alone on each processor: nothing for the projection to choose between.", "missing")
        return
    rows = []
    for r in projection.itertuples():
        rows.append([str(r.case), str(r.platform), str(r.size),
                     f"{fmt_sig(r.time_host_measured_s)} / {fmt_sig(r.time_accel_measured_s)}",
                     f"{fmt_sig(r.time_host_projected_s)} / {fmt_sig(r.time_accel_projected_s)}",
                     str(r.best_measured), str(r.picked),
                     f"{100 * r.selection_penalty:.1f} %" + ("" if r.distinguishable else " (within noise)"),
                     f"{100 * r.relative_error:.1f} %"])
    out.table(["case", "platform", "size", "measured host / accel (s)", "projected host / accel (s)", "fastest",
               "picked", "penalty", "relative error"], rows,
              "each processor alone: measured and projected time, the pick, the device-selection penalty and the "
              "relative error", total=len(projection), source="projection.parquet")
    out.para("What this shows: Panwar's online projection (thesis ch. 3) projects each processor's time for the "
             "whole workload as max(compute, global memory, local memory) from the characterised profile; the "
             "penalty is the measured time lost by running where it recommends, the relative error the distance "
             "between the measured and projected times over the processors, each scaled to unit length (§3.4.2).",
             "what")
    out.lines += ["", "device selection (Panwar): " + "; ".join(
        f"{r.case} {r.size}: picked {r.picked}, fastest {r.best_measured}, penalty {100 * r.selection_penalty:.1f} %, "
        f"relative error {100 * r.relative_error:.1f} %" for r in projection.itertuples())]
