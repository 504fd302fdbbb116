/*
 * Direct calls into the FoundationDB client library for the store layer's hot path.
 *
 * The `fdb` binding reaches libfdb_c through ctypes: every read builds ctypes structures,
 * waits through a Python callback that the client's network thread must take the GIL to run,
 * and turns each key-value of a range into a Python object of its own.  This module makes the
 * same C calls on the binding's own transaction (its `tpointer`, through function addresses
 * the binding's ctypes library hands over: no header or link-time dependency on libfdb_c),
 * waits with `fdb_future_block_until_ready` with the GIL released, and builds a range's
 * answer as a list of (key, value) byte-string pairs in one pass.
 *
 * Errors are raised as the binding's FDBError(code), so retry loops work unchanged.  The
 * transaction's life stays the binding's: each object here holds a reference to it.
 *
 * Python side: fdb_leaderboard/store/fdb_backend.py (which falls back to the binding when
 * this module is not built).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pythread.h>
#include <semaphore.h>
#include <stdint.h>
#include <time.h>

typedef struct FDBFuture FDBFuture;
typedef struct FDBTransaction FDBTransaction;
typedef int fdb_error_t;
typedef int fdb_bool_t;

#pragma pack(push, 4)
typedef struct {
    const uint8_t *key;
    int key_length;
    const uint8_t *value;
    int value_length;
} FDBKeyValue;
#pragma pack(pop)

/* The C API's signatures (fdb_c.h, API versions 610 to 730 alike). */
static struct {
    FDBFuture *(*transaction_get)(FDBTransaction *, const uint8_t *, int, fdb_bool_t);
    FDBFuture *(*transaction_get_range)(FDBTransaction *, const uint8_t *, int, fdb_bool_t, int, const uint8_t *, int,
                                        fdb_bool_t, int, int, int, int, int, fdb_bool_t, fdb_bool_t);
    void (*transaction_set)(FDBTransaction *, const uint8_t *, int, const uint8_t *, int);
    void (*transaction_clear)(FDBTransaction *, const uint8_t *, int);
    void (*transaction_clear_range)(FDBTransaction *, const uint8_t *, int, const uint8_t *, int);
    void (*transaction_atomic_op)(FDBTransaction *, const uint8_t *, int, const uint8_t *, int, int);
    fdb_error_t (*transaction_add_conflict_range)(FDBTransaction *, const uint8_t *, int, const uint8_t *, int, int);
    FDBFuture *(*transaction_commit)(FDBTransaction *);
    fdb_error_t (*future_block_until_ready)(FDBFuture *);
    fdb_error_t (*future_set_callback)(FDBFuture *, void (*)(FDBFuture *, void *), void *);
    void (*future_cancel)(FDBFuture *);
    fdb_bool_t (*future_is_ready)(FDBFuture *);
    fdb_error_t (*future_get_error)(FDBFuture *);
    fdb_error_t (*future_get_value)(FDBFuture *, fdb_bool_t *, const uint8_t **, int *);
    fdb_error_t (*future_get_keyvalue_array)(FDBFuture *, const FDBKeyValue **, int *, fdb_bool_t *);
    void (*future_destroy)(FDBFuture *);
} api;

static PyObject *fdb_error_class = NULL; /* the binding's FDBError */
static unsigned long main_thread = 0;    /* the interpreter's main thread (signals are handled there) */
static int bound = 0;

#define STREAMING_WANT_ALL (-2)
#define STREAMING_EXACT 0
#define CONFLICT_RANGE_READ 0

static PyObject *raise_fdb_error(fdb_error_t code) {
    PyObject *error = PyObject_CallFunction(fdb_error_class, "i", code);
    if (error != NULL) {
        PyErr_SetObject(fdb_error_class, error);
        Py_DECREF(error);
    }
    return NULL;
}

static void post_ready(FDBFuture *future, void *waiter) { sem_post((sem_t *)waiter); }

/* The main thread waits in slices of 100 ms and runs signal handlers in between, so Ctrl-C stops
   a call to a cluster that does not answer (as the binding's waits allow).  A handler that raises
   cancels the future and returns -1 once its callback has run (it runs once, cancelled or not). */
