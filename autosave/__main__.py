"""``python -m autosave``: the same as the ``autosave`` command."""

import sys

from .cli import main

sys.exit(main())
