/*
 * The tuple codec's decoder in C: `unpack_with_offsets` and `item_ends` of tuplecodec.py for the
 * types its fast path handles (None, bytes, strings, nested tuples, integers of up to 8 bytes,
 * doubles, booleans), giving the same values and offsets.
 *
 * Listings decode one primary B-tree key per row; in Python that decoding was the largest single
 * cost of a top 10 on the embedded store.
 *
 * Anything else (big integers, UUIDs, versionstamps, single floats, nesting deeper than
 * MAX_DEPTH) goes to the fallbacks tuplecodec.py registers with `set_fallbacks`: the tuple layer
 * (fdb.tuple), exactly as the pure-Python path does, and the pure-Python functions for input
 * that is not `bytes`.  Malformed input (a string, nested tuple, integer or double cut short,
 * invalid UTF-8) raises ValueError; nothing is read past the end of the input.
 *
 * Encodings: see tuplecodec.py's docstring.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* Deeper nesting goes to the tuple layer: a bound on this module's C recursion. */
#define MAX_DEPTH 64

/* What the decoding functions return instead of a position: an exception is set (FAILED), or
   the input holds something only the tuple layer decodes (UNSUPPORTED, no exception set). */
#define FAILED (-1)
#define UNSUPPORTED (-2)

/* Registered by tuplecodec.py (set_fallbacks). */
static PyObject *python_unpack = NULL;     /* the pure-Python unpack_with_offsets(data, count) */
static PyObject *python_item_ends = NULL;  /* the pure-Python item_ends(data, count) */
static PyObject *tuple_layer_unpack = NULL; /* (data, count) -> (items, offsets) through fdb.tuple */

typedef struct {
    const unsigned char *data;
    Py_ssize_t size;
} Input;

static Py_ssize_t malformed(const char *what) {
    PyErr_SetString(PyExc_ValueError, what);
    return FAILED;
}

/* The position of the 00 ending the escaped byte string that starts at `pos` (its 00s written
   as 00 ff), and in `escapes` how many 00 ff it holds. */
static Py_ssize_t string_end(const Input *in, Py_ssize_t pos, Py_ssize_t *escapes) {
    Py_ssize_t found = 0;
    for (;;) {
        const unsigned char *zero = memchr(in->data + pos, 0, (size_t)(in->size - pos));
        if (zero == NULL) return malformed("a string has no terminating byte");
        Py_ssize_t end = zero - in->data;
        if (end + 1 < in->size && in->data[end + 1] == 0xff) {
            found++;
            pos = end + 2;
            continue;
        }
        *escapes = found;
        return end;
    }
}

/* Bytes (code 01) or a string (02) starting at `pos` (after the code); its end in `next`. */
static PyObject *decode_string(const Input *in, Py_ssize_t pos, int code, Py_ssize_t *next) {
    Py_ssize_t escapes;
    Py_ssize_t end = string_end(in, pos, &escapes);
    if (end < 0) return NULL;
    *next = end + 1;
    const char *start = (const char *)in->data + pos;
    Py_ssize_t length = end - pos;
    if (escapes == 0)
        return code == 0x02 ? PyUnicode_DecodeUTF8(start, length, NULL) : PyBytes_FromStringAndSize(start, length);
    PyObject *raw = PyBytes_FromStringAndSize(NULL, length - escapes);
    if (raw == NULL) return NULL;
    char *out = PyBytes_AS_STRING(raw);
    for (Py_ssize_t i = 0; i < length; i++) {
        *out++ = start[i];
        if (start[i] == 0) i++; /* skip its ff: string_end saw one after every 00 before the end */
    }
    if (code == 0x01) return raw;
    PyObject *text = PyUnicode_DecodeUTF8(PyBytes_AS_STRING(raw), length - escapes, NULL);
    Py_DECREF(raw);
    return text;
}

/* The length of an integer's big-endian data (codes 0c..1c), FAILED if the input cuts it short. */
static Py_ssize_t int_length(const Input *in, Py_ssize_t pos, int code) {
    Py_ssize_t n = code >= 0x14 ? code - 0x14 : 0x14 - code;
    if (n > in->size - pos - 1) return malformed("an integer is cut short");
    return n;
}

