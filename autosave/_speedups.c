/* autosave._speedups: the engine's per-reference loops in C.
 *
 * Each function here does what its namesake in autosave/kernels.py does, to the same
 * result and the same exception class (docs/speedups.md); kernels.py picks these once,
 * at import, when the extension was built and AUTOSAVE_PUREPYTHON is not set.
 * tests/test_kernels.py runs one suite against both.
 *
 * Why C: in Python each of these is several C-level passes (map, compress, a set or a
 * dict), each allocating a list as long as the column; here one pass does it.
 *
 * Safety: every sequence argument is first copied to a tuple (a no-op for a tuple), so
 * nothing a hash or comparison might run can resize what is being walked; borrowed
 * references are taken before any call that could run Python code and are held only
 * until the next such call. Indices read from a save are bounds-checked as Py_ssize_t
 * before any item is read.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* A new tuple of seq's items (seq itself when it is a tuple). */
static PyObject *
as_tuple(PyObject *seq)
{
    if (PyTuple_CheckExact(seq)) {
        Py_INCREF(seq);
        return seq;
    }
    return PySequence_Tuple(seq);
}

/* kinds(column) -> the set of the types of column's items. */
static PyObject *
kinds(PyObject *module, PyObject *column)
{
    PyObject *items = as_tuple(column);
    if (items == NULL)
        return NULL;
    PyObject *out = PySet_New(NULL);
    if (out == NULL)
        goto fail;
    PyTypeObject *last = NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(items);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyTypeObject *t = Py_TYPE(PyTuple_GET_ITEM(items, i));
        if (t == last)                  /* runs of one type are the common case */
            continue;
        last = t;
        if (PySet_Add(out, (PyObject *)t) < 0)
            goto fail;
    }
    Py_DECREF(items);
    return out;
fail:
    Py_DECREF(items);
    Py_XDECREF(out);
    return NULL;
}

/* first_kinds(objs) -> the distinct types of objs' items, in the order first met. */
static PyObject *
first_kinds(PyObject *module, PyObject *objs)
{
    PyObject *items = as_tuple(objs);
    if (items == NULL)
        return NULL;
    PyObject *seen = PySet_New(NULL), *out = PyList_New(0);
    if (seen == NULL || out == NULL)
        goto fail;
    PyTypeObject *last = NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(items);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyTypeObject *t = Py_TYPE(PyTuple_GET_ITEM(items, i));
        if (t == last)
            continue;
        last = t;
        int found = PySet_Contains(seen, (PyObject *)t);
        if (found < 0)
            goto fail;
        if (!found && (PySet_Add(seen, (PyObject *)t) < 0
                       || PyList_Append(out, (PyObject *)t) < 0))
            goto fail;
    }
    Py_DECREF(items);
    Py_DECREF(seen);
    return out;
fail:
    Py_DECREF(items);
    Py_XDECREF(seen);
    Py_XDECREF(out);
    return NULL;
}

/* split(column, inline_types) -> (mask, inline, refs): mask byte 0 for an item whose
 * type is in inline_types, 1 for any other; the items of each kind, in order. */
static PyObject *
split(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyAnySet_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "split(column, inline_types: set)");
        return NULL;
    }
    PyObject *types = args[1], *mask = NULL, *inline_ = NULL, *refs = NULL;
    PyObject *items = as_tuple(args[0]);
    if (items == NULL)
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(items);
    if ((mask = PyBytes_FromStringAndSize(NULL, n)) == NULL
            || (inline_ = PyList_New(0)) == NULL || (refs = PyList_New(0)) == NULL)
        goto fail;
    char *bits = PyBytes_AS_STRING(mask);
    PyTypeObject *last = NULL;
    int last_inline = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyTuple_GET_ITEM(items, i);
        if (Py_TYPE(item) != last) {
            last = Py_TYPE(item);
            if ((last_inline = PySet_Contains(types, (PyObject *)last)) < 0)
                goto fail;
        }
        bits[i] = !last_inline;
        if (PyList_Append(last_inline ? inline_ : refs, item) < 0)
            goto fail;
    }
    Py_DECREF(items);
    return Py_BuildValue("(NNN)", mask, inline_, refs);
fail:
    Py_DECREF(items);
    Py_XDECREF(mask);
    Py_XDECREF(inline_);
    Py_XDECREF(refs);
    return NULL;
}

