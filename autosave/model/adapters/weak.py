"""Weak references and weak containers: an entry survives a save exactly when its weak
target was saved through some strong reference.

A weak adapter describes each entry as (strong parts, weak target). The walker saves the
strong parts like any value, and only after the whole graph is walked writes the entries
whose targets were saved, as ``payload(strong values, target value)``.
"""

import weakref
from itertools import islice

from .base import Adapter, register_adapter
from .containers import flood_checked, pairs


class WeakAdapter(Adapter):
    mutable, has_fill = True, True
    keeps_dead = False        # write an entry even when its target was not saved
    ordered_by_target = False  # entries come from a set: order them by target record

    def entries(self, obj):
        """[(strong parts, weak target)] of a live object."""
        raise NotImplementedError

    def payload(self, strong, target):
        raise NotImplementedError


class WeakRefAdapter(WeakAdapter):
    """[target or None] -- alive after loading exactly when the target was saved."""
    name, types, keeps_dead = "weakref.ref", (weakref.ReferenceType,), True
    mutable, has_fill = False, False

    def entries(self, obj):
        return [((), obj())]

    def payload(self, strong, target):
        return [target]

    def build(self, vals):
        (target,) = vals[1:]
        return _dead_ref() if target is None else weakref.ref(target)


class WeakSetAdapter(WeakAdapter):
    """[members...] -- those saved through a strong reference."""
    name, types, ordered_by_target = "weakref.WeakSet", (weakref.WeakSet,), True
    fill_finished, hashes = slice(1, None), True

    def entries(self, obj):
        return [((), member) for member in list(obj)]

    def payload(self, strong, target):
        return [target]

    def allocate(self, rec):
        return weakref.WeakSet()

    def fill(self, obj, vals):
        flood_checked(vals, 1, 1, "a WeakSet")
        obj.update(islice(vals, 1, None))


class WeakValueDictionaryAdapter(WeakAdapter):
    """[key, value, ...] -- entries whose value was saved through a strong reference."""
    name, types = "weakref.WeakValueDictionary", (weakref.WeakValueDictionary,)
    fill_finished, hashes = slice(1, None, 2), True

    def entries(self, obj):
        return [((key,), value) for key, value in list(obj.items())]

    def payload(self, strong, target):
        return [strong[0], target]

    def allocate(self, rec):
        return weakref.WeakValueDictionary()

    def fill(self, obj, vals):
        flood_checked(vals, 1, 2, f"a {self.name}")
        for key, value in pairs(vals):
            obj[key] = value


class WeakKeyDictionaryAdapter(WeakAdapter):
    """[key, value, ...] -- entries whose key was saved through a strong reference."""
    name, types = "weakref.WeakKeyDictionary", (weakref.WeakKeyDictionary,)
    fill_finished, hashes = slice(1, None, 2), True

    def entries(self, obj):
        return [((value,), key) for key, value in list(obj.items())]

    def payload(self, strong, target):
        return [target, strong[0]]

    def allocate(self, rec):
        return weakref.WeakKeyDictionary()

    def fill(self, obj, vals):
        flood_checked(vals, 1, 2, f"a {self.name}")
        for key, value in pairs(vals):
            obj[key] = value


class _Gone:
    pass


def _dead_ref():
    return weakref.ref(_Gone())


for _adapter in (WeakRefAdapter, WeakSetAdapter, WeakValueDictionaryAdapter,
                 WeakKeyDictionaryAdapter):
    register_adapter(_adapter())
