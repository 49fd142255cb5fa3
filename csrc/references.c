/* A save looks up what its columns refer to (by the objects themselves or by id()),
 * and writes the index differences that name them. The tables are the engine's own. */
#include "speedups.h"

/* fill_missing(table, keys, cells) -> [table[key] for key in keys], where cells is an
 * earlier lookup of the keys in table: a cell not None is taken as it is. KeyError
 * for a key the table does not hold. A Memo's keys are the objects themselves (what
 * look_up_ids gave back for it). */
PyObject *
autosave_fill_missing(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3 || !(PyDict_Check(args[0]) || is_memo(args[0]))) {
        PyErr_SetString(PyExc_TypeError, "fill_missing(table: dict or Memo, keys, cells)");
        return NULL;
    }
    PyObject *table = args[0], *keys = NULL, *cells = NULL, *out = NULL;
    int memo = is_memo(table);
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
            cell = memo ? memo_get((MemoObject *)table, key)
                        : PyDict_GetItemWithError(table, key);
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

/* What the lookups give for missing when the table holds none of the objects: objs
 * itself when it is a list or a tuple, repeats and all (file_all files each once), else
 * a list of its items. */
static PyObject *
all_missing(PyObject *objs, PyObject *items)
{
    if (PyList_CheckExact(objs) || PyTuple_CheckExact(objs))
        return Py_NewRef(objs);
    return PySequence_List(items);
}

/* look_up_ids on a Memo: the keys are the objects, and what the memo misses is told
 * apart by address in a second Memo. No Python code runs in the loop. */
static PyObject *
look_up_in_memo(MemoObject *memo, PyObject *objs, PyObject *items)
{
    Py_ssize_t n = PyTuple_GET_SIZE(items), absent = 0;
    MemoObject seen;                         /* C's own: never seen by Python */
    memo_init(&seen);
    PyObject *cells = PyList_New(n), *missing = NULL;
    if (cells == NULL)
        goto fail;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *cell = memo_get(memo, PyTuple_GET_ITEM(items, i));
        if (cell == NULL)
            cell = Py_None;
        absent += cell == Py_None;           /* as Python's get() tells them: None */
        PyList_SET_ITEM(cells, i, Py_NewRef(cell));
    }
    if (absent == n && n > 0) {
        missing = all_missing(objs, items);
    }
    else if ((missing = PyList_New(0)) != NULL) {
        for (Py_ssize_t i = 0; absent > 0 && i < n; i++) {
            PyObject *obj = PyTuple_GET_ITEM(items, i);
            if (PyList_GET_ITEM(cells, i) != Py_None || memo_get(&seen, obj) != NULL)
                continue;
            if (memo_set(&seen, obj, Py_None) < 0 || PyList_Append(missing, obj) < 0)
                goto fail;
        }
    }
    if (missing == NULL)
        goto fail;
    memo_free(&seen);
    return Py_BuildValue("(ONN)", items, cells, missing);
fail:
    memo_free(&seen);
    Py_XDECREF(cells);
    Py_XDECREF(missing);
    return NULL;
}

/* The one loop of look_up and look_up_ids: (ids, cells, missing) of objs in table,
 * keyed by the objects themselves, or by id() (then ids is the list of those ids, else
 * None). A missing object is distinct by its key. */
static PyObject *
look_up_in(PyObject *table, PyObject *objs, int by_id)
{
    PyObject *ids = NULL, *cells = NULL, *missing = NULL, *seen = NULL;
    PyObject *items = as_tuple(objs);
    if (items == NULL)
        return NULL;
    if (by_id && is_memo(table)) {
        PyObject *found = look_up_in_memo((MemoObject *)table, objs, items);
        Py_DECREF(items);
        return found;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(items), absent = 0;
    if ((by_id && (ids = PyList_New(n)) == NULL) || (cells = PyList_New(n)) == NULL)
        goto fail;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *obj = PyTuple_GET_ITEM(items, i), *key = obj;
        if (by_id) {
            if ((key = PyLong_FromVoidPtr(obj)) == NULL)      /* what id() returns */
                goto fail;
            PyList_SET_ITEM(ids, i, key);
        }
        /* An object's own __hash__ or __eq__ may run here: the cell is held at once. */
        PyObject *cell = PyDict_GetItemWithError(table, key);
        if (cell == NULL && PyErr_Occurred())
            goto fail;
        if (cell == NULL)
            cell = Py_None;
        absent += cell == Py_None;           /* as Python's get() tells them: None */
        PyList_SET_ITEM(cells, i, Py_NewRef(cell));
    }
    if (absent == n && n > 0) {
        if ((missing = all_missing(objs, items)) == NULL)
            goto fail;
    }
    else {
        if ((missing = PyList_New(0)) == NULL || (absent > 0 && (seen = PyDict_New()) == NULL))
            goto fail;
        for (Py_ssize_t i = 0; absent > 0 && i < n; i++) {
            if (PyList_GET_ITEM(cells, i) != Py_None)
                continue;
            PyObject *obj = PyTuple_GET_ITEM(items, i);
            PyObject *key = by_id ? PyList_GET_ITEM(ids, i) : obj;
            int found = PyDict_Contains(seen, key);
            if (found < 0 || (found == 0 && (PyDict_SetItem(seen, key, Py_None) < 0 ||
                                             PyList_Append(missing, obj) < 0)))
                goto fail;
        }
    }
    Py_DECREF(items);
    Py_XDECREF(seen);
    return Py_BuildValue("(NNN)", by_id ? ids : Py_NewRef(Py_None), cells, missing);
fail:
    /* Lists from PyList_New hold NULLs past i, which their dealloc skips. */
    Py_DECREF(items);
    Py_XDECREF(ids);
    Py_XDECREF(cells);
    Py_XDECREF(missing);
    Py_XDECREF(seen);
    return NULL;
}

