"""`autosave compat verify`: every save of a corpus loads under the current code.

Each save is loaded with ``autosave.loads`` after importing the game's packages, so
exactly the trust rules of a game's own load apply: nothing outside the allowed
namespaces is imported or called. A save that loads is then held to the declared types
of the current classes, read from its records (not from the objects): a field declared
``int`` that an old save fills with a ``str`` loads without complaint but is a broken
save all the same, and the checker calls that change breaking (FIELD_TYPE_CHANGED), so
verify must see it too. The records are checked first (cheap, names the record); then
the objects the load built (``autosave.compat.conform``), after the upgrade hooks ran,
into containers: a hook that forgets a conversion is caught, and so is a plain class's
attribute that ``__init__`` sets and a loaded instance lacks.
"""

import os
import types
import typing

import attrs

from ..model.adapters import ADAPTERS_BY_NAME
from ..errors import CorpusError, CorruptLogError, FormatError, LoadError
from ..files import loads
from ..format.forms import target
from ..format.expand import records_of
from ..format.wire import ABSENT, MAGIC, STATE_FIELDS, decode
from ..log.file import MAGIC as LOG_MAGIC
from ..log.file import LogFile
from ..log.chain import read_checkpoint
from ..log.history import CheckpointLog
from ..model.registry import REGISTRY
from ..model.schema import schema_of
from .conform import problems

OK, INCOMPATIBLE, MISTYPED, CORRUPT, SKIPPED = "ok", "incompatible", "mistyped", "corrupt", "skipped"
BREAKING = (INCOMPATIBLE, MISTYPED)
MAX_MISMATCHES = 5        # per file: enough to see the pattern


@attrs.frozen
class FileResult:
    path: str
    status: str
    error: str | None = None       # the error class, e.g. "IncompatibleSaveError"
    message: str | None = None


def corpus_files(paths):
    """Every regular file under the given files and directories, sorted, each once."""
    out = []
    for path in paths:
        if os.path.isdir(path):
            for directory, dirs, names in os.walk(path):
                dirs.sort()
                out += [os.path.join(directory, n) for n in sorted(names)]
        elif os.path.isfile(path):
            out.append(path)
        else:
            raise CorpusError(f"{path}: no such save file or directory")
    return list(dict.fromkeys(out))


def verify_file(path, content=None):
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        return FileResult(path, CORRUPT, type(e).__name__, e.strerror or str(e))
    if data.startswith(LOG_MAGIC):
        return verify_log(path, content)
    if not data.startswith(MAGIC):
        return FileResult(path, SKIPPED, None, "not an autosave save or checkpoint log")
    return verify_save(path, data)


def verify_save(path, data, where=""):
    try:
        decode(data)
    except FormatError as e:
        return FileResult(path, CORRUPT, type(e).__name__, where + str(e))
    try:
        root = loads(data)
    except LoadError as e:
        # The bytes are well-formed (they decoded): a record that no longer fits its class
        # (a FormatError raised while building) is this build's doing, not the file's.
        return FileResult(path, INCOMPATIBLE, type(e).__name__, where + str(e))
    except Exception as e:       # a game's own hook failing is this build's problem too
        return FileResult(path, INCOMPATIBLE, type(e).__name__, where + str(e))
    mismatches = type_mismatches(data) or problems(root, MAX_MISMATCHES)
    if mismatches:
        return FileResult(path, MISTYPED, "TypeMismatch", where + "; ".join(mismatches))
    return FileResult(path, OK)


def verify_log(path, content=None):
    """A checkpoint log: its globals and every checkpoint of every node are saves; with
    ``content`` (node -> step keys), every bookmark also restores under it."""
    try:
        file = LogFile(path, writable=False)
    except LoadError as e:
        return FileResult(path, CORRUPT, type(e).__name__, str(e))
    with file:
        try:
            # Loads the globals; with content, upgrades the history in memory only.
            log = CheckpointLog(file, checkpoint_every=1, content=content)
        except FormatError as e:
            return FileResult(path, CORRUPT, type(e).__name__, str(e))
        except LoadError as e:
            status = CORRUPT if isinstance(e, CorruptLogError) else INCOMPATIBLE
            return FileResult(path, status, type(e).__name__, f"the log's globals: {e}")
        checked = 0
        for record in log.records.values():
            for step, offset in sorted(record.checkpoints.items()):
                where = f"the checkpoint of {record.name!r} at step {step}: "
                try:
                    data = read_checkpoint(file, offset)      # whole or delta
                except LoadError as e:
                    return FileResult(path, CORRUPT, type(e).__name__, where + str(e))
                result = verify_save(path, data, where)
                if result.status != OK:
                    return result
                checked += 1
        message = f"checkpoint log: {checked} checkpoints load"
        if content is not None:
            lost = log.upgrade_report.lost
            if lost:
                return FileResult(path, INCOMPATIBLE, "LostPositionError",
                                  f"the content removes the nodes of bookmarks "
                                  f"{', '.join(map(repr, lost))}")
            for slot, mark in log.bookmarks.items():
                try:        # the checkpoint it restores from under the content
                    log.restore(mark.position, replay=lambda state, steps: state)
                except LoadError as e:
                    return FileResult(path, CORRUPT, type(e).__name__,
                                      f"bookmark {slot!r}: {e}")
            message += f", {len(log.bookmarks)} bookmarks restore under the content"
    return FileResult(path, OK, None, message)


