"""Declared types as the manifest spells them: normalised across renamed classes, and
whether one accepts every value of another."""

import re


_TOKEN = re.compile(r"[A-Za-z_][\w.]*")


def normal_type(text, classes, renamed=None):
    """A declared type's text with each class path replaced by its stable name (and a
    baseline's stable name by the current one it matched, ``renamed``), so a class
    moved or renamed under an alias is the same type."""
    if text is None:
        return None
    renamed = renamed or {}
    paths = {entry.path: renamed.get(name, name) for name, entry in classes.items()}
    return _TOKEN.sub(lambda m: paths.get(m.group(0), m.group(0)), text)


def union_members(text):
    """The top-level alternatives of a type text: 'list[int | None] | str' -> 2."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        elif ch == "|" and depth == 0:
            out.append(text[start:i].strip())
            start = i + 1
    out.append(text[start:].strip())
    return out


ANYTHING = {"object", "typing.Any"}
# A value of the key type is accepted where a field declares one of the values
# (PEP 484's numeric tower, and bool being an int).
ACCEPTED_BY = {"int": {"float", "complex"}, "float": {"complex"}, "bool": {"int", "float",
                                                                             "complex"}}


def widened(old, new):
    """Whether every value the old declared type allows, the new one allows too."""
    new_members = set(union_members(new))
    if new_members & ANYTHING:
        return True
    return all(m in new_members or ACCEPTED_BY.get(m, set()) & new_members
               for m in union_members(old))
