"""Compute ceilings per kernel class: each phase is bounded by the ceiling of the kernels it runs, with the traffic
they must move; a ceiling that was never measured gives no bound rather than a wrong one."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from analysis.cases.la import CASE as LA
from analysis.cases.sa import CASE as SA
from analysis.equations import hetero
from analysis.models.peapaw import predict_sa
from analysis.scoring import ceilings
from sims.bench import ceilings as bench
from sims.bench import plan
from sims.la import matrix
from tests.conftest import REPO

T = {"t_f_vector_float32": 1 / 20e9, "t_f_vector_float64": 1 / 15e9, "t_f_gemm_float32": 1 / 120e9,
     "t_f_gemm_float64": 1 / 60e9}

#: The rows below already carry their platform's columns: the join adds nothing but keeps platform "p".
PLATFORMS = SimpleNamespace(processors=pd.DataFrame({"platform": ["p"]}))


def _la_row(variant: str, alpha: float | None, gemm: bool = True) -> dict:
    parts, a = matrix.la_partition(variant, 1024, 8192, 4, rates=None) if variant != "p-DP" else \
        matrix.la_partition("DP(0.5)", 1024, 8192, 4)
    params = {"n_mm": 1024, "n_tr": 8192, "dtype": "float32", "alpha": a,
              "rows": {r: {"matmul": p.mm_rows, "transpose": p.tr_rows} for r, p in parts.items()}}
    row = {"run_id": variant, "case": "la", "variant": variant, "platform": "p", "params": json.dumps(params),
           "flops": sum(p.flops for p in parts.values()), "bytes": sum(p.bytes for p in parts.values()),
           "time_median_s": 0.1, "time_host_median_s": 0.1, "time_accel_median_s": 0.1}
    for r, p in parts.items():
        row.update({f"flops_{r}": p.flops, f"bytes_{r}": p.bytes, f"t_b_{r}": 1 / 40e9, f"t_f_{r}": T["t_f_vector_float32"]})
        for k, v in T.items():
            row[f"{k}_{r}"] = v if gemm or "gemm" not in k else np.nan
    return row


def test_la_products_run_against_the_gemm_ceiling_with_their_compulsory_traffic():
    runs = pd.DataFrame([_la_row(v, None) for v in ("CO", "GO", "CP")])
    out = LA.join(runs, PLATFORMS)
    co, go, cp = (out.iloc[i] for i in range(3))
    # this platform never measured the transpose's bandwidth: the triad's stands in (a looser bound), and says so
    unmeasured = "; transpose float32 bandwidth (not measured: the triad's)"
    assert co["t_f_host"] == T["t_f_gemm_float32"] and co["ceiling_host"] == "gemm float32" + unmeasured
    assert co["ceiling_accel"] == "none (no flops)" and go["ceiling_accel"] == "gemm float32" + unmeasured
    assert cp["ceiling_host"] == "none (no flops)" + unmeasured and cp["t_f_accel"] == T["t_f_gemm_float32"]
    assert co["t_b_host"] == pytest.approx(1 / 40e9)
    # A, B, C once plus the transpose's 2 s m^2 - not the classic kernel's 2 s n^3 of the recorded bytes
    assert co["traffic_host"] == 4 * 3 * 1024**2 + 8 * 8192**2 < co["bytes_host"]
    assert cp["traffic_accel"] == 4 * 3 * 1024**2 and cp["traffic_host"] == 8 * 8192**2
    # the recorded (papers') counts are untouched
    assert (out["bytes"] == runs["bytes"]).all()
    pred = predict_sa(out)
    bound = np.maximum(co["flops"] * T["t_f_gemm_float32"], co["traffic_host"] / 40e9)
    assert pred.iloc[0]["time_predicted_s"] == pytest.approx(bound)


def test_the_transpose_is_bounded_by_its_own_bandwidth():
    """Strided access: the transpose's traffic moves at the measured transpose bandwidth, the product's at the
    triad's; the effective t_b makes traffic x t_b the sum of the two memory times."""
    row = _la_row("CO", None)
    row.update(t_b_transpose_float32_host=1 / 2e9, t_b_transpose_float32_accel=1 / 3e9)
    out = LA.join(pd.DataFrame([row]), PLATFORMS).iloc[0]
    product, transpose = 4 * 3 * 1024**2, 8 * 8192**2
    assert out["traffic_host"] == product + transpose
    assert out["traffic_host"] * out["t_b_host"] == pytest.approx(product / 40e9 + transpose / 2e9)
    assert out["ceiling_host"] == "gemm float32; transpose float32 bandwidth"
    pred = predict_sa(LA.join(pd.DataFrame([row]), PLATFORMS)).iloc[0]
    assert pred["time_predicted_s"] == pytest.approx(max(out["flops"] * T["t_f_gemm_float32"],
                                                         product / 40e9 + transpose / 2e9))


