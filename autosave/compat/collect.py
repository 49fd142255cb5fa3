"""Which classes a package saves: import it, then follow roots, annotations and assets
(the one collection `autosave-codegen` and `autosave compat snapshot` share).

Starting points are the package's ``@save_root``/``@saveable`` classes and the classes
of its registered assets. From each class, its subclasses in the packages (a field
declared ``list[Npc]`` holds ``Merchant`` records too) and its field annotations are followed
(``list[X]``, ``dict[K, V]``, ``X | None``, ``Optional[X]``, string forward references)
to every class they name. Classes defined inside the package get generated code; the
others (standard library, other packages) are listed as external.
"""

import importlib
import inspect
import pkgutil
import types
import typing

from ..errors import SnapshotError
from ..model.generated import MODULE
from ..model.registry import REGISTRY


def import_package(name):
    """Import package ``name`` and every submodule; the modules, sorted by name."""
    try:
        package = importlib.import_module(name)
    except Exception as e:
        raise SnapshotError(f"cannot import {name}: {type(e).__name__}: {e}") from e
    modules = {name: package}
    for info in pkgutil.walk_packages(getattr(package, "__path__", []), prefix=name + "."):
        if info.name.rpartition(".")[2] == MODULE:
            continue
        try:
            modules[info.name] = importlib.import_module(info.name)
        except Exception as e:
            raise SnapshotError(f"cannot import {info.name}: {type(e).__name__}: {e}") from e
    return [modules[k] for k in sorted(modules)]


def inside(module_name, packages):
    return any(module_name == p or module_name.startswith(p + ".") for p in packages)


def where(cls):
    """file:line of a class definition, for messages."""
    try:
        path = inspect.getsourcefile(cls) or inspect.getfile(cls)
        line = inspect.getsourcelines(cls)[1]
        return f"{path}:{line}"
    except (OSError, TypeError):
        return f"{cls.__module__}.{cls.__qualname__}"


def field_hints(cls):
    """{field: annotation} with forward references resolved."""
    try:
        return typing.get_type_hints(cls)
    except Exception as e:
        raise SnapshotError(f"{where(cls)}: the annotations of {cls.__qualname__} cannot be "
                           f"resolved ({type(e).__name__}: {e}); import the names they use "
                           f"at module level") from e


def named_classes(annotation):
    """Every class an annotation names, in order."""
    if isinstance(annotation, type) and not typing.get_args(annotation):
        yield annotation
        return
    origin = typing.get_origin(annotation)
    if isinstance(origin, type):
        yield origin
    for arg in typing.get_args(annotation):
        if arg is Ellipsis or isinstance(arg, (str, int, bytes)):
            continue
        yield from named_classes(arg)


def collect(packages):
    """(classes defined in ``packages``, external classes), each sorted by full name."""
    for name in packages:
        import_package(name)
    start = [cls for cls in REGISTRY.by_name.values()
             if isinstance(cls, type) and inside(cls.__module__, packages)]
    start += [cls for cls in REGISTRY.asset_classes if inside(cls.__module__, packages)]
    seen, todo = set(), list(start)
    while todo:
        cls = todo.pop()
        if cls in seen:
            continue
        seen.add(cls)
        if not inside(cls.__module__, packages):
            continue
        # a field declared as a base class holds its subclasses' records too
        todo.extend(sub for sub in saveable_subclasses(cls)
                    if sub not in seen and inside(sub.__module__, packages))
        for annotation in field_hints(cls).values():
            for named in named_classes(annotation):
                if named not in seen and _is_user_class(named):
                    todo.append(named)
    own = sorted((c for c in seen if inside(c.__module__, packages)), key=_full_name)
    external = sorted((c for c in seen if not inside(c.__module__, packages)), key=_full_name)
    return own, external


def saveable_subclasses(cls):
    """Every subclass of ``cls`` a save can name (defined at module level), sorted."""
    found, todo = set(), [cls]
    while todo:
        for sub in type.__subclasses__(todo.pop()) if isinstance(cls, type) else ():
            if sub not in found and "<locals>" not in sub.__qualname__:
                found.add(sub)
                todo.append(sub)
    return sorted(found, key=_full_name)


def _full_name(cls):
    return (cls.__module__, cls.__qualname__)


def _is_user_class(cls):
    """A class worth following: not a builtin scalar or container, not typing machinery."""
    return (isinstance(cls, type) and cls.__module__ not in ("builtins", "typing", "types")
            and not issubclass(cls, type) and cls is not types.NoneType)


def coroutine_functions(packages):
    """The ``@autosave.coroutine`` functions defined in ``packages`` (already imported
    by ``collect``), sorted by qualified name."""
    from autosave.coroutines import SPECS
    funcs = {spec.qualified_name: spec.function for spec in SPECS.values()
             if inside(spec.function.__module__, packages)}
    return [funcs[name] for name in sorted(funcs)]
