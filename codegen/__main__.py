"""python -m autosave_codegen PACKAGE ...: the same as autosave-codegen."""

import sys

from .cli import main

sys.exit(main())
