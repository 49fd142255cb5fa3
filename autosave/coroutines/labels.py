"""Stable labels for the resume points of a coroutine.

A save names the point a coroutine is parked at by a *label*, never by a position, so
a save keeps loading after the game is patched. A label is derived from the resume
point itself:

* its *context*: the kinds of the statements enclosing it, from the function body
  inwards (``while``, ``for``, ``if``, ``else``, ``try``, ``except``, ``finally``,
  ``with``), without their conditions or iterables;
* its *text*: the statement holding the ``yield``, normalised (``ast.unparse``), so
  whitespace, comments and line numbers do not count.

The label is the text (shortened to 32 characters) followed by ``@`` and a 6-digit hash
of context and full text, e.g. ``x = yield wait(3)@4f1a2c``; a second point with the
same context and text gets ``#2``, a third ``#3``, in source order. Adding statements
or yields elsewhere does not change a label; editing the yield's own statement or
wrapping it in a new block does.

When the labels of a previous build are known (the manifest ``autosave-codegen``
writes, or ``labels`` given to ``register_precompiled``/``use_labels``), ``assign``
keeps them: old and new points are aligned as sequences of (context, text), the way
Ren'Py's ``merge_names`` aligns statements and Roslyn's edit-and-continue maps states;
an aligned point keeps its old label even when its context changed, a point whose text
changed a little inside a changed stretch keeps the label of the most similar old point
there, and only points with no counterpart get a new label.

A *pinned* label is one the developer wrote: ``yield autosave.label("door-2", "wait")``
names that yield ``door-2`` whatever else changes (``label`` returns its value, so the
generator yields ``"wait"``; the transform drops the call). Pinned labels are taken
first; the other points are labelled as above among themselves, never taking a pinned
or a *reserved* label (``@autosave.coroutine(reserved=(...))``: labels of removed
points that no later yield may take). This is how identical yields stay apart: their
order is all that tells unpinned twins apart, so inserting or removing one shifts the
others, and the source cannot say which one moved.
"""

import difflib
from typing import Any

import xxhash

START = "<start>"     # the label of a coroutine not started yet
DONE = "<done>"       # the label of a finished coroutine
TEXT_CHARS = 32
SIMILAR = 0.6         # least similarity for a changed point to keep an old label


def label(name: str, value: Any = None) -> Any:
    """Name the yield it is the operand of: ``x = yield autosave.label("door-2", v)``
    yields ``v`` and parks at the label ``"door-2"``, kept through any edit while the
    call stays on that yield. It returns ``value``, so the function also runs
    undecorated; the coroutine transform removes the call."""
    return value


def check_name(name) -> str | None:
    """Why ``name`` cannot be a pinned or reserved label (None: it can)."""
    if not isinstance(name, str) or not name:
        return "a label is a non-empty string"
    if name.startswith("<"):
        return f"labels starting with '<' are autosave's own ({START}, {DONE})"
    return None


class PointInfo:
    """What a label is derived from: ``context`` (tuple of kinds), ``text``, the line
    relative to the ``def`` (informative only), and ``pinned``: the label the developer
    wrote on the yield (``autosave.label``), or None."""

    __slots__ = ("context", "text", "line", "pinned")

    def __init__(self, context, text, line=0, pinned=None):
        self.context, self.text, self.line = tuple(context), text, line
        self.pinned = pinned

    @property
    def key(self):
        return self.context, self.text

    def __repr__(self):
        return f"PointInfo({'/'.join(self.context)!r}, {self.text!r}, line={self.line})"


def base_label(context, text):
    digest = xxhash.xxh32_hexdigest(("/".join(context) + "\x1e" + text).encode("utf-8", "surrogatepass"))[:6]
    short = text if len(text) <= TEXT_CHARS else text[:TEXT_CHARS - 1] + "…"
    return f"{short}@{digest}"


