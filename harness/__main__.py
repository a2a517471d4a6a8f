"""`python -m harness` runs the command line."""

import sys

from harness._cli import main

sys.exit(main())
