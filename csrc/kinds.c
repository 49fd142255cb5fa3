/* The types a save's columns hold, asked at C speed: the set of them, a mixed column
 * split into its inline values and the objects it refers to, the objects a column met
 * grouped by type, and the dicts whose keys are all inline values told apart. A column
 * read off the objects (columns.c) comes here before anything is written of it. */
#include "speedups.h"

/* What a set said of the few types a column holds. A column of mixed values alternates
 * between a handful of types nearly every item (str, int, float, list, dict), and asking
 * the set each time cost more than the rest of a pass: the cache is searched by
 * address, which runs no Python code, and only a type it has not seen reaches the set.
 * A column of more distinct types than it holds asks the set for the others. */
#define TYPE_CACHE 8
typedef struct {
    PyTypeObject *type[TYPE_CACHE];
    int answer[TYPE_CACHE];
    int n;
} TypeCache;

/* The answer cached for t, or -1 when there is none. */
static inline int
type_cached(const TypeCache *cache, PyTypeObject *t)
{
    for (int k = 0; k < cache->n; k++)
        if (cache->type[k] == t)
            return cache->answer[k];
    return -1;
}

static inline void
type_cache(TypeCache *cache, PyTypeObject *t, int answer)
{
    if (cache->n < TYPE_CACHE) {
        cache->type[cache->n] = t;
        cache->answer[cache->n++] = answer;
    }
}

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
    TypeCache added = {.n = 0};       /* types already in out */
    Py_ssize_t n = PyTuple_GET_SIZE(items);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyTypeObject *t = Py_TYPE(PyTuple_GET_ITEM(items, i));
        if (t == last)                  /* runs of one type are the common case */
            continue;
        last = t;
        if (type_cached(&added, t) >= 0)
            continue;
        if (in_order != NULL) {
            int found = PySet_Contains(out, (PyObject *)t);
            if (found < 0 || (!found && PyList_Append(in_order, (PyObject *)t) < 0))
                goto fail;
        }
        if (PySet_Add(out, (PyObject *)t) < 0)
            goto fail;
        type_cache(&added, t, 1);
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
 * type is in inline_types, 1 for any other; the items of each kind, in order. The mask
 * first, asking the set once per type; then each list made at its size and filled. */
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
    Py_ssize_t n = PyTuple_GET_SIZE(items), inlined = 0;
    if ((mask = PyBytes_FromStringAndSize(NULL, n)) == NULL)
        goto fail;
    char *bits = PyBytes_AS_STRING(mask);
    PyTypeObject *last = NULL;
    int last_inline = 0;
    TypeCache seen = {.n = 0};
    for (Py_ssize_t i = 0; i < n; i++) {
        PyTypeObject *t = Py_TYPE(PyTuple_GET_ITEM(items, i));
        if (t != last) {
            last = t;
            if ((last_inline = type_cached(&seen, t)) < 0) {
                if ((last_inline = PySet_Contains(types, (PyObject *)t)) < 0)
                    goto fail;
                type_cache(&seen, t, last_inline);
            }
        }
        bits[i] = !last_inline;
        inlined += last_inline;
    }
    /* items is a tuple of its own: what the set ran cannot have changed it */
    if ((inline_ = PyList_New(inlined)) == NULL || (refs = PyList_New(n - inlined)) == NULL)
        goto fail;
    Py_ssize_t a = 0, b = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = Py_NewRef(PyTuple_GET_ITEM(items, i));
        if (bits[i])
            PyList_SET_ITEM(refs, b++, item);
        else
            PyList_SET_ITEM(inline_, a++, item);
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
