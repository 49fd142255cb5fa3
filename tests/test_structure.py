"""The house's shape: no import cycles between autosave's modules, no module that
outgrows one concern.

Imports are read with ``ast`` from the source, every ``import`` statement counted
wherever it stands (a function-level import is still a dependency, only a deferred
one), so a cycle hidden behind a late import is found too.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {"autosave": ROOT / "autosave", "autosave_codegen": ROOT / "codegen"}
MAX_LINES = 650


def modules():
    found = {}
    for package, folder in PACKAGES.items():
        for path in sorted(folder.rglob("*.py")):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            if is_package:
                parts.pop()
            found[".".join([package, *parts])] = (path, is_package)
    return found


def imports_of(name, path, is_package, known):
    package = name if is_package else name.rpartition(".")[0]
    targets = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            bases = [alias.name for alias in node.names]
            names = []
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                bases = [".".join(base + ([node.module] if node.module else []))]
            else:
                bases = [node.module or ""]
            names = [alias.name for alias in node.names]
        else:
            continue
        for base in bases:
            # `from . import x` names a submodule; `from .m import f` names the module m
            for candidate in [f"{base}.{n}" for n in names] + [base]:
                if candidate in known:
                    targets.add(candidate)
                    break
            else:
                while base and base not in known:
                    base = base.rpartition(".")[0]
                if base:
                    targets.add(base)
    targets.discard(name)
    return targets


def import_graph():
    known = modules()
    return {name: imports_of(name, path, is_package, known)
            for name, (path, is_package) in known.items()}


def cycles(graph):
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def package_parents(name):
    """A module imports its parent packages' __init__ implicitly; those edges are not
    cycles a reader has to untangle, so they are left out of the graph below."""
    parts = name.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts))}


def test_the_cycle_finder_finds_a_planted_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_import_reader_sees_relative_late_and_submodule_imports(tmp_path, monkeypatch):
    pkg = tmp_path / "p"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from .a import f\n")
    (pkg / "a.py").write_text("def f():\n    from .sub import b\n    return b\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "b.py").write_text("from .. import a\nfrom p.sub import c\n")
    (pkg / "sub" / "c.py").write_text("import p.a\n")
    monkeypatch.setattr(__import__(__name__), "PACKAGES", {"p": pkg})
    graph = import_graph()
    assert graph["p.a"] == {"p.sub.b"}
    assert graph["p.sub.b"] == {"p.a", "p.sub.c"}
    assert graph["p.sub.c"] == {"p.a"}
    assert cycles(graph) == [["p.a", "p.sub.b", "p.sub.c"]]


def test_no_import_cycles():
    graph = {name: targets - package_parents(name) for name, targets in import_graph().items()}
    found = cycles(graph)
    assert not found, "import cycles: " + "; ".join(" <-> ".join(c) for c in found)


@pytest.mark.parametrize("name", sorted(modules()))
def test_no_module_outgrows_one_concern(name):
    path, _ = modules()[name]
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{path.relative_to(ROOT)} has {lines} lines; split it by concern"


@pytest.mark.parametrize("path", sorted((ROOT / "csrc").glob("*.[ch]")), ids=lambda p: p.name)
def test_no_c_source_outgrows_one_concern(path):
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{path.relative_to(ROOT)} has {lines} lines; split it by concern"


# The folders of autosave, lowest first: a module imports only from its own folder and
# those below it. The model (what types exist, what objects are made of, how each type
# is taken apart and put back) sits on the wire format and the load's checks; the save
# and the load sit on the model; everything else on them.
LAYERS = [
    ("errors",),
    ("format",),
    ("checks",),
    ("model",),
    ("loading",),
    ("saving",),
]


def folder_of(name):
    parts = name.split(".")
    return parts[1] if parts[0] == "autosave" and len(parts) > 1 else None


def test_the_core_folders_import_only_downwards():
    rank = {folder: i for i, layer in enumerate(LAYERS) for folder in layer}
    upward = []
    for name, targets in import_graph().items():
        here = rank.get(folder_of(name))
        if here is None:
            continue
        for target in targets - package_parents(name):
            there = rank.get(folder_of(target))
            if there is not None and there > here:
                upward.append(f"{name} -> {target}")
    assert not upward, "imports running back up: " + "; ".join(sorted(upward))


def test_no_import_cycles_between_folders():
    graph = {}
    for name, targets in import_graph().items():
        here = folder_of(name) or name
        graph.setdefault(here, set()).update(
            folder_of(t) or t for t in targets - package_parents(name))
    for here, targets in graph.items():
        targets.discard(here)
    found = cycles(graph)
    assert not found, "folders importing each other: " + "; ".join(" <-> ".join(c) for c in found)


def test_autosave_never_imports_its_build_tool():
    """The runtime library is what a game ships; codegen imports autosave, never the
    other way round (a function-level import counts too)."""
    offenders = sorted(name for name, targets in import_graph().items()
                       if name.split(".")[0] == "autosave"
                       and any(t.split(".")[0] == "autosave_codegen" for t in targets))
    assert not offenders, f"autosave modules importing autosave_codegen: {offenders}"
