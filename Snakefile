# hetval's workflow, run from the repository root: `snakemake -c2` (the default study) or
# `snakemake -c2 --configfile config/studies/<name>.yaml`. The rules live in workflow/ (workflow/Snakefile
# and workflow/rules/); the profiles in workflow/profiles/ (`profiles` here links to it, so Snakemake finds
# the default profile whichever Snakefile it was started on).
include: "workflow/Snakefile"


# An included file's first rule is not the default target: name it here (`snakemake all` is the same).
rule default:
    default_target: True
    localrule: True
    input:
        rules.all.input,
