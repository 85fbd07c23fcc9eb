"""Scoring models against measurements: the Dask validation job, the metrics and their intervals, bounds' ceilings, scaling fits, the papers' claims."""