static fdb_error_t wait_interruptibly(FDBFuture *future) {
    sem_t ready;
    sem_init(&ready, 0, 0);
    fdb_error_t error = api.future_set_callback(future, post_ready, &ready);
    if (error) {
        sem_destroy(&ready);
        return error;
    }
    for (;;) {
        int done;
        Py_BEGIN_ALLOW_THREADS
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 100 * 1000 * 1000;
        if (until.tv_nsec >= 1000 * 1000 * 1000) {
            until.tv_sec += 1;
            until.tv_nsec -= 1000 * 1000 * 1000;
        }
        done = sem_timedwait(&ready, &until) == 0;
        Py_END_ALLOW_THREADS
        if (done) break;
        if (PyErr_CheckSignals() < 0) {
            api.future_cancel(future);
            Py_BEGIN_ALLOW_THREADS
            while (sem_wait(&ready) != 0) {
            }
            Py_END_ALLOW_THREADS
            sem_destroy(&ready);
            return -1;
        }
    }
    sem_destroy(&ready);
    return api.future_get_error(future);
}

/* Wait for `future` (the GIL released unless it is ready) and return its error code, or -1 with a
   Python exception set (a signal handler raised while the main thread waited). */
static fdb_error_t wait_ready(FDBFuture *future) {
    fdb_error_t error;
    if (!api.future_is_ready(future)) {
        if (PyThread_get_thread_ident() == main_thread) return wait_interruptibly(future);
        Py_BEGIN_ALLOW_THREADS
        error = api.future_block_until_ready(future);
        Py_END_ALLOW_THREADS
        if (error) return error;
    }
    return api.future_get_error(future);
}

/* NULL with the exception for a failed wait: FDBError(code), or what a signal handler raised. */
static PyObject *wait_failed(fdb_error_t error) {
    return error < 0 ? NULL : raise_fdb_error(error);
}

/* -- Transaction: the binding's transaction, reached directly ---------------------------- */

typedef struct {
    PyObject_HEAD
    PyObject *owner; /* the binding's Transaction: keeps the pointer alive */
    FDBTransaction *tr;
} Transaction;

/* -- a point read in flight -------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    PyObject *owner;
    FDBFuture *future;
    PyObject *result; /* once waited on */
} ValueFuture;

static void ValueFuture_dealloc(ValueFuture *self) {
    if (self->future) api.future_destroy(self->future);
    Py_XDECREF(self->owner);
    Py_XDECREF(self->result);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *ValueFuture_wait(ValueFuture *self, PyObject *unused) {
    if (self->result == NULL) {
        fdb_error_t error = wait_ready(self->future);
        if (error) return wait_failed(error);
        fdb_bool_t present = 0;
        const uint8_t *value = NULL;
        int length = 0;
        error = api.future_get_value(self->future, &present, &value, &length);
        if (error) return raise_fdb_error(error);
        self->result = present ? PyBytes_FromStringAndSize((const char *)value, length) : Py_NewRef(Py_None);
        if (self->result == NULL) return NULL;
        api.future_destroy(self->future);
        self->future = NULL;
    }
    return Py_NewRef(self->result);
}

static PyMethodDef ValueFuture_methods[] = {
    {"wait", (PyCFunction)ValueFuture_wait, METH_NOARGS, "The value (bytes, or None if absent); waits for it."},
    {NULL},
};

static PyTypeObject ValueFutureType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "fdb_leaderboard.store._fdb_direct.ValueFuture",
    .tp_basicsize = sizeof(ValueFuture),
    .tp_dealloc = (destructor)ValueFuture_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A point read in flight.",
    .tp_methods = ValueFuture_methods,
};

/* -- a range read in flight -------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    PyObject *owner;
    FDBTransaction *tr;
    FDBFuture *future;
    PyObject *begin; /* bytes: the next batch's bounds (key selectors first_greater_or_equal, */
    PyObject *end;   /* or first_greater_than when `after_begin`) */
    int after_begin;
    int limited; /* whether a row limit was given */
    int limit;   /* rows still wanted */
    int reverse;
    int snapshot;
    int iteration;
    PyObject *result; /* list of (key, value); complete once `future` is NULL */
} RangeFuture;

