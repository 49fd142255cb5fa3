/* A save reads columns off the objects of a batch: the key shapes of __dict__
 * instances, and the columns themselves (slots, __dict__ values, lists' lengths and
 * items, dicts' entries), one pass each; a column of repeated strings coded. What types
 * a column holds is kinds.c's. */
#include "speedups.h"

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
PyObject *
autosave_shapes(PyObject *module, PyObject *objs)
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
PyObject *
autosave_slot_columns(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
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
PyObject *
autosave_dict_columns(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
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
PyObject *
autosave_list_columns(PyObject *module, PyObject *lists)
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

/* dict_entries(dicts) -> [lengths, keys, values]: each dict's length, then all their
 * keys and all their values one after the other, in order. TypeError for anything but
 * a dict. */
PyObject *
autosave_dict_entries(PyObject *module, PyObject *dicts)
{
    PyObject *items = as_tuple(dicts), *lengths = NULL, *keys = NULL, *values = NULL;
    if (items == NULL)
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(items), total = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *d = PyTuple_GET_ITEM(items, i);
        if (!PyDict_Check(d)) {
            PyErr_SetString(PyExc_TypeError, "dict_entries reads dicts");
            goto fail;
        }
        total += PyDict_GET_SIZE(d);
    }
    if ((lengths = PyList_New(n)) == NULL || (keys = PyList_New(total)) == NULL
            || (values = PyList_New(total)) == NULL)
        goto fail;
    /* From here nothing runs Python code (ints are not tracked by the collector, so
     * making one starts no collection): the sizes summed above hold. */
    Py_ssize_t at = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *d = PyTuple_GET_ITEM(items, i), *key, *value;
        PyObject *length = PyLong_FromSsize_t(PyDict_GET_SIZE(d));
        if (length == NULL) {
            for (Py_ssize_t j = i; j < n; j++)
                PyList_SET_ITEM(lengths, j, Py_NewRef(Py_None));
            for (Py_ssize_t j = at; j < total; j++) {
                PyList_SET_ITEM(keys, j, Py_NewRef(Py_None));
                PyList_SET_ITEM(values, j, Py_NewRef(Py_None));
            }
            goto fail;
        }
        PyList_SET_ITEM(lengths, i, length);
        Py_ssize_t pos = 0;
        while (PyDict_Next(d, &pos, &key, &value)) {
            PyList_SET_ITEM(keys, at, Py_NewRef(key));
            PyList_SET_ITEM(values, at, Py_NewRef(value));
            at++;
        }
    }
    Py_DECREF(items);
    return Py_BuildValue("[NNN]", lengths, keys, values);
fail:
    Py_DECREF(items);
    Py_XDECREF(lengths);
    Py_XDECREF(keys);
    Py_XDECREF(values);
    return NULL;
}

/* code_strings(values, limit) -> (strings, codes): the distinct strings of a column of
 * str, in the order first met, and each value's position among them (a coded column,
 * docs/format.md); None as soon as there are more than limit distinct ones. One dict
 * lookup per value; hashing and comparing exact strs runs no Python code. TypeError
 * for a value that is not an exact str (met before the limit is). */
#define RECENT_STRINGS 256      /* a power of 2 */

PyObject *
autosave_code_strings(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyLong_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "code_strings(values, limit: int)");
        return NULL;
    }
    Py_ssize_t limit = PyLong_AsSsize_t(args[1]);
    if (limit == -1 && PyErr_Occurred())
        return NULL;
    PyObject *values = args[0];
    PyObject *items = as_tuple(values), *table = NULL, *strings = NULL, *codes = NULL;
    if (items == NULL)
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(items);
    if ((table = PyDict_New()) == NULL || (strings = PyList_New(0)) == NULL
            || (codes = PyList_New(n)) == NULL)
        goto fail;
    /* A column of keys repeats a few string objects (literals are interned, and json
     * makes each key once per document set): the last code given for each address,
     * found without hashing. Both sides are borrowed: items holds the strings, table
     * the codes. */
    struct { PyObject *s, *code; } recent[RECENT_STRINGS] = {{NULL, NULL}};
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *s = PyTuple_GET_ITEM(items, i);
        size_t slot = ((uintptr_t)s >> 4) & (RECENT_STRINGS - 1);
        if (recent[slot].s == s) {
            PyList_SET_ITEM(codes, i, Py_NewRef(recent[slot].code));
            continue;
        }
        if (!PyUnicode_CheckExact(s)) {
            PyErr_SetString(PyExc_TypeError, "code_strings codes strs");
            goto fail_filling;
        }
        PyObject *code = PyDict_GetItemWithError(table, s);     /* borrowed */
        if (code == NULL) {
            if (PyErr_Occurred())
                goto fail_filling;
            if (PyList_GET_SIZE(strings) >= limit) {      /* one more than limit */
                for (Py_ssize_t j = i; j < n; j++)
                    PyList_SET_ITEM(codes, j, Py_NewRef(Py_None));
                Py_DECREF(items);
                Py_DECREF(table);
                Py_DECREF(strings);
                Py_DECREF(codes);
                Py_RETURN_NONE;
            }
            code = PyLong_FromSsize_t(PyList_GET_SIZE(strings));
            if (code == NULL)
                goto fail_filling;
            int failed = PyDict_SetItem(table, s, code) < 0 || PyList_Append(strings, s) < 0;
            Py_DECREF(code);                /* the table holds it */
            if (failed)
                goto fail_filling;
        }
        recent[slot].s = s;
        recent[slot].code = code;
        PyList_SET_ITEM(codes, i, Py_NewRef(code));
        continue;
    fail_filling:
        for (Py_ssize_t j = i; j < n; j++)
            PyList_SET_ITEM(codes, j, Py_NewRef(Py_None));
        goto fail;
    }
    Py_DECREF(items);
    Py_DECREF(table);
    return Py_BuildValue("(NN)", strings, codes);
fail:
    Py_DECREF(items);
    Py_XDECREF(table);
    Py_XDECREF(strings);
    Py_XDECREF(codes);
    return NULL;
}
