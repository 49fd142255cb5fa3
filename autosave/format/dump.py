"""A save shown as data: ``autosave dump``'s JSON and ``autosave inspect``'s sizes by
class. Both read the records ``expand.records_of`` gives, never the loader."""

from typing import Any

from .expand import records_of
from .forms import target
from .wire import ABSENT, pack, type_entry


def to_jsonable(data: bytes) -> Any:
    """A save as plain JSON-ready data, for `autosave dump`: references shown as
    ``{"ref": absolute record index}``, bytes as hex, unset slots as ``{"unset": true}``.
    Any decodable file gives a result: what does not follow docs/format.md is shown as
    ``{"malformed": what it is}``, never followed or formatted."""
    types, records, root = records_of(data)
    entries = [_type_entry(i, e) for i, e in enumerate(types)]
    version = data[4]                 # decode checked it

    def value(v, here):
        if type(v) is list:
            if len(v) == 1 and type(v[0]) is int:
                return {"ref": target(v[0], here)}
            return {"malformed": f"an array of {len(v)} items where a value belongs"}
        if type(v) is bytes:
            return {"bytes": v.hex()}
        if type(v) is float and (v != v or v in (float("inf"), float("-inf"))):
            return {"float": repr(v)}
        if v is ABSENT:
            return {"unset": True}
        return v

    out_records = []
    for i, rec in enumerate(records):
        entry = entries[rec[0]]
        payload = [value(v, i) for v in rec[1:]]
        out = {"id": i, "type": entry["name"]}
        fields = entry["fields"]
        if fields:
            out["fields"] = dict(zip(fields, payload))
            rest = payload[len(fields):]
            if rest:
                out["items"] = rest
        else:
            out["args"] = payload
        out_records.append(out)
    return {
        "format": version,
        "types": entries,
        "root": value(root, len(records)),
        "records": out_records,
    }


def _type_entry(index, entry):
    """A type-table entry as a dict, for `autosave dump`."""
    name, version, fields = type_entry(index, entry)
    return {"name": name, "version": version, "fields": fields}


def sizes_by_class(data: bytes) -> dict[str, tuple[int, int]]:
    """{type name: (records, encoded bytes)} of a save, for `autosave inspect`."""
    types, records, _ = records_of(data)
    names = [_type_entry(i, e)["name"] for i, e in enumerate(types)]
    out: dict[str, tuple[int, int]] = {}
    for rec in records:
        name = names[rec[0]]
        count, size = out.get(name, (0, 0))
        out[name] = (count + 1, size + len(pack(rec)))
    return out
