"""Plain-class attributes as the saves hold them.

A plain class declares no fields; ``autosave.compat.plain`` reads the attributes its
``__init__`` and methods assign. An attribute set only from outside the class
(``world.stats.best = 0`` in the game's code) is invisible there, yet every save made
where that line ran holds it. ``attributes_seen`` reads a corpus of saves by structure
(``format.expand.records_of`` under each file's budget, as ``autosave diff`` does: no
object is built, nothing imported or called) and counts, per class, how many records
hold each attribute. ``with_corpus`` adds what it finds to a snapshot's plain classes as
fields of origin ``corpus`` (held by every record of the class in the corpus) or
``corpus-some`` (by some only), so `check` judges them like the others: an attribute
moved from outside into ``__init__`` is held by old saves (compatible); one that only
some saves hold still needs a class-level default.
"""

from collections import Counter

import attrs

from ..checks.limits import OverBudget, file_budget
from ..errors import CorpusError, FormatError
from ..format.expand import records_of
from ..format.wire import MAGIC
from .model import ClassEntry, FieldEntry, Snapshot
from .verify import corpus_files

ALL, SOME = "corpus", "corpus-some"


@attrs.frozen
class Seen:
    records: int                     # records of the class in the corpus
    attributes: dict                 # attribute -> records holding it


def _count(data: bytes, records: Counter, attributes: dict) -> None:
    with file_budget(len(data)):
        types, recs, _ = records_of(data)
    per_type = Counter(r[0] for r in recs if type(r) is list and r and type(r[0]) is int)
    for t, n in per_type.items():
        if not 0 <= t < len(types):
            continue
        entry = types[t]
        if type(entry) is not list or len(entry) != 3 or type(entry[0]) is not str \
                or type(entry[2]) is not list:
            continue
        name = entry[0]
        records[name] += n
        held = attributes.setdefault(name, Counter())
        for field in entry[2]:
            if type(field) is str:
                held[field] += n


def attributes_seen(paths) -> dict[str, Seen]:
    """{stable class name: Seen} over every save file under ``paths`` (checkpoint logs
    and other files are skipped). A file that does not decode is a CorpusError."""
    records: Counter = Counter()
    attributes: dict = {}
    read = 0
    for path in corpus_files(paths):
        with open(path, "rb") as f:
            data = f.read()
        if not data.startswith(MAGIC):
            continue
        try:
            _count(data, records, attributes)
        except (FormatError, OverBudget) as e:
            raise CorpusError(f"{path}: {e}") from None
        read += 1
    if not read:
        raise CorpusError(f"{', '.join(map(str, paths))}: the corpus holds no autosave save")
    return {name: Seen(n, dict(attributes.get(name, {}))) for name, n in records.items()}


def is_plain(entry: ClassEntry) -> bool:
    """A class saved field by field that declares no field: its attributes are what
    its code (and, with a corpus, its saves) show."""
    return entry.strategy == "instance" and entry.layout == "dict" and \
        not any(f.declared for f in entry.fields)


def with_corpus(snapshot: Snapshot, seen: dict[str, Seen]) -> Snapshot:
    """``snapshot`` with the attributes the corpus shows added to its plain classes."""
    classes = dict(snapshot.classes)
    for name, entry in snapshot.classes.items():
        found = seen.get(name)
        if found is None or not is_plain(entry):
            continue
        known = {f.name for f in entry.fields}
        extra = tuple(FieldEntry(name=attr, where="dict", declared=False,
                                 origin=ALL if n == found.records else SOME)
                      for attr, n in sorted(found.attributes.items()) if attr not in known)
        if extra:
            classes[name] = attrs.evolve(entry, fields=entry.fields + extra)
    return attrs.evolve(snapshot, classes=classes)
