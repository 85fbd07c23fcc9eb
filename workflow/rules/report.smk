# HTML report with figures, and the plain-text summary printed at the end of the run.


rule report_validation:
    input:
        runs="results/validation/runs.parquet",
        fidelity="results/validation/fidelity.parquet",
        failed="results/validation/failed.parquet",
        summary="results/validation/summary.json",
        platforms=get_platform_files,
    output:
        html="results/report/index.html",
        summary="results/report/summary.txt",
    conda:
        "../envs/hetval.yaml"
    log:
        "logs/report/report.log",
    params:
        title=config["report"]["title"],
    shell:
        "hetval report --validation results/validation --platforms results/platforms"
        " --quarantine results/quarantine --out results/report --title {params.title:q} > {log:q} 2>&1"
