"""The case and model registries: found through entry points, clear one-line errors for broken plugins."""

from __future__ import annotations

from importlib import metadata

import pytest

from analysis import registry
from analysis.cases.sa import SACase


def fake_entry_points(monkeypatch, group: str, *points: tuple[str, str]) -> None:
    real = metadata.entry_points

    def entry_points(**kw):
        if kw.get("group") == group:
            return [metadata.EntryPoint(name, value, group) for name, value in points]
        return real(**kw)

    monkeypatch.setattr(registry.metadata, "entry_points", entry_points)
    registry.cases.cache_clear()
    registry.models.cache_clear()


@pytest.fixture(autouse=True)
def fresh_registry():
    registry.cases.cache_clear()
    registry.models.cache_clear()
    yield
    registry.cases.cache_clear()
    registry.models.cache_clear()


def test_builtins_are_registered_in_order():
    assert list(registry.cases()) == ["sa", "la", "peach", "fdm", "published"]
    assert {m.name for m in registry.models_for("sa")} == {
        "PerDome/PeaPaw", "per-operation (Kannan)", "PeaPaw energy (eq. 25)", "energy roofline (Choi)",
        "Panwar projection", "PEACH (end-point calibrated)"}
    # every model where its inputs exist: the WP models and PEACH's on PEACH's sweeps, Panwar's on one-rank FDM runs
    assert {m.name for m in registry.models_for("peach")} >= {
        "PerDome/PeaPaw", "Panwar projection", "PEACH (end-point calibrated)"}
    assert [m.name for m in registry.models_for("fdm")] == ["FDM", "FDM-calibrated", "Panwar projection"]


def test_a_plugin_that_does_not_load_is_named(monkeypatch):
    fake_entry_points(monkeypatch, registry.CASE_GROUP, ("broken", "no_such_module_xyz:CASE"))
    with pytest.raises(registry.RegistryError, match=r"hetval.cases:broken \(no_such_module_xyz:CASE\) cannot be loaded"):
        registry.cases()


def test_a_plugin_that_is_not_a_case_is_refused(monkeypatch):
    fake_entry_points(monkeypatch, registry.CASE_GROUP, ("odd", "analysis.models.fdm:FDMModel"))
    with pytest.raises(registry.RegistryError, match="is not a Case"):
        registry.cases()


def test_two_cases_with_one_name_are_refused(monkeypatch):
    fake_entry_points(monkeypatch, registry.CASE_GROUP, ("sa", "analysis.cases.sa:CASE"),
                      ("sa-again", "analysis.cases.sa:SACase"))
    with pytest.raises(registry.RegistryError, match="'sa' is registered twice"):
        registry.cases()


def test_a_case_must_implement_what_every_case_does():
    class Half(registry.Case):
        name = "half"

    with pytest.raises(TypeError, match="abstract"):
        Half()
    assert SACase().name == "sa"


def test_no_entry_points_says_how_to_install(monkeypatch):
    fake_entry_points(monkeypatch, registry.CASE_GROUP)
    with pytest.raises(registry.RegistryError, match="pip install -e"):
        registry.cases()


def test_unknown_case_lists_the_registered_ones():
    with pytest.raises(registry.RegistryError, match="unknown case 'nope' \\(registered: sa, la, peach, fdm, published\\)"):
        registry.case("nope")


def test_every_built_in_model_finds_what_it_needs_and_a_missing_column_is_named():
    import pandas as pd

    from analysis.scoring.validate import check_needs
    from analysis.storage.platforms import BACKEND_COLS, FDM_CALIBRATION_COL, PLATFORM_COLS, Platforms
    from analysis.storage.schema import RUN_SCHEMA

    empty = Platforms(pd.DataFrame(columns=["platform", *PLATFORM_COLS]),
                      pd.DataFrame(columns=["platform", "backend", *BACKEND_COLS, FDM_CALIBRATION_COL]))
    records = RUN_SCHEMA.empty_table().to_pandas()
    for case in registry.cases().values():
        check_needs(case, case.join(case.reduce(records), empty).columns)
    with pytest.raises(registry.RegistryError, match="needs .*(t_f_host|idle_w), which case .sa. does not join to its runs"):
        check_needs(registry.case("sa"), ["run_id"])


def test_a_model_only_predicts_and_validation_attaches_the_measurements():
    """Every row-wise model on the reference runs adds predictions only (no tightness, no measured figure: those
    are attached in one place, analysis.scoring.measured), and the attached tightness is predicted over measured
    time, or energy, for every model alike."""
    import numpy as np

    from analysis.scoring import reference
    from analysis.scoring.measured import predicted

    records, platforms = reference._inputs()
    checked = 0
    for name, case in registry.cases().items():
        mine = records[(records["case"] == name).to_numpy(dtype=bool, na_value=False)]
        if not len(mine):
            continue
        joined = case.join(case.reduce(mine), platforms)
        for model in registry.models_for(name):
            if not model.rowwise:
                continue
            rows = model.predict(joined)
            added = set(rows.columns) - set(joined.columns)
            measured = {c for c in added if c == "tightness" or c == "rel_error" or "measured" in c
                        or c.startswith("worst_phase")}
            assert not measured, (name, model.name, sorted(measured))
            assert ("energy_predicted_j" if model.quantity == "energy" else "time_predicted_s") in rows, model.name
            out = predicted(model, joined)
            if not len(out):
                continue
            if model.quantity == "energy":
                m = out["energy_measured_j"] if "energy_measured_j" in out else out["energy_median_j"]
                want = out["energy_predicted_j"] / m
            else:
                want = out["time_predicted_s"] / out["time_median_s"]
            np.testing.assert_allclose(out["tightness"], want, rtol=1e-12, err_msg=f"{name} {model.name}")
            checked += 1
    assert checked >= 8  # SA, LA, PEACH and FDM each with several models
