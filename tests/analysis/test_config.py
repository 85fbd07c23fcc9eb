"""Config validation: defaults, one-line errors naming the key, the study matrix."""

from __future__ import annotations

import json

import pytest
import yaml

from analysis.planning.config import ConfigError, load_config, merge, study_matrix, validate_config
from tests.conftest import cli


def minimal() -> dict:
    return {"platforms": [{"name": "p", "host": {"backend": "numpy", "cores": [0]}, "accel": {"backend": "numba", "cores": [1]}}],
            "cases": {"sa": {}}}


def test_defaults_are_filled():
    cfg = validate_config(minimal())
    assert cfg["study"] == "default"
    assert cfg["runs"] == {"warmup": 1, "repetitions": 5, "rounds": 3, "min_region_factor": 1000, "max_attempts": 2}
    assert cfg["retry_failed"] is False and cfg["platforms"][0]["memory_gb"] is None
    assert cfg["cases"]["sa"]["wps"] == ["CO", "GO", "p-DP", "CP", "CP-reverse"]
    assert cfg["characterize"]["repetitions"] >= 5


def test_shipped_configs_validate(repo):
    load_config(repo / "config" / "config.yaml")
    for study in sorted((repo / "config" / "studies").glob("*.yaml")):
        load_config(study)  # a study file is a whole study


@pytest.mark.parametrize(
    ("patch", "expected"),
    [
        ({"runs": {"repetitions": 0}}, "runs.repetitions: 0 is not allowed (allowed: a number >= 1"),
        ({"runs": {"repetitionz": 3}}, "runs.repetitionz: unknown key (allowed here: max_attempts, min_region_factor, repetitions, rounds, warmup)"),
        ({"bogus": 1}, "bogus: unknown key"),
        ({"cases": {"sa": {"wps": ["CO", "XX"]}}}, "cases.sa.wps[1]: 'XX' is not allowed (allowed: one of CO, GO, p-DP, CP, CP-reverse)"),
        ({"cases": {"sa": {"alphas": [1.5]}}}, "cases.sa.alphas[0]: 1.5 is not allowed (allowed: a number >= 0 and <= 1)"),
        ({"cases": {"sa": {"sizes": "big"}}}, "cases.sa.sizes: 'big' is not allowed (allowed: of type array)"),
        ({"characterize": {"repetitions": 3}}, "characterize.repetitions: 3 is not allowed (allowed: a number >= 5"),
        ({"study": "bad name"}, "study: 'bad name' is not allowed (allowed: text matching"),
        ({"cases": {"fdm": {"warmup": -1}}}, "cases.fdm.warmup: -1 is not allowed (allowed: a number >= 0 and <= 100)"),
        ({"cases": {"fdm": {"warmup": 1.5}}}, "cases.fdm.warmup: 1.5 is not allowed (allowed: of type integer or null)"),
    ],
)
def test_bad_values_name_the_key(patch, expected):
    cfg = merge(minimal(), patch)
    with pytest.raises(ConfigError) as err:
        validate_config(cfg)
    assert expected in str(err.value)
    assert "\n" not in str(err.value)


def test_bad_processor_backend():
    cfg = minimal()
    cfg["platforms"][0]["accel"]["backend"] = "opencl"
    with pytest.raises(ConfigError, match=r"platforms\[0\]\.accel\.backend: 'opencl' is not allowed \(allowed: one of numpy, numba, cupy\)"):
        validate_config(cfg)


def test_cupy_platform_is_accepted():
    cfg = minimal()
    cfg["platforms"][0]["accel"] = {"backend": "cupy", "device": 0}
    validate_config(cfg)


@pytest.mark.parametrize(
    ("accel", "message"),
    [
        ({"backend": "numba", "cores": [0]}, r"platforms\[0\]\.accel\.cores: core\(s\) \[0\] also belong to the host"),
        ({"backend": "numba", "device": 0}, r"platforms\[0\]\.accel\.device: not allowed with backend numba"),
        ({"backend": "cupy", "cores": [1]}, r"platforms\[0\]\.accel\.cores: not allowed with backend cupy"),
    ],
)
def test_processor_placement_is_checked(accel, message):
    cfg = minimal()
    cfg["platforms"][0]["accel"] = accel
    with pytest.raises(ConfigError, match=message):
        validate_config(cfg)


def test_duplicate_platform_names():
    cfg = minimal()
    cfg["platforms"].append(cfg["platforms"][0])
    with pytest.raises(ConfigError, match="used twice"):
        validate_config(cfg)


