# hetval: measure (MPI runs) -> gather (Parquet) -> validate (Dask) -> report.
# Run the default study with `snakemake -c2`; another study with `--configfile config/studies/<name>.yaml`.
import os

from snakemake.utils import min_version

min_version("9.0")


# The default study, relative to this file (so `snakemake -d <workdir>` runs it elsewhere), unless
# --configfile names a study: a study file is then the whole study, layered as given, and a case it
# does not name does not run (`hetval check-config` layers files the same way).
if not workflow.overwrite_configfiles:

    configfile: os.path.join(workflow.basedir, "config", "config.yaml")



include: "workflow/rules/common.smk"
include: "workflow/rules/characterize.smk"
include: "workflow/rules/simulate.smk"
include: "workflow/rules/gather.smk"
include: "workflow/rules/validate.smk"
include: "workflow/rules/report.smk"


# Light rules run where Snakemake runs, never as batch jobs; validate's Dask client too unless
# validate.local is false (its workers go where the Dask cluster puts them: see validate.cluster).
localrules:
    ingest_run,
    gather_runs,
    report_validation,
    all,


if config["validate"]["local"]:

    localrules:
        validate_models,


# Every raw record is a target too: a deleted record is redone even though the report
# downstream of it already exists. (Failed and quarantined runs are redone through
# the retry requests gather writes; see get_run_inputs.)
rule all:
    input:
        f"{OUT}/report/index.html",
        get_all_raw_records,


onsuccess:
    print_summary()
