"""Analytical performance and energy models of CPU+accelerator machines, one module per model family."""

from analysis.models import hetero, roofline

__all__ = ["hetero", "roofline"]