static void RangeFuture_dealloc(RangeFuture *self) {
    if (self->future) api.future_destroy(self->future);
    Py_XDECREF(self->owner);
    Py_XDECREF(self->begin);
    Py_XDECREF(self->end);
    Py_XDECREF(self->result);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static FDBFuture *issue_range(RangeFuture *self) {
    self->iteration++;
    return api.transaction_get_range(
        self->tr, (const uint8_t *)PyBytes_AS_STRING(self->begin), (int)PyBytes_GET_SIZE(self->begin),
        self->after_begin, 1, (const uint8_t *)PyBytes_AS_STRING(self->end), (int)PyBytes_GET_SIZE(self->end), 0, 1,
        self->limited ? self->limit : 0, 0, self->limited ? STREAMING_EXACT : STREAMING_WANT_ALL, self->iteration, self->snapshot,
        self->reverse);
}

static PyObject *RangeFuture_wait(RangeFuture *self, PyObject *unused) {
    while (self->future != NULL) {
        fdb_error_t error = wait_ready(self->future);
        if (error) return wait_failed(error);
        const FDBKeyValue *kvs = NULL;
        int count = 0;
        fdb_bool_t more = 0;
        error = api.future_get_keyvalue_array(self->future, &kvs, &count, &more);
        if (error) return raise_fdb_error(error);
        for (int i = 0; i < count; i++) {
            PyObject *key = PyBytes_FromStringAndSize((const char *)kvs[i].key, kvs[i].key_length);
            PyObject *value = key ? PyBytes_FromStringAndSize((const char *)kvs[i].value, kvs[i].value_length) : NULL;
            PyObject *pair = value ? PyTuple_Pack(2, key, value) : NULL;
            Py_XDECREF(key);
            Py_XDECREF(value);
            if (pair == NULL || PyList_Append(self->result, pair) < 0) {
                Py_XDECREF(pair);
                return NULL;
            }
            Py_DECREF(pair);
        }
        PyObject *last = count ? PyBytes_FromStringAndSize((const char *)kvs[count - 1].key, kvs[count - 1].key_length)
                               : NULL;
        api.future_destroy(self->future);
        self->future = NULL;
        if (count && last == NULL) return NULL;
        if (self->limited) self->limit -= count;
        if (!more || !count || (self->limited && self->limit <= 0)) {
            Py_XDECREF(last);
            break;
        }
        /* More rows: the next batch starts after the last key (before it, reversed). */
        if (self->reverse) {
            Py_SETREF(self->end, last);
        } else {
            Py_SETREF(self->begin, last);
            self->after_begin = 1;
        }
        self->future = issue_range(self);
    }
    return Py_NewRef(self->result);
}

static PyMethodDef RangeFuture_methods[] = {
    {"wait", (PyCFunction)RangeFuture_wait, METH_NOARGS, "The (key, value) pairs, in the order read; waits for them."},
    {NULL},
};

static PyTypeObject RangeFutureType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "fdb_leaderboard.store._fdb_direct.RangeFuture",
    .tp_basicsize = sizeof(RangeFuture),
    .tp_dealloc = (destructor)RangeFuture_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A range read in flight.",
    .tp_methods = RangeFuture_methods,
};

/* -- Transaction methods ----------------------------------------------------------------- */

static int Transaction_init(Transaction *self, PyObject *args, PyObject *kwds) {
    PyObject *owner;
    if (!bound) {
        PyErr_SetString(PyExc_RuntimeError, "_fdb_direct.bind() was not called");
        return -1;
    }
    if (!PyArg_ParseTuple(args, "O", &owner)) return -1;
    PyObject *pointer = PyObject_GetAttrString(owner, "tpointer");
    if (pointer == NULL) return -1;
    void *tr = PyLong_AsVoidPtr(pointer);
    Py_DECREF(pointer);
    if (tr == NULL) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "the transaction has no pointer");
        return -1;
    }
    Py_XSETREF(self->owner, Py_NewRef(owner));
    self->tr = (FDBTransaction *)tr;
    return 0;
}

static void Transaction_dealloc(Transaction *self) {
    Py_XDECREF(self->owner);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Transaction_get(Transaction *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyBytes_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "get(key: bytes, snapshot: bool)");
        return NULL;
    }
    int snapshot = PyObject_IsTrue(args[1]);
    if (snapshot < 0) return NULL;
    ValueFuture *future = PyObject_New(ValueFuture, &ValueFutureType);
    if (future == NULL) return NULL;
    future->owner = Py_NewRef(self->owner);
    future->result = NULL;
    future->future = api.transaction_get(self->tr, (const uint8_t *)PyBytes_AS_STRING(args[0]),
                                         (int)PyBytes_GET_SIZE(args[0]), snapshot);
    return (PyObject *)future;
}

