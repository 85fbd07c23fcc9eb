"""The model registry's built-in entries: each module applies one model family of :mod:`analysis.equations`
to measured runs (which cases, which platform parameters, which table), as a :class:`analysis.registry.Model`.
"""
