# Raw records -> results/runs/ (hive-partitioned Parquet); bad records -> results/quarantine/.


rule gather_runs:
    input:
        records=get_raw_records,
    output:
        manifest="results/runs/_gathered/{study}.json",
    conda:
        "../envs/hetval.yaml"
    log:
        "logs/gather/{study}.log",
    shell:
        "hetval gather --runs results/runs --quarantine results/quarantine --retry results/retry"
        " --manifest {output.manifest:q} {input.records:q} 2>&1 | tee {log:q}"
