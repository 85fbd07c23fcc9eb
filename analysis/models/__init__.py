"""Analytical performance and energy models of CPU+accelerator machines, one module per model family.

``roofline`` (Williams et al.; energy roofline of Choi et al.), ``hetero`` (PerDome / PeaPaw),
``peach`` (PEACH), ``perop`` (Kannan et al.'s per-operation model), ``threecomp`` (Panwar's
three-component bound), ``fdm`` (the FDM-seismology scaling model).
"""

from analysis.models import fdm, hetero, peach, perop, roofline, threecomp

__all__ = ["fdm", "hetero", "peach", "perop", "roofline", "threecomp"]
