"""``python -m optmodels``: the same command as the ``optmodels`` console script."""

import sys

from optmodels.cli import main

sys.exit(main())
