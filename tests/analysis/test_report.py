"""Tests of the HTML validation report built from small synthetic validation outputs."""

from __future__ import annotations

import functools
import json
import math
import re
from pathlib import Path

import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")
pytest.importorskip("matplotlib")
yaml = pytest.importorskip("yaml")

from analysis import report  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
PLATFORM = "cpu-pair-numpy-numba"
EVIL = "DP<script>alert(1)</script>"


def _platform_file() -> dict:
    def proc(backend: str, core: int, rate_f: float, rate_b: float) -> dict:
        return {
            "backend": backend,
            "cores": [core],
            "t_f": {
                "value": 1 / rate_f,
                "unit": "s/flop",
                "obtained": "measured",
                "method": "fma",
                "rate_median": rate_f,
                "rate_spread": {"min": 0.9 * rate_f, "max": 1.05 * rate_f},
                "samples": [rate_f] * 7,
                "repetitions": 7,
                "warmup": 2,
                "r2": None,
            },
            "t_b": {
                "value": 1 / rate_b,
                "unit": "s/byte",
                "obtained": "measured",
                "method": "triad",
                "rate_median": rate_b,
                "rate_spread": {"min": 0.95 * rate_b, "max": 1.02 * rate_b},
                "samples": [rate_b] * 5,
                "repetitions": 5,
                "warmup": 2,
                "r2": None,
            },
            "e_f": None,
            "e_b": None,
            "p_s": None,
        }

    return {
        "platform": PLATFORM,
        "description": "two cores",
        "hostname": "box",
        "measured_at": "2026-11-22T03:30:00Z",
        "processors": {"host": proc("numpy", 0, 5e9, 1e10), "accel": proc("numba", 1, 2e10, 1.2e10)},
    }


def _run_row(variant: str, alpha: float | None, axis_wp: bool, time_s: float, predicted_s: float) -> dict:
    flops, nbytes = 2049 * 1_000_000, 268 * 1_000_000
    a = 0.5 if alpha is None else alpha
    return {
        "study": "sa-small",
        "case": "SA",
        "variant": variant,
        "platform": PLATFORM,
        "size": 1_000_000,
        "alpha": alpha,
        "axis_wp": axis_wp,
        "axis_alpha": not axis_wp,
        "run_id": f"run-{variant}",
        "n_reps": 3,
        "time_median_s": time_s,
        "time_min_s": 0.9 * time_s,
        "time_max_s": 1.2 * time_s,
        "time_iqr_s": 0.1 * time_s,
        "time_host_median_s": time_s,
        "time_accel_median_s": time_s,
        "flops": flops,
        "bytes": nbytes,
        "flops_host": (1 - a) * flops,
        "bytes_host": (1 - a) * nbytes,
        "flops_accel": a * flops,
        "bytes_accel": a * nbytes,
        "intensity": flops / nbytes,
        "intensity_host": flops / nbytes if a < 1 else math.nan,
        "intensity_accel": flops / nbytes if a > 0 else math.nan,
        "perf_measured": flops / time_s,
        "perf_host_measured": (1 - a) * flops / time_s if a < 1 else math.nan,
        "perf_accel_measured": a * flops / time_s if a > 0 else math.nan,
        "model": "hetero.performance",
        "perf_predicted": flops / predicted_s,
        "time_predicted_s": predicted_s,
        "tightness": predicted_s / time_s,
    }


def _runs(evil_variant: bool = False) -> pd.DataFrame:
    rows = [
        _run_row("CO", 0.0, True, 0.50, 0.41),
        _run_row("GO", 1.0, True, 0.15, 0.10),
        _run_row("p-DP", 0.8, True, 0.13, 0.082),
        _run_row("CP", None, True, 0.20, 0.15),
    ]
    rows += [
        _run_row(f"DP({a})", a, False, 0.5 - 0.4 * a + 0.3 * max(a - 0.7, 0), 0.41 - 0.33 * a)
        for a in (0.2, 0.4, 0.6, 0.8, 1.0)
    ]
    if evil_variant:
        rows.append(_run_row(EVIL, None, True, 0.3, 0.2))
    # a second model predicts every run: same run_id, one row per model
    rows += [
        {
            **row,
            "model": "roofline.attainable",
            "perf_predicted": row["perf_predicted"] * 0.9,
            "tightness": row["tightness"] / 0.9,
        }
        for row in rows
    ]
    return pd.DataFrame(rows)