def verify(paths, content=None):
    """One FileResult per file of the corpus; CorpusError when it holds no save. With
    ``content``, the bookmarks of every log must restore under it."""
    results = [verify_file(p, content) for p in corpus_files(paths)]
    if not any(r.status != SKIPPED for r in results):
        raise CorpusError(f"{', '.join(map(str, paths))}: the corpus holds no autosave save")
    return results


# -- declared types, checked on the records ----------------------------------------------

def accepts(hint, value_type):
    """Whether a field declared ``hint`` accepts a value of ``value_type``; unknown
    (type variables, strings, Literal...) accepts anything. Mirrors check.widened."""
    if hint is typing.Any or hint is object:
        return True
    if hint is None or hint is type(None):
        return value_type is type(None)
    origin = typing.get_origin(hint)
    if origin is typing.Union or isinstance(hint, types.UnionType):
        return any(accepts(a, value_type) for a in typing.get_args(hint))
    if origin is not None:
        hint = origin
    if not isinstance(hint, type):
        return True
    if issubclass(value_type, hint):
        return True
    if hint is float:
        return value_type in (int, bool)
    if hint is complex:
        return value_type in (int, bool, float)
    return False


def type_name_text(hint):
    return getattr(hint, "__qualname__", None) if isinstance(hint, type) else str(hint)


class TypeReader:
    def __init__(self, types_, records):
        self.types, self.records = types_, records
        self.cache = {}

    def python_type(self, name, record):
        """The Python type a record of stable name ``name`` builds, or None if unknown."""
        if name == "autosave.asset":
            obj = REGISTRY.asset_by_id.get(record[1]) if len(record) > 1 else None
            return None if obj is None else type(obj)
        if name in self.cache:
            return self.cache[name]
        found = None
        adapter = ADAPTERS_BY_NAME.get(name)
        if adapter is not None:
            found = adapter.types[0] if len(adapter.types) == 1 else None
        else:
            try:
                cls = REGISTRY.resolve(name, "class")
                found = cls if isinstance(cls, type) else None
            except LoadError:
                found = None
        self.cache[name] = found
        return found

    def value_type(self, value, here):
        if type(value) is list:
            j = target(value[0], here)
            record = self.records[j]
            return self.python_type(self.types[record[0]][0], record)
        return type(value)

    def checks(self, entry):
        """[(record position, field, hint)] for the records of a type entry."""
        name, version, fields = entry
        if name in ADAPTERS_BY_NAME or fields == list(STATE_FIELDS):
            return []
        cls = self.python_type(name, None)
        if cls is None:
            return []
        schema = schema_of(cls)
        if schema.strategy != "instance" or version < schema.version:
            return []
        try:
            hints = typing.get_type_hints(cls)
        except Exception:          # unresolvable annotations: nothing to hold them to
            return []
        return [(pos, field, hints[field]) for pos, field in enumerate(fields, 1)
                if field in hints and field not in schema.transient]


def type_mismatches(data):
    types_, records, _ = records_of(data)
    reader = TypeReader(types_, records)
    plan = {}
    out = []
    for i, record in enumerate(records):
        t = record[0]
        if t not in plan:
            plan[t] = reader.checks(types_[t])
        for pos, field, hint in plan[t]:
            if pos >= len(record) or record[pos] is ABSENT:
                continue
            vt = reader.value_type(record[pos], i)
            if vt is not None and not accepts(hint, vt):
                out.append(f"{types_[t][0]}.{field} holds a {vt.__qualname__} where "
                           f"{type_name_text(hint)} is declared (record {i})")
                if len(out) >= MAX_MISMATCHES:
                    return out
    return out