/* Whether dict a's keys are b's, the same objects in the same order (no Python runs). */
static int
same_keys(PyObject *a, PyObject *b)
{
    if (PyDict_GET_SIZE(a) != PyDict_GET_SIZE(b))
        return 0;
    Py_ssize_t i = 0, j = 0;
    PyObject *ka, *kb, *v;
    while (PyDict_Next(a, &i, &ka, &v)) {
        if (!PyDict_Next(b, &j, &kb, &v) || ka != kb)
            return 0;
    }
    return 1;
}

/* The tuple of dict d's keys, in order, read as dict.keys(d) reads them. */
static PyObject *
keys_tuple(PyObject *d)
{
    Py_ssize_t i = 0, k = 0;
    PyObject *key, *value, *out = PyTuple_New(PyDict_GET_SIZE(d));
    if (out == NULL)
        return NULL;
    while (PyDict_Next(d, &i, &key, &value)) {      /* runs no Python: the size holds */
        Py_INCREF(key);
        PyTuple_SET_ITEM(out, k++, key);
    }
    return out;
}

/* shapes(objs) -> (distinct, which): the distinct tuples of the keys of the objs'
 * __dict__s, in the order first met, and the position in distinct of each obj's
 * (None when there is one). */
static PyObject *
shapes(PyObject *module, PyObject *objs)
{
    PyObject *items = as_tuple(objs);
    if (items == NULL)
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(items);
    PyObject *distinct = PyList_New(0), *index = PyDict_New(), *which = PyList_New(n);
    PyObject *previous = NULL, *previous_at = NULL;    /* the last __dict__, its position */
    if (distinct == NULL || index == NULL || which == NULL)
        goto fail;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *d = PyObject_GetAttrString(PyTuple_GET_ITEM(items, i), "__dict__");
        if (d == NULL)
            goto fail;
        if (!PyDict_Check(d)) {
            PyErr_Format(PyExc_TypeError, "vars() of a %.100s is not a dict",
                         Py_TYPE(PyTuple_GET_ITEM(items, i))->tp_name);
            Py_DECREF(d);
            goto fail;
        }
        if (previous != NULL && same_keys(d, previous)) {   /* the common case */
            Py_INCREF(previous_at);
            PyList_SET_ITEM(which, i, previous_at);
            Py_SETREF(previous, d);
            continue;
        }
        PyObject *shape = keys_tuple(d);
        if (shape == NULL) {
            Py_DECREF(d);
            goto fail;
        }
        PyObject *at = PyDict_GetItemWithError(index, shape);
        if (at != NULL)
            Py_INCREF(at);
        else if (!PyErr_Occurred()) {
            at = PyLong_FromSsize_t(PyList_GET_SIZE(distinct));
            if (at == NULL || PyDict_SetItem(index, shape, at) < 0
                    || PyList_Append(distinct, shape) < 0) {
                Py_XDECREF(at);
                at = NULL;
            }
        }
        Py_DECREF(shape);
        if (at == NULL) {
            Py_DECREF(d);
            goto fail;
        }
        PyList_SET_ITEM(which, i, at);
        Py_XSETREF(previous_at, Py_NewRef(at));
        Py_XSETREF(previous, d);
    }
    Py_DECREF(items);
    Py_XDECREF(previous);
    Py_XDECREF(previous_at);
    Py_DECREF(index);
    if (PyList_GET_SIZE(distinct) < 2)
        Py_SETREF(which, Py_NewRef(Py_None));
    return Py_BuildValue("(NN)", distinct, which);
fail:
    Py_DECREF(items);
    Py_XDECREF(previous);
    Py_XDECREF(previous_at);
    Py_XDECREF(distinct);
    Py_XDECREF(index);
    Py_XDECREF(which);
    return NULL;
}

/* k new lists of n items each (NULL items: filled by the caller before any escapes). */
static PyObject *
new_columns(Py_ssize_t k, Py_ssize_t n)
{
    PyObject *out = PyList_New(k);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t j = 0; j < k; j++) {
        PyObject *column = PyList_New(n);
        if (column == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, j, column);
    }
    return out;
}

