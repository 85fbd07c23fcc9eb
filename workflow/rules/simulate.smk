# One MPI job per run; each writes its raw record (ok or failed) atomically.
# SA runs: sims.run on the platform's two ranks; FDM runs: sims.fdm on the scale's ranks,
# seismograms and spec under results/fdm/<study>/<run_id>/.


rule simulate_run:
    input:
        unpack(get_run_inputs),
    output:
        record="results/raw/{study}/{run_id}.json",
    log:
        "logs/simulate/{study}/{run_id}.log",
    params:
        command=get_run_command,
    # one thread per rank, at least 2: a multi-rank job never shares the cores with another
    threads: lambda wildcards: max(2, get_run_tasks(wildcards))
    conda:
        "../envs/hetval.yaml"
    resources:
        tasks=get_run_tasks,
        mpi="mpiexec",
    shell:
        "{params.command} 2>&1 | tee {log:q}"
