# Raw records -> results/runs/ (hive-partitioned Parquet, shared by every study); bad records ->
# results/quarantine/<study>/. The manifest of what was gathered lives with the study.


rule gather_runs:
    input:
        records=get_raw_records,
    output:
        manifest="results/{study}/gathered.json",
    conda:
        "../envs/hetval.yaml"
    log:
        "logs/{study}/gather.log",
    shell:
        "hetval gather --runs results/runs --quarantine results/quarantine --retry results/retry"
        " --manifest {output.manifest:q} {input.records:q} 2>&1 | tee {log:q}"
