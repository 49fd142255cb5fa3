"""A small headless game used by examples/level.py and the benchmarks."""

from .model import ITEMS, NPC, SPRITES, Brain, Health, ItemTemplate, Level, Mode, Position, Sprite, Squad
from .sim import asset_references, build_level, fingerprint, step

__all__ = [
    "Level", "NPC", "Squad", "Brain", "Health", "Position", "Mode", "Sprite", "ItemTemplate",
    "SPRITES", "ITEMS", "build_level", "step", "fingerprint", "asset_references",
]
