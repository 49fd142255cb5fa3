/* autosave._speedups: the module, its functions (csrc/columns.c, references.c, fill.c)
 * by the names of autosave/format/kernels.def, which kernels.py reads too. */
#include "speedups.h"

#define KERNEL_O(name, doc) {#name, autosave_##name, METH_O, doc},
#define KERNEL_FASTCALL(name, doc) \
    {#name, (PyCFunction)(void (*)(void))autosave_##name, METH_FASTCALL, doc},
static PyMethodDef methods[] = {
#include "../autosave/format/kernels.def"
    {NULL, NULL, 0, NULL},
};
#undef KERNEL_O
#undef KERNEL_FASTCALL

/* What the module was built from (setup.py): the import refuses a build whose
 * sources changed since (autosave/format/kernels.py). */
#ifndef AUTOSAVE_SOURCES
#define AUTOSAVE_SOURCES ""
#endif

static int
exec_module(PyObject *module)
{
    if (PyModule_AddStringConstant(module, "SOURCES", AUTOSAVE_SOURCES) < 0)
        return -1;
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
