"""The linear-algebra case studies: PeaPaw's LA application and PEACH's MatrixMultiply / MatrixTranspose.

* :mod:`sims.la.matrix` - row-block partitions of a matrix product and a
  matrix transpose between the host and the accelerator, with the static flop
  and byte counts of the papers' counting rules.
* :mod:`sims.la.kernels` - the kernels on every backend (BLAS on the CPU,
  cuBLAS through CuPy on a GPU).
* :mod:`sims.la.frequency` - CPU/GPU frequency control (cpufreq,
  ``nvidia-smi``) where the platform allows it.
"""