def test_the_transpose_bandwidth_is_measured_with_the_cases_own_kernel():
    from sims.backends import get_backend

    for name in ("numpy", "numba"):
        b = get_backend(name)
        n = plan.transpose_size(3 * 2**20, "float64")
        assert n % 64 == 0 and 2 * 8 * n * n <= 12 * 3 * 2**20  # no more memory than the triad's three arrays
        s = bench.transpose_setup(b, 128, "float64", seed=1)
        assert bench.transpose(b, s) == 2 * 8 * 128**2
        np.testing.assert_array_equal(s["E"], s["D"].T)


def test_the_transpose_ceiling_is_measured_at_the_studys_own_sizes():
    """A transpose's rate depends on its row length: the ceiling is measured where the study's transposes run
    (a size whose two arrays exceed the rank's budget is left out, and said), else at the triad-matched size."""
    from analysis.planning.config import load_config
    from analysis.planning.estimates import transpose_sizes
    from sims.la.matrix import transpose_size

    assert transpose_size({"n_mm": 1024, "n_tr": 8192}) == 8192
    assert transpose_size({"workload": "MatrixTranspose", "n": 4096}) == 4096
    assert transpose_size({"workload": "MatrixMultiply", "n": 2048}) is None
    config = load_config(REPO / "config" / "config.yaml", REPO / "config" / "studies" / "tiny.yaml")
    platform = config["platforms"][0]["name"]
    assert transpose_sizes(config, platform) == [512, 1024]  # LA's 512, PEACH's 1024
    assert transpose_sizes(config, "another") == []
    config["characterize"]["transpose_sizes"] = [300, 100]
    assert transpose_sizes(config, platform) == [100, 300]
    said: list[str] = []
    assert plan.transpose_sizes([512, 8192], 3 * 2**20, "float64", 2**24, said.append) == [512]
    assert said and "n = 8192 left out" in said[0]
    assert plan.transpose_sizes([], 3 * 2**20, "float64", 2**24) == [plan.transpose_size(3 * 2**20, "float64")]
    assert plan.transpose_sizes([8192], 3 * 2**20, "float32", None) == [8192]


def test_a_ceiling_never_measured_gives_no_bound():
    runs = pd.DataFrame([_la_row("CO", None, gemm=False)])
    out = LA.join(runs, PLATFORMS)
    assert np.isnan(out.iloc[0]["t_f_host"])
    assert len(predict_sa(out)) == 0  # the model predicts only the runs it can bound


def test_mixed_kernel_classes_take_the_flop_weighted_ceiling():
    runs = pd.DataFrame([_la_row("CO", None)])
    work = {"host": ({("vector", "float32"): 1e9, ("gemm", "float32"): 3e9}, 5e8), "accel": ({}, 0.0)}
    out = ceilings.apply(runs, "params", lambda _: work)
    expect = (1e9 * T["t_f_vector_float32"] + 3e9 * T["t_f_gemm_float32"]) / 4e9
    assert out.iloc[0]["t_f_host"] == pytest.approx(expect)  # N_f t_f = the sum of the phases' compute times
    assert out.iloc[0]["ceiling_host"] == "vector float32 + gemm float32" and out.iloc[0]["traffic_host"] == 5e8