def _fidelity() -> pd.DataFrame:
    base = {
        "study": "sa-small",
        "case": "SA",
        "platform": PLATFORM,
        "size": 1_000_000,
        "model": "hetero.performance",
    }
    return pd.DataFrame(
        [
            {
                **base,
                "axis": "wp",
                "n_alternatives": 4,
                "kendall_tau": 2 / 3,
                "pairwise_agreement": 0.8333333,
                "top1_agreement": True,
                "selection_penalty": 0.0,
                "profile_error": 0.12345,
                "best_measured": "p-DP",
                "best_predicted": "p-DP",
                "tightness_median": 0.7123,
                "tightness_min": 0.63,
                "tightness_max": 0.82,
            },
            {
                **base,
                "axis": "alpha",
                "n_alternatives": 1,
                "kendall_tau": math.nan,
                "pairwise_agreement": math.nan,
                "top1_agreement": True,
                "selection_penalty": 0.0,
                "profile_error": math.nan,
                "best_measured": "DP(0.8)",
                "best_predicted": "DP(1.0)",
                "tightness_median": 0.8,
                "tightness_min": 0.8,
                "tightness_max": 0.8,
            },
        ]
    )


def _failed() -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "run_id": "deadbeef00failed",
                "study": "sa-small",
                "case": "SA",
                "variant": EVIL,
                "platform": PLATFORM,
                "error": "MemoryError: cannot allocate",
                "started_at": "2026-11-22T03:40:00Z",
            }
        ]
    )


def _write_inputs(root: Path, evil_variant: bool = False) -> dict[str, Path]:
    dirs = {name: root / name for name in ("validation", "platforms", "quarantine", "report")}
    for name in ("validation", "platforms"):
        dirs[name].mkdir(parents=True)
    _runs(evil_variant).to_parquet(dirs["validation"] / "runs.parquet")
    _fidelity().to_parquet(dirs["validation"] / "fidelity.parquet")
    _failed().to_parquet(dirs["validation"] / "failed.parquet")
    summary = {"runs_ok": {"sa": 10}, "runs_failed": 1, "quarantined": 1, "groups": 1}
    (dirs["validation"] / "summary.json").write_text(json.dumps(summary))
    (dirs["platforms"] / f"{PLATFORM}.yaml").write_text(yaml.safe_dump(_platform_file()))
    half = _platform_file()
    half["platform"] = "half-characterised"
    half["processors"]["accel"]["t_b"] = None
    half["sizing"] = {"host": {"capped": True, "below_stream_rule": True, "triad_bytes_per_array": 512 * 2**20,
                               "wanted_bytes_per_array": 2048 * 2**20, "llc_bytes": 512 * 2**20,
                               "limit_source": "memory cgroup /sys/fs/cgroup/memory/job"}}
    (dirs["platforms"] / "half-characterised.yaml").write_text(yaml.safe_dump(half))
    (dirs["platforms"] / "broken.yaml").write_text("processors: [unclosed\n")
    study_q = dirs["quarantine"] / "sa-small"
    study_q.mkdir(parents=True)
    (study_q / "badrecord123.json").write_text("{}")
    (study_q / "badrecord123.json.reason.txt").write_text("missing required field 'platform'\n")
    return dirs


def _build(dirs: dict[str, Path], **kwargs: str) -> str:
    return report.build_report(
        dirs["validation"], dirs["platforms"], dirs["quarantine"], dirs["report"], **kwargs
    )


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Path], str, str]:
    dirs = _write_inputs(tmp_path_factory.mktemp("full"), evil_variant=True)
    text = _build(dirs)
    page = (dirs["report"] / "index.html").read_text()
    return dirs, text, page


def test_page_references_every_png_and_every_reference_exists(built: tuple) -> None:
    dirs, _, page = built
    pngs = {f"figures/{p.name}" for p in (dirs["report"] / "figures").glob("*.png")}
    referenced = set(re.findall(r'<img src="([^"]+)"', page))
    assert pngs, "no figures written"
    assert pngs == referenced


@pytest.mark.parametrize("prefix", ["roofline-", "wp-", "tightness-", "alpha-"])
def test_each_figure_kind_is_written(built: tuple, prefix: str) -> None:
    dirs, _, _ = built
    assert list((dirs["report"] / "figures").glob(f"{prefix}*.png"))


def test_pngs_are_valid_and_non_trivial(built: tuple) -> None:
    dirs, _, _ = built
    for path in (dirs["report"] / "figures").glob("*.png"):
        data = path.read_bytes()
        assert data[:8] == PNG_MAGIC, path.name
        assert len(data) > 5_000, path.name


