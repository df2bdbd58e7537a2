"""``python -m andal.cli``: the ``andal`` command."""

import sys

from . import main

sys.exit(main())
