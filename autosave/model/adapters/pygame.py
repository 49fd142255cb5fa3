"""pygame's value types: ``Color``, ``Rect``, ``FRect``, ``Vector2``, ``Vector3``.

Registered when the game imports pygame; this module never imports it. pygame saves
``Rect`` for pickle through a copyreg function (a load calls no function) and
``Color`` not at all, so each gets an adapter whose load checks its numbers. Other
pygame classes are saved through their ``__reduce__`` once the game calls
``autosave.allow("pygame")``.
"""

import sys

from ...errors import FormatError
from ..purity import declare
from .base import Adapter, register_adapter, when_imported


class ColorAdapter(Adapter):
    """[r, g, b, a], each 0..255."""
    name = "pygame.Color"

    def __init__(self, color):
        self.color = color
        self.types = (color,)

    def parts(self, obj):
        return [obj.r, obj.g, obj.b, obj.a]

    def build(self, vals):
        channels = vals[1:]
        if len(channels) != 4 or any(type(c) is not int or not 0 <= c <= 255 for c in channels):
            raise FormatError("a pygame.Color record holds four ints 0..255")
        return self.color(*channels)


class NumbersAdapter(Adapter):
    """[numbers...]: a Rect (4 ints), FRect (4 floats), Vector2 (2), Vector3 (3)."""

    def __init__(self, cls, name, count, kind, read):
        self.cls, self.name, self.types = cls, name, (cls,)
        self.count, self.kind, self.read = count, kind, read

    def parts(self, obj):
        return [self.kind(v) for v in self.read(obj)]

    def build(self, vals):
        numbers = vals[1:]
        if len(numbers) != self.count or any(type(v) is not self.kind for v in numbers):
            raise FormatError(f"a {self.name} record holds {self.count} "
                              f"{self.kind.__name__}s")
        return self.cls(*numbers)


def _rect(r):
    return (r.x, r.y, r.w, r.h)


def register_color():
    register_adapter(ColorAdapter(sys.modules["pygame.color"].Color))
    declare(sys.modules["pygame.color"].Color)        # its methods only compute


def _numbers(cls, name, n, kind, parts):
    register_adapter(NumbersAdapter(cls, name, n, kind, parts))
    declare(cls)


def register_rect():
    module = sys.modules["pygame.rect"]
    _numbers(module.Rect, "pygame.Rect", 4, int, _rect)
    if hasattr(module, "FRect"):
        _numbers(module.FRect, "pygame.FRect", 4, float, _rect)


def register_math():
    module = sys.modules["pygame.math"]
    _numbers(module.Vector2, "pygame.Vector2", 2, float, tuple)
    _numbers(module.Vector3, "pygame.Vector3", 3, float, tuple)


when_imported("pygame.color", register_color)
when_imported("pygame.rect", register_rect)
when_imported("pygame.math", register_math)
