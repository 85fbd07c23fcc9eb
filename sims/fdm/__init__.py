"""FDM seismology: a 3D elastic velocity-stress staggered-grid code, decomposed over MPI ranks.

Modules: ``spec`` (the run spec and its checks), ``medium``, ``source``, ``stability``
(CFL, points per wavelength), ``decomp`` (Cartesian blocks), ``cpml`` (damping profiles),
``kernels_xp`` (reference kernels on NumPy / CuPy), ``kernels_numba`` (CPU kernels),
``solver`` (one rank's fields, boxes, halo exchange, sources, receivers, timers),
``counts`` (flops and bytes per step), ``driver`` and ``__main__`` (the CLI).
"""
