"""autosave-codegen: generated per-class save/load code and the schema manifest.

    autosave-codegen mygame            # writes mygame/_autosave_generated.py and
                                       # mygame/autosave_manifest.json
    autosave-codegen --check mygame    # in CI: exit 1 if they are stale

See docs/codegen.md. ``codegen`` imports ``autosave``; ``autosave`` never imports it.
"""

from .cli import main, outputs
from .errors import CodegenError

__all__ = ["main", "outputs", "CodegenError"]
