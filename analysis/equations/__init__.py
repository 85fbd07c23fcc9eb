"""Analytical performance and energy models of CPU+accelerator machines, one module per model family.

These are the papers' equations, vectorised and free of I/O: ``roofline`` (Williams et al.; energy
roofline of Choi et al.), ``hetero`` (PerDome / PeaPaw), ``peach`` (PEACH), ``perop`` (Kannan et al.'s
per-operation model), ``fdm`` (the FDM-seismology scaling model). How each is applied to measured
runs - which cases, which platform parameters - is its entry in the model registry
(:mod:`analysis.models`).
"""
