"""``python -m warmscope.cli``: the ``warmscope`` console script."""

import sys

from warmscope.cli import main

sys.exit(main())
