"""Release 1.0 of a tiny shop game (examples/compat): what players saved with."""

import enum

import attrs

import autosave


class Rarity(enum.Enum):
    COMMON = 1
    RARE = 2


@attrs.define
class Item:
    name: str
    price: int
    rarity: Rarity = Rarity.COMMON


POTION = autosave.asset(Item("potion", 5), "items/potion")


@autosave.coroutine
def haggle(start_price):
    price = start_price
    while price > 1:
        offer = yield price
        if offer is not None and offer >= price:
            return price
        price -= 1


@autosave.save_root
@attrs.define
class Shop:
    stock: list[Item]
    gold: int
    featured: Item
    talks: list = attrs.Factory(list)
