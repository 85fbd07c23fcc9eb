# Microbenchmarks on each processor, inside the platform's own MPI layout -> t_f, t_b and more,
# per study (results/<study>/platforms/), so that studies never re-characterise each other's platforms.
# Under a scheduler it asks for the platform's partition/constraint like the platform's runs: one
# platform = one node type.


rule characterize_platform:
    output:
        platform="results/{study}/platforms/{platform}.yaml",
    log:
        "logs/{study}/characterize/{platform}.log",
    params:
        spec=get_characterize_spec,
        launch=get_characterize_launch,
    # first among the jobs ready at the start: it compiles the FDM kernels on both ranks at once (half the time
    # of the first FDM run compiling them alone), and the p-DP runs wait for it
    priority: 10
    threads: 2
    resources:
        **CHARACTERIZE_RESOURCES,
    # the guard says in one line why a characterisation died without a platform file (out of memory, a signal)
    shell:
        "python -m sims.guard --estimate-mb {resources.mem_mb} --"
        " {params.launch} python -m mpi4py -m sims.bench"
        " --spec {params.spec:q} --out {output.platform:q} 2>&1 | tee {log:q}"


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
