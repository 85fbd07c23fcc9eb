"""Tracking model accuracy over time: the history of snapshots and the judge of regressions and drift."""
