/* A save reads columns off the objects of a batch: the types a column holds, a mixed
 * column split, the key shapes of __dict__ instances, and the columns themselves (slots,
 * __dict__ values, lists' lengths and items, dicts' entries), the objects a column met
 * grouped by type and the dicts keyed by inline values told apart, one pass each. */
#include "speedups.h"

/* The set of the types of seq's items; each type met for the first time is also
 * appended to in_order, when it is not NULL. The one loop of kinds and first_kinds. */
static PyObject *
distinct_types(PyObject *seq, PyObject *in_order)
{
    PyObject *items = as_tuple(seq);
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
        if (in_order != NULL) {
            int found = PySet_Contains(out, (PyObject *)t);
            if (found < 0 || (!found && PyList_Append(in_order, (PyObject *)t) < 0))
                goto fail;
        }
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

/* kinds(column) -> the set of the types of column's items. */
PyObject *
autosave_kinds(PyObject *module, PyObject *column)
{
    return distinct_types(column, NULL);
}

/* first_kinds(objs) -> the distinct types of objs' items, in the order first met. */
PyObject *
autosave_first_kinds(PyObject *module, PyObject *objs)
{
    PyObject *out = PyList_New(0);
    if (out == NULL)
        return NULL;
    PyObject *seen = distinct_types(objs, out);
    if (seen == NULL) {
        Py_DECREF(out);
        return NULL;
    }
    Py_DECREF(seen);
    return out;
}

/* split(column, inline_types) -> (mask, inline, refs): mask byte 0 for an item whose
 * type is in inline_types, 1 for any other; the items of each kind, in order. */
PyObject *
autosave_split(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
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

/* group_kinds(objs) -> (kinds, groups): the distinct types of the items in the order
 * first met, and for each a list of the items of that type, in order. */
PyObject *
autosave_group_kinds(PyObject *module, PyObject *objs)
{
    PyObject *items = as_tuple(objs), *kinds = NULL, *groups = NULL, *where = NULL;
    if (items == NULL)
        return NULL;
    if ((kinds = PyList_New(0)) == NULL || (groups = PyList_New(0)) == NULL
            || (where = PyDict_New()) == NULL)
        goto fail;
    PyTypeObject *last = NULL;
    PyObject *group = NULL;               /* borrowed: held by groups */
    Py_ssize_t n = PyTuple_GET_SIZE(items);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyTuple_GET_ITEM(items, i);
        PyTypeObject *t = Py_TYPE(item);
        if (t != last) {                  /* runs of one type are the common case */
            group = PyDict_GetItemWithError(where, (PyObject *)t);
            if (group == NULL) {
                if (PyErr_Occurred())
                    goto fail;
                PyObject *fresh = PyList_New(0);
                if (fresh == NULL)
                    goto fail;
                int failed = PyDict_SetItem(where, (PyObject *)t, fresh) < 0
                    || PyList_Append(kinds, (PyObject *)t) < 0
                    || PyList_Append(groups, fresh) < 0;
                Py_DECREF(fresh);
                if (failed)
                    goto fail;
                group = fresh;
            }
            last = t;
        }
        if (PyList_Append(group, item) < 0)
            goto fail;
    }
    Py_DECREF(items);
    Py_DECREF(where);
    return Py_BuildValue("(NN)", kinds, groups);
fail:
    Py_DECREF(items);
    Py_XDECREF(kinds);
    Py_XDECREF(groups);
    Py_XDECREF(where);
    return NULL;
}

/* inline_keyed(dicts) -> None when every dict's keys are all of inline types, else a
 * list of each dict's answer (True or False). TypeError for anything but a dict. */
PyObject *
autosave_inline_keyed(PyObject *module, PyObject *dicts)
{
    PyObject *items = as_tuple(dicts), *out = NULL;
    if (items == NULL)
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(items);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *d = PyTuple_GET_ITEM(items, i), *key, *value;
        if (!PyDict_Check(d)) {
            PyErr_SetString(PyExc_TypeError, "inline_keyed reads dicts");
            goto fail;
        }
        Py_ssize_t pos = 0;
        int fits = 1;
        while (PyDict_Next(d, &pos, &key, &value)) {   /* runs no Python code */
            if (!is_inline(key)) {
                fits = 0;
                break;
            }
        }
        if (!fits && out == NULL) {       /* the first that does not: answers so far */
            if ((out = PyList_New(0)) == NULL)
                goto fail;
            for (Py_ssize_t j = 0; j < i; j++)
                if (PyList_Append(out, Py_True) < 0)
                    goto fail;
        }
        if (out != NULL && PyList_Append(out, fits ? Py_True : Py_False) < 0)
            goto fail;
    }
    Py_DECREF(items);
    if (out == NULL)
        Py_RETURN_NONE;
    return out;
fail:
    Py_DECREF(items);
    Py_XDECREF(out);
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
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *s = PyTuple_GET_ITEM(items, i);
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