def content_labels(points, avoid=frozenset()):
    """Labels from content alone, with ``#n`` for repeated (context, text), skipping
    the labels in ``avoid`` (pinned and reserved ones)."""
    seen, out = {}, []
    for p in points:
        base = base_label(p.context, p.text)
        n = seen.get(base, 0) + 1
        while (base if n == 1 else f"{base}#{n}") in avoid:
            n += 1
        seen[base] = n
        out.append(base if n == 1 else f"{base}#{n}")
    return out


def _similarity(old, new):
    text = difflib.SequenceMatcher(None, old["text"], new.text).ratio()
    ctx = difflib.SequenceMatcher(None, list(old["context"]), list(new.context)).ratio()
    return 0.7 * text + 0.3 * ctx


def assign(points, previous=None, reserved=()):
    """The label of each point (a list of PointInfo, in source order).

    ``previous``: the function's labels from an earlier build, ``{label: {"context":
    [...], "text": str, "index": int, ...}}`` (see ``manifest``), or None.
    ``reserved``: labels no point may take. Pinned points keep their own label; the
    others are labelled among themselves, around the pinned and reserved labels.
    """
    fixed = {p.pinned for p in points if p.pinned is not None} | set(reserved)
    free = [j for j, p in enumerate(points) if p.pinned is None]
    kept = {k: v for k, v in (previous or {}).items() if k not in fixed}
    chosen = _assign([points[j] for j in free], kept, fixed)
    out = [p.pinned for p in points]
    for j, label in zip(free, chosen):
        out[j] = label
    return out


def _assign(points, previous, avoid):
    fresh = content_labels(points, avoid)
    if not previous:
        return fresh
    old = sorted(previous.items(), key=lambda kv: (kv[1].get("index", 0), kv[0]))
    old_keys = [(tuple(info.get("context", ())), info.get("text", "")) for _, info in old]
    new_keys = [p.key for p in points]
    labels = [None] * len(points)
    matcher = difflib.SequenceMatcher(None, old_keys, new_keys, autojunk=False)
    used_old = set()
    for tag, i1, i2, j1, _ in matcher.get_opcodes():
        if tag == "equal":
            for k in range(i2 - i1):
                labels[j1 + k] = old[i1 + k][0]
                used_old.add(i1 + k)
    # The rest: most similar pairs first (then nearest in order), above a threshold.
    free_old = [i for i in range(len(old)) if i not in used_old]
    free_new = [j for j in range(len(points)) if labels[j] is None]
    pairs = sorted((-_similarity(old[i][1], points[j]), abs(i - j), j, i)
                   for i in free_old for j in free_new)
    taken_new = set()
    for score, _, j, i in pairs:
        if -score < SIMILAR or i in used_old or j in taken_new:
            continue
        used_old.add(i)
        taken_new.add(j)
        labels[j] = old[i][0]
    # Points with no counterpart: their content label, unless an old label holds it.
    taken = {label for label in labels if label is not None} | set(previous) | set(avoid)
    for j, label in enumerate(labels):
        if label is None:
            candidate, n = fresh[j], 1
            base, sep, number = candidate.rpartition("#")
            if not (sep and number.isdigit()):
                base = candidate
            while candidate in taken:
                n += 1
                candidate = f"{base}#{n}"
            labels[j] = candidate
            taken.add(candidate)
    return labels


def match(old_labels, new_points, reserved=()):
    """``assign`` with the previous labels first: the labels ``new_points`` get when
    ``old_labels`` (a function's manifest entry) are to be kept."""
    return assign(new_points, old_labels, reserved)


def manifest(points, labels):
    """The JSON-able record of a function's labels, for the next build's ``assign``
    (``"pinned": true`` marks a label written on the yield)."""
    out = {}
    for i, (p, label) in enumerate(zip(points, labels)):
        entry = {"context": list(p.context), "text": p.text, "line": p.line, "index": i}
        if p.pinned is not None:
            entry["pinned"] = True
        out[label] = entry
    return out