/* look_up(table, objs) -> (cells, missing): table.get(obj) for each obj, and the
 * distinct objs it does not hold, in the order first met. */
PyObject *
autosave_look_up(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyDict_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "look_up(table: dict, objs)");
        return NULL;
    }
    PyObject *found = look_up_in(args[0], args[1], 0);
    if (found == NULL)
        return NULL;
    PyObject *out = PyTuple_GetSlice(found, 1, 3);
    Py_DECREF(found);
    return out;
}

/* look_up_ids(memo, objs) -> (keys, cells, missing): memo.get(id(obj)) for each obj,
 * and the distinct objs (by identity) memo does not hold, in order; keys, what
 * fill_missing takes back: the ids for a dict, the objects for a Memo. */
PyObject *
autosave_look_up_ids(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !(PyDict_Check(args[0]) || is_memo(args[0]))) {
        PyErr_SetString(PyExc_TypeError, "look_up_ids(memo: dict or Memo, objs)");
        return NULL;
    }
    return look_up_in(args[0], args[1], 1);
}

/* file_all(table, keys, objs, serial) -> None, or the distinct objs: each distinct obj,
 * in the order first met, gets its reference -(serial + 1 + i) (the i-th) in table,
 * under its key (keys[j] is objs[j]'s; a Memo's keys are the objects). The table holds
 * none of the keys, so a key found there is a repeat: skipped, and from the first one
 * on the objs filed are gathered, the result. */
PyObject *
autosave_file_all(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    int memo = nargs == 4 && is_memo(args[0]);
    if (nargs != 4 || !(PyDict_Check(args[0]) || memo) || !PyLong_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError, "file_all(table: dict or Memo, keys, objs, serial: int)");
        return NULL;
    }
    PyObject *table = args[0], *keys = NULL, *objs = NULL, *distinct = NULL;
    Py_ssize_t serial = PyLong_AsSsize_t(args[3]);
    if (serial == -1 && PyErr_Occurred())
        return NULL;
    if ((keys = as_tuple(args[1])) == NULL || (objs = as_tuple(args[2])) == NULL)
        goto fail;
    Py_ssize_t n = PyTuple_GET_SIZE(keys), filed = 0;
    if (PyTuple_GET_SIZE(objs) != n) {
        PyErr_SetString(PyExc_ValueError, "one key per object");
        goto fail;
    }
    if (serial < 0 || serial > PY_SSIZE_T_MAX - n) {
        PyErr_SetString(PyExc_OverflowError, "serials past the largest index");
        goto fail;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *key = PyTuple_GET_ITEM(keys, i);
        /* A key's own __hash__ or __eq__ may run here; keys and objs are our tuples. */
        int found = memo ? memo_get((MemoObject *)table, key) != NULL
                         : PyDict_Contains(table, key);
        if (found < 0)
            goto fail;
        if (found) {                   /* a repeat: from the first, gather the distinct */
            if (distinct == NULL) {    /* the objs before it, all filed */
                PyObject *first = PyTuple_GetSlice(objs, 0, i);
                distinct = first != NULL ? PySequence_List(first) : NULL;
                Py_XDECREF(first);
                if (distinct == NULL)
                    goto fail;
            }
            continue;
        }
        PyObject *ref = PyLong_FromSsize_t(-(serial + 1 + filed));
        if (ref == NULL)
            goto fail;
        int failed = memo ? memo_set((MemoObject *)table, key, ref)
                          : PyDict_SetItem(table, key, ref);
        Py_DECREF(ref);                              /* the table holds it now */
        if (failed < 0 || (distinct != NULL &&
                           PyList_Append(distinct, PyTuple_GET_ITEM(objs, i)) < 0))
            goto fail;
        filed++;
    }
    Py_DECREF(keys);
    Py_DECREF(objs);
    return distinct != NULL ? distinct : Py_NewRef(Py_None);
