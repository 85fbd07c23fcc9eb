# hetval: measure (MPI runs) -> gather (Parquet) -> validate (Dask) -> report.
# Run the default study with `snakemake -c2`; another study with `--configfile config/studies/<name>.yaml`.
import os

from snakemake.utils import min_version

min_version("9.0")


# Relative to this file, so `snakemake -d <workdir>` runs the same default study elsewhere.
configfile: os.path.join(workflow.basedir, "config", "config.yaml")


include: "workflow/rules/common.smk"
include: "workflow/rules/characterize.smk"
include: "workflow/rules/simulate.smk"
include: "workflow/rules/ingest.smk"
include: "workflow/rules/gather.smk"
include: "workflow/rules/validate.smk"
include: "workflow/rules/report.smk"


# Every raw record is a target too: a deleted record is redone even though the report
# downstream of it already exists. (Failed and quarantined runs are redone through
# the retry requests gather writes; see get_run_inputs.)
rule all:
    input:
        "results/report/index.html",
        get_all_raw_records,


onsuccess:
    print_summary()
