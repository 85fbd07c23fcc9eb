# Raw records -> results/runs/ (hive-partitioned Parquet, shared by every study); bad records ->
# results/quarantine/<study>/. The manifest of what was gathered (with every data file's checksum) lives
# with the study; the matrix says which runs make the study (records outside it are quarantined, rows of
# runs that left it are removed).


rule study_matrix:
    output:
        "results/{study}/matrix.json",
    params:
        digest=MATRIX_DIGEST,
    log:
        "logs/{study}/matrix.log",
    resources:
        mem_mb=LIGHT_MB["gather"],
    run:
        Matrix(STUDY, MATRIX, MATRIX_IDENTITY).write(output[0], log=log[0])


rule gather_runs:
    input:
        records=get_raw_records,
        matrix="results/{study}/matrix.json",
    output:
        manifest="results/{study}/gathered.json",
    log:
        "logs/{study}/gather.log",
    params:
        attempts=config["runs"]["max_attempts"],
    resources:
        mem_mb=LIGHT_MB["gather"],
    shell:
        "hetval gather --runs results/runs --quarantine results/quarantine --retry results/retry"
        " --matrix {input.matrix:q} --max-attempts {params.attempts}"
        " --manifest {output.manifest:q} {input.records:q} 2>&1 | tee {log:q}"