static PyObject *Transaction_get_range(Transaction *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5 || !PyBytes_Check(args[0]) || !PyBytes_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "get_range(begin: bytes, end: bytes, limit: int, reverse: bool, snapshot: bool)");
        return NULL;
    }
    long limit = PyLong_AsLong(args[2]);
    if (limit == -1 && PyErr_Occurred()) return NULL;
    if (limit < 0 || limit > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "limit must be between 0 and 2**31-1");
        return NULL;
    }
    int reverse = PyObject_IsTrue(args[3]);
    int snapshot = PyObject_IsTrue(args[4]);
    if (reverse < 0 || snapshot < 0) return NULL;
    RangeFuture *future = PyObject_New(RangeFuture, &RangeFutureType);
    if (future == NULL) return NULL;
    future->owner = Py_NewRef(self->owner);
    future->tr = self->tr;
    future->begin = Py_NewRef(args[0]);
    future->end = Py_NewRef(args[1]);
    future->after_begin = 0;
    future->limited = limit > 0;
    future->limit = (int)limit;
    future->reverse = reverse;
    future->snapshot = snapshot;
    future->iteration = 0;
    future->future = NULL;
    future->result = PyList_New(0);
    if (future->result == NULL) {
        Py_DECREF(future);
        return NULL;
    }
    future->future = issue_range(future);
    return (PyObject *)future;
}

static int bytes_args(PyObject *const *args, Py_ssize_t nargs, Py_ssize_t wanted, const char *usage) {
    if (nargs != wanted) goto bad;
    for (Py_ssize_t i = 0; i < wanted; i++)
        if (!PyBytes_Check(args[i])) goto bad;
    return 0;
bad:
    PyErr_SetString(PyExc_TypeError, usage);
    return -1;
}

#define DATA(o) ((const uint8_t *)PyBytes_AS_STRING(o))
#define SIZE(o) ((int)PyBytes_GET_SIZE(o))

static PyObject *Transaction_set(Transaction *self, PyObject *const *args, Py_ssize_t nargs) {
    if (bytes_args(args, nargs, 2, "set(key: bytes, value: bytes)") < 0) return NULL;
    api.transaction_set(self->tr, DATA(args[0]), SIZE(args[0]), DATA(args[1]), SIZE(args[1]));
    Py_RETURN_NONE;
}

static PyObject *Transaction_clear(Transaction *self, PyObject *const *args, Py_ssize_t nargs) {
    if (bytes_args(args, nargs, 1, "clear(key: bytes)") < 0) return NULL;
    api.transaction_clear(self->tr, DATA(args[0]), SIZE(args[0]));
    Py_RETURN_NONE;
}

static PyObject *Transaction_clear_range(Transaction *self, PyObject *const *args, Py_ssize_t nargs) {
    if (bytes_args(args, nargs, 2, "clear_range(begin: bytes, end: bytes)") < 0) return NULL;
    api.transaction_clear_range(self->tr, DATA(args[0]), SIZE(args[0]), DATA(args[1]), SIZE(args[1]));
    Py_RETURN_NONE;
}

/* Atomic mutations (FDBMutationType codes). */
#define MUTATION_ADD 2
#define MUTATION_MAX 12
#define MUTATION_MIN 13

static PyObject *atomic_op(Transaction *self, PyObject *const *args, Py_ssize_t nargs, int opcode, const char *usage) {
    if (bytes_args(args, nargs, 2, usage) < 0) return NULL;
    api.transaction_atomic_op(self->tr, DATA(args[0]), SIZE(args[0]), DATA(args[1]), SIZE(args[1]), opcode);
    Py_RETURN_NONE;
}

static PyObject *Transaction_add(Transaction *self, PyObject *const *args, Py_ssize_t nargs) {
    return atomic_op(self, args, nargs, MUTATION_ADD, "add(key: bytes, param: bytes)");
}

static PyObject *Transaction_max(Transaction *self, PyObject *const *args, Py_ssize_t nargs) {
    return atomic_op(self, args, nargs, MUTATION_MAX, "max(key: bytes, param: bytes)");
}

