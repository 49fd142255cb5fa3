"""Release 1.1 of the tiny shop game (examples/compat): a patch that keeps 1.0's saves.

* Item is now Article, saved under a new stable name; the old name is an alias.
* Article has a new field with a default, and Rarity a new member.
* A discount was added to ``haggle`` without touching its resume point.
* A new asset.
"""

import enum

import attrs

import autosave


class Rarity(enum.Enum):
    COMMON = 1
    RARE = 2
    EPIC = 3


@autosave.saveable(name="shop.Article", aliases=("shop.Item",))
@attrs.define
class Article:
    name: str
    price: int
    rarity: Rarity = Rarity.COMMON
    discount: int = 0


POTION = autosave.asset(Article("potion", 5), "items/potion")
ELIXIR = autosave.asset(Article("elixir", 50, Rarity.EPIC), "items/elixir")


@autosave.coroutine
def haggle(start_price):
    price = start_price
    if price > 100:
        price = 100
    while price > 1:
        offer = yield price
        if offer is not None and offer >= price:
            return price
        price -= 1


@autosave.save_root
@attrs.define
class Shop:
    stock: list[Article]
    gold: int
    featured: Article
    talks: list = attrs.Factory(list)
