# hetval: measure (MPI runs) -> gather (Parquet) -> validate (Dask) -> report.
# Run the default study with `snakemake -c2`; another study with `--configfile config/studies/<name>.yaml`.
from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/characterize.smk"
include: "workflow/rules/simulate.smk"
include: "workflow/rules/gather.smk"
include: "workflow/rules/validate.smk"
include: "workflow/rules/report.smk"


rule all:
    input:
        "results/report/index.html",


onsuccess:
    print_summary()
