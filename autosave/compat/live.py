"""The current code: import the packages under judgement and describe them.

This is the build-time side of autosave, like ``autosave-codegen``: it imports the
game's packages (never a file's contents) and describes them with the same collection
codegen uses (``autosave.compat.describe``), so a snapshot and a codegen manifest
describe a package the same way. A load never runs this module.
"""

import os
import sys

import attrs

from ..model.registry import REGISTRY
from . import describe
from .collect import import_package
from .model import Snapshot


def import_packages(packages):
    """Import each package and all its submodules, as a running game would have them."""
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    for name in packages:
        import_package(name)


def manifest(packages) -> Snapshot:
    """The manifest of ``packages`` as they are now."""
    import_packages(packages)
    return describe.snapshot(packages)


def current(packages, baselines=()) -> Snapshot:
    """The current Snapshot, with every baseline class that no manifest lists but that
    still resolves by its saved name (a class no annotation reaches: saved by
    reflection, loaded by name) described too, as the loader would find it."""
    snap = manifest(packages)
    classes = dict(snap.classes)
    known = set(classes) | {a for e in classes.values() for a in e.aliases}
    for base in baselines:
        for name in base.classes:
            if name in known:
                continue
            try:
                cls = REGISTRY.resolve(name, "class")
            except Exception:       # gone, untrusted, or failing to import: not found
                continue
            if isinstance(cls, type):
                classes[name] = describe.class_entry(cls)
                known.add(name)
    return attrs.evolve(snap, classes=classes)
