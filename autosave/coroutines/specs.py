"""Which functions are ``@autosave.coroutine`` functions: the table the decorator fills
and the save adapter reads (kept apart so that neither imports the other)."""

from typing import Any

SPECS: dict[Any, Any] = {}   # decorated function -> CoroutineSpec


def spec_of(func):
    """The CoroutineSpec of a decorated function (or its bound method), else None."""
    return SPECS.get(getattr(func, "__func__", func))


class FunctionRef:
    """Stands for a coroutine function in a save: written as the function's global
    name (an ``autosave.global`` record), so loading resolves it through the trust
    rules of every other name."""
    def __init__(self, module, qualname):
        self.__module__, self.__qualname__ = module, qualname
