"""The report's sections, one module each; a case names its own in ``Case.sections``."""