/* Put None in the slots new_columns left empty, so a half-filled result can be freed. */
static void
plug_columns(PyObject *columns)
{
    for (Py_ssize_t j = 0; j < PyList_GET_SIZE(columns); j++) {
        PyObject *column = PyList_GET_ITEM(columns, j);
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(column); i++)
            if (PyList_GET_ITEM(column, i) == NULL)
                PyList_SET_ITEM(column, i, Py_NewRef(Py_None));
    }
}

/* slot_columns(descriptors, objs, absent) -> one list per descriptor (a slot's member
 * descriptor) of its value in each object, absent where the slot is unset. One pass
 * over the objects; member descriptors run no Python. */
static PyObject *
slot_columns(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "slot_columns(descriptors, objs, absent)");
        return NULL;
    }
    PyObject *descriptors = NULL, *objs = NULL, *out = NULL, *absent = args[2];
    if ((descriptors = as_tuple(args[0])) == NULL || (objs = as_tuple(args[1])) == NULL)
        goto fail;
    Py_ssize_t k = PyTuple_GET_SIZE(descriptors), n = PyTuple_GET_SIZE(objs);
    for (Py_ssize_t j = 0; j < k; j++)
        if (!Py_IS_TYPE(PyTuple_GET_ITEM(descriptors, j), &PyMemberDescr_Type)) {
            PyErr_SetString(PyExc_TypeError, "slot_columns reads slots: member descriptors");
            goto fail;
        }
    if ((out = new_columns(k, n)) == NULL)
        goto fail;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *obj = PyTuple_GET_ITEM(objs, i);
        for (Py_ssize_t j = 0; j < k; j++) {
            PyObject *descr = PyTuple_GET_ITEM(descriptors, j);
            PyObject *value = Py_TYPE(descr)->tp_descr_get(descr, obj, (PyObject *)Py_TYPE(obj));
            if (value == NULL) {
                if (!PyErr_ExceptionMatches(PyExc_AttributeError)) {
                    plug_columns(out);
                    goto fail;
                }
                PyErr_Clear();                      /* an unset slot */
                value = Py_NewRef(absent);
            }
            PyList_SET_ITEM(PyList_GET_ITEM(out, j), i, value);
        }
    }
    Py_DECREF(descriptors);
    Py_DECREF(objs);
    return out;
fail:
    Py_XDECREF(descriptors);
    Py_XDECREF(objs);
    Py_XDECREF(out);
    return NULL;
}

/* Whether dict d's keys are shape's, in order: by identity or as equal exact strs
 * (attribute names are interned, so identity is the rule), running no Python. */
static int
keys_are_fast(PyObject *d, PyObject *shape)
{
    Py_ssize_t pos = 0, j = 0;
    PyObject *key, *value;
    while (PyDict_Next(d, &pos, &key, &value)) {
        PyObject *expected = PyTuple_GET_ITEM(shape, j++);
        if (key != expected && !(PyUnicode_CheckExact(key) && PyUnicode_CheckExact(expected)
                                 && PyUnicode_Compare(key, expected) == 0))
            return 0;
    }
    return 1;
}

/* dict_columns(objs, shape) -> one list per key of shape, of each object's value for
 * it. ValueError unless each object's __dict__ holds just those keys (they changed
 * during the save). */
static PyObject *
dict_columns(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyTuple_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "dict_columns(objs, shape: tuple)");
        return NULL;
    }
    PyObject *shape = args[1], *out = NULL, *d = NULL;
    PyObject *objs = as_tuple(args[0]);
    if (objs == NULL)
        return NULL;
    Py_ssize_t k = PyTuple_GET_SIZE(shape), n = PyTuple_GET_SIZE(objs);
    if ((out = new_columns(k, n)) == NULL)
        goto fail;
    for (Py_ssize_t i = 0; i < n; i++) {
        d = PyObject_GetAttrString(PyTuple_GET_ITEM(objs, i), "__dict__");
        if (d == NULL)
            goto plug;
        if (!PyDict_Check(d) || PyDict_GET_SIZE(d) != k)
            goto changed;
        if (!keys_are_fast(d, shape)) {
            /* The same keys in another order, or equal ones that are other objects:
             * each looked up, as the Python does (a key's __eq__ may run Python, so
             * each value is held as soon as it is found). */
            for (Py_ssize_t j = 0; j < k; j++) {
                PyObject *value = PyDict_GetItemWithError(d, PyTuple_GET_ITEM(shape, j));
                if (value == NULL) {
                    if (PyErr_Occurred())
                        goto plug;
                    goto changed;
                }
                PyList_SET_ITEM(PyList_GET_ITEM(out, j), i, Py_NewRef(value));
            }
            Py_CLEAR(d);
            continue;
        }
        Py_ssize_t pos = 0, j = 0;
        PyObject *key, *value;
        while (PyDict_Next(d, &pos, &key, &value))
            PyList_SET_ITEM(PyList_GET_ITEM(out, j++), i, Py_NewRef(value));
        Py_CLEAR(d);
    }
    Py_DECREF(objs);
    return out;
