# Microbenchmarks on each processor, inside the platform's own MPI layout -> t_f, t_b and more,
# per study (results/<study>/platforms/), so that studies never re-characterise each other's platforms.
# Each platform is characterised characterize.replicates times, each time in a process of its own: the first
# replicate before the runs (the p-DP runs read it), the others after them; the platform file pools every
# replicate's samples and says how far the replicates differ (sims.bench.replicates).
# Under a scheduler it asks for the platform's partition/constraint like the platform's runs: one
# platform = one node type.


rule characterize_platform:
    input:
        unpack(get_replicate_inputs),
    output:
        platform="results/{study}/platforms/replicates/{platform}.{replicate}.yaml",
        raw="results/{study}/platforms/replicates/{platform}.{replicate}.json",
    log:
        "logs/{study}/characterize/{platform}.{replicate}.log",
    params:
        spec=get_characterize_spec,
        launch=get_characterize_launch,
        choices=get_replicate_choices,
    # the first replicate is first among the jobs ready at the start: it compiles the FDM kernels on both ranks at
    # once (half the time of the first FDM run compiling them alone), and the runs wait for it
    priority: 10
    threads: 2
    resources:
        **CHARACTERIZE_RESOURCES,
    wildcard_constraints:
        replicate=r"[1-9][0-9]*",
    # the guard says in one line why a characterisation died without a platform file (out of memory, a signal)
    shell:
        "python -m sims.guard --estimate-mb {resources.mem_mb} --"
        " {params.launch} python -m mpi4py -m sims.bench"
        " --spec {params.spec:q} --out {output.platform:q} --raw {output.raw:q} {params.choices}"
        " 2>&1 | tee {log:q}"


# The study's platform file: every replicate's samples pooled, each parameter with its replicates' values and
# whether they disagree beyond their noise (a light job, where Snakemake runs).
rule pool_platform:
    input:
        raw=get_replicate_raws,
    output:
        platform="results/{study}/platforms/{platform}.yaml",
    log:
        "logs/{study}/characterize/{platform}.pool.log",
    params:
        spec=get_characterize_spec,
    threads: 1
    resources:
        mem_mb=LIGHT_MB["gather"],
    shell:
        "python -m sims.bench.replicates --spec {params.spec:q} --out {output.platform:q} {input.raw:q}"
        " 2>&1 | tee {log:q}"


# A platform whose runs span nodes: the MPI ping-pong between one rank on each of two nodes (the FDM model's
# cost of a halo message to another node), kept beside the platform file as <platform>.network.json.
rule characterize_inter_node:
    output:
        network="results/{study}/platforms/{platform}.network.json",
    log:
        "logs/{study}/characterize/{platform}.network.log",
    params:
        launch=get_inter_node_launch,
    threads: 2
    resources:
        **INTER_NODE_RESOURCES,
    shell:
        "{params.launch} python -m mpi4py -m sims.bench.internode --platform {wildcards.platform:q}"
        " --out {output.network:q} 2>&1 | tee {log:q}"