static PyObject *decode_int(const Input *in, Py_ssize_t pos, int code, Py_ssize_t *next) {
    Py_ssize_t n = int_length(in, pos, code);
    if (n < 0) return NULL;
    uint64_t value = 0;
    for (Py_ssize_t i = 1; i <= n; i++) value = value << 8 | in->data[pos + i];
    *next = pos + 1 + n;
    if (code >= 0x14) return PyLong_FromUnsignedLongLong(value);
    /* negatives are stored in one's complement of n bytes: the value is data - (2**(8n) - 1) */
    uint64_t magnitude = (n == 8 ? UINT64_MAX : ((uint64_t)1 << (8 * n)) - 1) - value;
    if (magnitude <= (uint64_t)INT64_MAX) return PyLong_FromLongLong(-(long long)magnitude);
    PyObject *positive = PyLong_FromUnsignedLongLong(magnitude);
    if (positive == NULL) return NULL;
    PyObject *negative = PyNumber_Negative(positive);
    Py_DECREF(positive);
    return negative;
}

static PyObject *decode_double(const Input *in, Py_ssize_t pos, Py_ssize_t *next) {
    if (in->size - pos - 1 < 8) {
        malformed("a double is cut short");
        return NULL;
    }
    uint64_t bits = 0;
    for (int i = 1; i <= 8; i++) bits = bits << 8 | in->data[pos + i];
    /* stored with the sign bit flipped, and every bit when negative, so bytes order as numbers */
    bits = bits & ((uint64_t)1 << 63) ? bits ^ ((uint64_t)1 << 63) : ~bits;
    double value;
    memcpy(&value, &bits, sizeof value);
    *next = pos + 9;
    return PyFloat_FromDouble(value);
}

/* Decodes items from `pos` on into the list `items`: up to `wanted` of them, or at `depth` > 0
   those of a nested tuple through its terminating 00.  Where each item ends goes into the list
   `offsets` when it is not NULL.  Returns the end, FAILED or UNSUPPORTED. */
static Py_ssize_t decode_items(const Input *in, Py_ssize_t pos, Py_ssize_t wanted, PyObject *items, PyObject *offsets,
                               int depth) {
    while (pos < in->size && PyList_GET_SIZE(items) < wanted) {
        int code = in->data[pos];
        PyObject *item;
        Py_ssize_t next = 0;
        if (code >= 0x0c && code <= 0x1c) {
            item = decode_int(in, pos, code, &next);
        } else if (code == 0x01 || code == 0x02) {
            item = decode_string(in, pos + 1, code, &next);
        } else if (code == 0x00) {
            if (depth == 0) {
                next = pos + 1;
            } else if (pos + 1 < in->size && in->data[pos + 1] == 0xff) {
                next = pos + 2; /* None inside a nested tuple */
            } else {
                return pos + 1; /* the nested tuple's end */
            }
            item = Py_NewRef(Py_None);
        } else if (code == 0x21) {
            item = decode_double(in, pos, &next);
        } else if (code == 0x26 || code == 0x27) {
            item = Py_NewRef(code == 0x27 ? Py_True : Py_False);
            next = pos + 1;
        } else if (code == 0x05 && depth < MAX_DEPTH) {
            PyObject *inner = PyList_New(0);
            if (inner == NULL) return FAILED;
            next = decode_items(in, pos + 1, PY_SSIZE_T_MAX, inner, NULL, depth + 1);
            if (next < 0) {
                Py_DECREF(inner);
                return next;
            }
            item = PyList_AsTuple(inner);
            Py_DECREF(inner);
        } else {
            return UNSUPPORTED;
        }
        if (item == NULL) return FAILED;
        int appended = PyList_Append(items, item);
        Py_DECREF(item);
        if (appended < 0) return FAILED;
        pos = next;
        if (offsets != NULL) {
            PyObject *offset = PyLong_FromSsize_t(pos);
            if (offset == NULL) return FAILED;
            appended = PyList_Append(offsets, offset);
            Py_DECREF(offset);
            if (appended < 0) return FAILED;
        }
    }
    if (depth > 0) return malformed("a nested tuple has no terminating byte");
    return pos;
}

/* The position after the item at `pos` (`depth` > 0 inside a nested tuple), found without
   decoding it; FAILED or UNSUPPORTED. */