def test_an_empty_study_is_refused_before_anything_runs():
    cfg = validate_config({})
    assert [p["name"] for p in cfg["platforms"]] == ["cpu-pair-numpy-numba"]
    assert cfg["cases"] == {} and study_matrix(cfg, check=False) == []
    with pytest.raises(ConfigError, match="cases: the study runs nothing"):
        study_matrix(cfg)
    with pytest.raises(ConfigError, match="cases: the study runs nothing"):
        study_matrix(validate_config(merge(minimal(), {"cases": {"sa": {"enabled": False}}})))


def test_a_case_absent_or_disabled_in_the_study_does_not_run(repo):
    fdm_only = load_config(repo / "config" / "studies" / "fdm-scaling.yaml")
    assert {r["case"] for r in study_matrix(fdm_only)} == {"fdm"}
    off = validate_config(merge(minimal(), {"cases": {"sa": {"enabled": False}, "la": {}}}))
    assert {r["case"] for r in study_matrix(off)} == {"la"}


def test_check_config_layers_files_as_snakemake_does(tmp_path, repo, env):
    """No --configfile: the default study. With files: exactly those, in order (later keys win)."""
    default = load_config()
    assert default == load_config(repo / "config" / "config.yaml")
    extra = tmp_path / "extra.yaml"
    extra.write_text(yaml.safe_dump({"study": "layered", "runs": {"repetitions": 7}}))
    layered = load_config(repo / "config" / "studies" / "tiny.yaml", extra)
    assert layered["study"] == "layered" and layered["runs"]["repetitions"] == 7
    assert layered["runs"]["warmup"] == 1 and set(layered["cases"]) == set(load_config(
        repo / "config" / "studies" / "tiny.yaml")["cases"])
    out = cli("check-config", "--configfile", str(repo / "config" / "studies" / "tiny.yaml"), "--configfile", str(extra))
    assert out.returncode == 0 and "study 'layered'" in out.stdout and f"{len(study_matrix(layered))} run(s)" in out.stdout


def test_matrix_is_stable_and_complete():
    cfg = validate_config(merge(minimal(), {"cases": {"sa": {"alphas": [0.0, 0.5], "sizes": [10, 20]}}}))
    runs = study_matrix(cfg)
    assert len(runs) == 2 * (5 + 2)
    assert len({r["run_id"] for r in runs}) == len(runs)
    assert [r["run_id"] for r in runs] == [r["run_id"] for r in study_matrix(validate_config(merge(minimal(), {"cases": {"sa": {"alphas": [0.0, 0.5], "sizes": [10, 20]}}})))]
    assert {r["variant"] for r in runs} >= {"DP(0)", "DP(0.5)", "p-DP"}


def test_unrelated_change_keeps_run_ids():
    a = study_matrix(validate_config(minimal()))
    b = study_matrix(validate_config(merge(minimal(), {"report": {"title": "other"}, "cases": {"sa": {"alphas": [0.0, 0.2, 0.4, 0.6, 0.8, 1.0, 0.9]}}})))
    assert {r["run_id"] for r in a} <= {r["run_id"] for r in b}


def test_cli_config_error_is_one_line_without_traceback(tmp_path, repo, env):
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"runs": {"warmup": -1}}))
    out = cli("check-config", "--configfile", str(repo / "config" / "config.yaml"), "--configfile", str(bad))
    assert out.returncode == 2
    assert out.stderr.strip() == "hetval: config error: runs.warmup: -1 is not allowed (allowed: a number >= 0 and <= 100)"
    assert "Traceback" not in out.stderr


def test_cli_matrix_prints_a_runnable_spec(repo, env):
    listing = cli("matrix")
    assert listing.returncode == 0
    header, first = listing.stdout.splitlines()[:2]
    assert header.split("\t")[:3] == ["run_id", "study", "case"]
    run_id = first.split("\t")[0]
    spec = json.loads(cli("matrix", "--run-id", run_id).stdout)
    assert spec["case"] == "sa" and "run_id" not in spec
    from sims.record import run_id_of

    assert run_id_of(spec) == run_id
    assert cli("matrix", "--run-id", "0" * 16).returncode == 2
    specs = json.loads(cli("matrix", "--json").stdout)
    assert len(specs) == len(listing.stdout.splitlines()) - 1 and specs[0]["run_id"] == run_id