changed:
    PyErr_SetString(PyExc_ValueError, "an object's attributes changed during the save");
plug:
    Py_XDECREF(d);
    plug_columns(out);
fail:
    Py_DECREF(objs);
    Py_XDECREF(out);
    return NULL;
}

/* list_columns(lists) -> [lengths, items]: each list's (or tuple's) length, and all
 * their items one after the other. */
static PyObject *
list_columns(PyObject *module, PyObject *lists)
{
    PyObject *items = as_tuple(lists), *lengths = NULL, *all = NULL;
    if (items == NULL)
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(items), total = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *seq = PyTuple_GET_ITEM(items, i);
        if (!PyList_Check(seq) && !PyTuple_Check(seq)) {
            PyErr_SetString(PyExc_TypeError, "list_columns reads lists and tuples");
            goto fail;
        }
        total += Py_SIZE(seq);
    }
    if ((lengths = PyList_New(n)) == NULL || (all = PyList_New(total)) == NULL)
        goto fail;
    Py_ssize_t at = 0;
    for (Py_ssize_t i = 0; i < n; i++) {      /* nothing here runs Python: sizes hold */
        PyObject *seq = PyTuple_GET_ITEM(items, i);
        Py_ssize_t m = Py_SIZE(seq);
        PyObject **from = PySequence_Fast_ITEMS(seq);
        PyObject *length = PyLong_FromSsize_t(m);
        if (length == NULL) {
            for (Py_ssize_t j = at; j < total; j++)
                PyList_SET_ITEM(all, j, Py_NewRef(Py_None));
            for (Py_ssize_t j = i; j < n; j++)
                PyList_SET_ITEM(lengths, j, Py_NewRef(Py_None));
            goto fail;
        }
        PyList_SET_ITEM(lengths, i, length);
        for (Py_ssize_t j = 0; j < m; j++)
            PyList_SET_ITEM(all, at++, Py_NewRef(from[j]));
    }
    Py_DECREF(items);
    return Py_BuildValue("[NN]", lengths, all);
fail:
    Py_DECREF(items);
    Py_XDECREF(lengths);
    Py_XDECREF(all);
    return NULL;
}

/* fill_missing(table, keys, cells) -> [table[key] for key in keys], where cells is an
 * earlier lookup of the keys in table: a cell not None is taken as it is. KeyError
 * for a key the table does not hold. */
static PyObject *
fill_missing(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3 || !PyDict_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "fill_missing(table: dict, keys, cells)");
        return NULL;
    }
    PyObject *table = args[0], *keys = NULL, *cells = NULL, *out = NULL;
    if ((keys = as_tuple(args[1])) == NULL || (cells = as_tuple(args[2])) == NULL)
        goto fail;
    Py_ssize_t n = PyTuple_GET_SIZE(keys);
    if (PyTuple_GET_SIZE(cells) != n) {
        PyErr_SetString(PyExc_ValueError, "one cell per key");
        goto fail;
    }
    if ((out = PyList_New(n)) == NULL)
        goto fail;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *cell = PyTuple_GET_ITEM(cells, i);
        if (cell == Py_None) {
            PyObject *key = PyTuple_GET_ITEM(keys, i);
            cell = PyDict_GetItemWithError(table, key);
            if (cell == NULL) {
                if (!PyErr_Occurred())
                    PyErr_SetObject(PyExc_KeyError, key);
                for (Py_ssize_t j = i; j < n; j++)
                    PyList_SET_ITEM(out, j, Py_NewRef(Py_None));
                goto fail;
            }
        }
        PyList_SET_ITEM(out, i, Py_NewRef(cell));
    }
    Py_DECREF(keys);
    Py_DECREF(cells);
    return out;
