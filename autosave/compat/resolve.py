"""The gate's verdicts, taken from the loader itself.

For each class and coroutine of a baseline, the records a save of that release holds
are handed to the loader's own decision functions under the code imported now:
``loading.plans.plan_for`` (class by stable name or alias, version and upgrade chain,
fields mapped by name and old name, defaults for what is missing), ``EnumPlan.build``
(members by name), the global resolution of a coroutine's function and
``coroutines.adapter.resume_state`` / ``missing_local`` (labels, the locals a resume
point needs). Whatever the loader refuses is a refusal here, with the loader's own
message; whatever it accepts is accepted. So ``check`` and the load agree by
construction on everything the load decides; what the load cannot see (a value of
the wrong type put into a field, a hook that forgets a conversion) is left to the
manifest rules and to ``verify``.
"""

import attrs

from ..model.adapters import ADAPTERS_BY_NAME
from ..model.adapters.callables import GLOBAL
from ..coroutines.adapter import coroutine_spec, missing_local, resume_state
from ..errors import IncompatibleSaveError, LoadError
from ..format.wire import STATE_FIELDS
from ..loading.plans import EnumPlan, plan_for, release_plans
from .model import ClassEntry, CoroutineEntry

# Whatever stops the loader is a refusal: its own errors, and anything else a class's
# code raises while the loader inspects it (the gate fails closed, never crashes).
REFUSALS = (LoadError, Exception)


@attrs.frozen
class Refusal:
    name: str               # class or function, as the baseline names it
    member: str | None      # enum member, label, or "label:local"
    message: str            # the loader's own words


def saved_fields(entry: ClassEntry) -> list[str]:
    """The field names a baseline release's records of the class carry."""
    if entry.strategy == "state":
        return list(STATE_FIELDS)
    if entry.strategy != "instance":
        return []
    return [f.name for f in entry.fields if not f.transient]


def class_refusals(name: str, entry: ClassEntry) -> list[Refusal]:
    """What the loader refuses of a baseline record of class ``name`` (empty: none)."""
    if entry.strategy not in ("instance", "state", "enum"):
        # saved through __reduce__: the record names the class as a global
        try:
            GLOBAL.build([0, name])
        except REFUSALS as e:
            return [Refusal(name, None, str(e))]
        return []
    try:
        plan = plan_for(0, [name, entry.version, saved_fields(entry)])
    except REFUSALS as e:
        return [Refusal(name, None, str(e))]
    out = []
    try:
        if isinstance(plan, EnumPlan):
            for member in entry.members or ():
                try:
                    plan.build([0, member])
                except REFUSALS as e:
                    out.append(Refusal(name, member, str(e)))
    finally:
        release_plans([plan])
    return out


def asset_refusals(asset_ids) -> list[Refusal]:
    """What the loader refuses of a save's asset references (by id)."""
    adapter = ADAPTERS_BY_NAME["autosave.asset"]
    out = []
    for asset_id in asset_ids:
        try:
            adapter.build([0, asset_id])
        except REFUSALS as e:
            out.append(Refusal(asset_id, None, str(e)))
    return out


def resolve_coroutine(function: str):
    """The CoroutineSpec a save naming ``function`` resumes with, or a LoadError."""
    return coroutine_spec(GLOBAL.build([0, function]))


def held_at(entry: CoroutineEntry) -> dict[str, set[str] | None]:
    """{label: the locals every save parked there holds (None: not recorded)}
    (``<start>``: the arguments)."""
    out: dict[str, set[str] | None] = {label: None for label in entry.labels}
    if entry.detailed:              # format 1 did not record the locals
        out["<start>"] = set(entry.params or ())
        for label, info in entry.labels.items():
            out[label] = {v.name for v in info.live or () if v.held}
    return out


def coroutine_refusals(function: str, entry: CoroutineEntry) -> list[Refusal]:
    try:
        spec = resolve_coroutine(function)
    except REFUSALS as e:
        return [Refusal(function, None, str(e))]
    out = []
    for label, held in held_at(entry).items():
        try:
            state = resume_state(spec, label)
        except IncompatibleSaveError as e:
            out.append(Refusal(function, label, str(e)))
            continue
        missing = None if held is None else missing_local(spec, state, held)
        if missing is not None:
            out.append(Refusal(function, f"{label}:{missing}",
                               f"coroutine {spec.qualified_name} at label {label!r} needs "
                               f"the local {missing!r}, which the save does not hold"))
    return out
