"""``python -m crowdlearn_grader``: the instructor's command line."""

import sys

from crowdlearn_grader import main

sys.exit(main())
