"""FDM-seismology case: 3D isotropic elastic velocity-stress finite differences on a staggered grid.

API (the decomposition/driver code builds on this)
--------------------------------------------------
``grid.Block(shape, start, stop, halo)``
    The part of the global grid one rank owns; ``local_shape``, ``padded_shape``.
    Cell ``i`` spans ``[i*h, (i+1)*h]``; its centre (normal stresses) is at ``(i+1/2)h``.
``medium.Medium.from_spec(spec)``
    ``{"vp", "vs", "rho"}`` or ``[{"top", "vp", "vs", "rho"}, ...]``; ``vp_max``, ``vs_min``,
    ``vp_min``; ``cell_arrays(block, spacing, xp)`` -> padded float32 (rho, lam, mu).
``source.Source.from_spec(spec)``
    ``{"kind": "explosive"|"force", "position": [x, y, z], "f0", "moment"|"force"+"direction",
    "delay"(optional, default 1.5/f0)}``.
``stability.critical_dt``, ``stability.points_per_wavelength``, ``stability.check``.
``solver.ElasticSolver(block, spacing, medium, order, dt, source, receivers, boundary, backend)``
    ``fields`` (padded float32), ``update_velocity(it)``, ``update_stress(it)``,
    ``receiver_samples()``, ``velocity_time(it)``, ``source_time_function(nt)``,
    ``source_position``, ``receiver_positions``.
    Ghost cells outside the global grid stay zero; the solver writes only owned cells.
"""
