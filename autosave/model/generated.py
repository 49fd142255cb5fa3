"""Generated code at run time: which classes have it, and whether it is still current.

``autosave-codegen PACKAGE`` writes ``PACKAGE/_autosave_generated.py``. It is found
without the game importing it: every package that holds a ``@save_root``/``@saveable``
class, an asset, or an ``allow``ed namespace is noted, and before the next save or load
the generated module of each such package (and of its parent packages) is imported
if it exists. Importing it calls ``register`` once per class.

Each registration carries the fingerprint of the class layout the code was made from
(``ClassSchema.fingerprint``). A class changed since then keeps the reflective path,
with one ``StaleGeneratedCodeWarning`` naming it; with ``AUTOSAVE_STRICT=1`` in the
environment that is a ``StaleGeneratedCodeError`` instead. ``AUTOSAVE_CODEGEN=0``
turns generated code off everywhere.
"""

import importlib
import importlib.util
import json
import os
import sys

from ..errors import StaleGeneratedCodeError, warn_at_caller
from ..format.wire import INLINE_TYPES
from .registry import REGISTRY
from .schema import schema_of

MODULE = "_autosave_generated"
COROUTINES = "_autosave_coroutines"     # state machines: imports nothing of the game
MANIFEST = "autosave_manifest.json"
# The interface generated code is written against (docs/codegen.md, "The save context"):
# save factories take a saver.SaveContext offering SAVE_OPERATIONS and return handlers
# obj -> record; load factories take (saved field names, plain, built objects).
# Every generated module states the ABI and the operations it uses, first thing.
SAVE_ABI = 4
SAVE_OPERATIONS = ("type_index", "lookup", "mention", "fallback")
INLINE = INLINE_TYPES     # what a record holds as itself: generated code tests against it


class GeneratedCodeMismatch(Exception):
    """A generated module was written for another interface than this autosave's."""


def require_abi(abi, module, uses=()):
    """Called by a generated module before it defines anything: refuse it (an import
    error the importer turns into a warning and reflection, or under AUTOSAVE_STRICT=1
    into StaleGeneratedCodeError) when it was written for another interface."""
    missing = sorted(set(uses) - set(SAVE_OPERATIONS))
    if abi != SAVE_ABI or missing:
        what = (f"for interface version {abi}, this autosave offers {SAVE_ABI}"
                if abi != SAVE_ABI else f"using operations this autosave does not offer "
                f"({', '.join(missing)})")
        raise GeneratedCodeMismatch(f"{module} was written by another autosave-codegen, "
                                    f"{what}")


class StaleGeneratedCodeWarning(UserWarning):
    """Generated code for a class does not match the class any more."""


def enabled():
    return os.environ.get("AUTOSAVE_CODEGEN", "1").strip() != "0"


def strict():
    return os.environ.get("AUTOSAVE_STRICT", "0").strip() not in ("", "0")


