"""hetval's own case studies, one module each, registered as ``hetval.cases`` entry points.

``sa`` (PeaPaw's synthetic application), ``la`` (PeaPaw's linear algebra),
``peach`` (PEACH's matrix workloads split by alpha), ``fdm`` (the FDM seismology
code at several scales) and ``published`` (published measurements ingested as
runs). :mod:`analysis.cases.wp` holds what the two-processor WP cases share.
"""