def test_failed_and_quarantined_are_visible(built: tuple) -> None:
    _, text, page = built
    assert "deadbeef00failed" in page
    assert "MemoryError: cannot allocate" in page
    assert "sa-small/badrecord123.json" in page
    assert "missing required field &#39;platform&#39;" in page  # escaped by the template
    assert "1 failed" in text and "1 quarantined" in text


def test_fidelity_numbers_are_formatted(built: tuple) -> None:
    _, _, page = built
    for number in ("0.667", "0.833", "0.123", "0.712"):
        assert f"<td>{number}</td>" in page
    assert '<td class="na">n/a</td>' in page
    assert "undefined" in page  # the footnote on n/a


def test_platform_parameters_in_readable_units(built: tuple) -> None:
    _, _, page = built
    assert "5 (4.5–5.25) GFLOP/s" in page
    assert "not measured (no meter)" in page


def test_data_strings_are_escaped(built: tuple) -> None:
    _, _, page = built
    assert "<script>" not in page
    assert "&lt;script&gt;" in page


def test_summary_txt_matches_return_value(built: tuple) -> None:
    dirs, text, _ = built
    assert (dirs["report"] / "summary.txt").read_text() == text
    assert "10 runs ok (sa 10)" in text
    assert "kendall tau 0.67" in text
    assert "best measured p-DP vs predicted p-DP" in text
    assert str(dirs["report"] / "index.html") in text


def test_unusable_platform_files_are_reported(built: tuple) -> None:
    dirs, text, page = built
    assert "broken.yaml: unreadable" in page
    assert "half-characterised/accel: no roofline" in text
    assert len(list((dirs["report"] / "figures").glob("roofline-*.png"))) == 3


def test_a_capped_characterisation_is_flagged(built: tuple) -> None:
    _, _, page = built
    assert ("half-characterised/host: the triad&#39;s arrays were capped by the memory budget at 512 MiB each (the "
            "cache rule wanted 2048 MiB for an LLC of 512 MiB; memory cgroup /sys/fs/cgroup/memory/job); below 4 x the "
            "LLC, the triad partly measures the cache.") in page


def test_every_model_is_shown(built: tuple) -> None:
    _, text, _ = built
    assert "[hetero.performance]" in text and "[roofline.attainable]" in text


def test_runs_without_the_expected_columns_do_not_crash(tmp_path: Path) -> None:
    dirs = {name: tmp_path / name for name in ("validation", "platforms", "quarantine", "report")}
    dirs["validation"].mkdir()
    pd.DataFrame({"run_id": ["a"], "variant": ["CO"]}).to_parquet(dirs["validation"] / "runs.parquet")
    text = _build(dirs)
    assert "lacks" in text
    assert "1 runs ok" in text


def test_no_temp_files_left(built: tuple) -> None:
    dirs, _, _ = built
    assert not [p for p in dirs["report"].iterdir() if p.name.endswith(".tmp")]


def test_missing_inputs_give_a_page_that_says_so(tmp_path: Path) -> None:
    dirs = {name: tmp_path / name for name in ("validation", "platforms", "quarantine", "report")}
    text = _build(dirs, title="empty")
    page = (dirs["report"] / "index.html").read_text()
    assert "runs.parquet: missing" in page
    assert "fidelity.parquet is missing" in page
    assert "failed.parquet is missing" in page
    assert "quarantine directory is missing" in page
    assert "0 runs ok" in text
    assert not list((dirs["report"] / "figures").glob("*.png"))


def test_empty_inputs_give_a_page_that_says_so(tmp_path: Path) -> None:
    dirs = _write_inputs(tmp_path)
    for name in ("runs", "fidelity", "failed"):
        pd.DataFrame({"run_id": pd.Series([], dtype="str")}).to_parquet(
            dirs["validation"] / f"{name}.parquet"
        )
    (dirs["validation"] / "summary.json").write_text("not json")
    _build(dirs)
    page = (dirs["report"] / "index.html").read_text()
    assert "runs.parquet: empty" in page
    assert "No failed runs" in page
    assert "summary.json: unreadable" in page
    assert list((dirs["report"] / "figures").glob("roofline-*.png"))  # the platform file is still there


def test_rebuild_prunes_stale_figures(tmp_path: Path) -> None:
    dirs = _write_inputs(tmp_path)
    for path in dirs["platforms"].iterdir():  # rooflines are not what this test is about
        path.unlink()
    _build(dirs)
    (dirs["validation"] / "runs.parquet").unlink()
    _build(dirs)
    page = (dirs["report"] / "index.html").read_text()
    assert not list((dirs["report"] / "figures").glob("wp-*.png"))
    assert {f"figures/{p.name}" for p in (dirs["report"] / "figures").glob("*.png")} == set(
        re.findall(r'<img src="([^"]+)"', page))


