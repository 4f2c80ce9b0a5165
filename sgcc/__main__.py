"""``python -m sgcc`` runs the same entry point as the ``sgcc`` console script."""

import sys

from sgcc.cli import main

sys.exit(main())
