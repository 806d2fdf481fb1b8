"""Entry point: ``python -m levers9.runner``."""

import sys

from .main import main

sys.exit(main())