fail:
    Py_XDECREF(keys);
    Py_XDECREF(objs);
    Py_XDECREF(distinct);
    return NULL;
}

/* The index a cell names in a tail of size entries, as Python's tail[v] finds it: v
 * is the cell itself, or the first item of a list cell (a record's); anything with
 * __index__ indexes, a negative value counting from the end; TypeError for anything
 * else, IndexError past either end (too big for an index included). */
static int
cell_value(PyObject *cell, Py_ssize_t size, Py_ssize_t *value)
{
    PyObject *v = cell;
    if (PyList_CheckExact(cell)) {
        if (PyList_GET_SIZE(cell) == 0) {
            PyErr_SetString(PyExc_IndexError, "an empty cell");
            return -1;
        }
        v = PyList_GET_ITEM(cell, 0);
    }
    if (!PyIndex_Check(v)) {
        PyErr_Format(PyExc_TypeError, "a cell names an int, not %.100s", Py_TYPE(v)->tp_name);
        return -1;
    }
    Py_INCREF(v);                      /* __index__ may run code that drops the cell */
    *value = PyNumber_AsSsize_t(v, PyExc_IndexError);
    Py_DECREF(v);
    if (*value == -1 && PyErr_Occurred())
        return -1;
    if (*value < -size || *value >= size) {
        PyErr_SetString(PyExc_IndexError, "a cell past the tail");
        return -1;
    }
    if (*value < 0)
        *value += size;
    return 0;
}

/* *difference = a - b, or 1 (nothing written) if that overflows a Py_ssize_t: signed
 * overflow is undefined behaviour in C. */
static int
sub_overflows(Py_ssize_t a, Py_ssize_t b, Py_ssize_t *difference)
{
    if (b < 0 ? a > PY_SSIZE_T_MAX + b : a < PY_SSIZE_T_MIN + b)
        return 1;
    *difference = a - b;
    return 0;
}

/* differences(cells, tail) -> the differences of the indices the cells name: a cell
 * v (a batch object's reference, -serial) or [v] (a record's) names tail[v] (the
 * save's tail maps -serial to a batch object's index, and records' indices to
 * themselves). */
PyObject *
autosave_differences(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
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
    /* The previous index as an object too: a difference that a Py_ssize_t cannot hold
     * (an index beyond 64 bits, or two whose difference overflows) is made by Python's
     * own subtraction, as the Python loop makes every one. */
    PyObject *previous_obj = PyLong_FromLong(0);
    int previous_small = 1;
    if (previous_obj == NULL || (out = PyList_New(n)) == NULL)
        goto fail;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t at, index;
        /* tail is ours and never resized, but a cell's __index__ is read first */
        if (cell_value(PyTuple_GET_ITEM(items, i), PyList_GET_SIZE(tail), &at) < 0)
            goto fail;
        if (at >= PyList_GET_SIZE(tail)) {
            PyErr_SetString(PyExc_IndexError, "a cell past the tail");
            goto fail;
        }
        PyObject *mapped = PyList_GET_ITEM(tail, at);
        if (!PyLong_Check(mapped)) {
            PyErr_SetString(PyExc_TypeError, "the tail holds ints");
            goto fail;
        }
        Py_INCREF(mapped);
        int small = 1;
        index = PyLong_AsSsize_t(mapped);
        if (index == -1 && PyErr_Occurred()) {
            if (!PyErr_ExceptionMatches(PyExc_OverflowError)) {
                Py_DECREF(mapped);
                goto fail;
            }
            PyErr_Clear();
            small = 0;
        }
        PyObject *d;
        Py_ssize_t difference;
        if (small && previous_small && !sub_overflows(index, previous, &difference))
            d = PyLong_FromSsize_t(difference);
        else
            d = PyNumber_Subtract(mapped, previous_obj);
        if (d == NULL) {
            Py_DECREF(mapped);
            goto fail;
        }
        PyList_SET_ITEM(out, i, d);
        Py_SETREF(previous_obj, mapped);
        previous = index;
        previous_small = small;
    }
    Py_DECREF(previous_obj);
    Py_DECREF(items);
    return out;
fail:
    Py_XDECREF(previous_obj);
    Py_DECREF(items);
    Py_XDECREF(out);
    return NULL;
}
