# The Dask job: the study's runs x its platforms x every registered model -> tightness and fidelity,
# one table per name the registered cases declare (results/<study>/validation/).


rule validate_models:
    input:
        manifest=f"{OUT}/gathered.json",
        platforms=get_platform_files,
        inter_node=get_inter_node_files,
    output:
        VALIDATION_FILES,
    log:
        f"logs/{STUDY}/validate.log",
    params:
        # the papers' tables (shipped with hetval) by content, not path: editing one re-validates,
        # moving the checkout does not
        catalogs=CATALOGS_DIGEST,
        scheduler=get_scheduler,
        study=STUDY,
        out=lambda wildcards, output: os.path.dirname(output[0]),
        # every figure's interval and the noise-aware best (changing them re-validates)
        resamples=config["uncertainty"]["resamples"],
        seed=config["uncertainty"]["seed"],
        level=config["uncertainty"]["level"],
        noise_alpha=config["uncertainty"]["noise_alpha"],
        # each validation appends one snapshot here ("" = keep no history)
        history=config["history"]["path"] or "",
        # where the Dask graph runs: a scheduler address, a SLURMCluster or a local cluster (config validate)
        dask=get_dask_options,
    threads: 2
    resources:
        mem_mb=LIGHT_MB["validate"],
    shell:
        "hetval validate --runs results/runs --study {params.study:q} --platform-file {input.platforms:q}"
        " --out {params.out:q} --scheduler={params.scheduler:q} {params.dask}"
        " --resamples {params.resamples} --seed {params.seed} --level {params.level}"
        " --noise-alpha {params.noise_alpha} --history={params.history:q}"
        ' --config-hash="${{HETVAL_CONFIG_HASH:-}}" > {log:q} 2>&1'