fail:
    Py_XDECREF(keys);
    Py_XDECREF(cells);
    Py_XDECREF(out);
    return NULL;
}

/* Append key's object to missing unless seen holds key already. */
static int
note_missing(PyObject *seen, PyObject *missing, PyObject *key, PyObject *obj)
{
    int found = PyDict_Contains(seen, key);
    if (found != 0)
        return found < 0 ? -1 : 0;
    if (PyDict_SetItem(seen, key, Py_None) < 0)
        return -1;
    return PyList_Append(missing, obj);
}

/* look_up(table, objs) -> (cells, missing): table.get(obj) for each obj, and the
 * distinct objs it does not hold, in the order first met. */
static PyObject *
look_up(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyDict_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "look_up(table: dict, objs)");
        return NULL;
    }
    PyObject *table = args[0], *cells = NULL, *missing = NULL, *seen = NULL;
    PyObject *items = as_tuple(args[1]);
    if (items == NULL)
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(items);
    if ((cells = PyList_New(n)) == NULL || (missing = PyList_New(0)) == NULL)
        goto fail;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *obj = PyTuple_GET_ITEM(items, i);
        PyObject *cell = PyDict_GetItemWithError(table, obj);
        if (cell == NULL) {
            if (PyErr_Occurred())
                goto fail;
            cell = Py_None;
            if (seen == NULL && (seen = PyDict_New()) == NULL)
                goto fail;
            Py_INCREF(cell);
            PyList_SET_ITEM(cells, i, cell);
            if (note_missing(seen, missing, obj, obj) < 0)
                goto fail;
            continue;
        }
        Py_INCREF(cell);
        PyList_SET_ITEM(cells, i, cell);
    }
    Py_DECREF(items);
    Py_XDECREF(seen);
    return Py_BuildValue("(NN)", cells, missing);
fail:
    Py_DECREF(items);
    Py_XDECREF(cells);
    Py_XDECREF(missing);
    Py_XDECREF(seen);
    return NULL;
}

/* look_up_ids(memo, objs) -> (ids, cells, missing): id(obj) for each obj,
 * memo.get(id(obj)), and the distinct objs (by identity) memo does not hold, in order. */
static PyObject *
look_up_ids(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyDict_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "look_up_ids(memo: dict, objs)");
        return NULL;
    }
    PyObject *memo = args[0], *ids = NULL, *cells = NULL, *missing = NULL, *seen = NULL;
    PyObject *items = as_tuple(args[1]);
    if (items == NULL)
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(items);
    if ((ids = PyList_New(n)) == NULL || (cells = PyList_New(n)) == NULL
            || (missing = PyList_New(0)) == NULL)
        goto fail;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *obj = PyTuple_GET_ITEM(items, i);
        PyObject *key = PyLong_FromVoidPtr(obj);    /* what id() returns */
        if (key == NULL)
            goto fail;
        PyList_SET_ITEM(ids, i, key);
        PyObject *cell = PyDict_GetItemWithError(memo, key);   /* int keys: no Python runs */
        if (cell == NULL) {
            if (PyErr_Occurred())
                goto fail;
            Py_INCREF(Py_None);
            PyList_SET_ITEM(cells, i, Py_None);
            if (seen == NULL && (seen = PyDict_New()) == NULL)
                goto fail;
            if (note_missing(seen, missing, key, obj) < 0)
                goto fail;
            continue;
        }
        Py_INCREF(cell);
        PyList_SET_ITEM(cells, i, cell);
    }
    Py_DECREF(items);
    Py_XDECREF(seen);
    return Py_BuildValue("(NNN)", ids, cells, missing);
fail:
    Py_DECREF(items);
    Py_XDECREF(ids);
    Py_XDECREF(cells);
    Py_XDECREF(missing);
    Py_XDECREF(seen);
    return NULL;
}

