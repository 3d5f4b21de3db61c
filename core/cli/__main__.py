"""``python -m warmscope.core.cli``: the ``warmscope`` console script."""

import sys

from warmscope.core.cli import main

sys.exit(main())
