"""hetval's measuring side: case-study kernels, microbenchmarks, meters and the run-record writer."""

__version__ = "0.1.0"
