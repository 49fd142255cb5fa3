/* A load resolves a column's references (read from a file: every index checked before
 * it is used) and fills batch objects: slots through their member descriptors, lists
 * by their runs of items (every length checked before any list is extended). */
#include "speedups.h"

/* resolve_refs(differences, objs) -> (indices, refs): the running sums of the
 * differences and objs[i] of each. TypeError if a difference is not an int (bools
 * count, as in Python); else IndexError if an index falls outside objs. */
PyObject *
autosave_resolve_refs(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
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
PyObject *
autosave_merge_mixed(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
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

/* The checks before any fill: each column a list or a tuple, as long as the objects. */
static int
check_columns(PyObject *columns, Py_ssize_t n)
{
    for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(columns); j++) {
        PyObject *column = PyTuple_GET_ITEM(columns, j);
        if (!PyList_Check(column) && !PyTuple_Check(column)) {
            PyErr_SetString(PyExc_TypeError, "a column is a list or a tuple");
            return -1;
        }
        if (Py_SIZE(column) != n) {
            PyErr_SetString(PyExc_ValueError, "a column is not as long as the objects");
            return -1;
        }
    }
    return 0;
}

/* The arguments of a batch fill, taken as tuples: what a fill sets may free a value and
 * run Python, which must not change what the loop walks. */
typedef struct {
    PyObject *objs;          /* the objects filled */
    PyObject *names;         /* one per column: slot descriptors, or field names */
    PyObject *columns;       /* columns[j][i]: object i's value for names[j] */
} Fill;

/* One preamble for every fill: copies of the three sequences, one column per name, each
 * column a list or a tuple as long as objs. On failure the Fill holds what it took, for
 * fill_release; "mismatch" names what each column stands for. */
static int
fill_take(Fill *fill, PyObject *objs, PyObject *names, PyObject *columns,
          const char *mismatch)
{
    fill->objs = fill->names = fill->columns = NULL;
    if ((fill->objs = as_tuple(objs)) == NULL || (fill->names = as_tuple(names)) == NULL
            || (fill->columns = as_tuple(columns)) == NULL)
        return -1;
    if (PyTuple_GET_SIZE(fill->columns) != PyTuple_GET_SIZE(fill->names)) {
        PyErr_SetString(PyExc_ValueError, mismatch);
        return -1;
    }
    return check_columns(fill->columns, PyTuple_GET_SIZE(fill->objs));
}

static void
fill_release(Fill *fill)
{
    Py_XDECREF(fill->objs);
    Py_XDECREF(fill->names);
    Py_XDECREF(fill->columns);
}

/* columns[j][i], a new reference, held across the set that may free an old value (and
 * run a __del__); ValueError if a __del__ has shrunk the column since. */
static PyObject *
column_item(PyObject *columns, Py_ssize_t j, Py_ssize_t i)
{
    PyObject *column = PyTuple_GET_ITEM(columns, j);
    if (i >= Py_SIZE(column)) {
        PyErr_SetString(PyExc_ValueError, "a column changed size while filling");
        return NULL;
    }
    return Py_NewRef(PyList_Check(column) ? PyList_GET_ITEM(column, i)
                                          : PyTuple_GET_ITEM(column, i));
}

/* d[fields[j]] = columns[j][i] for every field: object i's row set in its __dict__. */
static int
set_row(PyObject *d, const Fill *fill, Py_ssize_t i)
{
    for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(fill->names); j++) {
        PyObject *value = column_item(fill->columns, j, i);
        int failed = value == NULL ? -1
            : PyDict_SetItem(d, PyTuple_GET_ITEM(fill->names, j), value);
        Py_XDECREF(value);
        if (failed < 0)
            return -1;
    }
    return 0;
}

/* fill_slots(descriptors, objs, columns): descriptors[j].__set__(objs[i], columns[j][i])
 * for every object and column. Each descriptor must be a slot's (a member descriptor),
 * and each column as long as objs. One pass over the objects: each is touched once, all
 * its slots set. Setting a slot that held a value frees the old one, which may run
 * Python: objs is walked as a copy, and each column's size is checked at each read. */
