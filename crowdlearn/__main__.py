"""``python -m crowdlearn``: the command line (:mod:`crowdlearn.cli`)."""

import sys

from crowdlearn.cli import main

if __name__ == "__main__":
    sys.exit(main())