static Py_ssize_t skip_item(const Input *in, Py_ssize_t pos, int depth) {
    int code = in->data[pos];
    if (code >= 0x0c && code <= 0x1c) {
        Py_ssize_t n = int_length(in, pos, code);
        return n < 0 ? FAILED : pos + 1 + n;
    }
    if (code == 0x01 || code == 0x02) {
        Py_ssize_t escapes;
        Py_ssize_t end = string_end(in, pos + 1, &escapes);
        return end < 0 ? FAILED : end + 1;
    }
    if (code == 0x21) return in->size - pos - 1 < 8 ? malformed("a double is cut short") : pos + 9;
    if (code == 0x26 || code == 0x27) return pos + 1;
    if (code == 0x00) return pos + 1 + (depth > 0); /* inside a nested tuple: 00 ff */
    if (code != 0x05 || depth >= MAX_DEPTH) return UNSUPPORTED;
    pos++;
    for (;;) {
        if (pos >= in->size) return malformed("a nested tuple has no terminating byte");
        if (in->data[pos] == 0x00 && !(pos + 1 < in->size && in->data[pos + 1] == 0xff)) return pos + 1;
        pos = skip_item(in, pos, depth + 1);
        if (pos < 0) return pos;
    }
}

/* (data, count) from positional or keyword arguments; count None means every item. */
static int parse_arguments(const char *name, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, int count_required,
                           PyObject **data, PyObject **count) {
    static const char *const names[] = {"data", "count"};
    PyObject *given[2] = {NULL, NULL};
    Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    if (nargs > 2) {
        PyErr_Format(PyExc_TypeError, "%s() takes at most 2 arguments (%zd given)", name, nargs + nkw);
        return -1;
    }
    for (Py_ssize_t i = 0; i < nargs; i++) given[i] = args[i];
    for (Py_ssize_t k = 0; k < nkw; k++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, k);
        int slot = -1;
        for (int j = 0; j < 2; j++)
            if (PyUnicode_CompareWithASCIIString(key, names[j]) == 0) slot = j;
        if (slot < 0 || given[slot] != NULL) {
            PyErr_Format(PyExc_TypeError, "%s() got an unexpected or repeated argument %R", name, key);
            return -1;
        }
        given[slot] = args[nargs + k];
    }
    if (given[0] == NULL || (count_required && given[1] == NULL)) {
        PyErr_Format(PyExc_TypeError, "%s() is missing a required argument", name);
        return -1;
    }
    *data = given[0];
    *count = given[1] == NULL ? Py_None : given[1];
    return 0;
}

/* The number of items asked for (count None, where allowed: no bound), -1 with an exception set. */
static int wanted_items(PyObject *count, int none_allowed, Py_ssize_t *wanted) {
    if (count == Py_None && none_allowed) {
        *wanted = PY_SSIZE_T_MAX;
        return 0;
    }
    if (!PyLong_Check(count)) {
        PyErr_Format(PyExc_TypeError, "count must be an int%s, not %.100s", none_allowed ? " or None" : "",
                     Py_TYPE(count)->tp_name);
        return -1;
    }
    *wanted = PyNumber_AsSsize_t(count, NULL); /* clamped: a huge count asks for every item */
    return *wanted == -1 && PyErr_Occurred() ? -1 : 0;
}

static PyObject *call_fallback(PyObject *fallback, PyObject *data, PyObject *count) {
    if (fallback == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_tuplecodec has no fallbacks: tuplecodec.py registers them");
        return NULL;
    }
    PyObject *args[2] = {data, count};
    return PyObject_Vectorcall(fallback, args, 2, NULL);
}

static PyObject *unpack_with_offsets(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    PyObject *data, *count;
    Py_ssize_t wanted;
    if (parse_arguments("unpack_with_offsets", args, nargs, kwnames, 0, &data, &count) < 0) return NULL;
    if (!PyBytes_CheckExact(data)) return call_fallback(python_unpack, data, count);
    if (wanted_items(count, 1, &wanted) < 0) return NULL;
    Input in = {(const unsigned char *)PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data)};
    PyObject *items = PyList_New(0);
    PyObject *offsets = PyList_New(1);
    if (items == NULL || offsets == NULL) goto failed;
    PyList_SET_ITEM(offsets, 0, PyLong_FromLong(0)); /* a cached small int: cannot fail */
    Py_ssize_t end = decode_items(&in, 0, wanted, items, offsets, 0);
    if (end == UNSUPPORTED) {
        Py_DECREF(items);
        Py_DECREF(offsets);
        return call_fallback(tuple_layer_unpack, data, count);
    }
    if (end < 0) goto failed;
    PyObject *decoded = PyList_AsTuple(items);
    Py_DECREF(items);
    if (decoded == NULL) {
        Py_DECREF(offsets);
        return NULL;
    }
    PyObject *result = PyTuple_New(2);
    if (result == NULL) {
        Py_DECREF(decoded);
        Py_DECREF(offsets);
        return NULL;
    }
    PyTuple_SET_ITEM(result, 0, decoded);
    PyTuple_SET_ITEM(result, 1, offsets);
    return result;
