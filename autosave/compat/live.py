"""The current code: import the packages under judgement and describe them.

This is the build-time side of autosave, like ``autosave-codegen``: it imports the
game's packages (never a file's contents) and uses the build tool's collection of what
a package saves (``codegen.manifest.snapshot``), so a snapshot and a codegen manifest
describe a package the same way. The runtime library never imports this module.
"""

import os
import sys

from ..errors import SnapshotError
from ..model.registry import REGISTRY
from . import model


def import_packages(packages):
    """Import each package and all its submodules, as a running game would have them."""
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    from autosave_codegen.collect import import_package
    from autosave_codegen.errors import CodegenError
    for name in packages:
        try:
            import_package(name)
        except CodegenError as e:
            raise SnapshotError(str(e)) from None


def manifest(packages):
    """The manifest document of ``packages`` as they are now (format 2)."""
    import_packages(packages)
    from autosave_codegen import manifest as manifest_
    from autosave_codegen.errors import CodegenError
    try:
        return manifest_.snapshot(packages)
    except CodegenError as e:
        raise SnapshotError(str(e)) from None


def current(packages, baselines=()):
    """The current Snapshot, with every baseline class that no manifest lists but that
    still resolves by its saved name (a class no annotation reaches: saved by
    reflection, loaded by name) described too, as the loader would find it."""
    document = manifest(packages)
    from autosave_codegen import manifest as manifest_
    classes = document["classes"]
    known = set(classes) | {a for e in classes.values() for a in e.get("aliases", [])}
    for base in baselines:
        for name in base.classes:
            if name in known:
                continue
            try:
                cls = REGISTRY.resolve(name, "class")
            except Exception:       # gone, untrusted, or failing to import: not found
                continue
            if isinstance(cls, type):
                classes[name] = manifest_.class_entry(cls)
                known.add(name)
    return model.parse(document, "current")
