/* Memo: a save's memo, each object met -> its cell, keyed by the object's address.
 *
 * To Python it is a mapping keyed by id(obj), as the dict it replaces was, so the walk,
 * generated code and set ordering use it unchanged; the kernels (references.c) look
 * objects up by their address directly. Keying by address is what pickle's memo does:
 * no int is made per lookup, no int key is compared (which touches it: a second cache
 * miss), and no object's __hash__ or __eq__ ever runs. Like an id()-keyed dict it does
 * not keep its keys alive: the walk keeps every object it met alive until it ends.
 *
 * Open addressing with CPython's dict probe sequence: the first probe is the address's
 * own slot, so objects allocated one after another sit in neighbouring slots. Entries
 * are never removed, one at a time: a save only adds, then clears. */
#include "speedups.h"

#define MEMO_MIN_SIZE 64
#define PERTURB_SHIFT 5

static MemoEntry *
memo_slot(MemoEntry *table, size_t mask, void *key)
{
    size_t hash = (size_t)key >> 4;          /* objects are 16-byte aligned */
    size_t i = hash & mask, perturb = hash;
    for (;;) {
        MemoEntry *entry = &table[i];
        if (entry->key == key || entry->key == NULL)
            return entry;
        perturb >>= PERTURB_SHIFT;
        i = (i * 5 + perturb + 1) & mask;
    }
}

PyObject *
memo_get(MemoObject *memo, void *key)
{
    if (memo->table == NULL)                 /* empty: no table until the first set */
        return NULL;
    return memo_slot(memo->table, memo->mask, key)->value;
}

/* A table of at least min_used * 3 / 2 slots, a power of 2, holding the entries. */
static int
memo_resize(MemoObject *memo, Py_ssize_t min_used)
{
    size_t size = MEMO_MIN_SIZE;
    while (size < (size_t)min_used + (size_t)min_used / 2 + 1) {
        if (size > (size_t)PY_SSIZE_T_MAX / (2 * sizeof(MemoEntry))) {
            PyErr_NoMemory();
            return -1;
        }
        size <<= 1;
    }
    MemoEntry *table = PyMem_Calloc(size, sizeof(MemoEntry));
    if (table == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    MemoEntry *old = memo->table;
    for (size_t i = 0; old != NULL && i <= memo->mask; i++)
        if (old[i].key != NULL)
            *memo_slot(table, size - 1, old[i].key) = old[i];
    PyMem_Free(old);
    memo->table = table;
    memo->mask = size - 1;
    return 0;
}

int
memo_set(MemoObject *memo, void *key, PyObject *value)
{
    if (memo->table == NULL && memo_resize(memo, 0) < 0)
        return -1;
    MemoEntry *entry = memo_slot(memo->table, memo->mask, key);
    if (entry->key == key) {                 /* the old value goes last: its __del__ */
        PyObject *old = entry->value;        /* could run Python, which may use us */
        entry->value = Py_NewRef(value);
        Py_DECREF(old);
        return 0;
    }
    /* Grown before the entry is filled, so at least one slot is always empty: every
     * probe sequence ends. */
    if ((size_t)(memo->used + 1) * 3 >= (memo->mask + 1) * 2) {
        Py_ssize_t used = memo->used;
        if (memo_resize(memo, used > 50000 ? used * 2 : used * 4) < 0)
            return -1;
        entry = memo_slot(memo->table, memo->mask, key);
    }
    entry->key = key;
    entry->value = Py_NewRef(value);
    memo->used++;
    return 0;
}

void
memo_init(MemoObject *memo)
{
    memo->table = NULL;
    memo->mask = 0;
    memo->used = 0;
}

/* Drop the entries and the table. The table is taken out first, so a value's __del__
 * sees an empty, working memo: with no table, get finds nothing and set makes one. */
void
memo_free(MemoObject *memo)
{
    MemoEntry *old = memo->table;
    size_t size = memo->mask + 1;
    memo->table = NULL;
    memo->mask = 0;
    memo->used = 0;
    for (size_t i = 0; old != NULL && i < size; i++)
        Py_XDECREF(old[i].value);
    PyMem_Free(old);
}

/* The address an id() names: what Python code keys the memo by. NULL with no error
 * set for an int no id() gives (below 1, or past the largest address), NULL with
 * TypeError for anything else. */
static void *
key_of(PyObject *id)
{
    if (!PyLong_CheckExact(id)) {
        PyErr_Format(PyExc_TypeError, "a Memo is keyed by id(), not %.100s",
                     Py_TYPE(id)->tp_name);
        return NULL;
    }
    int overflow;
    long long low = PyLong_AsLongLongAndOverflow(id, &overflow);
    if (overflow == 0 && low < 1)
        return NULL;
    if (overflow < 0)
        return NULL;
    if (overflow > 0) {                      /* past a long long: an unsigned address? */
        unsigned long long high = PyLong_AsUnsignedLongLong(id);
        if (high == (unsigned long long)-1 && PyErr_Occurred()) {
            PyErr_Clear();
            return NULL;
        }
        return (high > (unsigned long long)UINTPTR_MAX) ? NULL : (void *)(uintptr_t)high;
    }
    return ((unsigned long long)low > (unsigned long long)UINTPTR_MAX)
        ? NULL : (void *)(uintptr_t)low;
}

static PyObject *
Memo_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    if (PyTuple_GET_SIZE(args) || (kwargs && PyDict_GET_SIZE(kwargs))) {
        PyErr_SetString(PyExc_TypeError, "Memo() takes no arguments");
        return NULL;
    }
    return type->tp_alloc(type, 0);          /* zeroed: no table yet, which is empty */
}