class GeneratedCode:
    def __init__(self):
        self.save = {}          # class -> factory(walker) -> direct handler
        self.load = {}          # class -> factory(plan) -> create(rec, vals)
        self.probed = set()     # packages looked in for a generated module
        self.pending = set()    # packages to look in before the next save or load
        self.stale = set()      # classes warned about
        self.seen_changes = -1  # REGISTRY.changes when its packages were last noted
        self.noted = set()      # modules note()d already (a load notes its classes')

    # -- called by generated modules -------------------------------------------------------

    def register(self, cls, fingerprint, save=None, load=None, module=None):
        current = schema_of(cls).fingerprint
        if current != fingerprint:
            where = f" in {module}" if module else ""
            message = (f"generated save code for {cls.__module__}.{cls.__qualname__}{where} "
                       f"is stale: the class changed since autosave-codegen ran "
                       f"(fingerprint {fingerprint}, class now {current}); re-run "
                       f"autosave-codegen {cls.__module__.partition('.')[0]}")
            if strict():
                raise StaleGeneratedCodeError(message)
            if cls not in self.stale:
                self.stale.add(cls)
                warn_at_caller(message + "; saving it by reflection meanwhile",
                               StaleGeneratedCodeWarning)
            self.save.pop(cls, None)
            self.load.pop(cls, None)
            return
        if save is not None:
            self.save[cls] = save
        if load is not None:
            self.load[cls] = load

    # -- discovery --------------------------------------------------------------------------

    def note(self, module_name):
        """A module whose package may hold generated code."""
        parts = module_name.split(".")
        for i in range(1, len(parts) + 1):
            package = ".".join(parts[:i])
            if package not in self.probed:
                self.pending.add(package)

    def activate(self):
        """Import the generated modules of the packages noted so far; whether any
        generated code is in use."""
        if not enabled():
            return False
        self.import_pending()
        return bool(self.save)

    def import_pending(self):
        if self.seen_changes != REGISTRY.changes:
            self.seen_changes = REGISTRY.changes
            for cls in (*REGISTRY.by_name.values(), *REGISTRY.asset_classes):
                if isinstance(cls, type):
                    self.note(cls.__module__)
            for package in REGISTRY.allowed:
                self.note(package)
        # A package not imported yet is looked in once it is: autosave never imports
        # a game's packages on its own.
        for package in [p for p in self.pending if p in sys.modules]:
            self.pending.discard(package)
            self.import_generated(package)

    def import_generated(self, package):
        if package in self.probed:
            return
        self.probed.add(package)
        name = f"{package}.{MODULE}"
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):   # not a package, or not importable
            return
        if spec is None:
            return
        try:
            importlib.import_module(name)
        except StaleGeneratedCodeError:
            self.probed.discard(package)     # strict: refuse again at the next save
            self.pending.add(package)
            raise
        except Exception as e:
            # A class it imports was renamed or deleted since generation, say.
            self.stale_module(name, package, e)

    def stale_module(self, name, package, error):
        message = (f"the generated module {name} cannot be imported "
                   f"({type(error).__name__}: {error}); it is stale: re-run "
                   f"autosave-codegen {package}")
        if strict():
            raise StaleGeneratedCodeError(message) from error
        warn_at_caller(message + "; saving by reflection meanwhile",
                       StaleGeneratedCodeWarning)

    def save_factory(self, cls):
        self.note(cls.__module__)
        self.activate()
        return self.save.get(cls)

    def load_factory(self, cls):
        factories = self.load_factories((cls,))
        return None if factories is None else factories.get(cls)

    def load_factories(self, classes):
        """{class: load factory} for a load of objects of ``classes``, their packages
        looked in first; None when generated code is off (``AUTOSAVE_CODEGEN=0``, read
        once per load: a load decides it once, for all its classes)."""
        if not enabled():
            return None
        noted = self.noted
        for cls in classes:
            module = cls.__module__
            if module not in noted:
                self.note(module)
                noted.add(module)
        self.import_pending()
        return self.load


class PrecompiledCoroutines:
    """State machines written ahead of time, found when ``@autosave.coroutine`` runs.

    The decorator runs while the game's modules import, so their package is only
    partly initialised: the module it looks in (``_autosave_coroutines``) imports
    nothing of the game, only ``autosave``. The package's manifest gives the labels of
    the last build to functions transformed at run time (development, or a function
    edited since), so their resume points keep their names.
    """

    def __init__(self):
        self.probed = set()
        # qualified name -> labels of a previous build; the decorator reads it, so the
        # labels live here and this module never imports the coroutine package.
        self.labels = {}

    def prepare(self, module_name):
        if not enabled() or not isinstance(module_name, str):
            return
        parts = module_name.split(".")
        for i in range(1, len(parts) + 1):
            package = ".".join(parts[:i])
            if package in self.probed:
                continue
            self.probed.add(package)
            self.load_labels(package)
            name = f"{package}.{COROUTINES}"
            try:
                spec = importlib.util.find_spec(name)
            except (ImportError, ValueError):
                continue
            if spec is not None:
                try:
                    importlib.import_module(name)
                except Exception as e:
                    GENERATED.stale_module(name, package, e)

    def load_labels(self, package):
        module = sys.modules.get(package)
        for directory in getattr(module, "__path__", None) or ():
            path = os.path.join(directory, MANIFEST)
            try:
                with open(path, encoding="utf-8") as f:
                    manifest = json.load(f)
            except (OSError, ValueError):
                continue
            coroutines = manifest.get("coroutines") if isinstance(manifest, dict) else None
            for name, entry in (coroutines if isinstance(coroutines, dict) else {}).items():
                if isinstance(entry, dict) and isinstance(entry.get("labels"), dict):
                    self.labels[name] = dict(entry["labels"])


GENERATED = GeneratedCode()
PRECOMPILED_COROUTINES = PrecompiledCoroutines()
register = GENERATED.register