static PyObject *Transaction_min(Transaction *self, PyObject *const *args, Py_ssize_t nargs) {
    return atomic_op(self, args, nargs, MUTATION_MIN, "min(key: bytes, param: bytes)");
}

static PyObject *Transaction_add_read_conflict_range(Transaction *self, PyObject *const *args, Py_ssize_t nargs) {
    if (bytes_args(args, nargs, 2, "add_read_conflict_range(begin: bytes, end: bytes)") < 0) return NULL;
    fdb_error_t error = api.transaction_add_conflict_range(self->tr, DATA(args[0]), SIZE(args[0]), DATA(args[1]),
                                                           SIZE(args[1]), CONFLICT_RANGE_READ);
    if (error) return raise_fdb_error(error);
    Py_RETURN_NONE;
}

static PyObject *Transaction_add_read_conflict_ranges(Transaction *self, PyObject *ranges) {
    PyObject *items = PySequence_Fast(ranges, "add_read_conflict_ranges needs a sequence of (begin, end) pairs");
    if (items == NULL) return NULL;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(items);
    PyObject **pairs = PySequence_Fast_ITEMS(items);
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *pair = pairs[i];
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2 || !PyBytes_Check(PyTuple_GET_ITEM(pair, 0)) ||
            !PyBytes_Check(PyTuple_GET_ITEM(pair, 1))) {
            Py_DECREF(items);
            PyErr_SetString(PyExc_TypeError, "add_read_conflict_ranges needs (begin: bytes, end: bytes) pairs");
            return NULL;
        }
        PyObject *begin = PyTuple_GET_ITEM(pair, 0), *end = PyTuple_GET_ITEM(pair, 1);
        fdb_error_t error =
            api.transaction_add_conflict_range(self->tr, DATA(begin), SIZE(begin), DATA(end), SIZE(end), CONFLICT_RANGE_READ);
        if (error) {
            Py_DECREF(items);
            return raise_fdb_error(error);
        }
    }
    Py_DECREF(items);
    Py_RETURN_NONE;
}

static PyObject *Transaction_commit(Transaction *self, PyObject *unused) {
    FDBFuture *future = api.transaction_commit(self->tr);
    fdb_error_t error = wait_ready(future);
    api.future_destroy(future);
    if (error) return wait_failed(error);
    Py_RETURN_NONE;
}

static PyMethodDef Transaction_methods[] = {
    {"get", (PyCFunction)(void (*)(void))Transaction_get, METH_FASTCALL,
     "get(key, snapshot) -> ValueFuture: a point read, issued now."},
    {"get_range", (PyCFunction)(void (*)(void))Transaction_get_range, METH_FASTCALL,
     "get_range(begin, end, limit, reverse, snapshot) -> RangeFuture: keys in [begin, end), issued now "
     "(limit 0: all of them)."},
    {"set", (PyCFunction)(void (*)(void))Transaction_set, METH_FASTCALL, "set(key, value)"},
    {"clear", (PyCFunction)(void (*)(void))Transaction_clear, METH_FASTCALL, "clear(key)"},
    {"clear_range", (PyCFunction)(void (*)(void))Transaction_clear_range, METH_FASTCALL, "clear_range(begin, end)"},
    {"add", (PyCFunction)(void (*)(void))Transaction_add, METH_FASTCALL, "add(key, param): atomic ADD"},
    {"max", (PyCFunction)(void (*)(void))Transaction_max, METH_FASTCALL, "max(key, param): atomic MAX"},
    {"min", (PyCFunction)(void (*)(void))Transaction_min, METH_FASTCALL, "min(key, param): atomic MIN"},
    {"add_read_conflict_range", (PyCFunction)(void (*)(void))Transaction_add_read_conflict_range, METH_FASTCALL,
     "add_read_conflict_range(begin, end)"},
    {"add_read_conflict_ranges", (PyCFunction)Transaction_add_read_conflict_ranges, METH_O,
     "add_read_conflict_ranges(pairs): add_read_conflict_range for each (begin, end) pair, in one call."},
    {"commit", (PyCFunction)Transaction_commit, METH_NOARGS,
     "Commit and wait for the outcome (raises FDBError; the caller's on_error decides on a retry)."},
    {NULL},
};

