"""The catalogue: the kinds of objects games and simulations keep, each with a way to
build one and a way to use it (third-party libraries in libraries.py, the standard
library in stdlib.py, the two child processes in run.py).

``use(obj)`` exercises the object and returns a plain value that two processes can
compare (the next items of an iterator, draws from a generator, a model's state after
stepping it). test_catalogue.py builds every entry in one child process, saves it with
autosave and with pickle, records ``use()``, and loads and uses it again in a second
child with another hash seed (``main`` below runs both sides).

This package is the game here: its classes are trusted because ``Slot`` is a save root,
as a game's are. An entry of a third-party package names the one package it may
``allow()``; standard-library entries allow nothing.
"""

import dataclasses
import os
import typing

import autosave

os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")


def _optional(name):
    """The module, or None when the library is absent (its entries are skipped)."""
    try:
        return __import__(name, fromlist=["_"])
    except ImportError:
        return None


# A load imports nothing: the game imports what its saves hold, so these are imported
# here, in both the saving and the loading process.
LIBRARIES = {name: _optional(name) for name in ("numpy", "mesa", "pygame", "networkx",
                                                "pandas")}
_optional("numpy.random")


@dataclasses.dataclass(frozen=True)
class Entry:
    name: str
    build: typing.Callable
    use: typing.Callable
    needs: str | None = None      # the optional library the entry needs (skipped if absent)
    allow: str | tuple[str, ...] | None = None   # the packages the entry may allow()
    pickle: bool = True           # does pickle round-trip it? (checked, not assumed)
    resaves_alike: bool | None = True   # does saving the loaded object give the same
                                        # bytes? (None: it depends on the hash seed)

    def missing(self):
        """Why the entry cannot run here, or None. ``needs`` is a library, or
        ``library.Attribute`` for a class only some of its versions have."""
        if self.needs is None:
            return None
        library, _, attr = self.needs.partition(".")
        module = LIBRARIES[library]
        if module is None:
            return f"{library} is not installed"
        if attr and not hasattr(module, attr):
            return f"this {library} {getattr(module, '__version__', '')} has no {attr}"
        return None


ENTRIES = []


def entry(name, use, needs=None, allow=None, pickle=True, resaves_alike=True):
    """Decorate a build function: ``build()`` makes the object, ``use(obj)`` runs it."""
    def add(build):
        ENTRIES.append(Entry(name, build, use, needs=needs, allow=allow, pickle=pickle,
                             resaves_alike=resaves_alike))
        return build
    return add


@autosave.save_root
class Slot:
    """What a game's save root is: fields holding what the game keeps."""

    def __init__(self, **fields):
        self.__dict__.update(fields)


def take(n):
    """A use(): the next n items of an iterator."""
    return lambda it: [next(it) for _ in range(n)]


def main(mode, path):
    """``save PATH``: build, save and use each entry; write the outcomes to PATH.
    ``load PATH``: load what ``save`` wrote, use each entry, write the outcomes to
    PATH + ".loaded". Outcomes are plain values, compared by the test."""
    from .run import load_side, save_side
    (save_side if mode == "save" else load_side)(ENTRIES, path)


from . import libraries, stdlib  # noqa: E402,F401  (the entries)
