"""Rules on labels a developer names: identical yields (twins), pinned and reserved
labels (docs/coroutines.md, "Pinned and reserved labels").

Identical yields in the same blocks (same context and text) that are not pinned are
told apart by their order alone. When their number changes, the code cannot say which
one was inserted or removed (inserting before the first or after the last gives the
same source), so a save parked at one may resume at another: breaking, unless every
label of the baseline's twins is pinned now (``yield autosave.label(OLD, value)``):
then each names the yield the developer says it names, and the labels left unpinned are
only new ones. The fix prints the statements to write, with the baseline's labels.
"""

import ast

from .model import CoroutineEntry


def twin_groups(entry: CoroutineEntry) -> dict[tuple, list[str]]:
    """{(context, text): [labels, in source order]} of a coroutine's resume points."""
    out: dict[tuple, list[str]] = {}
    for label, info in sorted(entry.labels.items(), key=lambda kv: (kv[1].index, kv[0])):
        key: tuple
        if info.text:
            key = (tuple(info.context), info.text)
        else:       # a document without the text: the label's base names the group
            base, sep, n = label.rpartition("#")
            key = ("label", base if sep and n.isdigit() else label)
        out.setdefault(key, []).append(label)
    return out


def _yields_in_order(tree) -> list:
    out = []

    def visit(node):
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            out.append(node)
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, (ast.FunctionDef, ast.Lambda, ast.ClassDef)):
                visit(child)

    visit(tree)
    return out


def pinned_text(text: str, label: str) -> str:
    """The statement ``text`` (as a manifest records it: ``ast.unparse``, with `` |n``
    for its n-th yield) with that yield's label pinned to ``label``."""
    statement, sep, nth = text.rpartition(" |")
    if not (sep and nth.isdigit()):
        statement, nth = text, "1"
    try:
        tree = ast.parse(statement)
        found = _yields_in_order(tree)
        node = found[int(nth) - 1]
    except (SyntaxError, IndexError, ValueError):
        return f"yield autosave.label({label!r}, <the value it yields>)"
    args: list[ast.expr] = [ast.Constant(label)]
    if node.value is not None:
        args.append(node.value)
    node.value = ast.Call(func=ast.Attribute(value=ast.Name("autosave", ast.Load()),
                                             attr="label", ctx=ast.Load()),
                          args=args, keywords=[])
    return ast.unparse(tree)


def compare_twins(checker, function: str, old: CoroutineEntry,
                  new: CoroutineEntry) -> dict[str, str]:
    """Report twins whose number changed unpinned; returns {baseline label of such a
    twin: the fix}, so a label of theirs reported gone carries the same fix (which
    twin went cannot be told)."""
    ambiguous: dict[str, str] = {}
    pinned_now = {label for label, info in new.labels.items() if info.pinned}
    now = twin_groups(new)
    for key, labels in twin_groups(old).items():
        before = [label for label in labels if label not in pinned_now]
        after = [label for label in now.get(key, ()) if label not in pinned_now]
        if not before or not after or len(before) == len(after) \
                or max(len(before), len(after)) < 2:
            continue
        text = key[1]
        statements = ", ".join(f"`{pinned_text(text, label)}`" for label in before)
        fix = (f"pin the labels saves may be parked at: write the identical `{text}` the "
               f"baseline had, in their order, as {statements} (a yield added among them "
               f"needs no label; the label of one removed stays unused: reserve it with "
               f"@autosave.coroutine(reserved=(...))); or keep {len(before)} identical "
               f"`{text}` and yield a value of its own for a new pause")
        checker.add(
            "COROUTINE_TWINS_CHANGED", function, before[0], new.where,
            f"coroutine {function} has {len(after)} identical `{text}` in the same place "
            f"where the baseline had {len(before)}, not pinned; identical yields are told "
            f"apart by their order only, so a save parked at one of them may resume at "
            f"another, a step early or late", fix)
        ambiguous.update(dict.fromkeys(before, fix))
    return ambiguous


def compare_reserved(checker, function: str, old: CoroutineEntry, new: CoroutineEntry):
    """A label the baseline reserved is never a resume point again, and stays reserved."""
    for label in old.reserved:
        if label in new.labels:
            info = new.labels[label]
            checker.add(
                "RESERVED_NAME_REUSED", function, label, (new.file, info.source_line),
                f"coroutine {function} has the resume point {label!r} (`{info.text}`), a "
                f"label the baseline reserved: a save parked at the removed point it "
                f"named would resume here",
                f"keep {label!r} in reserved= of @autosave.coroutine, so this yield takes "
                f"another label (a pinned one: choose another name)")
        elif label not in new.reserved:
            checker.add(
                "RESERVED_NAME_RELEASED", function, label, new.where,
                f"coroutine {function} no longer reserves the label {label!r}; a later "
                f"yield could take it, and saves parked at the point it named would "
                f"resume there",
                f"keep @autosave.coroutine(reserved=({label!r}, ...)) while saves parked "
                f"there may exist")