def test_sa_keeps_the_vector_ceiling_and_its_counted_bytes():
    from sims.sa.counts import PHASE_COUNTS

    n = 1 << 20
    params = {"elements": {"host": n, "accel": n}, "phases": {"host": ["vecadd"], "accel": ["powadd"]}, "size": n}
    row = {"run_id": "x", "case": "sa", "variant": "CP", "platform": "p", "params": json.dumps(params),
           "flops": n * 2049, "bytes": n * 268, "time_median_s": 0.1, "time_host_median_s": 0.1,
           "time_accel_median_s": 0.1, "flops_host": n, "bytes_host": 12 * n, "flops_accel": 2048 * n,
           "bytes_accel": 256 * n}
    for r in ("host", "accel"):
        row.update({f"t_b_{r}": 1 / 40e9, f"t_f_{r}": T["t_f_vector_float32"]})
        row.update({f"{k}_{r}": v for k, v in T.items()})
    out = SA.join(pd.DataFrame([row]), PLATFORMS).iloc[0]
    assert out["ceiling_host"] == out["ceiling_accel"] == "vector float32"
    assert out["t_f_host"] == out["t_f_accel"] == T["t_f_vector_float32"]
    assert out["traffic_host"] == PHASE_COUNTS["vecadd"][1] * n == row["bytes_host"]
    assert out["traffic_accel"] == row["bytes_accel"]
    host = hetero.Processor(t_f=T["t_f_vector_float32"], t_b=1 / 40e9)
    expect = hetero.performance(row["flops"] / row["bytes"], 1 / 12, 8.0, host, host)
    assert predict_sa(SA.join(pd.DataFrame([row]), PLATFORMS)).iloc[0]["perf_predicted"] == pytest.approx(expect)


def test_platform_columns_come_from_the_ceilings_and_t_f_is_vector_float32():
    proc = {"t_f": {"value": 2e-11}, "ceilings": {"vector": {"float32": {"value": 9e-9}, "float64": {"value": 3e-11}},
                                                "gemm": {"float32": {"value": 1e-11}, "float64": {"value": -1}}}}
    v = ceilings.ceiling_values(proc, "host")
    assert v["t_f_vector_float32_host"] == 2e-11  # t_f itself, which every other reader uses
    assert v["t_f_vector_float64_host"] == 3e-11 and v["t_f_gemm_float32_host"] == 1e-11
    assert np.isnan(v["t_f_gemm_float64_host"])  # a non-positive value is not a ceiling
    assert np.isnan(ceilings.ceiling_values({"t_f": {"value": 2e-11}}, "accel")["t_f_gemm_float32_accel"])


def test_ceiling_summary_is_the_best_size_with_every_size_kept():
    got = bench.summarize({256: [1.0, 2.0, 3.0], 512: [4.0, 5.0, 6.0], 1024: [4.5, 4.6, 4.7]}, "s/flop", "m", 1)
    # the size with the highest median; the upper end of its samples is the ceiling (a bound its own kernel does
    # not beat): the fastest, 6, plus its gap to the second fastest, 5
    assert got["size"] == 512 and got["rate_median"] == 5.0 and got["value"] == pytest.approx(1 / 7.0)
    assert got["rate_best"] == 6.0 and got["rate_ceiling"] == 7.0
    assert sorted(got["by_size"]) == [256, 512, 1024] and got["by_size"][256]["samples"] == [1.0, 2.0, 3.0]
    assert got["rate_spread"]["min"] == 4.0 and got["samples"] == [4.0, 5.0, 6.0]


def test_gemm_kernel_computes_the_product_and_counts_2n3():
    from sims.backends import get_backend

    b = get_backend("numpy")
    s = bench.gemm_setup(b, 64, "float64", seed=3)
    assert bench.gemm(b, s) == 2 * 64**3
    np.testing.assert_allclose(s["C"], s["A"] @ s["B"])
    v = bench.vector_setup(b, "float64", seed=3)
    assert v["acc"].dtype == np.float64 and isinstance(v["x"], np.float64)


