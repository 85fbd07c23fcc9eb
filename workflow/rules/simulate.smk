# One job per run; each writes its raw record (ok, failed or skipped) atomically.
# The command comes from the run's registered case: sims.run on the platform's two ranks (SA, LA,
# PEACH), sims.fdm on the scale's ranks (FDM; seismograms under results/fdm/<study>/<run_id>/),
# hetval ingest-published for published measurements (a light run: see ingest_run below).
# Every run job asks for exactly its own resources (analysis.planning.jobs.job_resources): nodes, tasks,
# cpus per task, GPUs, memory, and the platform's partition/account/constraint/QOS when it sets them.


rule simulate_run:
    input:
        unpack(get_run_inputs),
    output:
        record="results/raw/{study}/{run_id}.json",
    log:
        "logs/{study}/simulate/{run_id}.log",
    params:
        command=get_run_command,
        spec=get_run_json,
        ranks=get_run_ranks,
    # one thread per rank, at least 2 for an MPI job: a multi-rank job never shares the cores with another
    threads: get_run_threads
    resources:
        **RUN_RESOURCES,
    wildcard_constraints:
        run_id=SINGLE_RUNS_PATTERN,
    # the guard keeps a record of a run killed before it could write one (out of memory: says so in one line)
    shell:
        "python -m sims.guard --record {output.record:q} --spec {params.spec:q} --ranks {params.ranks}"
        " --estimate-mb {resources.mem_mb} -- {params.command:q} 2>&1 | tee {log:q}"


# Batches (batch_runs > 1): up to batch_runs runs of one platform, of any job shape, in one job measured in
# rounds: each round one MPI launch per job shape runs every run of that shape once more (sims.batch,
# sims.launch), and each run writes its own record under the guard, exactly as a job of its own would.
for _batch, _run_ids in BATCHES.items():

    rule:
        name:
            f"simulate_batch_{_batch}"
        input:
            unpack(batch_inputs(_run_ids)),
        output:
            [f"results/raw/{STUDY}/{rid}.json" for rid in _run_ids],
        log:
            f"logs/{STUDY}/simulate/batch-{_batch}.log",
        params:
            runs=batch_runs_json(_run_ids),
            runs_file=f"logs/{STUDY}/simulate/batch-{_batch}.runs.json",
        threads: batch_cores([LAYOUTS[r] for r in _run_ids])
        resources:
            **batch_resources(_run_ids),
        # the runs go through a file written here, not through the shell: the shell's whole command line is one
        # argument of bash, which holds at most 128 KiB, and a batch of a study's runs in rounds is several times that
        run:
            write_runs_file(params.runs_file, params.runs)
            shell("python -m sims.batch --runs-file {params.runs_file:q} 2>&1 | tee {log:q}")


# Runs that measure nothing (published measurements ingested from the papers' tables) run where
# Snakemake runs (a localrule), never as batch jobs.
rule ingest_run:
    input:
        unpack(get_run_inputs),
    output:
        record="results/raw/{study}/{run_id}.json",
    log:
        "logs/{study}/simulate/{run_id}.log",
    params:
        command=get_run_command,
    wildcard_constraints:
        run_id=LIGHT_RUNS_PATTERN,
    threads: 1
    resources:
        mem_mb=LIGHT_MB["ingest"],
    shell:
        "{params.command} 2>&1 | tee {log:q}"


ruleorder: ingest_run > simulate_run
