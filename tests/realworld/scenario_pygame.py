"""A pygame sprite of the game's own."""

import os

os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")

import pygame  # noqa: E402


class Ship(pygame.sprite.Sprite):
    pass
