"""`python3 -m pmemlab`."""

import sys

from pmemlab.cli import main

sys.exit(main())
