"""`python -m strategies` runs the `harness` command line (the same as the `harness` script)."""

import sys

from strategies._cli import main

sys.exit(main())
