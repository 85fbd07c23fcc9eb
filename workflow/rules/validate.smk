# The Dask job: runs x platforms x models -> per-run tightness, per-group ranking fidelity.


rule validate_models:
    input:
        manifest=f"results/runs/_gathered/{STUDY}.json",
        platforms=get_platform_files,
        published=PUBLISHED_CATALOGS,
    output:
        runs="results/validation/runs.parquet",
        fidelity="results/validation/fidelity.parquet",
        failed="results/validation/failed.parquet",
        summary="results/validation/summary.json",
        fdm_runs="results/validation/fdm_runs.parquet",
        fdm_fidelity="results/validation/fdm_fidelity.parquet",
        published="results/validation/published.parquet",
        published_runs="results/validation/published_runs.parquet",
        published_fidelity="results/validation/published_fidelity.parquet",
        peach_runs="results/validation/peach_runs.parquet",
        peach_fidelity="results/validation/peach_fidelity.parquet",
        energy_runs="results/validation/energy_runs.parquet",
        energy_roofline="results/validation/energy_roofline.parquet",
    conda:
        "../envs/hetval.yaml"
    log:
        "logs/validate/validate.log",
    params:
        scheduler=get_scheduler,
        # the catalogs' directory, from the catalog inputs themselves
        published=lambda wildcards, input: os.path.dirname(input.published[0]),
    threads: 2
    shell:
        "hetval validate --runs results/runs --platforms results/platforms --out results/validation"
        " --published {params.published:q} --scheduler={params.scheduler:q} > {log:q} 2>&1"
