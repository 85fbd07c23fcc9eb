# One job per run; each writes its raw record (ok, failed or skipped) atomically.
# The command comes from the run's registered case: sims.run on the platform's two ranks (SA, LA,
# PEACH), sims.fdm on the scale's ranks (FDM; seismograms under results/fdm/<study>/<run_id>/),
# hetval ingest-published for published measurements.


rule simulate_run:
    input:
        unpack(get_run_inputs),
    output:
        record="results/raw/{study}/{run_id}.json",
    log:
        "logs/{study}/simulate/{run_id}.log",
    params:
        command=get_run_command,
    # one thread per rank, at least 2 for an MPI job: a multi-rank job never shares the cores with another
    threads: get_run_threads
    conda:
        "../envs/hetval.yaml"
    resources:
        tasks=get_run_tasks,
        mpi="mpiexec",
    shell:
        "{params.command} 2>&1 | tee {log:q}"