failed:
    Py_XDECREF(items);
    Py_XDECREF(offsets);
    return NULL;
}

static PyObject *item_ends(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    PyObject *data, *count;
    Py_ssize_t wanted;
    if (parse_arguments("item_ends", args, nargs, kwnames, 1, &data, &count) < 0) return NULL;
    if (!PyBytes_CheckExact(data)) return call_fallback(python_item_ends, data, count);
    if (wanted_items(count, 0, &wanted) < 0) return NULL;
    Input in = {(const unsigned char *)PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data)};
    PyObject *ends = PyList_New(0);
    if (ends == NULL) return NULL;
    Py_ssize_t pos = 0;
    while (PyList_GET_SIZE(ends) < wanted) {
        if (pos >= in.size) {
            malformed("fewer items than asked for");
            goto failed;
        }
        pos = skip_item(&in, pos, 0);
        if (pos == UNSUPPORTED) { /* as the pure-Python path: the ends of the tuple layer's items */
            Py_DECREF(ends);
            PyObject *unpacked = call_fallback(tuple_layer_unpack, data, count);
            if (unpacked == NULL) return NULL;
            PyObject *offsets = PyTuple_Check(unpacked) && PyTuple_GET_SIZE(unpacked) == 2
                                    ? PyTuple_GET_ITEM(unpacked, 1)
                                    : NULL;
            PyObject *sliced = offsets != NULL && PyList_Check(offsets)
                                   ? PyList_GetSlice(offsets, 1, PyList_GET_SIZE(offsets))
                                   : PyErr_Format(PyExc_TypeError, "the tuple layer's fallback gave no offsets");
            Py_DECREF(unpacked);
            return sliced;
        }
        if (pos < 0) goto failed;
        PyObject *end = PyLong_FromSsize_t(pos);
        if (end == NULL) goto failed;
        int appended = PyList_Append(ends, end);
        Py_DECREF(end);
        if (appended < 0) goto failed;
    }
    return ends;
failed:
    Py_DECREF(ends);
    return NULL;
}

static PyObject *set_fallbacks(PyObject *Py_UNUSED(module), PyObject *args) {
    PyObject *unpack, *ends, *tuple_layer;
    if (!PyArg_ParseTuple(args, "OOO:set_fallbacks", &unpack, &ends, &tuple_layer)) return NULL;
    if (!PyCallable_Check(unpack) || !PyCallable_Check(ends) || !PyCallable_Check(tuple_layer)) {
        PyErr_SetString(PyExc_TypeError, "set_fallbacks() takes three callables");
        return NULL;
    }
    Py_XSETREF(python_unpack, Py_NewRef(unpack));
    Py_XSETREF(python_item_ends, Py_NewRef(ends));
    Py_XSETREF(tuple_layer_unpack, Py_NewRef(tuple_layer));
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"unpack_with_offsets", (PyCFunction)(void (*)(void))unpack_with_offsets, METH_FASTCALL | METH_KEYWORDS,
     "unpack_with_offsets(data, count=None): tuplecodec.unpack_with_offsets, in C."},
    {"item_ends", (PyCFunction)(void (*)(void))item_ends, METH_FASTCALL | METH_KEYWORDS,
     "item_ends(data, count): tuplecodec.item_ends, in C."},
    {"set_fallbacks", set_fallbacks, METH_VARARGS,
     "set_fallbacks(python_unpack, python_item_ends, tuple_layer_unpack): where input this module does not "
     "decode goes (input other than bytes; types only the tuple layer decodes)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_tuplecodec", "The tuple codec's decoder in C (see the C source and tuplecodec.py).", -1,
    module_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__tuplecodec(void) { return PyModule_Create(&module_def); }
