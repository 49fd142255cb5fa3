"""pygame types that have no ``__reduce__`` of their own: ``pygame.Color``.

Registered when the game imports pygame; this module never imports it. ``Rect``,
``FRect``, ``Vector2`` and ``Vector3`` define ``__reduce__`` and are saved through it
once the game calls ``autosave.allow("pygame")`` (docs/types.md).
"""

import sys

from ..errors import FormatError
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


def register_pygame():
    register_adapter(ColorAdapter(sys.modules["pygame.color"].Color))


when_imported("pygame.color", register_pygame)