static PyTypeObject TransactionType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "fdb_leaderboard.store._fdb_direct.Transaction",
    .tp_basicsize = sizeof(Transaction),
    .tp_dealloc = (destructor)Transaction_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Transaction(binding_transaction): its reads, writes and commit through direct C calls.",
    .tp_methods = Transaction_methods,
    .tp_init = (initproc)Transaction_init,
    .tp_new = PyType_GenericNew,
};

/* -- bind: the client library's functions, from the binding --------------------------- */

static int take(PyObject *functions, const char *name, void **slot) {
    PyObject *address = PyDict_GetItemString(functions, name);
    if (address == NULL) {
        PyErr_Format(PyExc_KeyError, "no address for %s", name);
        return -1;
    }
    *slot = PyLong_AsVoidPtr(address);
    if (*slot == NULL) {
        if (!PyErr_Occurred()) PyErr_Format(PyExc_ValueError, "null address for %s", name);
        return -1;
    }
    return 0;
}

static PyObject *bind(PyObject *module, PyObject *args) {
    PyObject *functions, *error_class;
    unsigned long main_thread_ident;
    if (!PyArg_ParseTuple(args, "O!Ok", &PyDict_Type, &functions, &error_class, &main_thread_ident)) return NULL;
    struct {
        const char *name;
        void **slot;
    } wanted[] = {
        {"fdb_transaction_get", (void **)&api.transaction_get},
        {"fdb_transaction_get_range", (void **)&api.transaction_get_range},
        {"fdb_transaction_set", (void **)&api.transaction_set},
        {"fdb_transaction_clear", (void **)&api.transaction_clear},
        {"fdb_transaction_clear_range", (void **)&api.transaction_clear_range},
        {"fdb_transaction_atomic_op", (void **)&api.transaction_atomic_op},
        {"fdb_transaction_add_conflict_range", (void **)&api.transaction_add_conflict_range},
        {"fdb_transaction_commit", (void **)&api.transaction_commit},
        {"fdb_future_block_until_ready", (void **)&api.future_block_until_ready},
        {"fdb_future_set_callback", (void **)&api.future_set_callback},
        {"fdb_future_cancel", (void **)&api.future_cancel},
        {"fdb_future_is_ready", (void **)&api.future_is_ready},
        {"fdb_future_get_error", (void **)&api.future_get_error},
        {"fdb_future_get_value", (void **)&api.future_get_value},
        {"fdb_future_get_keyvalue_array", (void **)&api.future_get_keyvalue_array},
        {"fdb_future_destroy", (void **)&api.future_destroy},
    };
    for (size_t i = 0; i < sizeof(wanted) / sizeof(wanted[0]); i++)
        if (take(functions, wanted[i].name, wanted[i].slot) < 0) return NULL;
    Py_XSETREF(fdb_error_class, Py_NewRef(error_class));
    main_thread = main_thread_ident;
    bound = 1;
    Py_RETURN_NONE;
}

static PyObject *function_names(PyObject *module, PyObject *unused) {
    return Py_BuildValue("(ssssssssssssssss)", "fdb_transaction_get", "fdb_transaction_get_range",
                         "fdb_transaction_set", "fdb_transaction_clear", "fdb_transaction_clear_range",
                         "fdb_transaction_atomic_op", "fdb_transaction_add_conflict_range", "fdb_transaction_commit",
                         "fdb_future_block_until_ready", "fdb_future_set_callback", "fdb_future_cancel",
                         "fdb_future_is_ready", "fdb_future_get_error", "fdb_future_get_value",
                         "fdb_future_get_keyvalue_array", "fdb_future_destroy");
}

static PyMethodDef module_methods[] = {
    {"bind", bind, METH_VARARGS,
     "bind(functions, error_class, main_thread): the client library's function addresses by name, the FDBError "
     "class, and the main thread's ident (its waits run signal handlers)."},
    {"function_names", function_names, METH_NOARGS, "The names bind() needs addresses for."},
    {NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_fdb_direct", "Direct calls into the FoundationDB client library (see the C source).",
    -1, module_methods,
};

PyMODINIT_FUNC PyInit__fdb_direct(void) {
    if (PyType_Ready(&TransactionType) < 0 || PyType_Ready(&ValueFutureType) < 0 ||
        PyType_Ready(&RangeFutureType) < 0)
        return NULL;
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL) return NULL;
    if (PyModule_AddObjectRef(module, "Transaction", (PyObject *)&TransactionType) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