PyObject *
autosave_fill_slots(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "fill_slots(descriptors, objs, columns)");
        return NULL;
    }
    Fill fill;
    if (fill_take(&fill, args[1], args[0], args[2], "one column per descriptor") < 0)
        goto fail;
    Py_ssize_t k = PyTuple_GET_SIZE(fill.names), n = PyTuple_GET_SIZE(fill.objs);
    for (Py_ssize_t j = 0; j < k; j++) {
        if (!Py_IS_TYPE(PyTuple_GET_ITEM(fill.names, j), &PyMemberDescr_Type)) {
            PyErr_SetString(PyExc_TypeError, "fill_slots sets slots: member descriptors");
            goto fail;
        }
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *obj = PyTuple_GET_ITEM(fill.objs, i);
        for (Py_ssize_t j = 0; j < k; j++) {
            PyObject *descr = PyTuple_GET_ITEM(fill.names, j);
            PyObject *value = column_item(fill.columns, j, i);
            if (value == NULL)
                goto fail;
            int failed = Py_TYPE(descr)->tp_descr_set(descr, obj, value);
            Py_DECREF(value);
            if (failed < 0)
                goto fail;
        }
    }
    fill_release(&fill);
    Py_RETURN_NONE;
fail:
    fill_release(&fill);
    return NULL;
}

/* fill_lists(lists, lengths, items): extend each (empty) list by its length's run of
 * items, in order. ValueError unless the lengths are ints >= 0 adding up to len(items). */
PyObject *
autosave_fill_lists(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
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

/* fill_attributes(objs, fields, columns): vars(objs[i])[fields[j]] = columns[j][i] for
 * every object and field, in the order of fields: each object's __dict__ looked up once
 * and filled (the Python sets a field at a time, or updates each __dict__ with a dict
 * built per object where setattr could run the class's own code). ValueError
 * unless there is one column per field, each as long as objs; TypeError for an object
 * whose __dict__ is not a dict. Looking __dict__ up, hashing a field and freeing a
 * value a field held may run Python: everything walked is a copy, and each column's
 * size is checked at each read. */
PyObject *
autosave_fill_attributes(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "fill_attributes(objs, fields, columns)");
        return NULL;
    }
    Fill fill;
    PyObject *name = NULL;
    if (fill_take(&fill, args[0], args[1], args[2], "one column per field") < 0)
        goto fail;
    Py_ssize_t n = PyTuple_GET_SIZE(fill.objs);
    if (PyTuple_GET_SIZE(fill.names) == 0)      /* no field: no object is touched */
        n = 0;
    else if ((name = PyUnicode_InternFromString("__dict__")) == NULL)
        goto fail;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *d = PyObject_GetAttr(PyTuple_GET_ITEM(fill.objs, i), name);
        if (d == NULL) {
            if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
                PyErr_Clear();
                PyErr_SetString(PyExc_TypeError, "an object to fill has no __dict__");
            }
            goto fail;
        }
        int failed = PyDict_Check(d) ? set_row(d, &fill, i) : -1;
        if (failed < 0 && !PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "an object's __dict__ is not a dict");
        Py_DECREF(d);
        if (failed < 0)
            goto fail;
    }
    Py_XDECREF(name);
    fill_release(&fill);
    Py_RETURN_NONE;
fail:
    Py_XDECREF(name);
    fill_release(&fill);
    return NULL;
}

/* fill_frames(objs, template, fields, columns): give each object a copy of template (an
 * exact dict) as its __dict__, then set vars(objs[i])[fields[j]] = columns[j][i]. A
 * field must be an exact str the template holds (an entry replaced: no table grows),
 * an object's class one with a __dict__ and object's own __setattr__ (a loading
 * coroutine frame's). ValueError unless there is one column per field, each as long
 * as objs, and every field is in the template; TypeError for a template not a dict or
 * an object of another class. Everything is checked before any object is touched;
 * what a replaced __dict__ or a copy frees may run Python, so the loop walks copies
 * (tuples) and checks each column's size at each read. */
