"""Loading an older version of a class: the chain of ``@autosave.upgrade`` hooks from the
saved version to the current one, run on the plain field dict (docs/format.md, Reading,
step 2)."""

from ..errors import (FormatError, IncompatibleSaveError, LoadError, UnreachableUpgradeWarning,
                     warn_at_caller)
from ..checks.loadcheck import describe
from .registry import REGISTRY, stable_name


def upgrade_chain(schema, saved_version):
    """The hooks taking a save of ``saved_version`` to the class's version, in order."""
    if type(saved_version) is not int or saved_version < 1:
        raise FormatError(f"the save's version of {schema.name} is not a positive int")
    if saved_version > schema.version:
        raise IncompatibleSaveError(
            f"the save holds {schema.name} version {saved_version}, newer than this "
            f"game's version {schema.version}")
    warn_unreachable(schema)
    chain = []
    for v in range(saved_version, schema.version):
        hook = hook_for(schema, v)
        if hook is None:
            raise IncompatibleSaveError(
                f"the save holds {schema.name} version {saved_version}; version "
                f"{schema.version} needs an @autosave.upgrade({schema.name!r}, "
                f"from_version={v}) hook")
        chain.append(hook)
    return chain


def hook_for(schema, from_version):
    """The hook upgrading a record of ``schema``'s class from ``from_version``: the
    class's own, else its nearest base's (resolved per concrete class)."""
    hook = REGISTRY.upgrades.get((schema.name, from_version))
    if hook is not None:
        return hook
    for klass in schema.cls.__mro__[1:]:
        if klass is object:
            break
        hook = REGISTRY.upgrades.get((stable_name(klass), from_version))
        if hook is not None:
            return hook
    return None


def run_upgrades(schema, saved_version, hooks, fields):
    """The field dict after every hook of the chain, each checked to return a dict of
    str keys."""
    for v, hook in enumerate(hooks, saved_version):
        try:
            fields = hook(fields)
        except LoadError:
            raise
        except Exception as e:
            raise IncompatibleSaveError(
                f"upgrade hook {hook.__qualname__} for {schema.name} version {v} failed: "
                f"{describe(e)}") from e
        if type(fields) is not dict or not all(type(k) is str for k in fields):
            raise IncompatibleSaveError(
                f"upgrade hook {hook.__qualname__} for {schema.name} version {v} must "
                f"return the field dict (str keys), returned a {type(fields).__name__}")
    return fields


_warned: set[tuple[str, int]] = set()       # (name, from_version) of unreachable hooks already warned about


def unreachable_hooks(schema):
    """[(from_version, hook)] registered for ``schema``'s class that never run: a hook
    from version N runs on saves of version N only when the class is at N + 1 or later."""
    return sorted(((v, hook) for (name, v), hook in REGISTRY.upgrades.items()
                   if name == schema.name and v >= schema.version), key=lambda vh: vh[0])


def warn_unreachable(schema):
    for v, hook in unreachable_hooks(schema):
        if (schema.name, v) not in _warned:
            _warned.add((schema.name, v))
            warn_at_caller(
                f"upgrade hook {hook.__qualname__} for {schema.name} from_version={v} can "
                f"never run: {schema.name} is at version {schema.version}; bump it with "
                f"@autosave.saveable(version={v + 1}) so that saves of version {v} go "
                f"through the hook", UnreachableUpgradeWarning)
