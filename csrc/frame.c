/* framed: a save's bytes made around its encoded body in place.
 *
 * The body of a large save is mostly array data: joining a header and the body copies
 * it into a fresh allocation, which for tens of MiB costs more than encoding it (every
 * page of the copy is faulted in). Instead the encoder's own result, which nothing else
 * holds yet, is grown by the header's size (realloc: for a large block the pages are
 * remapped, not copied) and the body moved up within memory already touched. The
 * checksum is the caller's function (xxh3, autosave.format.wire.checksum), given views
 * of the header and body that are released before this returns.
 */
#include "speedups.h"

#define PREFIX 5                /* magic and version, given by the caller */
#define HEAD (PREFIX + 8)       /* then the body's length: what the checksum covers first */
#define FRAME (HEAD + 8)        /* then the checksum */

static void
put_u64(char *p, unsigned long long v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (char)((v >> (8 * i)) & 0xff);
}

/* checksum(view of the header, view of the body) as an unsigned 64-bit int, or -1
 * with an exception set (the answer then is (unsigned long long)-1 too). */
static int
call_checksum(PyObject *checksum, char *p, Py_ssize_t n, unsigned long long *out)
{
    PyObject *head = PyMemoryView_FromMemory(p, HEAD, PyBUF_READ);
    PyObject *body = head ? PyMemoryView_FromMemory(p + FRAME, n, PyBUF_READ) : NULL;
    PyObject *result = body ? PyObject_CallFunctionObjArgs(checksum, head, body, NULL) : NULL;
    int failed = result == NULL;
    /* the views point into the save: none may outlive this call (released with the
     * checksum's error, if any, kept aside) */
#if PY_VERSION_HEX >= 0x030C0000
    PyObject *error = PyErr_GetRaisedException();
#else
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    PyObject *error = type;
#endif
    PyObject *views[2] = {head, body};
    for (int i = 0; i < 2; i++) {
        if (views[i] == NULL)
            continue;
        PyObject *done = PyObject_CallMethod(views[i], "release", NULL);
        if (done == NULL)
            failed = 1;
        Py_XDECREF(done);
        Py_DECREF(views[i]);
    }
    if (error != NULL) {
        if (PyErr_Occurred())           /* a release failed as well: the first error wins */
            PyErr_Clear();
#if PY_VERSION_HEX >= 0x030C0000
        PyErr_SetRaisedException(error);
#else
        PyErr_Restore(type, value, traceback);
#endif
    }
    if (!failed) {
        *out = PyLong_AsUnsignedLongLong(result);
        failed = *out == (unsigned long long)-1 && PyErr_Occurred();
    }
    Py_XDECREF(result);
    return failed ? -1 : 0;
}

PyObject *
autosave_framed(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "framed(encode, value, prefix, checksum)");
        return NULL;
    }
    PyObject *prefix = args[2];
    if (!PyBytes_CheckExact(prefix) || PyBytes_GET_SIZE(prefix) != PREFIX) {
        PyErr_SetString(PyExc_TypeError, "framed: the prefix is 5 bytes");
        return NULL;
    }
    PyObject *out = PyObject_CallOneArg(args[0], args[1]);
    if (out == NULL)
        return NULL;
    if (!PyBytes_CheckExact(out)) {
        PyErr_SetString(PyExc_TypeError, "framed: the encoder gave no bytes");
        Py_DECREF(out);
        return NULL;
    }
    Py_ssize_t n = PyBytes_GET_SIZE(out);
    if (n > PY_SSIZE_T_MAX - FRAME) {
        Py_DECREF(out);
        return PyErr_NoMemory();
    }
    if (Py_REFCNT(out) == 1) {
        if (_PyBytes_Resize(&out, n + FRAME) < 0)   /* frees out on failure */
            return NULL;
        memmove(PyBytes_AS_STRING(out) + FRAME, PyBytes_AS_STRING(out), (size_t)n);
    }
    else {  /* bytes someone else holds (an encoder's, CPython's shared one-byte ones):
             * a new object, never a resize of theirs */
        PyObject *fresh = PyBytes_FromStringAndSize(NULL, n + FRAME);
        if (fresh != NULL)
            memcpy(PyBytes_AS_STRING(fresh) + FRAME, PyBytes_AS_STRING(out), (size_t)n);
        Py_SETREF(out, fresh);
        if (out == NULL)
            return NULL;
    }
    char *p = PyBytes_AS_STRING(out);
    memcpy(p, PyBytes_AS_STRING(prefix), PREFIX);
    put_u64(p + PREFIX, (unsigned long long)n);
    unsigned long long sum;
    if (call_checksum(args[3], p, n, &sum) < 0) {
        Py_DECREF(out);
        return NULL;
    }
    put_u64(p + HEAD, sum);
    return out;
}
