# Published measurements (config/published/<table>.yaml) -> raw records with energy_source: published.


rule ingest_published:
    input:
        tables=[os.path.join(workflow.basedir, "config", "published", f"{t}.yaml") for t in PUBLISHED_RUNS],
    output:
        records=[f"results/published/{{study}}/{run_id}.json" for ids in PUBLISHED_RUNS.values() for run_id in ids],
    log:
        "logs/ingest/{study}.log",
    params:
        tables=" ".join(PUBLISHED_RUNS),
    conda:
        "../envs/hetval.yaml"
    shell:
        "for t in {params.tables}; do hetval ingest-published --table $t --study {wildcards.study}"
        " --out results/published/{wildcards.study}; done > {log:q} 2>&1"