def test_no_la_run_of_the_default_study_beats_its_bound(default_validated):
    """The default study's real runs and platform (analysis/resources/reference, measured together): with the GEMM ceiling and the
    compulsory traffic no LA run beats its bound, not even its slowest repetition; SA is bounded by t_f as before."""
    root = default_validated
    runs = pd.read_parquet(root / "validation" / "runs.parquet")
    la = runs[(runs["case"] == "la") & (runs["model"] == "PerDome/PeaPaw")]
    assert len(la) == 4 and (la["tightness"] * la["time_median_s"] / la["time_max_s"] <= 1.0).all()
    assert {"gemm float32"} <= set(la["ceiling_host"]) | set(la["ceiling_accel"])
    sa = runs[(runs["case"] == "sa") & (runs["model"] == "PerDome/PeaPaw")]
    assert len(sa) == 32 and set(sa["ceiling_host"]) | set(sa["ceiling_accel"]) <= {"vector float32", "none (no flops)"}
    assert (sa["traffic"] == sa["bytes"]).all()
    # Panwar's projection scores every workload that ran alone on each processor (SA's two sizes, LA's one, PEACH's
    # two workloads at their alpha 0 and 1), each named as a reader knows it
    projection = pd.read_parquet(root / "validation" / "projection.parquet")
    assert sorted(zip(projection["case"], projection["size"], strict=True)) == [
        ("la", 68157440), ("peach", 2048), ("peach", 8192), ("sa", 1048576), ("sa", 6400000)]
    assert set(projection.loc[projection["case"] == "peach", "size_label"]) == {
        "MatrixMultiply n=2048", "MatrixTranspose n=8192"}
    assert projection["relative_error"].between(0, 1).all() and (projection["selection_penalty"] >= 0).all()
    assert set(projection["picked"]) | set(projection["best_measured"]) <= {"host", "accel"}


def test_peach_products_use_gemm_at_their_precision_and_transposes_have_no_flops():
    mm, _ = matrix.peach_partition("MatrixMultiply", "DP(0.25)", 400, 8)
    w = ceilings.matrix_work({"workload": "MatrixMultiply", "n": 400, "dtype": "float64",
                              "rows": {r: {"matmul": p.mm_rows, "transpose": 0} for r, p in mm.items()}})
    assert w["accel"] == ({("gemm", "float64"): 2.0 * 100 * 400 * 400}, 8.0 * (2 * 100 * 400 + 400 * 400),
                          {("transpose", "float64"): 0.0})
    tr, _ = matrix.peach_partition("MatrixTranspose", "DP(0.5)", 64, 8)
    w = ceilings.matrix_work({"workload": "MatrixTranspose", "n": 64, "dtype": "float64",
                              "rows": {r: {"matmul": 0, "transpose": p.tr_rows} for r, p in tr.items()}})
    # all of the transpose's traffic is strided
    assert w["host"] == ({("gemm", "float64"): 0.0}, float(tr["host"].bytes),
                         {("transpose", "float64"): float(tr["host"].bytes)})
    assert ceilings.matrix_work({"n": 64}) is None  # no rows: unknown, the recorded bytes stay


def test_a_ceiling_lies_above_its_largest_sample_by_the_gap_below_it():
    """Ten draws from rates uniform on [1, 2] put their largest short of 2 by about a tenth of the range, and
    ten more draws (a study's runs of the kernel) beat it half the time; the upper end the ceiling takes is
    beaten far less often, and a single sample is its own end."""
    rng = np.random.default_rng(7)
    beaten_max = beaten_end = 0
    for _ in range(2000):
        char, runs = rng.uniform(1.0, 2.0, 10), rng.uniform(1.0, 2.0, 10)
        beaten_max += runs.max() > char.max()
        beaten_end += runs.max() > bench.upper_end(char)
    assert 0.4 < beaten_max / 2000 < 0.6 and beaten_end / 2000 < 0.35
    assert bench.upper_end([3.0]) == 3.0 and bench.upper_end([1.0, 4.0, 2.0]) == 6.0
