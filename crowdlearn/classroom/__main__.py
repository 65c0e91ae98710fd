"""``python -m crowdlearn.classroom``: the instructor's command line."""

import sys

from crowdlearn.classroom import main

sys.exit(main())
