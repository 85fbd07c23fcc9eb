# One MPI job per run; each writes its raw record (ok or failed) atomically.


rule simulate_run:
    input:
        unpack(get_run_inputs),
    output:
        record="results/raw/{study}/{run_id}.json",
    log:
        "logs/simulate/{study}/{run_id}.log",
    params:
        spec=get_run_spec,
        platform_file=get_platform_file_arg,
    threads: 2
    conda:
        "../envs/hetval.yaml"
    resources:
        tasks=2,
        mpi="mpiexec",
    shell:
        "{resources.mpi} -n {resources.tasks} python -m mpi4py -m sims.run"
        " --spec {params.spec:q} --platform-file={params.platform_file:q}"
        " --out {output.record:q} 2>&1 | tee {log:q}"