/* The int a cell holds: cell[0] of a tuple or list cell. */
static int
cell_value(PyObject *cell, Py_ssize_t *value)
{
    PyObject *v;
    if (PyTuple_Check(cell) && PyTuple_GET_SIZE(cell) > 0)
        v = PyTuple_GET_ITEM(cell, 0);
    else if (PyList_Check(cell) && PyList_GET_SIZE(cell) > 0)
        v = PyList_GET_ITEM(cell, 0);
    else {
        PyErr_Format(PyExc_TypeError, "a cell is a non-empty tuple or list, not %.100s",
                     Py_TYPE(cell)->tp_name);
        return -1;
    }
    if (!PyLong_Check(v)) {
        PyErr_Format(PyExc_TypeError, "a cell holds an int, not %.100s", Py_TYPE(v)->tp_name);
        return -1;
    }
    *value = PyLong_AsSsize_t(v);
    return (*value == -1 && PyErr_Occurred()) ? -1 : 0;
}

/* differences(cells, tail) -> the differences of the indices the cells name: a cell
 * holding i >= 0 names index i; one holding -serial names tail[-serial]. */
static PyObject *
differences(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyList_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "differences(cells, tail: list)");
        return NULL;
    }
    PyObject *tail = args[1], *out = NULL;
    PyObject *items = as_tuple(args[0]);
    if (items == NULL)
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(items), previous = 0;
    if ((out = PyList_New(n)) == NULL)
        goto fail;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t value, index;
        if (cell_value(PyTuple_GET_ITEM(items, i), &value) < 0)
            goto fail;
        if (value >= 0)
            index = value;
        else {
            Py_ssize_t size = PyList_GET_SIZE(tail);   /* tail is ours: never resized */
            if (value < -size) {
                PyErr_SetString(PyExc_IndexError, "a serial past the tail");
                goto fail;
            }
            PyObject *mapped = PyList_GET_ITEM(tail, size + value);
            if (!PyLong_Check(mapped)) {
                PyErr_SetString(PyExc_TypeError, "the tail holds ints");
                goto fail;
            }
            index = PyLong_AsSsize_t(mapped);
            if (index == -1 && PyErr_Occurred())
                goto fail;
        }
        PyObject *d = PyLong_FromSsize_t(index - previous);
        if (d == NULL)
            goto fail;
        PyList_SET_ITEM(out, i, d);
        previous = index;
    }
    Py_DECREF(items);
    return out;
fail:
    Py_DECREF(items);
    Py_XDECREF(out);
    return NULL;
}

/* resolve_refs(differences, objs) -> (indices, refs): the running sums of the
 * differences and objs[i] of each. TypeError if a difference is not an int (bools
 * count, as in Python); else IndexError if an index falls outside objs. */
static PyObject *
resolve_refs(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyList_Check(args[0]) || !PyList_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "resolve_refs(differences: list, objs: list)");
        return NULL;
    }
    PyObject *diffs = args[0], *objs = args[1], *indices = NULL, *refs = NULL;
    Py_ssize_t n = PyList_GET_SIZE(diffs);
    for (Py_ssize_t i = 0; i < n; i++)      /* type errors first, as the Python does */
        if (!PyLong_Check(PyList_GET_ITEM(diffs, i))) {
            PyErr_SetString(PyExc_TypeError, "a reference difference is not an int");
            return NULL;
        }
    if ((indices = PyList_New(n)) == NULL || (refs = PyList_New(n)) == NULL)
        goto fail;
    long long index = 0;
    Py_ssize_t size = PyList_GET_SIZE(objs);
    for (Py_ssize_t i = 0; i < n; i++) {
        int overflow;
        long long d = PyLong_AsLongLongAndOverflow(PyList_GET_ITEM(diffs, i), &overflow);
        if (d == -1 && PyErr_Occurred())
            goto fail;
        /* an index of any size outside [0, size) is refused, so overflow is one too */
        if (overflow || __builtin_add_overflow(index, d, &index) || index < 0
                || index >= (long long)size) {
            PyErr_SetString(PyExc_IndexError, "a reference outside the objects");
            goto fail;
        }
        PyObject *key = PyLong_FromLongLong(index);
        if (key == NULL)
            goto fail;
        PyList_SET_ITEM(indices, i, key);
        PyObject *obj = PyList_GET_ITEM(objs, (Py_ssize_t)index);
        Py_INCREF(obj);
        PyList_SET_ITEM(refs, i, obj);
    }
    return Py_BuildValue("(NN)", indices, refs);
fail:
    Py_XDECREF(indices);
    Py_XDECREF(refs);
    return NULL;
}