PyObject *
autosave_fill_frames(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "fill_frames(objs, template, fields, columns)");
        return NULL;
    }
    PyObject *template = args[1];
    if (!PyDict_CheckExact(template)) {
        PyErr_SetString(PyExc_TypeError, "fill_frames copies a dict");
        return NULL;
    }
    Py_INCREF(template);
    Fill fill;
    if (fill_take(&fill, args[0], args[2], args[3], "one column per field") < 0)
        goto fail;
    Py_ssize_t k = PyTuple_GET_SIZE(fill.names), n = PyTuple_GET_SIZE(fill.objs);
    for (Py_ssize_t j = 0; j < k; j++) {
        PyObject *field = PyTuple_GET_ITEM(fill.names, j);
        int held = PyUnicode_CheckExact(field) ? PyDict_Contains(template, field) : 0;
        if (held < 0)
            goto fail;
        if (!held) {
            PyErr_SetString(PyExc_ValueError, "a field the template does not hold");
            goto fail;
        }
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyTypeObject *tp = Py_TYPE(PyTuple_GET_ITEM(fill.objs, i));
        if (tp->tp_dictoffset == 0 || tp->tp_setattro != PyObject_GenericSetAttr) {
            PyErr_SetString(PyExc_TypeError,
                            "fill_frames fills objects with a __dict__ and no __setattr__");
            goto fail;
        }
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *d = PyDict_Copy(template);
        if (d == NULL)
            goto fail;
        int failed = set_row(d, &fill, i) < 0
            || PyObject_GenericSetDict(PyTuple_GET_ITEM(fill.objs, i), d, NULL) < 0;
        Py_DECREF(d);
        if (failed)
            goto fail;
    }
    Py_DECREF(template);
    fill_release(&fill);
    Py_RETURN_NONE;
fail:
    Py_DECREF(template);
    fill_release(&fill);
    return NULL;
}

/* fill_dicts(dicts, lengths, keys, values[, check, at_least]): set each (empty) dict's
 * run of entries, in order. ValueError unless the lengths are ints >= 0 adding up to
 * len(keys), with one value per key; TypeError unless every key is of an inline type
 * (hashing one runs no Python code) and every target a dict. Then, given check,
 * check(its keys) for each dict of at least at_least entries, in order (the loader's
 * hash-flood check: what it raises is raised). Everything is checked before anything
 * is filled. The loop walks copies (tuples) that hold every key and value: a value a
 * repeated key replaces (only in a forged file) is not freed inside it, so no __del__
 * and no other Python code runs while it fills. */
