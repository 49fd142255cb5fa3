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

/* writable: a large array's data, loaded with one copy.
 *
 * msgpack decodes a bin into a new bytes object: a writeable array copying it would
 * hold the array's data twice at the peak. When nothing but the record being built
 * and its resolved values hold that bytes object, nothing else can ever read it: its
 * memory is handed out as a writeable buffer (an OwnedBytes, which keeps it alive),
 * and both lists let go of it. Otherwise (someone else holds it: autosave.copy's walk,
 * a caller's own records) the buffer is a copy, a bytearray. */
typedef struct {
    PyObject_HEAD
    PyObject *bytes;             /* the bytes whose memory this exports, writeable */
} OwnedObject;

static int
owned_getbuffer(PyObject *self, Py_buffer *view, int flags)
{
    PyObject *b = ((OwnedObject *)self)->bytes;
    return PyBuffer_FillInfo(view, self, PyBytes_AS_STRING(b), PyBytes_GET_SIZE(b), 0, flags);
}

static void
owned_dealloc(PyObject *self)
{
    PyTypeObject *type = Py_TYPE(self);
    Py_CLEAR(((OwnedObject *)self)->bytes);
    type->tp_free(self);
    Py_DECREF(type);
}

static PyType_Slot owned_slots[] = {
    {Py_bf_getbuffer, owned_getbuffer},
    {Py_tp_dealloc, owned_dealloc},
    {Py_tp_doc, "The memory of a bytes object nothing else holds, writeable (writable())."},
    {0, NULL},
};

static PyType_Spec owned_spec = {
    "autosave._speedups.OwnedBytes", sizeof(OwnedObject), 0, Py_TPFLAGS_DEFAULT, owned_slots,
};

static PyObject *owned_type = NULL;       /* made at the first call, kept */

PyObject *
autosave_writable(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3 || !PyList_CheckExact(args[0]) || !PyList_CheckExact(args[1])
            || !PyLong_CheckExact(args[2])) {
        PyErr_SetString(PyExc_TypeError, "writable(items, holder, index): two lists, an int");
        return NULL;
    }
    PyObject *items = args[0], *holder = args[1];
    Py_ssize_t i = PyLong_AsSsize_t(args[2]);
    if (i == -1 && PyErr_Occurred())
        return NULL;
    if (i < 0 || i >= PyList_GET_SIZE(items)) {
        PyErr_SetString(PyExc_IndexError, "writable: index out of range");
        return NULL;
    }
    PyObject *data = PyList_GET_ITEM(items, i);          /* borrowed: no call below */
    if (!PyBytes_CheckExact(data)) {
        PyErr_SetString(PyExc_TypeError, "writable: the item is not bytes");
        return NULL;
    }
    int held = items != holder && i < PyList_GET_SIZE(holder)
        && PyList_GET_ITEM(holder, i) == data;
    /* a bytes object of one byte or none may be CPython's shared one: never taken */
    if (PyBytes_GET_SIZE(data) < 2 || Py_REFCNT(data) != 1 + held)
        return PyByteArray_FromObject(data);
    if (owned_type == NULL) {
        owned_type = PyType_FromSpec(&owned_spec);
        if (owned_type == NULL)
            return NULL;
    }
    OwnedObject *owned = PyObject_New(OwnedObject, (PyTypeObject *)owned_type);
    if (owned == NULL)
        return NULL;
    Py_INCREF(data);
    owned->bytes = data;
    PyList_SET_ITEM(items, i, Py_NewRef(Py_None));
    if (held)
        PyList_SET_ITEM(holder, i, Py_NewRef(Py_None));
    Py_DECREF(data);                                      /* one per list let go */
    if (held)
        Py_DECREF(data);
    return (PyObject *)owned;
}
