# HTML report with figures, and the plain-text summary printed at the end of the run.
# It reads only its declared inputs: the study's validation tables, platform files and gather manifest.


rule report_validation:
    input:
        validation=VALIDATION_FILES,
        platforms=get_platform_files,
        manifest=f"{OUT}/gathered.json",
    output:
        html=f"{OUT}/report/index.html",
        summary=f"{OUT}/report/summary.txt",
    log:
        f"logs/{STUDY}/report.log",
    params:
        title=config["report"]["title"],
        cases=" ".join(CASES),
        validation=lambda wildcards, input: os.path.dirname(input.validation[0]),
        out=lambda wildcards, output: os.path.dirname(output.html),
    shell:
        "hetval report --validation {params.validation:q} --platform-file {input.platforms:q}"
        " --manifest {input.manifest:q} --out {params.out:q} --title {params.title:q} --case {params.cases}"
        " > {log:q} 2>&1"
