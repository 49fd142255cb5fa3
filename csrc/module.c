/* autosave._speedups: the module, its functions (csrc/columns.c, references.c, fill.c)
 * by the names autosave/format/kernels.py imports. */
#include "speedups.h"

static PyMethodDef methods[] = {
    {"kinds", autosave_kinds, METH_O, "The set of the types of a column's items."},
    {"first_kinds", autosave_first_kinds, METH_O, "The distinct types of the items, in order."},
    {"list_columns", autosave_list_columns, METH_O, "[lengths, items] of lists."},
    {"fill_missing", (PyCFunction)(void (*)(void))autosave_fill_missing, METH_FASTCALL,
     "table[key] of each key, reusing the cells an earlier lookup found."},
    {"slot_columns", (PyCFunction)(void (*)(void))autosave_slot_columns, METH_FASTCALL,
     "One list per slot of its value in each object."},
    {"dict_columns", (PyCFunction)(void (*)(void))autosave_dict_columns, METH_FASTCALL,
     "One list per key of the shape of each object's value for it."},
    {"shapes", autosave_shapes, METH_O, "(distinct, which): the key tuples of the objects' __dict__s."},
    {"split", (PyCFunction)(void (*)(void))autosave_split, METH_FASTCALL,
     "(mask, inline, refs) of a column: its items of inline types and the others."},
    {"file_all", (PyCFunction)(void (*)(void))autosave_file_all, METH_FASTCALL,
     "Give each distinct object its reference, an int, in a table; the distinct ones if one repeats."},
    {"look_up", (PyCFunction)(void (*)(void))autosave_look_up, METH_FASTCALL,
     "(cells, missing) of objects in a table keyed by the objects."},
    {"look_up_ids", (PyCFunction)(void (*)(void))autosave_look_up_ids, METH_FASTCALL,
     "(ids, cells, missing) of objects in a memo keyed by id()."},
    {"differences", (PyCFunction)(void (*)(void))autosave_differences, METH_FASTCALL,
     "The index differences that refer to the cells' objects."},
    {"resolve_refs", (PyCFunction)(void (*)(void))autosave_resolve_refs, METH_FASTCALL,
     "(indices, objects) of a column's reference differences."},
    {"merge_mixed", (PyCFunction)(void (*)(void))autosave_merge_mixed, METH_FASTCALL,
     "A mixed column's values in order."},
    {"fill_slots", (PyCFunction)(void (*)(void))autosave_fill_slots, METH_FASTCALL,
     "Set each object's slots from the columns."},
    {"fill_attributes", (PyCFunction)(void (*)(void))autosave_fill_attributes, METH_FASTCALL,
     "Set each object's attributes in its __dict__ from the columns."},
    {"fill_lists", (PyCFunction)(void (*)(void))autosave_fill_lists, METH_FASTCALL,
     "Extend each list by its run of items."},
    {"group_kinds", autosave_group_kinds, METH_O,
     "(kinds, groups): the distinct types in order, and the items of each."},
    {"inline_keyed", autosave_inline_keyed, METH_O,
     "None if every dict is keyed by inline values, else each dict's answer."},
    {"dict_entries", autosave_dict_entries, METH_O, "[lengths, keys, values] of dicts."},
    {"fill_dicts", (PyCFunction)(void (*)(void))autosave_fill_dicts, METH_FASTCALL,
     "Set each dict's run of entries."},
    {"code_strings", (PyCFunction)(void (*)(void))autosave_code_strings, METH_FASTCALL,
     "(strings, codes) of a column of strs, or None past limit distinct ones."},
    {"decode_codes", (PyCFunction)(void (*)(void))autosave_decode_codes, METH_FASTCALL,
     "A coded column's values: strings[code] of each code, checked."},
    {NULL, NULL, 0, NULL},
};

static int
exec_module(PyObject *module)
{
    PyObject *memo_type = PyType_FromModuleAndSpec(module, &memo_spec, NULL);
    if (memo_type == NULL)
        return -1;
    int failed = PyModule_AddObjectRef(module, "Memo", memo_type);
    Py_DECREF(memo_type);
    return failed;
}

static PyModuleDef_Slot slots[] = {
    {Py_mod_exec, exec_module},  /* the Memo type; no other state */
    {0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "autosave._speedups",
    "The engine's per-reference loops in C (autosave/format/kernels.py).", 0, methods, slots,
    NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    return PyModuleDef_Init(&module);
}
