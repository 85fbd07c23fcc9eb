"""Microbenchmarks that characterise a processor: STREAM-like triad and an in-cache FMA peak."""

#: How a characterisation's log says how long its FDM kernels took to be ready (compiled, or loaded from Numba's
#: cache): the study's account of its time (analysis.planning.stages) reads it back.
KERNELS_READY = "step 6 of 7: the FDM kernels ready in {seconds:.1f} s"

#: The layout of a replicate's raw samples (``<platform>.<k>.json``), which pooling and the workflow's heal check.
RAW_FORMAT = 1
