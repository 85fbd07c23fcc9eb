# HTML report with figures, and the plain-text summary printed at the end of the run.
# It reads only its declared inputs: the study's validation tables, platform files and gather manifest.
# Its page, summary and figures are registered for `snakemake --report` (captions in workflow/report/).


rule report_validation:
    input:
        validation=VALIDATION_FILES,
        platforms=get_platform_files,
        manifest=f"{OUT}/gathered.json",
    output:
        html=report(f"{OUT}/report/index.html", caption="../report/page.rst", category="hetval report"),
        summary=report(f"{OUT}/report/summary.txt", caption="../report/summary.rst", category="hetval report"),
        figures=report(
            directory(f"{OUT}/report/figures"),
            patterns=["{name}.png"],
            caption="../report/figures.rst",
            category="Figures",
        ),
    log:
        f"logs/{STUDY}/report.log",
    threads: REPORT_DRAWS  # figures drawn that many at a time (Snakemake gives fewer when -c is smaller)
    resources:
        mem_mb=LIGHT_MB["report"],
    params:
        title=config["report"]["title"],
        cases=" ".join(CASES),
        validation=lambda wildcards, input: os.path.dirname(input.validation[0]),
        out=lambda wildcards, output: os.path.dirname(output.html),
    shell:
        "hetval report --validation {params.validation:q} --platform-file {input.platforms:q}"
        " --manifest {input.manifest:q} --out {params.out:q} --title {params.title:q} --case {params.cases}"
        " --processes {threads}"
        " > {log:q} 2>&1"