/* merge_mixed(mask, inline, refs) -> the values in order: for each mask byte, the next
 * inline value (0) or the next reference (1). ValueError if the mask does not match. */
static PyObject *
merge_mixed(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3 || !PyBytes_Check(args[0]) || !PyList_Check(args[1])
            || !PyList_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "merge_mixed(mask: bytes, inline: list, refs: list)");
        return NULL;
    }
    const unsigned char *mask = (const unsigned char *)PyBytes_AS_STRING(args[0]);
    Py_ssize_t n = PyBytes_GET_SIZE(args[0]);
    PyObject *sides[2] = {args[1], args[2]};
    Py_ssize_t taken[2] = {0, 0};
    Py_ssize_t ones = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (mask[i] > 1) {
            PyErr_SetString(PyExc_ValueError, "a mask byte is 0 or 1");
            return NULL;
        }
        ones += mask[i];
    }
    if (ones != PyList_GET_SIZE(args[2]) || n - ones != PyList_GET_SIZE(args[1])) {
        PyErr_SetString(PyExc_ValueError, "the mask does not match the values");
        return NULL;
    }
    PyObject *out = PyList_New(n);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = PyList_GET_ITEM(sides[mask[i]], taken[mask[i]]++);
        Py_INCREF(v);
        PyList_SET_ITEM(out, i, v);
    }
    return out;
}

/* fill_slots(descriptors, objs, columns): descriptors[j].__set__(objs[i], columns[j][i])
 * for every object and column. Each descriptor must be a slot's (a member descriptor),
 * and each column as long as objs. One pass over the objects: each is touched once, all
 * its slots set. Setting a slot that held a value frees the old one, which may run
 * Python: objs is walked as a copy, and each column's size is checked at each read. */
static PyObject *
fill_slots(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "fill_slots(descriptors, objs, columns)");
        return NULL;
    }
    PyObject *descriptors = NULL, *objs = NULL, *columns = NULL;
    if ((descriptors = as_tuple(args[0])) == NULL || (objs = as_tuple(args[1])) == NULL
            || (columns = as_tuple(args[2])) == NULL)
        goto fail;
    Py_ssize_t k = PyTuple_GET_SIZE(descriptors), n = PyTuple_GET_SIZE(objs);
    if (PyTuple_GET_SIZE(columns) != k) {
        PyErr_SetString(PyExc_ValueError, "one column per descriptor");
        goto fail;
    }
    for (Py_ssize_t j = 0; j < k; j++) {
        PyObject *column = PyTuple_GET_ITEM(columns, j);
        if (!Py_IS_TYPE(PyTuple_GET_ITEM(descriptors, j), &PyMemberDescr_Type)) {
            PyErr_SetString(PyExc_TypeError, "fill_slots sets slots: member descriptors");
            goto fail;
        }
        if (!PyList_Check(column) && !PyTuple_Check(column)) {
            PyErr_SetString(PyExc_TypeError, "a column is a list or a tuple");
            goto fail;
        }
        if (Py_SIZE(column) != n) {
            PyErr_SetString(PyExc_ValueError, "a column is not as long as the objects");
            goto fail;
        }
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *obj = PyTuple_GET_ITEM(objs, i);
        for (Py_ssize_t j = 0; j < k; j++) {
            PyObject *descr = PyTuple_GET_ITEM(descriptors, j);
            PyObject *column = PyTuple_GET_ITEM(columns, j);
            if (i >= Py_SIZE(column)) {                 /* a __del__ shrank it */
                PyErr_SetString(PyExc_ValueError, "a column changed size while filling");
                goto fail;
            }
            PyObject *value = PyList_Check(column) ? PyList_GET_ITEM(column, i)
                                                   : PyTuple_GET_ITEM(column, i);
            Py_INCREF(value);                          /* held across the set */
            int failed = Py_TYPE(descr)->tp_descr_set(descr, obj, value);
            Py_DECREF(value);
            if (failed < 0)
                goto fail;
        }
    }
    Py_DECREF(descriptors);
    Py_DECREF(objs);
    Py_DECREF(columns);
    Py_RETURN_NONE;
fail:
    Py_XDECREF(descriptors);
    Py_XDECREF(objs);
    Py_XDECREF(columns);
    return NULL;
}

/* fill_lists(lists, lengths, items): extend each (empty) list by its length's run of
 * items, in order. ValueError unless the lengths are ints >= 0 adding up to len(items). */
