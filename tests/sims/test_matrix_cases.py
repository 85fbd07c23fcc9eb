"""LA and PEACH cases: the papers' static counts, the partitions, and kernels that compute what they claim."""

from __future__ import annotations

import numpy as np
import pytest

from sims.backends import get_backend
from sims.la import kernels, matrix
from sims.la.frequency import NotControllable, cpu_control, pinned


def test_la_counts_reproduce_peapaw_intensities():
    parts, alpha = matrix.la_partition("CO", 1024, 8192)
    whole = parts["host"]
    # PeaPaw §6.3.2: I = 0.24 for every WP, I_G = 0.25 for CP's multiply on the accel
    assert whole.flops / whole.bytes == pytest.approx(0.235, abs=5e-4)
    assert round(whole.flops / whole.bytes, 2) == 0.24 and alpha == 0.0
    cp, a = matrix.la_partition("CP", 1024, 8192)
    assert a is None and cp["host"].phases == ("transpose",) and cp["accel"].phases == ("matmul",)
    assert cp["host"].flops == 0
    assert round(cp["accel"].flops / cp["accel"].bytes, 2) == 0.25
    assert cp["host"].flops + cp["accel"].flops == whole.flops
    assert cp["host"].bytes + cp["accel"].bytes == whole.bytes


def test_la_dp_splits_rows_and_keeps_totals():
    parts, alpha = matrix.la_partition("DP(0.25)", 1000, 4000)
    h, a = parts["host"], parts["accel"]
    assert (h.mm_rows, a.mm_rows, h.tr_rows, a.tr_rows) == (750, 250, 3000, 1000)
    co = matrix.la_partition("CO", 1000, 4000)[0]["host"]
    assert h.flops + a.flops == co.flops and h.bytes + a.bytes == co.bytes
    go = matrix.la_partition("GO", 1000, 4000)[0]
    assert go["host"].idle and go["accel"].flops == co.flops


def test_la_pdp_balances_roofline_times_against_the_gemm_ceiling():
    t_f = {"host": 1e-10, "accel": 1e-11}
    t_gemm = {"host": 2e-11, "accel": 1e-11}
    t_b = {"host": 1e-10, "accel": 2e-11}
    rates = {r: {"t_f": t_f[r], "t_b": t_b[r], "t_f_gemm_float32": t_gemm[r]} for r in t_f}
    parts, alpha = matrix.la_partition("p-DP", 1024, 8192, rates=rates)
    whole = matrix.la_partition("CO", 1024, 8192)[0]["host"]
    # the product's compulsory traffic (A, B, C once) plus the transpose's bytes - not the classic kernel's 2 s n^3
    assert whole.traffic == 4 * 3 * 1024**2 + 2 * 4 * 8192**2 < whole.bytes
    t_host = max(whole.flops * t_gemm["host"], whole.traffic * t_b["host"]) * (1 - alpha)
    t_accel = max(whole.flops * t_gemm["accel"], whole.traffic * t_b["accel"]) * alpha
    assert t_host == pytest.approx(t_accel)
    # the transpose's traffic at its own (strided) bandwidth where the platform measured one
    strided = {"host": 1e-9, "accel": 4e-10}
    _, slow = matrix.la_partition("p-DP", 1024, 8192, rates={r: {**rates[r], "t_f_transpose_float32": strided[r]}
                                                             for r in t_f})
    product, transpose = 4 * 3 * 1024**2, 2 * 4 * 8192**2
    t_host, t_accel = ((max(whole.flops * t_gemm[r], product * t_b[r] + transpose * strided[r]))
                       for r in ("host", "accel"))
    assert t_host * (1 - slow) == pytest.approx(t_accel * slow) and slow != alpha
    # a platform file from before the ceilings: the classic t_f and the counted bytes, as it was split then
    _, old = matrix.la_partition("p-DP", 1024, 8192, rates={r: {"t_f": t_f[r], "t_b": t_b[r]} for r in t_f})
    t_host = max(whole.flops * t_f["host"], whole.bytes * t_b["host"]) * (1 - old)
    t_accel = max(whole.flops * t_f["accel"], whole.bytes * t_b["accel"]) * old
    assert t_host == pytest.approx(t_accel) and old != alpha
    with pytest.raises(ValueError, match="characterised platform"):
        matrix.la_partition("p-DP", 1024, 8192)


@pytest.mark.parametrize("variant", ["CP-reverse", "DP(1.5)", "XX"])
def test_bad_la_variants(variant):
    with pytest.raises(ValueError, match="LA variant"):
        matrix.la_partition(variant, 8, 8)


def test_peach_partitions_and_work_units():
    parts, alpha = matrix.peach_partition("MatrixMultiply", "DP(0.3)", 100, 8)
    assert alpha == 0.3 and parts["accel"].mm_rows == 30 and parts["host"].mm_rows == 70
    assert matrix.work_units("MatrixMultiply", parts["host"]) == 2 * 70 * 100 * 100
    t, _ = matrix.peach_partition("MatrixTranspose", "DP(0.5)", 64, 8)
    assert t["host"].flops == 0 and matrix.work_units("MatrixTranspose", t["host"]) == 2 * 8 * 32 * 64
    with pytest.raises(ValueError, match="unknown PEACH workload"):
        matrix.peach_partition("TSP", "DP(0.5)", 8, 8)
    with pytest.raises(ValueError, match="DP\\(alpha\\)"):
        matrix.peach_partition("MatrixMultiply", "CO", 8, 8)


@pytest.mark.parametrize("backend", ["numpy", "numba"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_kernels_compute_a_product_and_a_transpose(backend, dtype):
    b = get_backend(backend)
    part = matrix.Part(mm_rows=37, tr_rows=45, n_mm=53, n_tr=131, itemsize=matrix.DTYPES[dtype])
    arrays = kernels.allocate(b, part, dtype, seed=3)
    assert arrays["A"].dtype == np.dtype(dtype) and arrays["E"].shape == (131, 45)
    kernels.matmul(b, arrays)
    kernels.transpose(b, arrays)
    ref = arrays["A"].astype(np.float64) @ arrays["B"].astype(np.float64)
    np.testing.assert_allclose(arrays["C"], ref, rtol=1e-4 if dtype == "float32" else 1e-12, atol=1e-4)
    assert np.array_equal(arrays["E"], arrays["D"].T)  # a transpose is exactly a transpose


def test_frequency_control_is_refused_where_impossible(tmp_path):
    ok, why = cpu_control([0], sysfs=str(tmp_path))
    assert not ok and "no cpufreq interface" in why
    assert not cpu_control(None)[0]
    with pytest.raises(NotControllable, match="CPU frequency 2.6 GHz cannot be set"):
        with pinned(2.6, None, [0], None, sysfs=str(tmp_path)):
            pass
    with pytest.raises(NotControllable, match="not a GPU"):
        with pinned(None, 705, [0], None):
            pass
    with pinned(None, None, [0], None):  # default speeds: nothing to set
        pass


def test_frequency_set_and_restored_on_a_fake_cpufreq_tree(tmp_path):
    d = tmp_path / "cpu0" / "cpufreq"
    d.mkdir(parents=True)
    (d / "scaling_available_governors").write_text("performance powersave userspace\n")
    (d / "scaling_governor").write_text("performance\n")
    (d / "scaling_setspeed").write_text("<unsupported>\n")
    with pinned(1.2, None, [0], None, sysfs=str(tmp_path)):
        assert (d / "scaling_governor").read_text() == "userspace"
        assert (d / "scaling_setspeed").read_text() == "1200000"
    assert (d / "scaling_governor").read_text() == "performance"
