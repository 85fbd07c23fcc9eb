# The Dask job: runs x platforms x models -> per-run tightness, per-group ranking fidelity.


rule validate_models:
    input:
        manifest=f"results/runs/_gathered/{STUDY}.json",
        platforms=get_platform_files,
    output:
        runs="results/validation/runs.parquet",
        fidelity="results/validation/fidelity.parquet",
        failed="results/validation/failed.parquet",
        summary="results/validation/summary.json",
    conda:
        "../envs/hetval.yaml"
    log:
        "logs/validate/validate.log",
    params:
        scheduler=get_scheduler,
    threads: 2
    shell:
        "hetval validate --runs results/runs --platforms results/platforms --out results/validation"
        " --scheduler={params.scheduler:q} > {log:q} 2>&1"
