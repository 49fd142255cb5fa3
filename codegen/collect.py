"""Which classes a package saves: autosave's own collection (``autosave.compat.collect``),
with its errors reported as the build tool's."""

from autosave.compat import collect as _collect
from autosave.compat.collect import coroutine_functions, inside, named_classes, where
from autosave.errors import SnapshotError

from .errors import CodegenError

__all__ = ["collect", "coroutine_functions", "field_hints", "import_package", "inside",
           "named_classes", "where"]


def import_package(name):
    try:
        return _collect.import_package(name)
    except SnapshotError as e:
        raise CodegenError(str(e)) from e.__cause__


def field_hints(cls):
    try:
        return _collect.field_hints(cls)
    except SnapshotError as e:
        raise CodegenError(str(e)) from e.__cause__


def collect(packages):
    try:
        return _collect.collect(packages)
    except SnapshotError as e:
        raise CodegenError(str(e)) from e.__cause__
