"""``python -m analysis.report``: build a report by hand (the workflow runs ``hetval report``)."""

import sys

from analysis.report import main

if __name__ == "__main__":
    sys.exit(main())
