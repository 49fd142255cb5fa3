"""autosave as Dask's data serializer (the ``autosave[dask]`` extra; docs/distributed.md).

* ``install()`` registers the ``"autosave"`` serialization family, whose loads never
  unpickle, and Dask's per-type serializers (the ``"dask"`` family, which Dask's
  default lists, spill-to-disk and worker-to-worker transfers use) for the game's
  ``@save_root`` / ``@saveable`` classes and ``@autosave.coroutine`` generators.
  Anything else is refused (``NotImplementedError``), so Dask goes on to its next
  family: autosave never falls back to pickle itself.
* ``AutosavePlugin(modules, allow)`` (``client.register_plugin``) and this module as a
  preload (``--preload autosave.dask --autosave-import game.model``) import the game's
  modules, apply ``autosave.allow(...)`` and call ``install()`` in each worker, so that
  a worker missing a module fails when it starts, not with a future that never resolves.
* Large numpy arrays travel as out-of-band frames, without a copy (docs/format.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

try:
    import click
    from distributed.diagnostics.plugin import WorkerPlugin
    from distributed.protocol.serialize import (dask_deserialize, dask_serialize,
                                                register_serialization_family)
except ImportError as e:
    raise ImportError(f"autosave.dask needs Dask's distributed: pip install "
                      f"'autosave[dask]' ({e})") from e

from .claims import claimed_classes, claims, import_game
from .files import dumps, loads

FAMILY = "autosave"
# What a client lists to accept no pickle back: gather and results come through the
# autosave family, plain values through msgpack, errors as text.
SAFE_DESERIALIZERS = (FAMILY, "msgpack", "error")
_registered: set[type] = set()


def serialize(obj: object, context: dict[str, Any] | None = None
              ) -> tuple[dict[str, Any], list[bytes | memoryview]]:
    """(header, frames) of a claimed object: the save, then its out-of-band buffers.
    NotImplementedError for anything else (Dask then tries its next family)."""
    if not claims(obj):
        raise NotImplementedError(f"autosave saves the game's objects only, not a "
                                  f"{type(obj).__qualname__}")
    buffers: list[Any] = []
    data = dumps(obj, buffer_callback=buffers.append)
    return {"autosave": 1}, [data, *(memoryview(b) for b in buffers)]


def deserialize(header: dict[str, Any], frames: Sequence[Any]) -> Any:
    """The object of ``serialize``'s frames: ``autosave.loads``, no pickle, its arrays
    built on the frames' memory."""
    if not frames:
        raise ValueError("an autosave frame list is empty")
    first = frames[0]
    data = first if isinstance(first, memoryview) else memoryview(first)
    return loads(data, buffers=frames[1:])


def _dask_serialize(obj: object) -> tuple[dict[str, Any], list[bytes | memoryview]]:
    return serialize(obj)


def _dask_deserialize(header: dict[str, Any], frames: Sequence[Any]) -> Any:
    return deserialize(header, frames)


def install() -> None:
    """Register the family and the per-type serializers of every game class imported so
    far (call it after importing the game's modules; the plugin and the preload do).
    Safe to call again: classes imported since are added."""
    register_serialization_family(FAMILY, serialize, deserialize)
    for cls in claimed_classes():
        if cls not in _registered:
            dask_serialize.register(cls)(_dask_serialize)
            dask_deserialize.register(cls)(_dask_deserialize)
            _registered.add(cls)


def setup(modules: Iterable[str] = (), allow: Iterable[str] = ()) -> None:
    """Import ``modules`` (ImportError if one is missing), trust ``allow``, install."""
    import_game(modules, allow)
    install()


def preload(modules: Iterable[str] = (), allow: Iterable[str] = ()) -> str:
    """A preload for ``LocalCluster(preload=[...])`` / ``dask worker --preload``: the text
    of a module that runs ``setup(modules, allow)`` when the worker imports it, while
    it is being built, so that a missing module stops it from starting (Dask only
    logs the errors of a preload's ``dask_setup``)."""
    modules, allow = list(modules), list(allow)
    for name in [*modules, *allow]:
        if not isinstance(name, str) or not name.replace(".", "").replace("_", "").isalnum():
            raise ValueError(f"a module or package name, not {name!r}")
    return f"import autosave.dask\nautosave.dask.setup({modules!r}, {allow!r})\n"


class AutosavePlugin(WorkerPlugin):
    """``client.register_plugin(AutosavePlugin(["game.model"], allow=["simpy"]))``: every
    worker, present and future, imports the modules and installs autosave; a worker
    missing one makes the registration raise on the client."""

    name = "autosave"

    def __init__(self, modules: Iterable[str] = (), allow: Iterable[str] = ()) -> None:
        self.modules, self.allow = list(modules), list(allow)

    def setup(self, worker: Any) -> None:
        setup(self.modules, self.allow)


@click.command()
@click.option("--autosave-import", "modules", multiple=True,
              help="a module of the game to import in the worker (repeatable)")
@click.option("--autosave-allow", "allowed", multiple=True,
              help="a package to trust on load, as autosave.allow (repeatable)")
def dask_setup(server: Any, modules: tuple[str, ...], allowed: tuple[str, ...]) -> None:
    """As a preload (``dask worker --preload autosave.dask --autosave-import game``):
    an import that fails stops the worker from starting. Dask logs and passes over an
    Exception from a preload's setup, so the failure leaves as SystemExit."""
    try:
        setup(modules, allowed)
    except Exception as e:
        raise SystemExit(f"autosave.dask: this worker cannot load the game's saves: "
                         f"{type(e).__name__}: {e}") from e
