"""Entry point: ``python -m mpi4py -m sims.bench`` characterises a platform."""

import sys

from sims.bench.characterize import main

if __name__ == "__main__":
    sys.exit(main())
