"""``python -m solvers``: see :mod:`solvers.cli`."""

import sys

from .cli import main

sys.exit(main())
