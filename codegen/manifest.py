"""The schema manifest autosave-codegen writes: autosave's own description of a package
(``autosave.compat.describe``, typed by ``autosave.compat.model``) as a JSON document."""

from autosave.compat import describe
from autosave.compat.model import FORMAT, FORMATS, dumps

__all__ = ["FORMAT", "FORMATS", "build", "dumps", "type_text"]

type_text = describe.type_text


def build(packages, classes, external, coroutines=None):
    """The manifest document (a dict) of ``packages``; see ``describe.build``."""
    return describe.build(packages, classes, external, coroutines).document()
