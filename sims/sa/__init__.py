"""The synthetic application (SA) of PeaPaw §6.3.1: VecAdd and PowAdd kernels."""