def test_figures_drawn_in_child_processes_are_the_same_bytes(built: tuple, tmp_path: Path) -> None:
    """Two figures at a time, each in a forked child: the same page, summary and PNG bytes as drawn here."""
    dirs, text, page = built
    again = dict(dirs, report=tmp_path / "report")
    summary = report.build_report(dirs["validation"], dirs["platforms"], dirs["quarantine"], again["report"],
                                  processes=2)
    assert summary == text.replace(str(dirs["report"]), str(again["report"]))
    strip = functools.partial(re.sub, r"Generated [^<]*", "")
    assert strip((again["report"] / "index.html").read_text()) == strip(page)
    ours, theirs = (sorted((d / "figures").glob("*.png")) for d in (dirs["report"], again["report"]))
    assert [p.name for p in ours] == [p.name for p in theirs] and len(ours) > 5
    assert all(a.read_bytes() == b.read_bytes() for a, b in zip(ours, theirs, strict=True))


def test_a_figure_that_cannot_be_written_in_a_child_is_an_error_naming_it(tmp_path: Path) -> None:
    from analysis.report.drawing import FigureError, drawing, new_figure, save_figure

    fig = new_figure()
    fig.subplots().plot([1, 2], [3, 4])
    blocked = tmp_path / "file"
    blocked.write_text("")
    with pytest.raises(FigureError, match=r"figure\(s\) not written: lost\.png \(exit status 1\)"):
        with drawing(2):
            save_figure(fig, tmp_path, "ok.png")
            save_figure(fig, blocked, "lost.png")  # a file where its directory would be: the child fails
    assert (tmp_path / "ok.png").stat().st_size > 1000


def test_main_prints_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dirs = {name: tmp_path / name for name in ("validation", "platforms", "quarantine", "report")}
    argv = [
        "--validation",
        str(dirs["validation"]),
        "--platforms",
        str(dirs["platforms"]),
        "--quarantine",
        str(dirs["quarantine"]),
        "--out",
        str(dirs["report"]),
        "--title",
        "T & T",
    ]
    assert report.main(argv) == 0
    assert "T & T" in capsys.readouterr().out
    assert "<title>T &amp; T</title>" in (dirs["report"] / "index.html").read_text()


@pytest.mark.parametrize(
    ("value", "expected"),
    [(0.33333, "0.333"), (math.nan, "n/a"), (None, "n/a"), (True, "yes"), (False, "no"), (1, "1.000")],
)
def test_fmt_fraction(value: object, expected: str) -> None:
    assert report.fmt_fraction(value) == expected


def test_variant_order_follows_the_papers() -> None:
    variants = [("DP(0.5)", 0.5), ("CP", None), ("DP(0.25)", 0.25), ("CO", 0.0), ("p-DP", 0.8), ("GO", 1.0)]
    ordered = [v for v, a in sorted(variants, key=lambda va: report.variant_sort_key(*va))]
    assert ordered == ["CO", "GO", "p-DP", "CP", "DP(0.25)", "DP(0.5)"]


def test_a_tightness_figure_of_many_runs_and_models_stays_readable() -> None:
    """17 runs x 4 models: one row of bars per model, the figure as wide as the runs (not runs x models, which the
    page shrank past reading), every bar labelled in its own model's row, a model's gap where it does not apply."""
    from analysis.report.sections.wp import tightness_figure

    variants = ["CO", "GO", "p-DP", "CP", "CP-reverse"] + [f"DP({a / 10:g})" for a in range(11)]
    models = ["per-operation (Kannan)", "PerDome/PeaPaw", "Panwar projection", "PEACH (end-point calibrated)"]
    rows = [{"variant": v, "alpha": None, "model": m, "tightness": 0.5 + 0.03 * i + 0.1 * j,
             "study": "s", "case": "sa", "platform": PLATFORM, "size": 6400000}
            for i, v in enumerate(variants) for j, m in enumerate(models)
            if not (m.startswith("PEACH") and not v.startswith("DP("))]
    fig = tightness_figure(("s", "sa", PLATFORM, 6400000), pd.DataFrame(rows))
    width, height = fig.get_size_inches()
    assert width <= 0.55 * len(variants) + 2.5 and height <= 1.0 + 1.9 * len(models)
    numbers = {ax.get_title(loc="left"): sum(bool(re.fullmatch(r"\d\.\d\d", t.get_text())) for t in ax.texts)
               for ax in fig.get_axes()}
    assert numbers == {m: (11 if m.startswith("PEACH") else len(variants)) for m in models}
