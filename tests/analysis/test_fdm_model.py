"""The FDM performance model and the FDM part of the validation job."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from analysis.cases.fdm import reduce_fdm, score_fdm
from analysis.equations import fdm
from analysis.models.fdm import predict_fdm
from analysis.planning.config import uncertainty_settings
from analysis.scoring.measured import attach
from sims.fdm import counts
from sims.vocab import FDM_PHASES

PARAMS = {"t_f": 1e-11, "t_b": 1e-10, "latency": 5e-6, "t_net": 2e-10}


def test_geometry_covers_the_grid_and_counts_the_layer():
    shape, dims = (30, 20, 10), (3, 2, 1)
    g = fdm.rank_geometry(shape, dims, pml_width=4)
    assert g.points.sum() == 30 * 20 * 10
    assert g.pml_axis_points.sum() == counts.step_counts(shape, 2, 4)["pml_axis_points"]
    # corner ranks have one neighbour per split axis, the middle x rank two
    assert sorted(g.neighbours[:, 0].tolist()) == [1, 1, 1, 1, 2, 2]
    assert (g.neighbours[:, 2] == 0).all()
    with pytest.raises(ValueError, match="cannot decompose"):
        fdm.rank_geometry((4, 4, 4), (5, 1, 1))


def test_one_rank_is_the_roofline_of_the_step():
    g = fdm.rank_geometry((40, 40, 40), (1, 1, 1))
    t = fdm.step_time(g, 2, "device-pack", **PARAMS)
    nbytes = 40**3 * counts.BYTES_BULK
    assert t["compute"][0] == pytest.approx(max(nbytes * PARAMS["t_b"], 40**3 * counts.flops_per_point(2) * PARAMS["t_f"]))
    assert t["halo"][0] == t["pack"][0] == t["h2d"][0] == 0.0
    assert t["total"][0] == pytest.approx(t["compute"][0])


def test_halo_is_latency_plus_bytes_per_split_axis():
    g = fdm.rank_geometry((40, 30, 20), (2, 1, 1))
    t = fdm.step_time(g, 4, "gpu-aware", **PARAMS)
    face = 30 * 20
    expected = sum(PARAMS["latency"] + 4 * 2 * nf * face * PARAMS["t_net"] for nf in fdm.EXCHANGED_FIELDS)
    assert np.allclose(t["halo"], expected)
    assert np.allclose(t["pack"], 2 * 4 * 2 * 9 * face * PARAMS["t_b"])


def test_designs_differ_only_on_a_device():
    g = fdm.rank_geometry((32, 32, 32), (2, 1, 1))
    cpu = [fdm.step_time(g, 2, m, **PARAMS)["total"][0] for m in fdm.MARSHALING]
    assert cpu[0] == cpu[1] == cpu[2]
    gpu = {m: fdm.step_time(g, 2, m, **PARAMS, on_device=True, t_pcie=1e-10)["h2d"][0] for m in fdm.MARSHALING}
    assert gpu["host-staging"] > gpu["device-pack"] > gpu["gpu-aware"] == 0.0
    with pytest.raises(ValueError, match="t_pcie"):
        fdm.step_time(g, 2, "device-pack", **PARAMS, on_device=True)


def test_oversubscription_and_bad_input():
    g = fdm.rank_geometry((32, 32, 32), (4, 1, 1))
    shared = fdm.step_time(g, 2, "device-pack", **PARAMS, cores=2)["compute"]
    alone = fdm.step_time(g, 2, "device-pack", **PARAMS, cores=4)["compute"]
    assert np.allclose(shared, 2 * alone)
    with pytest.raises(ValueError, match="marshaling"):
        fdm.step_time(g, 2, "pigeon", **PARAMS)
    with pytest.raises(ValueError, match="t_b"):
        fdm.step_time(g, 2, "device-pack", **{**PARAMS, "t_b": -1.0})
    r = fdm.run_time((32, 32, 32), (4, 1, 1), 2, 10, "device-pack", **PARAMS)
    assert r["total"] == pytest.approx(10 * fdm.step_time(g, 2, "device-pack", **PARAMS)["total"].max())


def _records(design: str, dims, times, run_id: str) -> list[dict]:
    params = json.dumps({"backend": "numba", "order": 2})
    return [{
        "run_id": run_id, "study": "s", "case": "fdm", "variant": design, "platform": "p", "ranks": int(np.prod(dims)),
        "status": "ok", "grid": json.dumps({"shape": [32, 32, 32], "spacing": 10.0}), "order": 2,
        "boundary": "cpml(4)", "decomposition": json.dumps(list(dims)), "marshaling": design, "steps": 10,
        "points": 32**3, "params": params, "time_s": t, "rep": k,
        **{f"time_{p}_s": t / 6 for p in FDM_PHASES},
    } for k, t in enumerate(times)]


def test_validation_reduces_predicts_and_scores():
    rows = (_records("device-pack", (2, 1, 1), [1.0, 1.2, 1.1], "a") + _records("host-staging", (2, 1, 1), [2.0, 2.1, 2.2], "b")
            + _records("device-pack", (1, 2, 1), [1.5, 1.5, 1.6], "c"))
    reduced = reduce_fdm(pd.DataFrame(rows))
    assert list(reduced["run_id"]) == ["a", "b", "c"] and list(reduced["n_reps"]) == [3, 3, 3]
    assert reduced.loc[0, "time_median_s"] == pytest.approx(1.1)
    params = pd.DataFrame([{"platform": "p", "backend": "numba", "t_f": 1e-11, "t_b": 1e-10, "t_b_shared": 2e-10,
                            "latency": 5e-6, "t_net": 2e-10, "cores": 2.0}]).astype({"platform": "string", "backend": "string"})
    pred = attach(predict_fdm(reduced.merge(params, on=["platform", "backend"])))
    assert pred["time_predicted_s"].notna().all()
    assert np.allclose(pred["tightness"], pred["time_predicted_s"] / pred["time_median_s"])
    fid = score_fdm(pred, uncertainty_settings())
    assert set(fid["axis"]) == {"marshaling", "decomposition"}
    marsh = fid[fid["axis"] == "marshaling"].iloc[0]
    assert marsh["best_measured"] == "device-pack" and marsh["n_alternatives"] == 2
    assert marsh["best_predicted"] == "device-pack, host-staging"  # a CPU backend: the model ties the designs


def test_neighbours_on_another_node_pay_the_inter_node_ping_pong():
    g = fdm.rank_geometry((64, 16, 16), (4, 1, 1), nodes=2)  # ranks 0, 1 on one node, 2, 3 on the other
    assert g.off_node[:, 0].tolist() == [0, 1, 1, 0] and not g.off_node[:, 1:].any()
    one = fdm.rank_geometry((64, 16, 16), (4, 1, 1))
    assert one.off_node is None
    inter = {"latency_inter": 5e-5, "t_net_inter": 2e-9}  # 10x the intra-node latency and bandwidth
    across = fdm.step_time(g, 2, "host-staging", **PARAMS, **inter)
    within = fdm.step_time(one, 2, "host-staging", **PARAMS)
    assert across["halo"][0] == pytest.approx(within["halo"][0])  # rank 0's only neighbour shares its node
    assert across["halo"][1] > 5 * within["halo"][1]
    assert across["compute"].tolist() == within["compute"].tolist()
    with pytest.raises(ValueError, match="latency_inter"):
        fdm.step_time(g, 2, "host-staging", **PARAMS)
    # 2 x 2 x 1 ranks on 2 nodes: only the neighbours across the first axis leave the node
    g = fdm.rank_geometry((32, 32, 16), (2, 2, 1), nodes=2)
    assert g.off_node[:, 0].tolist() == [1, 1, 1, 1] and not g.off_node[:, 1].any()
    # oversubscription counts the ranks of one node against its cores
    busy = fdm.step_time(fdm.rank_geometry((64, 16, 16), (4, 1, 1), nodes=2), 2, "host-staging", **PARAMS,
                         **inter, cores=2)
    assert busy["compute"].tolist() == across["compute"].tolist()
    # a rank whose only neighbour is on another node pays that link alone, even where it is the cheaper one
    cheap = fdm.step_time(fdm.rank_geometry((32, 16, 16), (2, 1, 1), nodes=2), 2, "host-staging", **PARAMS,
                          latency_inter=PARAMS["latency"] / 2, t_net_inter=PARAMS["t_net"] / 2)
    local = fdm.step_time(fdm.rank_geometry((32, 16, 16), (2, 1, 1)), 2, "host-staging", **PARAMS)
    assert cheap["halo"][0] < local["halo"][0]
    # the links each layout's halos take, as fdm_runs reports them: messages per exchange over every rank
    assert fdm.halo_links((64, 16, 16), (4, 1, 1), nodes=2) == (4, 2)  # 0<->1 and 2<->3 within, 1<->2 across
    assert fdm.halo_links((64, 16, 16), (4, 1, 1)) == (6, 0)
    assert fdm.halo_links((32, 32, 16), (2, 1, 1), nodes=2) == (0, 2)
    assert fdm.halo_links((32, 32, 16), (1, 1, 1)) == (0, 0)


def test_fdm_predictor_needs_the_inter_node_ping_pong_for_runs_across_nodes():
    import pandas as pd

    from analysis.models.fdm import predict_fdm

    row = {"run_id": "r", "grid": '{"shape":[64,16,16],"spacing":10.0}', "decomposition": "[4,1,1]", "order": 2,
           "steps": 10, "marshaling": "host-staging", "boundary": "none", "ranks": 4, "backend": "numba",
           "points": 64 * 16 * 16, "time_median_s": 0.1, "t_f": 1e-11, "t_b": 1e-10, "t_b_shared": 2e-10,
           "latency": 5e-6, "t_net": 2e-10, "latency_inter": float("nan"), "t_net_inter": float("nan"), "cores": 2.0}
    frame = pd.DataFrame([{**row, "nodes": 1}, {**row, "nodes": 2},
                          {**row, "nodes": 2, "latency_inter": 5e-5, "t_net_inter": 2e-9}])
    t = predict_fdm(frame)["time_predicted_s"].to_numpy()
    assert np.isfinite(t[0]) and np.isnan(t[1]) and t[2] > t[0]
