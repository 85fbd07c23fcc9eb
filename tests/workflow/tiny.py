"""The tiny study end to end: built once per session, alone (:func:`build`, started by ``tests/conftest.py`` when the
tests that need it are reached), then checked and driven on through re-invocations, a second study, faults and
tracking (:func:`end_to_end`) while other tests that check no measurement run beside it; the Snakemake helpers
the workflow tests share."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import statistics
import subprocess
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pyarrow.compute as pc
import pyarrow.parquet as pq
import yaml

from analysis.scoring.scorecard import BOUND_HI
from analysis.storage.dataset import read_runs
from analysis.storage.schema import FILE_SCHEMA, RUN_SCHEMA
from analysis.tracking import history
from tests.conftest import BIN, REPO

TINY = ("-c2", "--configfile", str(REPO / "config" / "studies" / "tiny.yaml"))
#: How much faster than at its characterisation a minute before this machine may run a kernel: a tiny-study LA
#: transpose's slowest repetition beat its kernel's fastest characterisation sample by 13 % once in this suite,
#: and fresh default studies' LA repetitions have beaten their bounds by up to 28 %
DRIFT = 1.3


def snakemake(args: list[str], env: dict[str, str], workdir: Path, timeout: float = 600,
              snakefile: Path | None = REPO / "workflow" / "Snakefile") -> subprocess.CompletedProcess:
    """Snakemake on ``workdir`` from the repository root (``snakefile`` None: the one it finds by itself)."""
    return subprocess.run(
        [str(BIN / "snakemake"), *(["-s", str(snakefile)] if snakefile else []), "-d", str(workdir), *args],
        env=env, capture_output=True, text=True, timeout=timeout, cwd=REPO,
    )


def job_counts(output: str) -> dict[str, int]:
    """The 'Job stats' table of a (dry) run as {rule: count}."""
    counts: dict[str, int] = {}
    lines = output.splitlines()
    start = lines.index("Job stats:") + 3
    for line in lines[start:]:
        parts = line.split()
        if len(parts) != 2 or parts[0] == "total":
            break
        counts[parts[0]] = int(parts[1])
    return counts


def runs_redone(counts: dict[str, int]) -> int:
    """Jobs a (dry) run makes that measure or ingest: a run of its own (simulate_run), a batch of a platform's runs
    measured together in rounds (simulate_batch_*) or a published run ingested (ingest_run)."""
    return sum(n for rule, n in counts.items() if rule in ("simulate_run", "ingest_run")
               or rule.startswith("simulate_batch_"))


def build(work: Path, env: dict[str, str]) -> SimpleNamespace:
    """The tiny study run to the end in ``work`` under a probe of every job's memory (``first`` its Snakemake
    process, ``jobs`` each job's peak and estimate), and a copy of its outputs as first built (``study``: platforms,
    validation, report; ``report`` its report), which the tests beside :func:`end_to_end` read: it re-validates the
    study and rewrites its platform file meanwhile."""
    from benchmarks.bench_memory import probe

    first, jobs = probe(list(TINY), work, env=env, timeout=600)  # each job's process tree polled every 20 ms
    study = work / "as-built"
    if first.returncode == 0:
        shutil.copytree(work / "results" / "tiny", study)
    return SimpleNamespace(work=work, first=first, jobs=jobs, study=study, report=study / "report")


def heals(work: Path, env: dict[str, str]) -> Callable[[subprocess.CompletedProcess], None]:
    """Every heal announced at the start happens in that same invocation, as Snakemake's own planning shows, for
    each kind of file a kill or a full disk can corrupt (a raw record: :func:`end_to_end`). A replicate and the
    manifest are checked in the plan alone and put back as built (a real invocation would characterise and gather
    again); a dataset part, the pooled platform file and a history snapshot are left corrupt, planned, and healed
    by the next real invocation, which the returned check holds to it."""
    tiny, tmp_path = list(TINY), work
    results = work / "results"
    study = results / "tiny"
    platform = study / "platforms" / "cpu-pair-numpy-numba.yaml"
    platforms = study / "platforms"
    saved = tmp_path / "as-built-files"
    shutil.copytree(platforms, saved / "platforms")
    shutil.copy2(study / "gathered.json", saved / "gathered.json")

    def plan(*needles: str) -> dict[str, int]:
        dry = snakemake([*tiny, "-n"], env, tmp_path)
        assert dry.returncode == 0, dry.stderr[-3000:]
        for needle in needles:
            assert needle in dry.stdout + dry.stderr, (needle, dry.stdout[-3000:] + dry.stderr[-3000:])
        return job_counts(dry.stdout)

    (platforms / "replicates" / f"{platform.stem}.2.json").write_text('{"format": 1, "samples": [')
    counts = plan("set aside, characterising replicate 2 of cpu-pair-numpy-numba again")
    assert counts.get("characterize_platform") == 1 and counts.get("pool_platform") == 1 and not runs_redone(counts)
    shutil.rmtree(platforms)
    shutil.copytree(saved / "platforms", platforms)
    (study / "gathered.json").write_text('{"files": {')
    counts = plan("does not read as a gather manifest", "gathering again")
    assert counts.get("gather_runs") == 1 and not runs_redone(counts) and "characterize_platform" not in counts
    shutil.copy2(saved / "gathered.json", study / "gathered.json")
    assert "Nothing to be done" in snakemake([*tiny, "-n"], env, tmp_path).stdout
    part = sorted((results / "runs" / "study=tiny" / "case=sa").glob("part-*.parquet"))[0]
    with open(part, "r+b") as fh:
        fh.truncate(100)
    platform.write_text("processors: [\n")
    first = sorted((results / "history" / "study=tiny").glob("*.parquet"))[0]
    snapshot = first.with_name(first.stem[:-8] + "0badf11e.parquet")  # a second copy of it, cut short by a kill
    snapshot.write_bytes(first.read_bytes()[:300])
    counts = plan(f"{part.relative_to(tmp_path)} changed since gather wrote it", "gathering again",
                  "not a readable platform file", "pooling cpu-pair-numpy-numba's replicates again")
    assert {"gather_runs", "pool_platform", "validate_models", "report_validation"} <= set(counts)
    assert not runs_redone(counts) and "characterize_platform" not in counts

    def healed(run: subprocess.CompletedProcess) -> None:
        """What the next real invocation (``run``) must have done: gathered, pooled and validated again."""
        assert run.returncode == 0, run.stderr[-3000:]
        assert f"{part.relative_to(tmp_path)} does not read" in run.stdout + run.stderr
        # the pooled verdict read the other snapshots, naming the one it skipped
        assert f"skipped {snapshot}" in (work / "logs" / "tiny" / "validate.log").read_text()
        assert yaml.safe_load(platform.read_text())["processors"]

    return healed


def end_to_end(tiny_study: SimpleNamespace, env: dict[str, str]) -> None:
    """What the built study holds, then what re-invocations, another study, faults and tracking do to it
    (assertions: raises on the first that fails). The measurements it checks against their bounds were taken
    while the study was built, alone; nothing it runs afterwards is checked against a bound."""
    tmp_path = tiny_study.work
    tiny = list(TINY)
    first, jobs = tiny_study.first, tiny_study.jobs
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    # every job's memory estimate (the mem_mb it declares) covers the peak its whole process tree reached
    jobs = [j for j in jobs if j["rule"]]
    assert {j["rule"] for j in jobs} >= {"characterize_platform", "pool_platform", "simulate_batch_b1", "ingest_run",
                                         "gather_runs", "validate_models", "report_validation"}
    assert sum(j["rule"] == "characterize_platform" for j in jobs) == 2  # two replicates: before and after the runs
    over = [j for j in jobs if j["estimate_mb"] is None or j["peak_mb"] > j["estimate_mb"]]
    assert not over, over
    assert "[hetval run] tiny sa p-DP on cpu-pair-numpy-numba: ok" in first.stdout
    assert "[hetval run] tiny la CP on cpu-pair-numpy-numba: ok" in first.stdout
    assert "[hetval run] tiny peach DP(0.5) on cpu-pair-numpy-numba: ok" in first.stdout
    # the summary printed at the end counts every case
    assert "36 runs ok (sa 8, la 4, peach 6, fdm 6, published 12); 0 failed; 0 quarantined" in first.stdout
    assert "Energy could not be measured on this machine" in first.stdout
    # where the time went, by stage; the line names the characterisation's compiling share (the "ready in" lines of
    # its jobs' logs, added up) once it is a second or more, as in a fresh clone
    where = re.search(r"^where the time went: characterisation \d+ s.*, runs \d+ s.*, report \d+ s(, other \d+ s)?; ",
                      first.stdout, re.M)
    assert where, first.stdout[-3000:]
    ready = [re.search(r"FDM kernels ready in ([0-9.]+) s", (tmp_path / "logs" / "tiny" / "characterize" /
                                                              f"cpu-pair-numpy-numba.{k}.log").read_text()) for k in (1, 2)]
    assert all(ready), ready
    assert ("of it compiling the FDM kernels" in where.group(0)) == (sum(float(m.group(1)) for m in ready) >= 1.0)

    results = tmp_path / "results"
    parts = sorted((results / "runs" / "study=tiny" / "case=sa").glob("part-*.parquet"))
    assert parts and all(pq.read_schema(p).remove_metadata().equals(FILE_SCHEMA) for p in parts)
    table = read_runs(results / "runs")
    assert table.schema.equals(RUN_SCHEMA)
    # SA: 8 runs, LA: 4, PEACH: 2 workloads x 3 alphas, x 3 reps; FDM: 2 scales x 2 designs (the one-rank scale on
    # both backends) x 3 reps; PEACH Table VIII: 12 published runs
    assert table.num_rows == (8 + 4 + 6) * 3 + 6 * 3 + 12
    assert set(table["status"].to_pylist()) == {"ok"}
    study = results / "tiny"
    fdm = pq.read_table(study / "validation" / "fdm_runs.parquet").to_pandas()
    # one row per run and model: the analytical model, the one calibrated by the characterisation's FDM kernels (on
    # the study's backend: the NumPy runs have no calibration, so no prediction) and Panwar's projection of the
    # one-rank runs from the solver's counts on the processor each backend runs on
    assert sorted(fdm["model"].unique()) == ["FDM", "FDM-calibrated", "Panwar projection"]
    assert fdm.groupby("model").size().to_dict() == {"FDM": 6, "FDM-calibrated": 6, "Panwar projection": 4}
    uncalibrated = (fdm["model"] == "FDM-calibrated") & (fdm["backend"] == "numpy")
    assert fdm.loc[uncalibrated, "time_predicted_s"].isna().all()
    assert fdm.loc[~uncalibrated, "time_predicted_s"].notna().all() and (fdm.loc[~uncalibrated, "tightness"] > 0).all()
    assert (fdm.loc[fdm["model"] == "Panwar projection", "ranks"] == 1).all()
    assert fdm.loc[fdm["backend"] == "numpy", "flops_host"].gt(0).all()  # NumPy runs on the host processor
    assert fdm.loc[fdm["backend"] == "numba", "flops_accel"].gt(0).all()
    calibrated = fdm[(fdm["model"] == "FDM-calibrated") & ~uncalibrated]
    assert calibrated["velocity_pred_s"].notna().all() and calibrated["worst_phase"].notna().all()
    projection = pq.read_table(study / "validation" / "projection.parquet").to_pandas()
    picked = projection[projection["case"] == "fdm"]
    assert len(picked) == 1 and picked["best_measured"].iloc[0] == "accel"  # Numba beats NumPy's stencil
    plat = yaml.safe_load(next((study / "platforms").glob("*.yaml")).read_text())
    calib = plat["fdm_calibration"]["numba"]["modes"]
    assert set(calib) == {"alone", "shared"} and set(calib["alone"]["half_steps"]) == {"2"}
    assert calib["alone"]["half_steps"]["2"]["velocity"]["samples"] and "numba" in calib["alone"]["marshal"]["2"]
    assert (tmp_path / "results" / "fdm" / "tiny").is_dir()
    published = pq.read_table(study / "validation" / "published_runs.parquet").to_pandas()
    assert len(published) == 12 and published["rate_error"].notna().all()
    assert set(table.filter(pc.equal(table["energy_source"], "published"))["case"].to_pylist()) == {"published"}
    peach_runs = pq.read_table(study / "validation" / "peach_runs.parquet").to_pandas()
    # PEACH's model on its 6 runs, PerDome/PeaPaw's bound on the 3 products (a transpose counts no flops), Panwar's
    # projection on all 6: every model where its inputs exist
    assert peach_runs.groupby("model").size().to_dict() == {
        "PEACH (end-point calibrated)": 6, "Panwar projection": 6, "PerDome/PeaPaw": 3}
    assert peach_runs["time_predicted_s"].notna().all()
    assert peach_runs["eta_measured"].isna().all()  # no meter: no measured efficiency either
    peach_fid = pq.read_table(study / "validation" / "peach_fidelity.parquet").to_pandas()
    own = peach_fid[peach_fid["model"] == "PEACH (end-point calibrated)"]
    assert sorted(own["workload"]) == ["MatrixMultiply", "MatrixTranspose"]
    assert set(peach_fid["quantity"]) == {"time"}
    splits = pq.read_table(study / "validation" / "splits.parquet").to_pandas()
    assert set(splits["case"]) == {"sa", "peach"} and (splits.loc[splits["method"] == "measured best",
                                                                  "selection_penalty"] == 0).all()
    claims = pq.read_table(study / "validation" / "published.parquet").to_pandas()
    assert len(claims) == 253 and claims["reproduced"].sum() == 231  # the papers' own numbers, recomputed
    measured = table.filter(pc.not_equal(table["energy_source"], "published"))
    assert set(measured["energy_source"].to_pylist()) == {"none"}
    assert all(v is None for v in measured["energy_j"].to_pylist())  # no meter here: null, never estimated

    runs = pq.read_table(study / "validation" / "runs.parquet").to_pandas()
    for col in ("run_id", "variant", "perf_measured", "perf_predicted", "tightness", "time_median_s", "time_iqr_s"):
        assert runs[col].notna().all(), col
    # the products run against the GEMM ceiling with their compulsory traffic: no LA run beats its bound by more
    # than its own spread (even its slowest repetition would have to beat it), measured here, now
    la = runs[(runs["case"] == "la") & (runs["model"] == "PerDome/PeaPaw")]
    compute = {label.split(";")[0] for label in la["ceiling_accel"]}
    assert len(la) == 4 and compute <= {"gemm float64", "gemm float32", "none (no flops)"}
    # the transposes' traffic is bounded at the transpose's own (strided) bandwidth, measured by characterisation
    assert la["ceiling_accel"].str.contains("transpose float32 bandwidth").any()
    assert not la["ceiling_accel"].str.contains("not measured").any()
    # at the transposes' own sizes the bound of a processor that only transposes (CP's host) is that kernel's
    # own fastest characterisation sample, measured a minute before on a machine whose speed drifts: these tiny,
    # cache-resident runs may beat it, but not beyond the spread the ceilings were measured with (their fastest
    # sample against their median), the band the scorecard itself trusts a bound within (BOUND_HI), or the drift
    # between a characterisation and the runs after it (DRIFT); a bound wrong by a factor of 2 still fails
    procs = yaml.safe_load((study / "platforms" / "cpu-pair-numpy-numba.yaml").read_text())["processors"]
    # measured at the sizes the study's transposes run at (LA's 512, PEACH's 1024), in both precisions
    assert all(sorted(q["by_size"]) == [512, 1024] for p in procs.values() for q in p["ceilings"]["transpose"].values())
    spread = max(max(q["samples"]) / statistics.median(q["samples"]) for p in procs.values()
                 for cls in ("gemm", "transpose") for q in p["ceilings"][cls].values())
    slowest = la["tightness"] * la["time_median_s"] / la["time_max_s"]
    assert (slowest <= max(spread, BOUND_HI, DRIFT)).all(), (spread, la[["variant", "tightness", "time_median_s",
                                                                         "time_max_s"]])
    fidelity = pq.read_table(study / "validation" / "fidelity.parquet").to_pandas()
    assert set(fidelity["axis"]) == {"wp", "alpha"}
    assert set(fidelity["case"]) == {"sa", "la"} and set(fidelity["quantity"]) == {"time"}
    for col in ("kendall_tau", "pairwise_agreement", "top1_agreement", "selection_penalty", "profile_error"):
        assert col in fidelity
    report = study / "report"
    html = (report / "index.html").read_text()
    pngs = sorted(p.name for p in (report / "figures").glob("*.png"))
    assert any(p.startswith("roofline-") for p in pngs) and any(p.startswith("alpha-") for p in pngs)
    assert any(p.startswith("fdm-scaling-") for p in pngs) and any(p.startswith("fdm-phases-") for p in pngs)
    assert any(p.startswith("peach-") for p in pngs) and "Energy could not be measured on this machine" in html
    assert "Published studies" in html and "perdome-2015: 8 of 10 reproduced" in html
    assert all(p in html for p in pngs)
    platform = study / "platforms" / "cpu-pair-numpy-numba.yaml"
    assert platform.exists()
    # Snakemake's own report holds hetval's page, summary and every figure, with their captions.
    built = snakemake([*tiny, "--report", str(tmp_path / "snakemake-report.html")], env, tmp_path)
    assert built.returncode == 0, built.stderr[-3000:]
    sm_report = (tmp_path / "snakemake-report.html").read_text()
    assert all(p in sm_report for p in pngs) and "index.html" in sm_report

    # A second invocation does nothing.
    again = snakemake(tiny, env, tmp_path)
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr
    # Nor does one from a copy of the checkout somewhere else: no absolute path of the checkout in any rule.
    moved = tmp_path / "moved-checkout"
    shutil.copytree(REPO, moved, ignore=shutil.ignore_patterns(".venv", ".git", "results", ".snakemake", "logs",
                                                                "__pycache__", "*.egg-info"))
    elsewhere = subprocess.run([str(BIN / "snakemake"), "-s", str(moved / "workflow" / "Snakefile"), "-d",
                                str(tmp_path), "-n", *tiny], env=env, capture_output=True, text=True, timeout=600,
                               cwd=moved)
    assert elsewhere.returncode == 0 and "Nothing to be done" in elsewhere.stdout + elsewhere.stderr, (
        elsewhere.stdout[-2000:] + elsewhere.stderr[-2000:])

    # Another study in the same directory leaves this study's outputs byte-identical and runs only its own cases.
    def digests() -> dict[str, str]:
        return {str(p.relative_to(study)): hashlib.sha256(p.read_bytes()).hexdigest()
                for p in sorted(study.rglob("*")) if p.is_file()}

    before = digests()
    other = tmp_path / "other.yaml"
    other.write_text(yaml.safe_dump({"study": "other", "runs": {"warmup": 0, "repetitions": 1},
                                     "characterize": {"warmup": 0, "repetitions": 5, "llc_factor": 2, "llc_mib": 32, "gemm_sizes": [128]},
                                     "cases": {"fdm": {"steps": 2, "marshaling": ["device-pack"],
                                                       "boundary": {"kind": "cpml", "width": 2},
                                                       "scales": [{"ranks": 1, "shape": [12, 12, 12]}]}}}))
    # its platform characterised already (the tiny study's files): this part is about the studies' outputs
    (results / "other" / "platforms").mkdir(parents=True)
    shutil.copy(platform, results / "other" / "platforms" / platform.name)
    shutil.copytree(study / "platforms" / "replicates", results / "other" / "platforms" / "replicates")
    second = snakemake(["-c2", "--configfile", str(other)], env, tmp_path)
    assert second.returncode == 0, second.stderr[-3000:]
    assert job_counts(second.stdout + second.stderr)["simulate_run"] == 1  # the FDM run only: no SA, LA, PEACH or published runs
    assert digests() == before
    assert (results / "other" / "report" / "index.html").exists()

    # Deleting one raw record redoes only its job (and what depends on it): a published run its ingest, a measured
    # run its batch (the platform's runs are measured together, in rounds); never a duplicate row. In the same
    # invocation, a truncated raw record is quarantined with its reason, counted, and redone the next time; and
    # one SA run forced (--forcerun) is measured anew with its batch, its earlier measurement kept.
    # ... and in the same invocation a dataset part, the pooled platform file and a history snapshot that were
    # corrupted are healed (heals).
    check_healed = heals(tmp_path, env)
    raw = sorted((results / "raw" / "tiny").glob("*.json"))
    cases = json.loads((study / "matrix.json").read_text())["runs"]
    published = [p for p in raw if cases.get(p.stem) == "published"]
    published[0].unlink()
    victim = published[1]
    victim.write_text(victim.read_text()[:100])
    again = next(p for p in raw if cases.get(p.stem) == "sa")
    measurements = results / "raw" / "tiny" / ".measurements" / again.stem
    before = set(measurements.glob("*.json"))
    forcing = [*tiny, "--forcerun", str(again.relative_to(tmp_path))]
    dry = snakemake([*forcing, "-n"], env, tmp_path)
    counts = job_counts(dry.stdout)
    # the deleted one (its ingest) and the forced one (its batch): the truncated one still reads as there
    assert runs_redone(counts) == 2 and counts.get("ingest_run") == 1 and "characterize_platform" not in counts, \
        dry.stdout[-3000:]
    quarantined = snakemake(forcing, env, tmp_path)
    assert quarantined.returncode == 0, quarantined.stderr[-3000:]
    check_healed(quarantined)
    assert runs_redone(job_counts(quarantined.stdout + quarantined.stderr)) == 2
    df = read_runs(results / "runs").to_pandas()  # the quarantined record's rows as gathered before
    assert len(df[df["study"] == "tiny"]) == 84 and not df.duplicated(["run_id", "rep"]).any()
    assert (results / "quarantine" / "tiny" / victim.name).exists()
    assert "not valid JSON" in (results / "quarantine" / "tiny" / f"{victim.name}.reason.txt").read_text()
    assert "1 quarantined" in quarantined.stdout
    assert victim.name in (report / "index.html").read_text()
    manifest = json.loads((study / "gathered.json").read_text())
    assert len(manifest["quarantined"]) == 1
    kept = set(measurements.glob("*.json"))
    assert len(before) == 1 and before < kept and len(kept) == 2
    redone = snakemake([*tiny, "-n"], env, tmp_path)
    assert runs_redone(job_counts(redone.stdout)) == 1

    # Tracking: every validation above appended a snapshot. Two or three snapshots cannot show how far two studies
    # here differ, so track judges them mostly against the between-study spread shipped with hetval and says so; no
    # change has held two nights, so only a one-night change of a factor 2.5 or more (and twice the bar) with its
    # intervals apart could be flagged, and the network's ping-pong parameters are named as noisy, not judged.
    hetval = [str(BIN / "hetval")]
    tiny_config = ["--configfile", str(REPO / "config" / "studies" / "tiny.yaml")]
    track = subprocess.run([*hetval, "track", "--json", *tiny_config],
                           env=env, capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert track.returncode in (0, 1), track.stdout + track.stderr
    short = re.search(r"(\d+) series judged against their own spread, (\d+) mostly against the shipped one, (\d+) "
                      r"noisy", track.stderr)
    assert short and int(short.group(1)) == 0 and int(short.group(2)) > 0, track.stderr
    for line in track.stdout.splitlines():
        assert json.loads(line)["test"] == "large", line
    assert "History: model accuracy over time" in (report / "index.html").read_text()
    # A broken characterisation: the accel's t_f 20x too small (as a broken benchmark would report it), judged
    # by the default rule on this short history: a 20x change is far outside any noise, flagged the next night.
    doc = yaml.safe_load(platform.read_text())
    tf = doc["processors"]["accel"]["t_f"]
    tf["value"] /= 20.0
    tf["samples"] = [s * 20.0 for s in tf["samples"]]
    tf["replicates"] = [v / 20.0 for v in tf["replicates"]]  # in every replicate: the benchmark itself is broken
    platform.write_text(yaml.safe_dump(doc, sort_keys=False))
    validate = subprocess.run(
        [*hetval, "validate", "--runs", "results/runs", "--study", "tiny", "--platform-file", str(platform),
         "--out", "results/tiny/validation", "--history", "results/history"],
        env=env, capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert validate.returncode == 0, validate.stdout[-3000:] + validate.stderr[-3000:]
    latest = history.read(tmp_path / "results" / "history", "tiny").sort_values("time")["snapshot"].iloc[-1]
    track = subprocess.run([*hetval, "track", *tiny_config],
                           env=env, capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert track.returncode == 1, track.stdout + track.stderr
    assert "DRIFT: cpu-pair-numpy-numba accel t_f" in track.stdout and "machine drift(s)" in track.stdout
    # The finding is the machine parameter itself; a model figure that moved at this snapshot follows the drift
    # and is reported under it, never as a regression of a model on an unchanged machine.
    for line in track.stdout.splitlines():
        assert not (line.startswith("REGRESSION") and f"began at snapshot {latest}" in line), line
    snapshots = history.read(tmp_path / "results" / "history", "tiny")["snapshot"].nunique()
    assert snapshots >= 3
    compare = subprocess.run([*hetval, "compare", "previous", "latest", "--configfile",
                              str(REPO / "config" / "studies" / "tiny.yaml")],
                             env=env, capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert compare.returncode == 0 and "t_f" in compare.stdout
