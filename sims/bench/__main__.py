"""Entry point: ``python -m mpi4py -m sims.bench`` characterises a platform."""

import sys

from sims._threads import limit_threads

if __name__ == "__main__":
    limit_threads(1)  # before the benchmarks load NumPy / Numba thread pools
    from sims.bench.characterize import main

    sys.exit(main())