PyObject *
autosave_fill_dicts(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if ((nargs != 4 && nargs != 6) || !PyList_Check(args[0]) || !PyList_Check(args[1])
            || !PyList_Check(args[2]) || !PyList_Check(args[3])
            || (nargs == 6 && (!PyLong_Check(args[5])
                               || (args[4] != Py_None && !PyCallable_Check(args[4]))))) {
        PyErr_SetString(PyExc_TypeError,
                        "fill_dicts(dicts: list, lengths: list, keys: list, values: list"
                        "[, check: callable | None, at_least: int])");
        return NULL;
    }
    PyObject *check = nargs == 6 && args[4] != Py_None ? args[4] : NULL;
    Py_ssize_t at_least = 0;
    if (check != NULL) {
        at_least = PyLong_AsSsize_t(args[5]);
        if (at_least == -1 && PyErr_Occurred())
            return NULL;
    }
    PyObject *dicts = args[0], *lengths = args[1], *keys = args[2], *values = args[3];
    Py_ssize_t n = PyList_GET_SIZE(dicts), total = PyList_GET_SIZE(keys), start = 0;
    if (PyList_GET_SIZE(lengths) != n) {
        PyErr_SetString(PyExc_ValueError, "one length per dict");
        return NULL;
    }
    if (PyList_GET_SIZE(values) != total) {
        PyErr_SetString(PyExc_ValueError, "one value per key");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *length = PyList_GET_ITEM(lengths, i);
        Py_ssize_t m = PyLong_Check(length) ? PyLong_AsSsize_t(length) : -1;
        if (m == -1 && PyErr_Occurred())
            PyErr_Clear();
        if (m < 0 || m > total - start) {
            PyErr_SetString(PyExc_ValueError, "the lengths do not add up to the keys");
            return NULL;
        }
        start += m;
        if (!PyDict_Check(PyList_GET_ITEM(dicts, i))) {
            PyErr_SetString(PyExc_TypeError, "fill_dicts fills dicts");
            return NULL;
        }
    }
    if (start != total) {
        PyErr_SetString(PyExc_ValueError, "the lengths do not add up to the keys");
        return NULL;
    }
    for (Py_ssize_t k = 0; k < total; k++) {
        if (!is_inline(PyList_GET_ITEM(keys, k))) {
            PyErr_SetString(PyExc_TypeError, "a dict's key is not an inline value");
            return NULL;
        }
    }
    PyObject *length_list = PySequence_Tuple(lengths), *key_list = PySequence_Tuple(keys),
             *value_list = PySequence_Tuple(values), *dict_list = PySequence_Tuple(dicts);
    PyObject *result = NULL;
    if (length_list == NULL || key_list == NULL || value_list == NULL || dict_list == NULL)
        goto done;
    if (check != NULL) {
        start = 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            Py_ssize_t m = PyLong_AsSsize_t(PyTuple_GET_ITEM(length_list, i));
            if (m >= at_least) {
                PyObject *run = PyTuple_GetSlice(key_list, start, start + m);
                if (run == NULL)
                    goto done;
                PyObject *checked = PyObject_CallOneArg(check, run);
                Py_DECREF(run);
                if (checked == NULL)
                    goto done;
                Py_DECREF(checked);
            }
            start += m;
        }
    }
    start = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *d = PyTuple_GET_ITEM(dict_list, i);
        Py_ssize_t m = PyLong_AsSsize_t(PyTuple_GET_ITEM(length_list, i));
        for (Py_ssize_t j = start; j < start + m; j++) {
            if (PyDict_SetItem(d, PyTuple_GET_ITEM(key_list, j),
                               PyTuple_GET_ITEM(value_list, j)) < 0)
                goto done;
        }
        start += m;
    }
    result = Py_NewRef(Py_None);
done:
    Py_XDECREF(length_list);
    Py_XDECREF(key_list);
    Py_XDECREF(value_list);
    Py_XDECREF(dict_list);
    return result;
}

/* decode_codes(strings, codes) -> [strings[c] for c in codes], a coded column's values
 * (read from a file: checked). TypeError unless strings is a list of exact strs;
 * ValueError unless every code is an exact int (not a bool) from 0 to len(strings) - 1.
 * Everything is checked before the result is made; nothing runs Python code. */
PyObject *
autosave_decode_codes(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyList_Check(args[0]) || !PyList_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "decode_codes(strings: list, codes: list)");
        return NULL;
    }
    PyObject *strings = args[0], *codes = args[1];
    Py_ssize_t m = PyList_GET_SIZE(strings), n = PyList_GET_SIZE(codes);
    for (Py_ssize_t j = 0; j < m; j++) {
        if (!PyUnicode_CheckExact(PyList_GET_ITEM(strings, j))) {
            PyErr_SetString(PyExc_TypeError, "a coded column's strings are strs");
            return NULL;
        }
    }
    PyObject *out = PyList_New(n);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *code = PyList_GET_ITEM(codes, i);
        Py_ssize_t c = PyLong_CheckExact(code) ? PyLong_AsSsize_t(code) : -1;
        if (c == -1 && PyErr_Occurred())
            PyErr_Clear();
        if (c < 0 || c >= m) {
            for (Py_ssize_t j = i; j < n; j++)
                PyList_SET_ITEM(out, j, Py_NewRef(Py_None));
            Py_DECREF(out);
            PyErr_SetString(PyExc_ValueError, "a code outside the strings");
            return NULL;
        }
        PyList_SET_ITEM(out, i, Py_NewRef(PyList_GET_ITEM(strings, c)));
    }
    return out;
}