static PyObject *
fill_lists(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3 || !PyList_Check(args[0]) || !PyList_Check(args[1])
            || !PyList_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "fill_lists(lists: list, lengths: list, items: list)");
        return NULL;
    }
    PyObject *lists = args[0], *lengths = args[1], *items = args[2];
    Py_ssize_t n = PyList_GET_SIZE(lists), total = PyList_GET_SIZE(items), start = 0;
    if (PyList_GET_SIZE(lengths) != n) {
        PyErr_SetString(PyExc_ValueError, "one length per list");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {             /* all checked before any is filled */
        PyObject *length = PyList_GET_ITEM(lengths, i);
        Py_ssize_t m = PyLong_Check(length) ? PyLong_AsSsize_t(length) : -1;
        if (m == -1 && PyErr_Occurred())
            PyErr_Clear();
        if (m < 0 || m > total - start) {
            PyErr_SetString(PyExc_ValueError, "the lengths do not add up to the items");
            return NULL;
        }
        start += m;
    }
    if (start != total) {
        PyErr_SetString(PyExc_ValueError, "the lengths do not add up to the items");
        return NULL;
    }
    start = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *list = PyList_GET_ITEM(lists, i);
        Py_ssize_t m = PyLong_AsSsize_t(PyList_GET_ITEM(lengths, i));
        if (!PyList_Check(list)) {
            PyErr_SetString(PyExc_TypeError, "fill_lists fills lists");
            return NULL;
        }
        if (m) {
            PyObject *run = PyList_GetSlice(items, start, start + m);
            if (run == NULL)
                return NULL;
            Py_ssize_t at = PyList_GET_SIZE(list);
            int failed = PyList_SetSlice(list, at, at, run);
            Py_DECREF(run);
            if (failed < 0)
                return NULL;
        }
        start += m;
    }
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"kinds", kinds, METH_O, "The set of the types of a column's items."},
    {"first_kinds", first_kinds, METH_O, "The distinct types of the items, in order."},
    {"list_columns", list_columns, METH_O, "[lengths, items] of lists."},
    {"fill_missing", (PyCFunction)(void (*)(void))fill_missing, METH_FASTCALL,
     "table[key] of each key, reusing the cells an earlier lookup found."},
    {"slot_columns", (PyCFunction)(void (*)(void))slot_columns, METH_FASTCALL,
     "One list per slot of its value in each object."},
    {"dict_columns", (PyCFunction)(void (*)(void))dict_columns, METH_FASTCALL,
     "One list per key of the shape of each object's value for it."},
    {"shapes", shapes, METH_O, "(distinct, which): the key tuples of the objects' __dict__s."},
    {"split", (PyCFunction)(void (*)(void))split, METH_FASTCALL,
     "(mask, inline, refs) of a column: its items of inline types and the others."},
    {"look_up", (PyCFunction)(void (*)(void))look_up, METH_FASTCALL,
     "(cells, missing) of objects in a table keyed by the objects."},
    {"look_up_ids", (PyCFunction)(void (*)(void))look_up_ids, METH_FASTCALL,
     "(ids, cells, missing) of objects in a memo keyed by id()."},
    {"differences", (PyCFunction)(void (*)(void))differences, METH_FASTCALL,
     "The index differences that refer to the cells' objects."},
    {"resolve_refs", (PyCFunction)(void (*)(void))resolve_refs, METH_FASTCALL,
     "(indices, objects) of a column's reference differences."},
    {"merge_mixed", (PyCFunction)(void (*)(void))merge_mixed, METH_FASTCALL,
     "A mixed column's values in order."},
    {"fill_slots", (PyCFunction)(void (*)(void))fill_slots, METH_FASTCALL,
     "Set each object's slots from the columns."},
    {"fill_lists", (PyCFunction)(void (*)(void))fill_lists, METH_FASTCALL,
     "Extend each list by its run of items."},
    {NULL, NULL, 0, NULL},
};

static PyModuleDef_Slot slots[] = {
    {0, NULL},                  /* no state: nothing to set up per interpreter */
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "autosave._speedups",
    "The engine's per-reference loops in C (autosave/kernels.py).", 0, methods, slots,
    NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    return PyModuleDef_Init(&module);
}
