/* The engine's per-reference loops in C: what each file holds, and the one helper all
 * of them share. docs/speedups.md is the contract; autosave/format/kernels.py the same loops in
 * Python, which picks these once, at import, when the extension was built.
 *
 * Safety, everywhere: every sequence argument is first copied to a tuple (a no-op for a
 * tuple), so nothing a hash or comparison might run can resize what is being walked;
 * borrowed references are taken before any call that could run Python code and held
 * only until the next such call. Indices read from a save are bounds-checked as
 * Py_ssize_t before any item is read.
 */
#ifndef AUTOSAVE_SPEEDUPS_H
#define AUTOSAVE_SPEEDUPS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* A new tuple of seq's items (seq itself when it is a tuple). */
static inline PyObject *
as_tuple(PyObject *seq)
{
    if (PyTuple_CheckExact(seq)) {
        Py_INCREF(seq);
        return seq;
    }
    return PySequence_Tuple(seq);
}

/* Whether obj's type is one written inline: exact None, bool, int, float, str, bytes
 * (format.INLINE_TYPES). No Python code runs. */
static inline int
is_inline(PyObject *obj)
{
    PyTypeObject *t = Py_TYPE(obj);
    return t == &PyUnicode_Type || t == &PyLong_Type || t == &PyFloat_Type
        || obj == Py_None || t == &PyBool_Type || t == &PyBytes_Type;
}

/* memo.c: a save's memo, keyed by address (id() to Python) */
typedef struct {
    void *key;                   /* the object's address; NULL: an empty slot */
    PyObject *value;             /* its cell (a strong reference) */
} MemoEntry;

typedef struct {
    PyObject_HEAD
    MemoEntry *table;            /* NULL when empty: made by the first set */
    size_t mask;                 /* slots - 1, slots a power of 2 */
    Py_ssize_t used;
} MemoObject;

extern PyType_Spec memo_spec;
int is_memo(PyObject *obj);
/* A memo as a plain struct, for C's own use (never handed to Python). */
void memo_init(MemoObject *memo);
void memo_free(MemoObject *memo);
PyObject *memo_get(MemoObject *memo, void *key);          /* borrowed, or NULL */
int memo_set(MemoObject *memo, void *key, PyObject *value);

/* The kernels (columns.c, references.c, fill.c), declared from the one list of them. */
#define KERNEL_O(name, doc) PyObject *autosave_##name(PyObject *module, PyObject *arg);
#define KERNEL_FASTCALL(name, doc) \
    PyObject *autosave_##name(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
#include "../autosave/format/kernels.def"
#undef KERNEL_O
#undef KERNEL_FASTCALL

#endif
