"""autosave-codegen: generated per-class save/load code and the schema manifest.

    autosave-codegen mygame            # writes mygame/_autosave_generated.py and
                                       # mygame/autosave_manifest.json
    autosave-codegen --check mygame    # in CI: exit 1 if they are stale

See docs/codegen.md. Installed as ``autosave_codegen`` (the repository keeps it in
codegen/). It imports ``autosave``; the runtime library never imports it (only the
``autosave compat`` commands do, to describe a package).
"""

from .cli import main, outputs
from .errors import CodegenError

__all__ = ["main", "outputs", "CodegenError"]