static int
Memo_traverse(MemoObject *memo, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(memo));
    for (size_t i = 0; memo->table != NULL && i <= memo->mask; i++)
        Py_VISIT(memo->table[i].value);
    return 0;
}

static int
Memo_tp_clear(MemoObject *memo)
{
    memo_free(memo);
    return 0;
}

static void
Memo_dealloc(MemoObject *memo)
{
    PyTypeObject *type = Py_TYPE(memo);
    PyObject_GC_UnTrack(memo);
    Memo_tp_clear(memo);
    type->tp_free(memo);
    Py_DECREF(type);
}

static Py_ssize_t
Memo_length(MemoObject *memo)
{
    return memo->used;
}

static PyObject *
Memo_subscript(MemoObject *memo, PyObject *id)
{
    void *key = key_of(id);
    if (key == NULL && PyErr_Occurred())
        return NULL;
    PyObject *value = key == NULL ? NULL : memo_get(memo, key);
    if (value == NULL) {
        PyErr_SetObject(PyExc_KeyError, id);
        return NULL;
    }
    return Py_NewRef(value);
}

static int
Memo_ass_subscript(MemoObject *memo, PyObject *id, PyObject *value)
{
    if (value == NULL) {
        PyErr_SetString(PyExc_TypeError, "a Memo's entries are never removed one by one");
        return -1;
    }
    void *key = key_of(id);
    if (key == NULL) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_ValueError, "%R is no object's id()", id);
        return -1;
    }
    return memo_set(memo, key, value);
}

static PyObject *
Memo_get(MemoObject *memo, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 1 || nargs > 2) {
        PyErr_SetString(PyExc_TypeError, "get(id, default=None)");
        return NULL;
    }
    void *key = key_of(args[0]);
    if (key == NULL && PyErr_Occurred())
        return NULL;
    PyObject *value = key == NULL ? NULL : memo_get(memo, key);
    if (value == NULL)
        value = nargs == 2 ? args[1] : Py_None;
    return Py_NewRef(value);
}

static PyObject *
Memo_items(MemoObject *memo, PyObject *unused)
{
    PyObject *out = PyList_New(0);
    if (out == NULL)
        return NULL;
    /* Nothing below runs Python code: the table cannot change under the loop. */
    for (size_t i = 0; memo->table != NULL && i <= memo->mask; i++) {
        MemoEntry *entry = &memo->table[i];
        if (entry->key == NULL)
            continue;
        PyObject *pair = Py_BuildValue("(NO)", PyLong_FromVoidPtr(entry->key), entry->value);
        if (pair == NULL || PyList_Append(out, pair) < 0) {
            Py_XDECREF(pair);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(pair);
    }
    return out;
}

static PyObject *
Memo_update(MemoObject *memo, PyObject *pairs)
{
    PyObject *items = PySequence_List(pairs);     /* whatever it runs, it runs first */
    if (items == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items); i++) {
        PyObject *pair = PyList_GET_ITEM(items, i);
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
            PyErr_SetString(PyExc_TypeError, "update takes (id, value) pairs");
            Py_DECREF(items);
            return NULL;
        }
        if (Memo_ass_subscript(memo, PyTuple_GET_ITEM(pair, 0), PyTuple_GET_ITEM(pair, 1)) < 0) {
            Py_DECREF(items);
            return NULL;
        }
    }
    Py_DECREF(items);
    Py_RETURN_NONE;
}

static PyObject *
Memo_clear(MemoObject *memo, PyObject *unused)
{
    memo_free(memo);
    Py_RETURN_NONE;
}

static PyMethodDef Memo_methods[] = {
    {"get", (PyCFunction)(void (*)(void))Memo_get, METH_FASTCALL,
     "get(id, default=None): the cell of the object whose id() this is."},
    {"items", (PyCFunction)Memo_items, METH_NOARGS, "[(id, cell)] of every entry."},
    {"update", (PyCFunction)Memo_update, METH_O, "Set the entries of (id, cell) pairs."},
    {"clear", (PyCFunction)Memo_clear, METH_NOARGS, "Remove every entry."},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot Memo_slots[] = {
    {Py_tp_doc, "A save's memo: id(obj) -> obj's cell, keyed by the object's address."},
    {Py_tp_new, Memo_new},
    {Py_tp_dealloc, Memo_dealloc},
    {Py_tp_traverse, Memo_traverse},
    {Py_tp_clear, Memo_tp_clear},
    {Py_tp_methods, Memo_methods},
    {Py_mp_length, Memo_length},
    {Py_mp_subscript, Memo_subscript},
    {Py_mp_ass_subscript, Memo_ass_subscript},
    {0, NULL},
};

/* Whether obj is a Memo: only Memo's type has its dealloc (no global, no state). */
int
is_memo(PyObject *obj)
{
    return Py_TYPE(obj)->tp_dealloc == (destructor)Memo_dealloc;
}

PyType_Spec memo_spec = {
    .name = "autosave._speedups.Memo",
    .basicsize = sizeof(MemoObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .slots = Memo_slots,
};
