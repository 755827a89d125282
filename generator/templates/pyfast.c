
/* ---- the binding's fast paths: a CPython module (see generator/pyfast.py) ---- */
/* CPython with its GIL only: the Lock's state and the C paths rely on it */
#if !defined(PYPY_VERSION) && !defined(Py_LIMITED_API) && !defined(Py_GIL_DISABLED)
#define P2F_ON 1
#include <structmember.h>
#include <string.h>
#include <float.h>
#include <time.h>

enum { P2F_INT, P2F_UINT, P2F_FLOAT, P2F_CHAR, P2F_REF, P2F_TEXT };

typedef struct {
    const char *name;
    int kind;
    size_t off, size;
    long long lo;            /* P2F_INT */
    unsigned long long hi;   /* P2F_INT, P2F_UINT */
    /* P2F_TEXT: the generated <container>_get_<field> / _set_<field> (the record holds
       only the text's handle, which inserts and updates ignore) */
    int (*tget)(void *db, uint64_t ref, const char **data, uint64_t *len);
    int (*tset)(void *db, uint64_t ref, const void *data, uint64_t len);
} p2f_field;

/* The text fields' values given to a call: UTF-8 of an exact str (its cached UTF-8,
   owned by the str, which the call's arguments keep alive) or an exact bytes' buffer */
typedef struct {
    int n;
    struct { const char *s; Py_ssize_t len; int field; } v[P2F_TEXTS_MAX];
} p2f_texts;

typedef struct {
    const char *name;
    size_t rsize;
    int nfields;
    const p2f_field *fields;
    int key;                 /* index of the only key field when it is an int, else -1 */
    int (*insert)(void *db, const void *rec, uint64_t *ref);
    int (*get)(void *db, uint64_t ref, void *out);
    int (*find)(void *db, const void *keyrec, void *out, uint64_t *ref);
    int (*upd)(void *db, const void *keyrec, const void *vals, const unsigned char *mask,
               void *out, uint64_t *ref);
    int (*del)(void *db, const void *keyrec, uint64_t *ref);
    int (*guard)(void *db);  /* the journal guard, NULL without a journal */
    int nkeys;
    const int *keys;         /* the key fields' indices: a Record's stale check */
    int (*update)(void *db, uint64_t *ref, const void *rec);
    int (*delete)(void *db, uint64_t ref);
    int ntexts;              /* text fields: a Record's are read with the element's ref */
} p2f_container;

/* One end of a relationship: its container and name, and adapters with one signature to
   its generated functions (a many-role: walk, count, add, remove; a one-role: get, set). */
typedef struct {
    const char *container, *role;   /* NULL: no C paths (its iterator is too large) */
    int many;
    int (*open)(void *db, void *it, uint64_t owner);
    int (*fetch)(void *db, void *it, uint64_t *refs, void *recs, int max, int *n);
    uint64_t (*count)(void *db, uint64_t owner);
    int (*add)(void *db, uint64_t owner, uint64_t member);
    int (*remove)(void *db, uint64_t owner, uint64_t member);
    uint64_t (*get)(void *db, uint64_t x);
    int (*set)(void *db, uint64_t x, uint64_t partner);
    /* an ordered many-role (`order by`), else NULL: a walk from bounds (lo, hi: a number or
       None) and the merge of several owners' roles (the feed); -2: a bound the C paths do
       not take (the Python way says why) */
    int (*open_range)(void *db, void *it, uint64_t owner, int rev, PyObject *lo, PyObject *hi);
    int (*top)(void *db, const uint64_t *owners, uint64_t n, int rev, PyObject *lo,
               PyObject *hi, uint64_t k, uint64_t *refs, void *recs, uint64_t *got);
} p2f_role_t;

/* ==== p2gen: the spec's tables and adapters go here (pyfast.fast_c) ==== */
/* -- Lock: a reentrant lock (threading.RLock's with / acquire / release) that also holds
      the database handle, so that C paths see both without calling Python. Its state
      (owner, count) only changes with the GIL held, so taking it free costs no system
      call; a thread that must wait counts itself in `waiters` and sleeps on `wake`, a
      semaphore the releasing thread posts when someone waits (woken, it looks again). -- */
typedef struct {
    PyObject_HEAD
    PyThread_type_lock wake;
    unsigned long owner;         /* thread ident of the holder (count > 0) */
    unsigned long count;
    unsigned long waiters;
    void *db;                    /* NULL once the database is closed */
} p2f_lock;

/* Take the lock if that needs no waiting: 1 taken, 0 held by another thread. */
static int p2f_try(p2f_lock *l)
{
    unsigned long me = PyThread_get_thread_ident();
    if (l->count == 0) {
        l->owner = me;
        l->count = 1;
        return 1;
    }
    if (l->owner != me)
        return 0;
    l->count++;
    return 1;
}

static void p2f_release(p2f_lock *l)
{
    if (--l->count == 0) {
        l->owner = 0;
        if (l->waiters > 0)
            PyThread_release_lock(l->wake);
    }
}

static long long p2f_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* 1 taken, 0 timed out, -1 an exception (a signal handler raised while waiting) */
static int p2f_acquire(p2f_lock *l, PY_TIMEOUT_T timeout_us)
{
    if (p2f_try(l))
        return 1;
    if (timeout_us == 0)
        return 0;
    long long deadline = timeout_us > 0 ? p2f_now_us() + (long long)timeout_us : 0;
    l->waiters++;
    while (l->count > 0) {
        PY_TIMEOUT_T wait = -1;
        if (timeout_us > 0) {
            long long left = deadline - p2f_now_us();
            if (left <= 0)
                break;
            wait = (PY_TIMEOUT_T)left;
        }
        PyLockStatus r;
        Py_BEGIN_ALLOW_THREADS
        r = PyThread_acquire_lock_timed(l->wake, wait, 1);
        Py_END_ALLOW_THREADS
        if (r == PY_LOCK_INTR && Py_MakePendingCalls() < 0) {
            l->waiters--;
            return -1;
        }
    }
    l->waiters--;
    if (l->count > 0)
        return 0;                /* timed out */
    l->owner = PyThread_get_thread_ident();
    l->count = 1;
    return 1;
}

static PyObject *p2f_lock_acquire(p2f_lock *l, PyObject *args, PyObject *kw)
{
    static char *names[] = {"blocking", "timeout", NULL};
    int blocking = 1;
    double timeout = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|pd:acquire", names, &blocking, &timeout))
        return NULL;
    if (!blocking && timeout != -1) {
        PyErr_SetString(PyExc_ValueError, "can't specify a timeout for a non-blocking call");
        return NULL;
    }
    if (timeout < 0 && timeout != -1) {
        PyErr_SetString(PyExc_ValueError, "timeout value must be a non-negative number");
        return NULL;
    }
    PY_TIMEOUT_T us = !blocking ? 0 : timeout < 0 ? -1 : (PY_TIMEOUT_T)(timeout * 1e6);
    int r = p2f_acquire(l, us);
    if (r < 0)
        return NULL;
    return PyBool_FromLong(r);
}

static PyObject *p2f_lock_enter(p2f_lock *l, PyObject *unused)
{
    (void)unused;
    if (p2f_acquire(l, -1) < 0)
        return NULL;
    Py_RETURN_TRUE;
}

static PyObject *p2f_lock_release(p2f_lock *l, PyObject *unused)
{
    (void)unused;
    if (l->count == 0 || l->owner != PyThread_get_thread_ident()) {
        PyErr_SetString(PyExc_RuntimeError, "cannot release un-acquired lock");
        return NULL;
    }
    p2f_release(l);
    Py_RETURN_NONE;
}

static PyObject *p2f_lock_exit(p2f_lock *l, PyObject *args)
{
    (void)args;
    return p2f_lock_release(l, NULL);
}

static PyObject *p2f_lock_is_owned(p2f_lock *l, PyObject *unused)
{
    (void)unused;
    return PyBool_FromLong(l->count > 0 && l->owner == PyThread_get_thread_ident());
}

/* the database was closed (called with the lock held, before the handle is freed) */
static PyObject *p2f_lock_detach(p2f_lock *l, PyObject *unused)
{
    (void)unused;
    l->db = NULL;
    Py_RETURN_NONE;
}

static void p2f_lock_dealloc(p2f_lock *l)
{
    PyTypeObject *tp = Py_TYPE(l);
    if (l->wake != NULL)
        PyThread_free_lock(l->wake);
    tp->tp_free(l);
    Py_DECREF(tp);
}

static PyMethodDef p2f_lock_methods[] = {
    {"acquire", (PyCFunction)(void (*)(void))p2f_lock_acquire, METH_VARARGS | METH_KEYWORDS,
     "acquire(blocking=True, timeout=-1) -> bool, as threading.RLock"},
    {"release", (PyCFunction)p2f_lock_release, METH_NOARGS, "release the lock once"},
    {"__enter__", (PyCFunction)p2f_lock_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)p2f_lock_exit, METH_VARARGS, NULL},
    {"_is_owned", (PyCFunction)p2f_lock_is_owned, METH_NOARGS, NULL},
    {"_detach", (PyCFunction)p2f_lock_detach, METH_NOARGS,
     "forget the database handle (the database is being closed)"},
    {NULL, NULL, 0, NULL}
};

static PyType_Slot p2f_lock_slots[] = {
    {Py_tp_dealloc, (void *)p2f_lock_dealloc},
    {Py_tp_methods, p2f_lock_methods},
    {Py_tp_doc, (void *)"The database's lock: reentrant, and it holds the database handle "
                        "for the C paths."},
    {0, NULL}
};

static PyType_Spec p2f_lock_spec = {
    "p2gen_fast.Lock", sizeof(p2f_lock), 0, Py_TPFLAGS_DEFAULT, p2f_lock_slots
};

static PyTypeObject *p2f_lock_type, *p2f_type, *p2f_walk_type;

/* -- Values between Python and C record bytes -- */

/* Write value v into field f of rec: 1 done, 0 not taken here (the Python way checks it;
   no exception is left set). */
static int p2f_put(const p2f_field *f, unsigned char *rec, PyObject *v)
{
    unsigned char *p = rec + f->off;
    switch (f->kind) {
    case P2F_INT: {
        if (!PyLong_CheckExact(v))
            return 0;
        int overflow;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (overflow || (x == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            return 0;
        }
        if (x < f->lo || x > (long long)f->hi)
            return 0;
        switch (f->size) {
        case 1: { int8_t y = (int8_t)x; memcpy(p, &y, 1); break; }
        case 2: { int16_t y = (int16_t)x; memcpy(p, &y, 2); break; }
        case 4: { int32_t y = (int32_t)x; memcpy(p, &y, 4); break; }
        default: { int64_t y = (int64_t)x; memcpy(p, &y, 8); break; }
        }
        return 1;
    }
    case P2F_REF:
        if (v == Py_None) {
            memset(p, 0xff, f->size);   /* none: all ones (a ref over 32-bit links is 4 bytes) */
            return 1;
        }
        /* fall through - an int reference (0 .. 2**64-1) */
    case P2F_UINT: {
        if (!PyLong_CheckExact(v))
            return 0;
        unsigned long long x = PyLong_AsUnsignedLongLong(v);
        if (x == (unsigned long long)-1 && PyErr_Occurred()) {
            PyErr_Clear();
            return 0;
        }
        if (x > f->hi)
            return 0;
        switch (f->size) {
        case 1: { uint8_t y = (uint8_t)x; memcpy(p, &y, 1); break; }
        case 2: { uint16_t y = (uint16_t)x; memcpy(p, &y, 2); break; }
        case 4: { uint32_t y = (uint32_t)x; memcpy(p, &y, 4); break; }
        default: { uint64_t y = (uint64_t)x; memcpy(p, &y, 8); break; }
        }
        return 1;
    }
    case P2F_FLOAT: {
        double x;
        if (PyFloat_CheckExact(v))
            x = PyFloat_AS_DOUBLE(v);
        else if (PyLong_CheckExact(v)) {
            x = PyLong_AsDouble(v);
            if (x == -1.0 && PyErr_Occurred()) {
                PyErr_Clear();
                return 0;
            }
        } else
            return 0;
        if (f->size == 4) {
            if (isfinite(x) && (x > FLT_MAX || x < -FLT_MAX))
                return 0;       /* struct refuses it: the Python way decides */
            float y = (float)x;
            memcpy(p, &y, 4);
        } else
            memcpy(p, &x, 8);
        return 1;
    }
    case P2F_TEXT:
        return 0;    /* not in the record: p2f_fields keeps it (p2f_texts) */
    default: {   /* P2F_CHAR */
        const char *s;
        Py_ssize_t n;
        if (PyUnicode_CheckExact(v)) {
            s = PyUnicode_AsUTF8AndSize(v, &n);
            if (s == NULL) {       /* lone surrogates: the Python way (surrogateescape) */
                PyErr_Clear();
                return 0;
            }
        } else if (PyBytes_CheckExact(v)) {
            s = PyBytes_AS_STRING(v);
            n = PyBytes_GET_SIZE(v);
        } else
            return 0;
        if ((size_t)n > f->size || (n > 0 && memchr(s, 0, (size_t)n) != NULL))
            return 0;
        memcpy(p, s, (size_t)n);
        memset(p + n, 0, f->size - (size_t)n);
        return 1;
    }
    }
}

static PyObject *p2f_get(const p2f_field *f, const unsigned char *rec)
{
    const unsigned char *p = rec + f->off;
    switch (f->kind) {
    case P2F_INT:
        switch (f->size) {
        case 1: { int8_t y; memcpy(&y, p, 1); return PyLong_FromLong(y); }
        case 2: { int16_t y; memcpy(&y, p, 2); return PyLong_FromLong(y); }
        case 4: { int32_t y; memcpy(&y, p, 4); return PyLong_FromLong(y); }
        default: { int64_t y; memcpy(&y, p, 8); return PyLong_FromLongLong(y); }
        }
    case P2F_UINT:
        switch (f->size) {
        case 1: { uint8_t y; memcpy(&y, p, 1); return PyLong_FromLong(y); }
        case 2: { uint16_t y; memcpy(&y, p, 2); return PyLong_FromLong(y); }
        case 4: { uint32_t y; memcpy(&y, p, 4); return PyLong_FromUnsignedLong(y); }
        default: { uint64_t y; memcpy(&y, p, 8); return PyLong_FromUnsignedLongLong(y); }
        }
    case P2F_REF: {
        uint64_t y;
        if (f->size == 4) {   /* over 32-bit links */
            uint32_t z;
            memcpy(&z, p, 4);
            y = z == UINT32_MAX ? UINT64_MAX : z;
        } else {
            memcpy(&y, p, 8);
        }
        if (y == UINT64_MAX)
            Py_RETURN_NONE;
        return PyLong_FromUnsignedLongLong(y);
    }
    case P2F_FLOAT:
        if (f->size == 4) {
            float y;
            memcpy(&y, p, 4);
            return PyFloat_FromDouble(y);
        } else {
            double y;
            memcpy(&y, p, 8);
            return PyFloat_FromDouble(y);
        }
    case P2F_TEXT:
        PyErr_SetString(PyExc_RuntimeError, "a text field is read with its element");
        return NULL;
    default: {   /* P2F_CHAR: up to the first NUL, UTF-8 with surrogate escapes */
        const char *s = (const char *)p;
        const char *z = memchr(s, 0, f->size);
        return PyUnicode_DecodeUTF8(s, z ? z - s : (Py_ssize_t)f->size, "surrogateescape");
    }
    }
}

/* -- Container: one per Python Container (whose record fits P2F_STACK_MAX and has at most
      P2F_TEXTS_MAX text fields) -- */
typedef struct {
    PyObject_HEAD
    const p2f_container *t;
    p2f_lock *lock;
    PyObject *owner;          /* the Python Container (its methods are the Python way) */
    PyObject *dict;           /* its __dict__ */
    /* the container's change counters (Container._version, _links read and write them
       here): plain C counters, so that a change bumps them without a dict lookup */
    unsigned long long version, links;
    PyTypeObject *rec;        /* the Record class */
    PyObject *origin;         /* the container's name */
    Py_ssize_t off_values, off_ref, off_origin;
    PyObject *names;          /* tuple: the fields' names */
    PyObject *slow_insert, *slow_get, *slow_find, *slow_update_by, *slow_delete_by, *fail;
    PyObject *slow_update, *slow_delete;
    unsigned char *zero;      /* the record insert starts from: the spec's defaults, else 0
                                 (ref fields none) */
    unsigned char *required;  /* per field: 1 if insert needs it (no default in the spec) */
    int nrequired;            /* how many do */
    PyObject *tdefaults;      /* per field: the default text insert writes (bytes), or None */
} p2f_obj;

static PyObject *p2f_s_version, *p2f_s_links, *p2f_one;

/* one reference of a type's list (P2F_OBJ_REFS, P2F_WALK_REFS) visited or cleared */
#define P2F_VISIT_REF(ref) Py_VISIT(ref);
#define P2F_CLEAR_REF(ref) Py_CLEAR(ref);

/* the references a container's C paths holds: traversed and cleared from this one list */
#define P2F_OBJ_REFS(X, o) X(o->lock) X(o->owner) X(o->dict) X(o->rec) X(o->origin) \
    X(o->names) X(o->slow_insert) X(o->slow_find) X(o->slow_update_by) \
    X(o->slow_delete_by) X(o->slow_get) X(o->fail) X(o->slow_update) X(o->slow_delete) \
    X(o->tdefaults)

static int p2f_traverse(p2f_obj *o, visitproc visit, void *arg)
{
    P2F_OBJ_REFS(P2F_VISIT_REF, o)
    Py_VISIT(Py_TYPE(o));
    return 0;
}

static int p2f_clear(p2f_obj *o)
{
    P2F_OBJ_REFS(P2F_CLEAR_REF, o)
    return 0;
}

static void p2f_dealloc(p2f_obj *o)
{
    PyTypeObject *tp = Py_TYPE(o);
    PyObject_GC_UnTrack(o);
    p2f_clear(o);
    PyMem_Free(o->zero);
    PyMem_Free(o->required);
    tp->tp_free(o);
    Py_DECREF(tp);
}

static PyObject *p2f_raise(p2f_obj *o, int rc);
static PyObject *p2f_raise_what(p2f_obj *o, int rc, PyObject *what);

/* Text field f of element ref (lock held, db open), as Container._make reads it: a str,
   decoded UTF-8 with surrogate escapes. The bytes are decoded where they are, before any
   other call (a str's allocation runs no collection, so no user code in between). */
static PyObject *p2f_text(p2f_obj *o, void *db, const p2f_field *f, uint64_t ref)
{
    const char *data = NULL;
    uint64_t len = 0;
    if (db == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "a text field read without the database");
        return NULL;
    }
    int rc = f->tget(db, ref, &data, &len);
    if (rc != P2_OK)
        return p2f_raise(o, rc);
    if (len > (uint64_t)PY_SSIZE_T_MAX)
        return PyErr_NoMemory();
    return PyUnicode_DecodeUTF8(len ? data : "", (Py_ssize_t)len, "surrogateescape");
}

/* A Record of the C record rec, element cref (ref: the same as an int, or NULL): as
   Container._one_of makes it, or Container._make with its texts read through db (the
   lock held; NULL for a record without text fields). */
static PyObject *p2f_record(p2f_obj *o, void *db, const unsigned char *rec, uint64_t cref,
                            PyObject *ref)
{
    const p2f_container *t = o->t;
    PyObject *values = PyTuple_New(t->nfields);
    if (values == NULL)
        return NULL;
    for (int i = 0; i < t->nfields; i++) {
        const p2f_field *f = &t->fields[i];
        PyObject *v = f->kind == P2F_TEXT ? p2f_text(o, db, f, cref) : p2f_get(f, rec);
        if (v == NULL) {
            Py_DECREF(values);
            return NULL;
        }
        PyTuple_SET_ITEM(values, i, v);
    }
    /* ints, floats, str and None only: no cycle can go through it (what the collector
       would find out at its first pass over the tuple) */
    PyObject_GC_UnTrack(values);
    PyObject *r = o->rec->tp_alloc(o->rec, 0);
    if (r == NULL) {
        Py_DECREF(values);
        return NULL;
    }
    *(PyObject **)((char *)r + o->off_values) = values;
    if (ref != NULL)
        Py_INCREF(ref);
    else if ((ref = PyLong_FromUnsignedLongLong(cref)) == NULL) {
        Py_DECREF(r);         /* its slots NULL but _values: dealloc copes */
        return NULL;
    }
    *(PyObject **)((char *)r + o->off_ref) = ref;
    Py_INCREF(o->origin);
    *(PyObject **)((char *)r + o->off_origin) = o->origin;
    return r;
}

static PyObject *p2f_record_at(p2f_obj *o, void *db, const unsigned char *rec, uint64_t ref)
{
    return p2f_record(o, db, rec, ref, NULL);
}

/* the container changed: _version and _links bumped (as Container._changed) */
static int p2f_changed(p2f_obj *o)
{
    o->version++;
    o->links++;
    return 0;
}

/* Raise the container's error for code rc (Container._fail; the lock is held). */
static PyObject *p2f_raise(p2f_obj *o, int rc)
{
    PyObject *code = PyLong_FromLong(rc);
    if (code == NULL)
        return NULL;
    PyObject *e = PyObject_CallOneArg(o->fail, code);
    Py_DECREF(code);
    if (e != NULL) {
        PyErr_SetObject((PyObject *)Py_TYPE(e), e);
        Py_DECREF(e);
    }
    return NULL;
}

/* Raise the container's error for code rc saying what failed (Container._fail(rc, what)). */
static PyObject *p2f_raise_what(p2f_obj *o, int rc, PyObject *what)
{
    PyObject *code = PyLong_FromLong(rc);
    if (code == NULL)
        return NULL;
    PyObject *e = PyObject_CallFunctionObjArgs(o->fail, code, what, NULL);
    Py_DECREF(code);
    if (e != NULL) {
        PyErr_SetObject((PyObject *)Py_TYPE(e), e);
        Py_DECREF(e);
    }
    return NULL;
}

/* The element x names in container o (lock held, db open), as Container._locate finds
   it: x an int reference, or a Record of o whose key fields the element still has. Its
   reference into *ref and a copy into buf: 1, or 0 (the Python way says what is wrong: a
   bool, another container's Record, no such element, a stale Record; nothing raised). */
static int p2f_locate(p2f_obj *o, void *db, PyObject *x, uint64_t *ref, unsigned char *buf)
{
    PyObject *values = NULL;
    PyObject *r = x;
    if (Py_IS_TYPE(x, o->rec)) {
        PyObject *origin = *(PyObject **)((char *)x + o->off_origin);
        values = *(PyObject **)((char *)x + o->off_values);
        r = *(PyObject **)((char *)x + o->off_ref);
        if (origin != o->origin || values == NULL || !PyTuple_CheckExact(values)
            || PyTuple_GET_SIZE(values) != o->t->nfields || r == NULL)
            return 0;
    }
    if (!PyLong_CheckExact(r))
        return 0;
    unsigned long long v = PyLong_AsUnsignedLongLong(r);
    if (v == (unsigned long long)-1) {     /* negative, too big, or no element */
        PyErr_Clear();
        return 0;
    }
    if (o->t->get(db, v, buf) != P2_OK)
        return 0;
    for (int k = 0; values != NULL && k < o->t->nkeys; k++) {
        int i = o->t->keys[k];
        PyObject *now = p2f_get(&o->t->fields[i], buf);
        if (now == NULL) {
            PyErr_Clear();
            return 0;
        }
        int eq = PyObject_RichCompareBool(now, PyTuple_GET_ITEM(values, i), Py_EQ);
        Py_DECREF(now);
        if (eq != 1) {
            PyErr_Clear();
            return 0;
        }
    }
    *ref = v;
    return 1;
}

/* The key argument as the key field's bytes in keyrec: 1, or 0 (not taken here). */
static int p2f_key(p2f_obj *o, PyObject *key, unsigned char *keyrec)
{
    const p2f_container *t = o->t;
    if (t->key < 0)
        return 0;
    return p2f_put(&t->fields[t->key], keyrec, key);
}

/* A text field's value as C takes it: an exact str (UTF-8; one with no UTF-8 spelling, a
   lone surrogate, goes the Python way, which encodes surrogate escapes) or exact bytes,
   shorter than the generated set_<text> takes: 1, or 0 (not taken here; nothing raised). */
static int p2f_text_value(PyObject *v, const char **s, Py_ssize_t *n)
{
    if (PyUnicode_CheckExact(v)) {
        *s = PyUnicode_AsUTF8AndSize(v, n);
        if (*s == NULL) {
            PyErr_Clear();
            return 0;
        }
    } else if (PyBytes_CheckExact(v)) {
        *s = PyBytes_AS_STRING(v);
        *n = PyBytes_GET_SIZE(v);
    } else
        return 0;
    return (unsigned long long)*n < (1ULL << 40);     /* TEXT_MAX: its RangeError */
}

/* Fields given by keyword into rec (and their bytes into mask when not NULL): 1 all
   taken, 0 not (an unknown name or a value for the Python way). With nreq not NULL, how
   many of them insert needs (o->required) goes there (names in a call are distinct).
   Text fields' values go into tv (NULL: not taken here). */
static int p2f_fields(p2f_obj *o, PyObject *const *vals, PyObject *kwnames,
                      unsigned char *rec, unsigned char *mask, int *nreq, p2f_texts *tv)
{
    const p2f_container *t = o->t;
    Py_ssize_t nk = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    for (Py_ssize_t j = 0; j < nk; j++) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, j);
        int i;
        for (i = 0; i < t->nfields; i++)
            if (PyTuple_GET_ITEM(o->names, i) == name)
                break;
        if (i == t->nfields) {        /* a name that is not the interned one */
            for (i = 0; i < t->nfields; i++) {
                int eq = PyUnicode_Compare(PyTuple_GET_ITEM(o->names, i), name);
                if (eq == -1 && PyErr_Occurred()) {
                    PyErr_Clear();
                    return 0;
                }
                if (eq == 0)
                    break;
            }
            if (i == t->nfields)
                return 0;
        }
        const p2f_field *f = &t->fields[i];
        if (f->kind == P2F_TEXT) {
            if (tv == NULL || tv->n == P2F_TEXTS_MAX
                || !p2f_text_value(vals[j], &tv->v[tv->n].s, &tv->v[tv->n].len))
                return 0;
            tv->v[tv->n++].field = i;
        } else if (!p2f_put(f, rec, vals[j]))
            return 0;
        else if (mask != NULL)
            memset(mask + f->off, 1, f->size);
        if (nreq != NULL)
            *nreq += o->required[i];
    }
    return 1;
}

#define P2F_SLOW(fn) return PyObject_Vectorcall(o->fn, args, nargsf, kwnames)

/* The text given in tv for field i: 1 (into *s, *n), else 0 */
static int p2f_given(const p2f_texts *tv, int i, const char **s, Py_ssize_t *n)
{
    for (int k = 0; k < tv->n; k++)
        if (tv->v[k].field == i) {
            *s = tv->v[k].s;
            *n = tv->v[k].len;
            return 1;
        }
    return 0;
}

/* Write texts of element ref (lock held): those given in tv and, for insert (defaults),
   the spec's default of each text field not given (an inserted element's texts are
   empty). 0, or -1 with the error raised as Container._set_texts says it. */
static int p2f_set_texts(p2f_obj *o, void *db, uint64_t ref, const p2f_texts *tv,
                         int defaults)
{
    const p2f_container *t = o->t;
    for (int i = 0; i < t->nfields; i++) {
        const p2f_field *f = &t->fields[i];
        const char *s;
        Py_ssize_t n;
        if (f->kind != P2F_TEXT)
            continue;
        if (!p2f_given(tv, i, &s, &n)) {
            PyObject *d = defaults ? PyTuple_GET_ITEM(o->tdefaults, i) : Py_None;
            if (!PyBytes_CheckExact(d) || PyBytes_GET_SIZE(d) == 0)
                continue;
            s = PyBytes_AS_STRING(d);
            n = PyBytes_GET_SIZE(d);
        }
        int rc = f->tset(db, ref, s, (uint64_t)n);
        if (rc != P2_OK) {
            PyObject *what = PyUnicode_FromFormat("setting text %s", f->name);
            if (what != NULL) {
                p2f_raise_what(o, rc, what);
                Py_DECREF(what);
            }
            return -1;
        }
    }
    return 0;
}

/* Update element ref to rec (old: its record before), then write the texts given, as
   Container.update does: if writing one fails, the element gets its old texts and fields
   back (best effort) and the error is raised. Lock held, guard passed. The Record. */
static PyObject *p2f_update_at(p2f_obj *o, void *db, uint64_t ref, const unsigned char *rec,
                               const unsigned char *old, const p2f_texts *tv)
{
    const p2f_container *t = o->t;
    PyObject *was[P2F_TEXTS_MAX] = {NULL};
    PyObject *r = NULL;
    int rc;
    for (int k = 0; k < tv->n; k++) {      /* the old texts, copied before any change */
        const char *d = NULL;
        uint64_t n = 0;
        if ((rc = t->fields[tv->v[k].field].tget(db, ref, &d, &n)) != P2_OK) {
            p2f_raise(o, rc);
            goto out;
        }
        if (n > (uint64_t)PY_SSIZE_T_MAX
            || (was[k] = PyBytes_FromStringAndSize(n ? d : "", (Py_ssize_t)n)) == NULL) {
            PyErr_NoMemory();
            goto out;
        }
    }
    uint64_t at = ref;
    if ((rc = t->update(db, &at, rec)) != P2_OK) {
        p2f_raise(o, rc);
        goto out;
    }
    p2f_changed(o);
    if (tv->n > 0 && p2f_set_texts(o, db, at, tv, 0) < 0) {
        for (int k = 0; k < tv->n; k++)
            t->fields[tv->v[k].field].tset(db, at, PyBytes_AS_STRING(was[k]),
                                           (uint64_t)PyBytes_GET_SIZE(was[k]));
        t->update(db, &at, old);
        goto out;
    }
    r = p2f_record_at(o, db, rec, at);
out:
    for (int k = 0; k < tv->n; k++)
        Py_XDECREF(was[k]);
    return r;
}

/* Is kwnames exactly the key field's name (find(id=v), the same path as find(v))? */
static int p2f_is_key_name(p2f_obj *o, PyObject *kwnames)
{
    const p2f_container *t = o->t;
    if (t->key < 0 || PyTuple_GET_SIZE(kwnames) != 1)
        return 0;
    PyObject *name = PyTuple_GET_ITEM(kwnames, 0), *key = PyTuple_GET_ITEM(o->names, t->key);
    if (name == key)           /* interned: the usual case */
        return 1;
    if (!PyUnicode_CheckExact(name))
        return 0;
    int eq = PyUnicode_Compare(name, key);
    if (eq == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    return eq == 0;
}

/* find(key) or find(<key field>=key): the Record or None */
static PyObject *p2f_find(p2f_obj *o, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    unsigned char keyrec[P2F_STACK_MAX], out[P2F_STACK_MAX];
    if (nargs + (kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames)) != 1
        || (kwnames != NULL && !p2f_is_key_name(o, kwnames))
        || !p2f_key(o, args[0], keyrec))
        P2F_SLOW(slow_find);
    p2f_lock *l = o->lock;
    if (!p2f_try(l))
        P2F_SLOW(slow_find);       /* another thread is in: the Python way waits */
    if (l->db == NULL) {
        p2f_release(l);
        P2F_SLOW(slow_find);       /* closed: ClosedError */
    }
    uint64_t ref;
    PyObject *r;
    int rc = o->t->find(l->db, keyrec, out, &ref);
    if (rc == P2_OK)
        r = p2f_record_at(o, l->db, out, ref);
    else if (rc == P2_NOTFOUND)
        r = Py_NewRef(Py_None);
    else
        r = p2f_raise(o, rc);
    p2f_release(l);
    return r;
}

/* The Python way's call: fn (a reference taken over) on (self, *args, **kwnames), as a
   vectorcall; the Python method says what is wrong with the arguments */
static PyObject *p2f_call_on(PyObject *fn, PyObject *self, PyObject *const *args,
                             size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    Py_ssize_t total = nargs + (kwnames != NULL ? PyTuple_GET_SIZE(kwnames) : 0);
    PyObject *small[8], **stack = small;
    if (total + 1 > 8) {
        stack = PyMem_Malloc((size_t)(total + 1) * sizeof(PyObject *));
        if (stack == NULL) {
            Py_DECREF(fn);
            return PyErr_NoMemory();
        }
    }
    stack[0] = self;
    for (Py_ssize_t i = 0; i < total; i++)
        stack[i + 1] = args[i];
    PyObject *res = PyObject_Vectorcall(fn, stack, (size_t)nargs + 1, kwnames);
    if (stack != small)
        PyMem_Free(stack);
    Py_DECREF(fn);
    return res;
}

/* The Python way of a by-key form: the method `name` of the Container's class (the
   Python paths), on (container, *args) */
static PyObject *p2f_slow_method(p2f_obj *o, const char *name, PyObject *const *args,
                                 size_t nargsf, PyObject *kwnames)
{
    PyObject *fn = PyObject_GetAttrString((PyObject *)Py_TYPE(o->owner), name);
    if (fn == NULL)
        return NULL;
    return p2f_call_on(fn, o->owner, args, nargsf, kwnames);
}

enum { P2F_BY_GET, P2F_BY_ITEM, P2F_BY_IN };

/* c.get(key, default=None), c[key] (Container._getitem), key in c (_contains): by the
   container's key, as find(key) (the Python way for anything else, and for [] of a key
   no element has, whose NotFoundError it says) */
static PyObject *p2f_bykey(p2f_obj *o, PyObject *const *args, size_t nargsf,
                           PyObject *kwnames, int form)
{
    static const char *slow[] = {"get", "_getitem", "_contains"};
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    unsigned char keyrec[P2F_STACK_MAX], out[P2F_STACK_MAX];
    if (kwnames != NULL || nargs < 1 || nargs > (form == P2F_BY_GET ? 2 : 1)
        || !p2f_key(o, args[0], keyrec))
        return p2f_slow_method(o, slow[form], args, nargsf, kwnames);
    p2f_lock *l = o->lock;
    if (!p2f_try(l))
        return p2f_slow_method(o, slow[form], args, nargsf, kwnames);
    if (l->db == NULL) {
        p2f_release(l);
        return p2f_slow_method(o, slow[form], args, nargsf, kwnames);
    }
    uint64_t ref;
    PyObject *r;
    int rc = o->t->find(l->db, keyrec, out, &ref);
    if (rc == P2_OK)
        r = form == P2F_BY_IN ? Py_NewRef(Py_True) : p2f_record_at(o, l->db, out, ref);
    else if (rc != P2_NOTFOUND)
        r = p2f_raise(o, rc);
    else if (form == P2F_BY_ITEM) {
        p2f_release(l);
        return p2f_slow_method(o, slow[form], args, nargsf, kwnames);   /* its KeyError */
    } else
        r = Py_NewRef(form == P2F_BY_IN ? Py_False : nargs == 2 ? args[1] : Py_None);
    p2f_release(l);
    return r;
}

static PyObject *p2f_getkey(p2f_obj *o, PyObject *const *args, size_t nargsf,
                            PyObject *kwnames)
{
    return p2f_bykey(o, args, nargsf, kwnames, P2F_BY_GET);
}

static PyObject *p2f_item(p2f_obj *o, PyObject *const *args, size_t nargsf,
                          PyObject *kwnames)
{
    return p2f_bykey(o, args, nargsf, kwnames, P2F_BY_ITEM);
}

static PyObject *p2f_contains(p2f_obj *o, PyObject *const *args, size_t nargsf,
                              PyObject *kwnames)
{
    return p2f_bykey(o, args, nargsf, kwnames, P2F_BY_IN);
}

/* get(ref): the Record of the element (an int reference; a Record goes the Python way,
   which checks its keys) */
static PyObject *p2f_getref(p2f_obj *o, PyObject *const *args, size_t nargsf,
                            PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    unsigned char out[P2F_STACK_MAX];
    if (nargs != 1 || kwnames != NULL || !PyLong_CheckExact(args[0]))
        P2F_SLOW(slow_get);
    unsigned long long ref = PyLong_AsUnsignedLongLong(args[0]);
    if (ref == (unsigned long long)-1) {       /* negative, too big, or NOREF itself */
        PyErr_Clear();
        P2F_SLOW(slow_get);
    }
    p2f_lock *l = o->lock;
    if (!p2f_try(l))
        P2F_SLOW(slow_get);
    if (l->db == NULL) {
        p2f_release(l);
        P2F_SLOW(slow_get);
    }
    PyObject *r;
    int rc = o->t->get(l->db, ref, out);
    if (rc == P2_OK)
        r = p2f_record(o, l->db, out, ref, args[0]);
    else
        r = p2f_raise(o, rc);
    p2f_release(l);
    return r;
}

/* insert(**fields): the Record inserted */
static PyObject *p2f_insert(p2f_obj *o, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    unsigned char rec[P2F_STACK_MAX];
    memcpy(rec, o->zero, o->t->rsize);
    int nreq = 0;
    p2f_texts tv;
    tv.n = 0;
    if (nargs != 0 || !p2f_fields(o, args, kwnames, rec, NULL, &nreq, &tv)
        || nreq != o->nrequired)
        P2F_SLOW(slow_insert);     /* (a field missing: the Python way names it) */
    p2f_lock *l = o->lock;
    if (!p2f_try(l))
        P2F_SLOW(slow_insert);
    if (l->db == NULL || (o->t->guard != NULL && o->t->guard(l->db) != P2_OK)) {
        p2f_release(l);
        P2F_SLOW(slow_insert);     /* closed, or the journal's guard failed: its error */
    }
    uint64_t ref;
    PyObject *r;
    int rc = o->t->insert(l->db, rec, &ref);
    if (rc != P2_OK)
        r = p2f_raise(o, rc);
    else if (p2f_changed(o) < 0)
        r = NULL;
    else if (o->t->ntexts > 0 && p2f_set_texts(o, l->db, ref, &tv, 1) < 0) {
        o->t->delete(l->db, ref);      /* nothing half-made stays (Container.insert) */
        r = NULL;
    } else
        r = p2f_record_at(o, l->db, rec, ref);
    p2f_release(l);
    return r;
}

/* update_by(key, **fields): the Record updated, or None */
static PyObject *p2f_update_by(p2f_obj *o, PyObject *const *args, size_t nargsf,
                               PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    size_t rsize = o->t->rsize;
    unsigned char keyrec[P2F_STACK_MAX], vals[P2F_STACK_MAX], mask[P2F_STACK_MAX],
                  out[P2F_STACK_MAX];
    memset(vals, 0, rsize);
    memset(mask, 0, rsize);
    p2f_texts tv;
    tv.n = 0;
    if (nargs != 1 || o->t->upd == NULL || !p2f_key(o, args[0], keyrec)
        || !p2f_fields(o, args + 1, kwnames, vals, mask, NULL, &tv))
        P2F_SLOW(slow_update_by);
    p2f_lock *l = o->lock;
    if (!p2f_try(l))
        P2F_SLOW(slow_update_by);
    if (l->db == NULL || (o->t->guard != NULL && o->t->guard(l->db) != P2_OK)) {
        p2f_release(l);
        P2F_SLOW(slow_update_by);
    }
    uint64_t ref;
    PyObject *r;
    int rc;
    if (tv.n > 0) {     /* texts: find, then as update() (their old values kept) */
        unsigned char old[P2F_STACK_MAX];
        rc = o->t->find(l->db, keyrec, old, &ref);
        if (rc == P2_OK) {
            for (size_t i = 0; i < rsize; i++)
                out[i] = mask[i] ? vals[i] : old[i];
            r = p2f_update_at(o, l->db, ref, out, old, &tv);
        } else
            r = rc == P2_NOTFOUND ? Py_NewRef(Py_None) : p2f_raise(o, rc);
        p2f_release(l);
        return r;
    }
    rc = o->t->upd(l->db, keyrec, vals, mask, out, &ref);
    if (rc == P2_OK)
        r = p2f_changed(o) < 0 ? NULL : p2f_record_at(o, l->db, out, ref);
    else if (rc == P2_NOTFOUND)
        r = Py_NewRef(Py_None);
    else
        r = p2f_raise(o, rc);
    p2f_release(l);
    return r;
}

/* delete_by(key): True, or False if there is no such element */
static PyObject *p2f_delete_by(p2f_obj *o, PyObject *const *args, size_t nargsf,
                               PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    unsigned char keyrec[P2F_STACK_MAX];
    if (nargs != 1 || kwnames != NULL || o->t->del == NULL || !p2f_key(o, args[0], keyrec))
        P2F_SLOW(slow_delete_by);
    p2f_lock *l = o->lock;
    if (!p2f_try(l))
        P2F_SLOW(slow_delete_by);
    if (l->db == NULL || (o->t->guard != NULL && o->t->guard(l->db) != P2_OK)) {
        p2f_release(l);
        P2F_SLOW(slow_delete_by);
    }
    uint64_t ref;
    PyObject *r;
    int rc = o->t->del(l->db, keyrec, &ref);
    if (rc == P2_OK)
        r = p2f_changed(o) < 0 ? NULL : Py_NewRef(Py_True);
    else if (rc == P2_NOTFOUND)
        r = Py_NewRef(Py_False);
    else
        r = p2f_raise(o, rc);
    p2f_release(l);
    return r;
}

/* update(rec_or_ref, **fields): the Record updated (its reference changes if it moved) */
static PyObject *p2f_update(p2f_obj *o, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    unsigned char rec[P2F_STACK_MAX], old[P2F_STACK_MAX];
    p2f_texts tv;
    tv.n = 0;
    if (nargs != 1 || o->t->update == NULL)
        P2F_SLOW(slow_update);
    p2f_lock *l = o->lock;
    if (!p2f_try(l))
        P2F_SLOW(slow_update);
    uint64_t ref;
    if (l->db == NULL || (o->t->guard != NULL && o->t->guard(l->db) != P2_OK)
        || !p2f_locate(o, l->db, args[0], &ref, rec)
        || (memcpy(old, rec, o->t->rsize),
            !p2f_fields(o, args + 1, kwnames, rec, NULL, NULL, &tv))) {
        p2f_release(l);
        P2F_SLOW(slow_update);     /* closed, the guard failed, no such element, a value */
    }
    PyObject *r = p2f_update_at(o, l->db, ref, rec, old, &tv);
    p2f_release(l);
    return r;
}

/* delete(rec_or_ref): None */
static PyObject *p2f_delete(p2f_obj *o, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    unsigned char rec[P2F_STACK_MAX];
    if (nargs != 1 || kwnames != NULL || o->t->delete == NULL)
        P2F_SLOW(slow_delete);
    p2f_lock *l = o->lock;
    if (!p2f_try(l))
        P2F_SLOW(slow_delete);
    uint64_t ref;
    if (l->db == NULL || (o->t->guard != NULL && o->t->guard(l->db) != P2_OK)
        || !p2f_locate(o, l->db, args[0], &ref, rec)) {
        p2f_release(l);
        P2F_SLOW(slow_delete);
    }
    PyObject *r;
    int rc = o->t->delete(l->db, ref);
    if (rc != P2_OK)
        r = p2f_raise(o, rc);
    else if (p2f_changed(o) < 0)
        r = NULL;
    else
        r = Py_NewRef(Py_None);
    p2f_release(l);
    return r;
}

/* rows(recs, refs, k): Records of the first k C records in the buffer recs (packed), the
   references from refs (a list of ints, or a buffer of uint64). Touches no database. */
static PyObject *p2f_rows(p2f_obj *o, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "rows(recs, refs, k)");
        return NULL;
    }
    Py_ssize_t k = PyLong_AsSsize_t(args[2]);
    if (k == -1 && PyErr_Occurred())
        return NULL;
    Py_buffer rb, fb;
    if (PyObject_GetBuffer(args[0], &rb, PyBUF_SIMPLE) < 0)
        return NULL;
    PyObject *list = NULL;
    int refs_listed = PyList_CheckExact(args[1]);
    if (!refs_listed && PyObject_GetBuffer(args[1], &fb, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&rb);
        return NULL;
    }
    size_t rsize = o->t->rsize;
    void *db = NULL;
    if (o->t->ntexts > 0) {   /* texts are read from the database: its lock must be held */
        p2f_lock *l = o->lock;
        if (l->count == 0 || l->owner != PyThread_get_thread_ident() || l->db == NULL) {
            PyErr_SetString(PyExc_RuntimeError, "rows: a record with text fields is made "
                            "with the database's lock held and the database open");
            goto out;
        }
        db = l->db;
    }
    if (k < 0 || (size_t)rb.len < (size_t)k * rsize
        || (refs_listed ? PyList_GET_SIZE(args[1]) < k : (size_t)fb.len < (size_t)k * 8)) {
        PyErr_SetString(PyExc_ValueError, "rows: buffers shorter than k rows");
        goto out;
    }
    list = PyList_New(k);
    if (list == NULL)
        goto out;
    for (Py_ssize_t i = 0; i < k; i++) {
        PyObject *r;
        const unsigned char *rec = (const unsigned char *)rb.buf + (size_t)i * rsize;
        if (refs_listed) {
            PyObject *pr = PyList_GET_ITEM(args[1], i);
            unsigned long long ref = PyLong_AsUnsignedLongLong(pr);
            r = ref == (unsigned long long)-1 && PyErr_Occurred() ? NULL
                : p2f_record(o, db, rec, ref, pr);
        } else {
            uint64_t ref;
            memcpy(&ref, (const char *)fb.buf + 8 * i, 8);
            r = p2f_record_at(o, db, rec, ref);
        }
        if (r == NULL) {
            Py_CLEAR(list);
            goto out;
        }
        PyList_SET_ITEM(list, i, r);
    }
out:
    PyBuffer_Release(&rb);
    if (!refs_listed)
        PyBuffer_Release(&fb);
    return list;
}

static PyMethodDef p2f_methods[] = {
    {"find", (PyCFunction)(void (*)(void))p2f_find, METH_FASTCALL | METH_KEYWORDS, NULL},
    {"insert", (PyCFunction)(void (*)(void))p2f_insert, METH_FASTCALL | METH_KEYWORDS, NULL},
    {"get", (PyCFunction)(void (*)(void))p2f_getref, METH_FASTCALL | METH_KEYWORDS, NULL},
    {"update_by", (PyCFunction)(void (*)(void))p2f_update_by, METH_FASTCALL | METH_KEYWORDS,
     NULL},
    {"delete_by", (PyCFunction)(void (*)(void))p2f_delete_by, METH_FASTCALL | METH_KEYWORDS,
     NULL},
    {"update", (PyCFunction)(void (*)(void))p2f_update, METH_FASTCALL | METH_KEYWORDS, NULL},
    {"delete", (PyCFunction)(void (*)(void))p2f_delete, METH_FASTCALL | METH_KEYWORDS, NULL},
    {"rows", (PyCFunction)(void (*)(void))p2f_rows, METH_FASTCALL, NULL},
    {"get_by_key", (PyCFunction)(void (*)(void))p2f_getkey, METH_FASTCALL | METH_KEYWORDS,
     NULL},
    {"item", (PyCFunction)(void (*)(void))p2f_item, METH_FASTCALL | METH_KEYWORDS, NULL},
    {"contains", (PyCFunction)(void (*)(void))p2f_contains, METH_FASTCALL | METH_KEYWORDS,
     NULL},
    {NULL, NULL, 0, NULL}
};

static PyMemberDef p2f_members[] = {
    {"version", T_ULONGLONG, offsetof(p2f_obj, version), 0,
     "the container's _version: bumped by every change not made through a cursor"},
    {"links", T_ULONGLONG, offsetof(p2f_obj, links), 0,
     "the container's _links: bumped by every change and every change of a role"},
    {NULL, 0, 0, 0, NULL}
};

static PyType_Slot p2f_slots[] = {
    {Py_tp_members, p2f_members},
    {Py_tp_dealloc, (void *)p2f_dealloc},
    {Py_tp_traverse, (void *)p2f_traverse},
    {Py_tp_clear, (void *)p2f_clear},
    {Py_tp_methods, p2f_methods},
    {Py_tp_doc, (void *)"The C paths of one container (see p2gen.runtime.pyapi)."},
    {0, NULL}
};

static PyType_Spec p2f_spec = {
    "p2gen_fast.Container", sizeof(p2f_obj), 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    p2f_slots
};


/* -- Walk: the base of the classes of cursors and relationship walks, whose next()
      returns the Records of the batch fetched last with no Python code per row; when
      the batch is used up it calls _refill(), when the container changed (its counter
      is not the one the walk started under) or the database was closed, _check(),
      which raises -- */
typedef struct {
    PyObject_HEAD
    PyObject *rows;          /* _rows: the Records fetched, a list */
    Py_ssize_t i;            /* _i: the next of them to return */
    Py_ssize_t restore;      /* _restore: the row update()/delete() act on */
    PyObject *current;       /* _current */
    char done;               /* _done */
    PyObject *version;       /* _version: the container's counter it walks under */
    PyObject *cdict;         /* _walk_dict: the container's __dict__ */
    PyObject *key;           /* _walk_key: the counter's name (NULL: "_version") */
    PyObject *cdict2;        /* _walk_dict2, _walk_val2: another container's counter */
    PyObject *val2;          /*     (a relationship's partner), or NULL */
    PyObject *lock;          /* _walk_lock: the database's Lock */
    /* the next batch fetched in C (a relationship walk made in C: RoleWalk), NULL: the
       _refill() method; 1 rows in _rows, 0 the end (_done set), -1 an exception */
    int (*refill)(PyObject *w);
} p2f_walk;

static PyObject *p2f_s_check, *p2f_s_refill;

/* The heap types below that hold references (Walk, ManyRole / OneRole, RoleWalk): made by
   PyType_GenericNew, garbage-collected through NAME_traverse and NAME_clear, released by
   NAME_dealloc (untracked, cleared, freed, its type's reference dropped). */
#define P2F_GC_DEALLOC(name, type)              \
    static void name##_dealloc(type *self)      \
    {                                           \
        PyTypeObject *tp = Py_TYPE(self);       \
        PyObject_GC_UnTrack(self);              \
        name##_clear(self);                     \
        tp->tp_free(self);                      \
        Py_DECREF(tp);                          \
    }
#define P2F_GC_SLOTS(name)                                                                  \
    {Py_tp_new, (void *)PyType_GenericNew}, {Py_tp_dealloc, (void *)name##_dealloc},       \
    {Py_tp_traverse, (void *)name##_traverse}, {Py_tp_clear, (void *)name##_clear}
#define P2F_GC_SPEC(tpname, type, slots) \
    {tpname, sizeof(type), 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_BASETYPE, slots}


/* the references a walk holds: traversed and cleared from this one list */
#define P2F_WALK_REFS(X, w) X(w->rows) X(w->current) X(w->version) X(w->cdict) X(w->key) \
    X(w->cdict2) X(w->val2) X(w->lock)

static int p2f_walk_traverse(p2f_walk *w, visitproc visit, void *arg)
{
    P2F_WALK_REFS(P2F_VISIT_REF, w)
    Py_VISIT(Py_TYPE(w));
    return 0;
}

static int p2f_walk_clear(p2f_walk *w)
{
    P2F_WALK_REFS(P2F_CLEAR_REF, w)
    return 0;
}

P2F_GC_DEALLOC(p2f_walk, p2f_walk)

/* 1 the counter `key` in dict d is still `was`, 0 not (or not there), -1 an error */
static int p2f_same(PyObject *d, PyObject *key, PyObject *was)
{
    if (d != NULL && Py_IS_TYPE(d, p2f_type) && was != NULL && PyLong_CheckExact(was)) {
        /* the C paths of a container: its counters are C fields */
        p2f_obj *o = (p2f_obj *)d;
        int links = key == p2f_s_links
                    || (key != p2f_s_version && PyUnicode_Check(key)
                        && PyUnicode_Compare(key, p2f_s_links) == 0);
        unsigned long long v = PyLong_AsUnsignedLongLong(was);
        if (v == (unsigned long long)-1 && PyErr_Occurred()) {
            PyErr_Clear();
            return 0;
        }
        return v == (links ? o->links : o->version);
    }
    if (d == NULL || !PyDict_CheckExact(d) || was == NULL || !PyUnicode_CheckExact(key))
        return 0;
    PyObject *now = PyDict_GetItemWithError(d, key);   /* borrowed */
    if (now == NULL)
        return PyErr_Occurred() ? -1 : 0;
    if (now == was)
        return 1;
    return PyObject_RichCompareBool(now, was, Py_EQ);
}

/* 1 the walk may go on without Python, 0 it must ask _check(), -1 an error */
static int p2f_walk_ok(p2f_walk *w)
{
    if (w->lock == NULL || !Py_IS_TYPE(w->lock, p2f_lock_type)
        || ((p2f_lock *)w->lock)->db == NULL)
        return 0;
    PyObject *key = w->key != NULL ? w->key : p2f_s_version;
    int ok = p2f_same(w->cdict, key, w->version);
    if (ok != 1 || w->cdict2 == NULL)
        return ok;
    return p2f_same(w->cdict2, key, w->val2);
}

static PyObject *p2f_walk_next(p2f_walk *w)
{
    if (w->done)
        return NULL;
    int ok = p2f_walk_ok(w);
    if (ok < 0)
        return NULL;
    if (ok == 0) {          /* _check() raises what is wrong (changed, closed) */
        PyObject *r = PyObject_CallMethodNoArgs((PyObject *)w, p2f_s_check);
        if (r == NULL)
            return NULL;
        Py_DECREF(r);
    }
    Py_ssize_t i = w->i;
    if (w->rows == NULL || !PyList_CheckExact(w->rows) || i >= PyList_GET_SIZE(w->rows)) {
        if (w->refill != NULL) {
            if (w->refill((PyObject *)w) <= 0)
                return NULL;     /* the end (no exception: StopIteration), or an error */
        } else {
            PyObject *r = PyObject_CallMethodNoArgs((PyObject *)w, p2f_s_refill);
            if (r == NULL)
                return NULL;     /* StopIteration at the end */
            Py_DECREF(r);
        }
        if (w->rows == NULL || !PyList_CheckExact(w->rows) || PyList_GET_SIZE(w->rows) == 0) {
            PyErr_SetString(PyExc_RuntimeError, "cursor: no rows after a fetch");
            return NULL;
        }
        i = 0;
    }
    PyObject *rec = PyList_GET_ITEM(w->rows, i);
    w->i = i + 1;
    w->restore = i;
    Py_INCREF(rec);
    Py_XSETREF(w->current, Py_NewRef(rec));
    return rec;
}

static PyMemberDef p2f_walk_members[] = {
    {"_rows", T_OBJECT, offsetof(p2f_walk, rows), 0, NULL},
    {"_i", T_PYSSIZET, offsetof(p2f_walk, i), 0, NULL},
    {"_restore", T_PYSSIZET, offsetof(p2f_walk, restore), 0, NULL},
    {"_current", T_OBJECT, offsetof(p2f_walk, current), 0, NULL},
    {"_done", T_BOOL, offsetof(p2f_walk, done), 0, NULL},
    {"_version", T_OBJECT, offsetof(p2f_walk, version), 0, NULL},
    {"_walk_dict", T_OBJECT, offsetof(p2f_walk, cdict), 0, NULL},
    {"_walk_key", T_OBJECT, offsetof(p2f_walk, key), 0, NULL},
    {"_walk_dict2", T_OBJECT, offsetof(p2f_walk, cdict2), 0, NULL},
    {"_walk_val2", T_OBJECT, offsetof(p2f_walk, val2), 0, NULL},
    {"_walk_lock", T_OBJECT, offsetof(p2f_walk, lock), 0, NULL},
    {NULL, 0, 0, 0, NULL}
};

static PyType_Slot p2f_walk_slots[] = {
    P2F_GC_SLOTS(p2f_walk),
    {Py_tp_iter, (void *)PyObject_SelfIter},
    {Py_tp_iternext, (void *)p2f_walk_next},
    {Py_tp_members, p2f_walk_members},
    {Py_tp_doc, (void *)"The C part of a cursor: next() over the fetched batch."},
    {0, NULL}
};

static PyType_Spec p2f_walk_spec = P2F_GC_SPEC("p2gen_fast.Walk", p2f_walk, p2f_walk_slots);

/* -- Roles: the C base of a spec's ManyRole and OneRole classes. Bound to its role's
      table (bind_role), each call locates its elements, calls the generated function
      and bumps the containers' _links under the database's lock, crossing from Python
      once; anything else (an unbound role, a value the C paths do not take, a missing or
      stale element, a closed database, another thread holding the lock) calls the
      Python method of the same name, which waits, checks and raises the precise error.
      A walk (role(owner), role.refs(owner)) is a RoleWalk made here, its iterator held
      in it and its batches fetched in C. -- */
#define P2F_BATCH 64            /* partners fetched per crossing, at most */
#define P2F_BATCH_BYTES 16384   /* ... and their records' bytes, at most */

typedef struct {
    PyObject_HEAD
    const p2f_role_t *t;        /* NULL: not bound, every call the Python way */
    p2f_obj *c, *p;             /* the C paths of the role's container and partner */
    PyObject *walk_cls;         /* the class of walks (a subclass of RoleWalk) */
    PyObject *pycls;            /* the Python class whose methods are the Python way */
    PyObject *what_add, *what_remove, *what_set;    /* "<container>.<role>: add" ... */
} p2f_role;

typedef struct {
    p2f_walk w;                 /* first: Walk's next() */
    PyObject *role;             /* _role */
    unsigned long long owner;   /* _owner */
    char records;               /* _records: Records (else int references) */
    int end;                    /* the last fetch's code: P2_OK, more may come */
    union { uint64_t u; void *p; long double d; unsigned char b[P2F_ITER_MAX]; } it;
} p2f_rwalk;

static PyTypeObject *p2f_many_type, *p2f_one_type, *p2f_rwalk_type;

static int p2f_role_traverse(p2f_role *r, visitproc visit, void *arg)
{
    Py_VISIT(r->c);
    Py_VISIT(r->p);
    Py_VISIT(r->walk_cls);
    Py_VISIT(r->pycls);
    Py_VISIT(Py_TYPE(r));
    return 0;
}

static int p2f_role_clear(p2f_role *r)
{
    r->t = NULL;
    Py_CLEAR(r->c);
    Py_CLEAR(r->p);
    Py_CLEAR(r->walk_cls);
    Py_CLEAR(r->pycls);
    Py_CLEAR(r->what_add);
    Py_CLEAR(r->what_remove);
    Py_CLEAR(r->what_set);
    return 0;
}

P2F_GC_DEALLOC(p2f_role, p2f_role)

/* The Python way: the method `name` of the role's Python class, on (self, *args) */
static PyObject *p2f_role_slow(p2f_role *r, const char *name, PyObject *const *args,
                               size_t nargsf, PyObject *kwnames)
{
    if (r->pycls == NULL) {
        PyErr_SetString(PyExc_TypeError, "role not bound (bind_role)");
        return NULL;
    }
    PyObject *fn = PyObject_GetAttrString(r->pycls, name);
    if (fn == NULL)
        return NULL;
    return p2f_call_on(fn, (PyObject *)r, args, nargsf, kwnames);
}

#define P2F_ROLE_SLOW(name) return p2f_role_slow(r, name, args, nargsf, kwnames)

/* An ordered role's keyword k = v of a walk (reverse=, lo=, hi=) into *rev, *lo, *hi:
   1 taken, 0 not one of them, -1 with an error set (reverse's truth failed) */
static inline int p2f_range_kw(PyObject *k, PyObject *v, int *rev, PyObject **lo,
                               PyObject **hi)
{
    if (PyUnicode_CompareWithASCIIString(k, "reverse") == 0)
        return (*rev = PyObject_IsTrue(v)) < 0 ? -1 : 1;
    if (PyUnicode_CompareWithASCIIString(k, "lo") == 0)
        *lo = v;
    else if (PyUnicode_CompareWithASCIIString(k, "hi") == 0)
        *hi = v;
    else
        return 0;
    return 1;
}

/* The lock taken with the database open (and, for a write, the journal guard passed):
   the handle, or NULL with the lock not held (the caller goes the Python way). */
static void *p2f_role_enter(p2f_role *r, int writes)
{
    if (r->t == NULL)
        return NULL;
    p2f_lock *l = r->c->lock;
    if (!p2f_try(l))
        return NULL;
    const p2f_container *t = r->c->t;
    if (l->db == NULL || (writes && t->guard != NULL && t->guard(l->db) != P2_OK)) {
        p2f_release(l);
        return NULL;
    }
    return l->db;
}

/* a role's add / remove / set went through: _links of both containers bumped (as
   Role._done) */
static int p2f_role_done(p2f_role *r)
{
    r->c->links++;
    r->p->links++;
    return 0;
}

/* count, add / remove, ref / get, set: `nargs` positional arguments and no keywords, the
   lock taken (p2f_role_enter) and args[0] located in the role's container (*x); the
   handle, or NULL with the lock not held (the caller goes the Python way) */
static inline void *p2f_role_begin(p2f_role *r, PyObject *const *args, size_t nargsf,
                                   PyObject *kwnames, Py_ssize_t nargs, int writes,
                                   uint64_t *x, unsigned char *buf)
{
    if (PyVectorcall_NARGS(nargsf) != nargs || kwnames != NULL)
        return NULL;
    void *db = p2f_role_enter(r, writes);
    if (db != NULL && !p2f_locate(r->c, db, args[0], x, buf)) {
        p2f_release(r->c->lock);
        return NULL;
    }
    return db;
}

/* add / remove / set's end: None and both containers' _links bumped, or the error of
   rc raised as `what`; the lock released */
static inline PyObject *p2f_role_wrote(p2f_role *r, int rc, PyObject *what)
{
    PyObject *res;
    if (rc != P2_OK)
        res = p2f_raise_what(r->c, rc, what);
    else
        res = p2f_role_done(r) < 0 ? NULL : Py_NewRef(Py_None);
    p2f_release(r->c->lock);
    return res;
}

static int p2f_rwalk_refill(PyObject *self);

/* role(owner) / role.refs(owner) of a many-role: a walk over owner's partners */
static PyObject *p2f_role_walk(p2f_role *r, PyObject *const *args, size_t nargsf,
                               PyObject *kwnames, int records, const char *slow)
{
    unsigned char buf[P2F_STACK_MAX];
    uint64_t owner;
    int rev = 0, ranged = 0;
    PyObject *lo = Py_None, *hi = Py_None;
    if (PyVectorcall_NARGS(nargsf) != 1)
        P2F_ROLE_SLOW(slow);
    if (kwnames != NULL) {   /* an ordered role's reverse=, lo=, hi= */
        if (r->t == NULL || r->t->open_range == NULL)
            P2F_ROLE_SLOW(slow);
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(kwnames); i++) {
            int taken = p2f_range_kw(PyTuple_GET_ITEM(kwnames, i), args[1 + i], &rev, &lo, &hi);
            if (taken < 0)
                return NULL;
            if (taken == 0)
                P2F_ROLE_SLOW(slow);
        }
        ranged = 1;
    }
    void *db = p2f_role_enter(r, 0);
    if (db == NULL)
        P2F_ROLE_SLOW(slow);
    p2f_lock *l = r->c->lock;
    if (!p2f_locate(r->c, db, args[0], &owner, buf)) {
        p2f_release(l);
        P2F_ROLE_SLOW(slow);
    }
    PyTypeObject *cls = (PyTypeObject *)r->walk_cls;
    PyObject *v1 = PyLong_FromUnsignedLongLong(r->c->links);
    PyObject *v2 = v1 == NULL ? NULL : PyLong_FromUnsignedLongLong(r->p->links);
    p2f_rwalk *w = v2 == NULL ? NULL : (p2f_rwalk *)cls->tp_alloc(cls, 0);
    if (w == NULL) {
        p2f_release(l);
        Py_XDECREF(v1);
        Py_XDECREF(v2);
        return NULL;
    }
    if ((ranged ? r->t->open_range(db, w->it.b, owner, rev, lo, hi)
                : r->t->open(db, w->it.b, owner)) != P2_OK) {
        p2f_release(l);
        Py_DECREF(w);
        Py_DECREF(v1);
        Py_DECREF(v2);
        P2F_ROLE_SLOW(slow);      /* raises what opening says */
    }
    w->role = Py_NewRef(r);
    w->owner = owner;
    w->records = (char)records;
    w->end = P2_OK;
    w->w.refill = p2f_rwalk_refill;
    w->w.version = v1;
    w->w.cdict = Py_NewRef(r->c);
    w->w.key = Py_NewRef(p2f_s_links);
    w->w.cdict2 = Py_NewRef(r->p);
    w->w.val2 = v2;
    w->w.lock = Py_NewRef(l);
    p2f_release(l);
    return (PyObject *)w;
}

/* The next batch of a walk made by p2f_role_walk into _rows (see p2f_walk.refill) */
static int p2f_rwalk_refill(PyObject *self)
{
    p2f_rwalk *w = (p2f_rwalk *)self;
    p2f_role *r = (p2f_role *)w->role;
    if (w->end == P2_END) {
        w->w.done = 1;
        return 0;
    }
    if (r == NULL || r->t == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "walk: its role is gone");
        return -1;
    }
    if (w->end != P2_OK) {
        p2f_raise(r->c, w->end);
        return -1;
    }
    p2f_lock *l = r->c->lock;
    if (p2f_acquire(l, -1) < 0)
        return -1;
    int ok = p2f_walk_ok(&w->w);     /* another thread may have changed it meanwhile */
    if (ok != 1) {
        p2f_release(l);
        if (ok == 0) {
            PyObject *res = PyObject_CallMethodNoArgs(self, p2f_s_check);   /* raises */
            if (res == NULL)
                return -1;
            Py_DECREF(res);
            PyErr_SetString(PyExc_RuntimeError, "walk: the relationship changed");
        }
        return -1;
    }
    uint64_t refs[P2F_BATCH];
    unsigned char recs[P2F_BATCH_BYTES];
    size_t psize = r->p->t->rsize;
    int max = P2F_BATCH;
    if (w->records && (size_t)max * psize > sizeof recs)
        max = (int)(sizeof recs / psize);
    int n = 0;
    int rc = r->t->fetch(l->db, w->it.b, refs, w->records ? recs : NULL, max, &n);
    PyObject *rows = PyList_New(n);
    for (int i = 0; rows != NULL && i < n; i++) {
        PyObject *x = w->records ? p2f_record_at(r->p, l->db, recs + (size_t)i * psize, refs[i])
                                 : PyLong_FromUnsignedLongLong(refs[i]);
        if (x == NULL)
            Py_CLEAR(rows);
        else
            PyList_SET_ITEM(rows, i, x);
    }
    w->end = rc;
    p2f_release(l);
    if (rows == NULL)
        return -1;
    if (n == 0) {
        Py_DECREF(rows);
        if (rc == P2_END) {
            w->w.done = 1;
            return 0;
        }
        p2f_raise(r->c, rc == P2_OK ? P2_EINVAL : rc);
        return -1;
    }
    Py_XSETREF(w->w.rows, rows);
    w->w.i = 0;
    return 1;
}

/* role.feed(owners, k=None, *, reverse=False, lo=None, hi=None) of an ordered many-role:
   the first k members of the owners' roles merged (all of them when k is None), as a list
   of Records, in one crossing */
static PyObject *p2f_many_feed(p2f_role *r, PyObject *const *args, size_t nargsf,
                               PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    int rev = 0;
    PyObject *lo = Py_None, *hi = Py_None, *kobj = nargs > 1 ? args[1] : Py_None;
    if (r->t == NULL || r->t->top == NULL || nargs < 1 || nargs > 2)
        P2F_ROLE_SLOW("feed");
    for (Py_ssize_t i = 0; kwnames != NULL && i < PyTuple_GET_SIZE(kwnames); i++) {
        PyObject *k = PyTuple_GET_ITEM(kwnames, i), *v = args[nargs + i];
        int taken = p2f_range_kw(k, v, &rev, &lo, &hi);
        if (taken < 0)
            return NULL;
        if (taken == 0 && PyUnicode_CompareWithASCIIString(k, "k") == 0 && nargs == 1)
            kobj = v;
        else if (taken == 0)
            P2F_ROLE_SLOW("feed");
    }
    long long k = -1;
    if (kobj != Py_None) {
        if (!PyLong_CheckExact(kobj))
            P2F_ROLE_SLOW("feed");
        k = PyLong_AsLongLong(kobj);
        if (k < 0) {
            PyErr_Clear();
            P2F_ROLE_SLOW("feed");
        }
    }
    PyObject *seq = PySequence_Fast(args[0], "feed: owners must be a sequence");
    if (seq == NULL)
        return NULL;
    void *db = p2f_role_enter(r, 0);
    if (db == NULL) {
        Py_DECREF(seq);
        P2F_ROLE_SLOW("feed");
    }
    p2f_lock *l = r->c->lock;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    uint64_t small[64], *owners = n <= 64 ? small : PyMem_Malloc((size_t)n * sizeof *owners);
    unsigned char buf[P2F_STACK_MAX];
    int ok = owners != NULL;
    uint64_t total = 0;
    for (Py_ssize_t i = 0; ok && i < n; i++) {
        ok = p2f_locate(r->c, db, PySequence_Fast_GET_ITEM(seq, i), &owners[i], buf);
        if (ok && k < 0)
            total += r->t->count(db, owners[i]);
    }
    Py_DECREF(seq);
    uint64_t want = k < 0 ? total : (uint64_t)k, got = 0;
    size_t psize = r->p->t->rsize;
    uint64_t *refs = NULL;
    unsigned char *recs = NULL;
    if (ok && want > 0) {
        refs = PyMem_Malloc((size_t)want * sizeof *refs);
        recs = PyMem_Malloc((size_t)want * psize);
        ok = refs != NULL && recs != NULL;
    }
    int rc = ok ? r->t->top(db, owners, (uint64_t)n, rev, lo, hi, want, refs, recs, &got) : -2;
    PyObject *rows = rc == P2_OK ? PyList_New((Py_ssize_t)got) : NULL;
    for (uint64_t i = 0; rows != NULL && i < got; i++) {
        PyObject *x = p2f_record_at(r->p, db, recs + (size_t)i * psize, refs[i]);
        if (x == NULL)
            Py_CLEAR(rows);
        else
            PyList_SET_ITEM(rows, (Py_ssize_t)i, x);
    }
    p2f_release(l);
    if (owners != small)
        PyMem_Free(owners);
    PyMem_Free(refs);
    PyMem_Free(recs);
    if (rows != NULL)
        return rows;
    if (PyErr_Occurred())
        return NULL;
    P2F_ROLE_SLOW("feed");        /* raises what the Python way says */
}

/* role(...) with a tuple and a dict (tp_call): the Python way with self first */
static PyObject *p2f_role_call_slow(p2f_role *r, PyObject *args, PyObject *kw)
{
    if (r->pycls == NULL) {
        PyErr_SetString(PyExc_TypeError, "role not bound (bind_role)");
        return NULL;
    }
    PyObject *fn = PyObject_GetAttrString(r->pycls, "__call__");
    if (fn == NULL)
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    PyObject *all = PyTuple_New(n + 1);
    if (all == NULL) {
        Py_DECREF(fn);
        return NULL;
    }
    PyTuple_SET_ITEM(all, 0, Py_NewRef(r));
    for (Py_ssize_t i = 0; i < n; i++)
        PyTuple_SET_ITEM(all, i + 1, Py_NewRef(PyTuple_GET_ITEM(args, i)));
    PyObject *res = PyObject_Call(fn, all, kw);
    Py_DECREF(all);
    Py_DECREF(fn);
    return res;
}

/* role(owner) of a many-role: its partners' Records */
static PyObject *p2f_many_call(p2f_role *r, PyObject *args, PyObject *kw)
{
    if (PyTuple_GET_SIZE(args) != 1)
        return p2f_role_call_slow(r, args, kw);
    if (kw != NULL && PyDict_GET_SIZE(kw) > 0) {
        /* an ordered role's reverse=, lo=, hi=: as a vectorcall */
        PyObject *stack[4], *k, *v, *names;
        Py_ssize_t pos = 0, n = 1;
        if (r->t == NULL || r->t->open_range == NULL || PyDict_GET_SIZE(kw) > 3)
            return p2f_role_call_slow(r, args, kw);
        names = PyTuple_New(PyDict_GET_SIZE(kw));
        if (names == NULL)
            return NULL;
        stack[0] = PyTuple_GET_ITEM(args, 0);
        while (PyDict_Next(kw, &pos, &k, &v)) {
            PyTuple_SET_ITEM(names, n - 1, Py_NewRef(k));
            stack[n++] = v;
        }
        PyObject *res = p2f_role_walk(r, stack, 1, names, 1, "__call__");
        Py_DECREF(names);
        return res;
    }
    return p2f_role_walk(r, &PyTuple_GET_ITEM(args, 0), 1, NULL, 1, "__call__");
}

static PyObject *p2f_many_refs(p2f_role *r, PyObject *const *args, size_t nargsf,
                               PyObject *kwnames)
{
    return p2f_role_walk(r, args, nargsf, kwnames, 0, "refs");
}

static PyObject *p2f_many_count(p2f_role *r, PyObject *const *args, size_t nargsf,
                                PyObject *kwnames)
{
    unsigned char buf[P2F_STACK_MAX];
    uint64_t owner;
    void *db = p2f_role_begin(r, args, nargsf, kwnames, 1, 0, &owner, buf);
    if (db == NULL)
        P2F_ROLE_SLOW("count");
    uint64_t n = r->t->count(db, owner);
    p2f_release(r->c->lock);
    return PyLong_FromUnsignedLongLong(n);
}

/* add / remove: owner (an element of the role's container) and member (of the partner) */
static PyObject *p2f_many_change(p2f_role *r, PyObject *const *args, size_t nargsf,
                                 PyObject *kwnames, int add)
{
    const char *name = add ? "add" : "remove";
    unsigned char buf[P2F_STACK_MAX];
    uint64_t owner, member;
    void *db = p2f_role_begin(r, args, nargsf, kwnames, 2, 1, &owner, buf);
    if (db == NULL)
        P2F_ROLE_SLOW(name);
    if (!p2f_locate(r->p, db, args[1], &member, buf)) {
        p2f_release(r->c->lock);
        P2F_ROLE_SLOW(name);
    }
    int rc = add ? r->t->add(db, owner, member) : r->t->remove(db, owner, member);
    return p2f_role_wrote(r, rc, add ? r->what_add : r->what_remove);
}

static PyObject *p2f_many_add(p2f_role *r, PyObject *const *args, size_t nargsf,
                              PyObject *kwnames)
{
    return p2f_many_change(r, args, nargsf, kwnames, 1);
}

static PyObject *p2f_many_remove(p2f_role *r, PyObject *const *args, size_t nargsf,
                                 PyObject *kwnames)
{
    return p2f_many_change(r, args, nargsf, kwnames, 0);
}

/* a one-role's ref(x) (records 0) or get(x) (1) */
static PyObject *p2f_one_read(p2f_role *r, PyObject *const *args, size_t nargsf,
                              PyObject *kwnames, int records, const char *slow)
{
    unsigned char buf[P2F_STACK_MAX];
    uint64_t x;
    void *db = p2f_role_begin(r, args, nargsf, kwnames, 1, 0, &x, buf);
    if (db == NULL)
        P2F_ROLE_SLOW(slow);
    uint64_t ref = r->t->get(db, x);
    PyObject *res;
    if (ref == UINT64_MAX)
        res = Py_NewRef(Py_None);
    else if (!records)
        res = PyLong_FromUnsignedLongLong(ref);
    else {
        int rc = r->p->t->get(db, ref, buf);
        res = rc == P2_OK ? p2f_record_at(r->p, db, buf, ref) : p2f_raise(r->p, rc);
    }
    p2f_release(r->c->lock);
    return res;
}

static PyObject *p2f_one_ref(p2f_role *r, PyObject *const *args, size_t nargsf,
                             PyObject *kwnames)
{
    return p2f_one_read(r, args, nargsf, kwnames, 0, "ref");
}

static PyObject *p2f_one_get(p2f_role *r, PyObject *const *args, size_t nargsf,
                             PyObject *kwnames)
{
    return p2f_one_read(r, args, nargsf, kwnames, 1, "get");
}

static PyObject *p2f_one_call(p2f_role *r, PyObject *args, PyObject *kw)
{
    if ((kw != NULL && PyDict_GET_SIZE(kw) > 0) || PyTuple_GET_SIZE(args) != 1)
        return p2f_role_call_slow(r, args, kw);
    return p2f_one_read(r, &PyTuple_GET_ITEM(args, 0), 1, NULL, 1, "__call__");
}

/* set(x, partner): partner an element of the partner container, or None to clear */
static PyObject *p2f_one_set(p2f_role *r, PyObject *const *args, size_t nargsf,
                             PyObject *kwnames)
{
    unsigned char buf[P2F_STACK_MAX];
    uint64_t x, partner = UINT64_MAX;
    void *db = p2f_role_begin(r, args, nargsf, kwnames, 2, 1, &x, buf);
    if (db == NULL)
        P2F_ROLE_SLOW("set");
    if (args[1] != Py_None && !p2f_locate(r->p, db, args[1], &partner, buf)) {
        p2f_release(r->c->lock);
        P2F_ROLE_SLOW("set");
    }
    return p2f_role_wrote(r, r->t->set(db, x, partner), r->what_set);
}

#define P2F_METH(name, fn) \
    {name, (PyCFunction)(void (*)(void))fn, METH_FASTCALL | METH_KEYWORDS, NULL}

static PyMethodDef p2f_many_methods[] = {
    P2F_METH("refs", p2f_many_refs),
    P2F_METH("feed", p2f_many_feed),
    P2F_METH("count", p2f_many_count),
    P2F_METH("add", p2f_many_add),
    P2F_METH("remove", p2f_many_remove),
    {NULL, NULL, 0, NULL}
};

static PyMethodDef p2f_one_methods[] = {
    P2F_METH("ref", p2f_one_ref),
    P2F_METH("get", p2f_one_get),
    P2F_METH("set", p2f_one_set),
    {NULL, NULL, 0, NULL}
};

static PyType_Slot p2f_many_slots[] = {
    P2F_GC_SLOTS(p2f_role),
    {Py_tp_call, (void *)p2f_many_call},
    {Py_tp_methods, p2f_many_methods},
    {Py_tp_doc, (void *)"The C paths of a many-role (see p2gen.runtime.pyapi.ManyRole)."},
    {0, NULL}
};

static PyType_Slot p2f_one_slots[] = {
    P2F_GC_SLOTS(p2f_role),
    {Py_tp_call, (void *)p2f_one_call},
    {Py_tp_methods, p2f_one_methods},
    {Py_tp_doc, (void *)"The C paths of a one-role (see p2gen.runtime.pyapi.OneRole)."},
    {0, NULL}
};

static PyType_Spec p2f_many_spec = P2F_GC_SPEC("p2gen_fast.ManyRole", p2f_role, p2f_many_slots);

static PyType_Spec p2f_one_spec = P2F_GC_SPEC("p2gen_fast.OneRole", p2f_role, p2f_one_slots);

/* -- RoleWalk: a Walk over a many-role's partners; made by the role in C -- */
static int p2f_rwalk_traverse(p2f_rwalk *w, visitproc visit, void *arg)
{
    Py_VISIT(w->role);
    return p2f_walk_traverse(&w->w, visit, arg);
}

static int p2f_rwalk_clear(p2f_rwalk *w)
{
    Py_CLEAR(w->role);
    return p2f_walk_clear(&w->w);
}

P2F_GC_DEALLOC(p2f_rwalk, p2f_rwalk)

static PyMemberDef p2f_rwalk_members[] = {
    {"_role", T_OBJECT, offsetof(p2f_rwalk, role), 0, NULL},
    {"_owner", T_ULONGLONG, offsetof(p2f_rwalk, owner), 0, NULL},
    {"_records", T_BOOL, offsetof(p2f_rwalk, records), 0, NULL},
    {NULL, 0, 0, 0, NULL}
};

static PyType_Slot p2f_rwalk_slots[] = {
    P2F_GC_SLOTS(p2f_rwalk),
    {Py_tp_members, p2f_rwalk_members},
    {Py_tp_doc, (void *)"A walk over a many-role's partners, its batches fetched in C."},
    {0, NULL}
};

static PyType_Spec p2f_rwalk_spec = P2F_GC_SPEC("p2gen_fast.RoleWalk", p2f_rwalk, p2f_rwalk_slots);

/* bind_role(role, container name, role name, container's C paths, partner's C paths,
             walk class, Python class) -> True, or False (no C paths for it: its calls
   stay the Python way) */
static PyObject *p2f_bind_role(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    (void)m;
    if (nargs != 7) {
        PyErr_SetString(PyExc_TypeError, "bind_role() takes 7 arguments");
        return NULL;
    }
    PyObject *self = args[0];
    int many = PyObject_TypeCheck(self, p2f_many_type);
    if (!many && !PyObject_TypeCheck(self, p2f_one_type)) {
        PyErr_SetString(PyExc_TypeError, "bind_role(): not a role of the C paths");
        return NULL;
    }
    p2f_role *r = (p2f_role *)self;
    Py_XSETREF(r->pycls, Py_NewRef(args[6]));
    if (!Py_IS_TYPE(args[3], p2f_type) || !Py_IS_TYPE(args[4], p2f_type)
        || !PyType_Check(args[5])
        || !PyType_IsSubtype((PyTypeObject *)args[5], p2f_rwalk_type))
        Py_RETURN_FALSE;
    const char *cname = PyUnicode_AsUTF8(args[1]), *rname = PyUnicode_AsUTF8(args[2]);
    if (cname == NULL || rname == NULL)
        return NULL;
    const p2f_role_t *t = NULL;
    for (size_t i = 0; i < sizeof p2f_roles / sizeof p2f_roles[0]; i++)
        if (p2f_roles[i].container != NULL && strcmp(p2f_roles[i].container, cname) == 0
            && strcmp(p2f_roles[i].role, rname) == 0 && p2f_roles[i].many == many)
            t = &p2f_roles[i];
    if (t == NULL)
        Py_RETURN_FALSE;
    PyObject *wa = PyUnicode_FromFormat("%s.%s: add", cname, rname);
    PyObject *wr = PyUnicode_FromFormat("%s.%s: remove", cname, rname);
    PyObject *ws = PyUnicode_FromFormat("%s.%s: set", cname, rname);
    if (wa == NULL || wr == NULL || ws == NULL) {
        Py_XDECREF(wa);
        Py_XDECREF(wr);
        Py_XDECREF(ws);
        return NULL;
    }
    Py_XSETREF(r->what_add, wa);
    Py_XSETREF(r->what_remove, wr);
    Py_XSETREF(r->what_set, ws);
    Py_XSETREF(r->c, (p2f_obj *)Py_NewRef(args[3]));
    Py_XSETREF(r->p, (p2f_obj *)Py_NewRef(args[4]));
    Py_XSETREF(r->walk_cls, Py_NewRef(args[5]));
    r->t = t;
    Py_RETURN_TRUE;
}

/* -- Field: a record class's accessor of field i (what a property reading
      self._values[i] does, without a Python call) -- */
typedef struct {
    PyObject_HEAD
    Py_ssize_t index;
    Py_ssize_t off_values;      /* the _values slot of `owner` */
    PyTypeObject *owner;        /* the class declaring the slot (Record) */
    PyObject *doc;
} p2f_fieldget;

static PyObject *p2f_fieldget_get(p2f_fieldget *d, PyObject *obj, PyObject *type)
{
    (void)type;
    if (obj == NULL || obj == Py_None)
        return Py_NewRef(d);
    if (!PyObject_TypeCheck(obj, d->owner)) {
        PyErr_SetString(PyExc_TypeError, "field accessor used on an object that is not a record");
        return NULL;
    }
    PyObject *values = *(PyObject **)((char *)obj + d->off_values);
    if (values == NULL || !PyTuple_Check(values) || d->index >= PyTuple_GET_SIZE(values)) {
        PyErr_SetString(PyExc_AttributeError, "record without its values");
        return NULL;
    }
    return Py_NewRef(PyTuple_GET_ITEM(values, d->index));
}

static void p2f_fieldget_dealloc(p2f_fieldget *d)
{
    PyTypeObject *tp = Py_TYPE(d);
    Py_XDECREF(d->owner);
    Py_XDECREF(d->doc);
    tp->tp_free(d);
    Py_DECREF(tp);
}

static PyMemberDef p2f_fieldget_members[] = {
    {"__doc__", T_OBJECT, offsetof(p2f_fieldget, doc), READONLY, NULL},
    {NULL, 0, 0, 0, NULL}
};

static PyType_Slot p2f_fieldget_slots[] = {
    {Py_tp_dealloc, (void *)p2f_fieldget_dealloc},
    {Py_tp_descr_get, (void *)p2f_fieldget_get},
    {Py_tp_members, p2f_fieldget_members},
    {0, NULL}
};

static PyType_Spec p2f_fieldget_spec = {
    "p2gen_fast.Field", sizeof(p2f_fieldget), 0, Py_TPFLAGS_DEFAULT, p2f_fieldget_slots
};

static PyTypeObject *p2f_fieldget_type;
static Py_ssize_t p2f_slot_offset(PyObject *descr, PyObject *rec);

/* field(i, the _values slot's member descriptor, doc) -> Field */
static PyObject *p2f_new_field(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    (void)m;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "field(index, values slot, doc)");
        return NULL;
    }
    Py_ssize_t i = PyLong_AsSsize_t(args[0]);
    if (i == -1 && PyErr_Occurred())
        return NULL;
    if (i < 0 || !PyObject_TypeCheck(args[1], &PyMemberDescr_Type)) {
        PyErr_SetString(PyExc_TypeError, "field(): bad index or slot");
        return NULL;
    }
    PyTypeObject *owner = ((PyDescrObject *)args[1])->d_type;
    Py_ssize_t off = p2f_slot_offset(args[1], (PyObject *)owner);
    if (off < 0)
        return NULL;
    p2f_fieldget *d = PyObject_New(p2f_fieldget, p2f_fieldget_type);
    if (d == NULL)
        return NULL;
    d->index = i;
    d->off_values = off;
    d->owner = (PyTypeObject *)Py_NewRef(owner);
    d->doc = Py_NewRef(args[2]);
    return (PyObject *)d;
}

/* lock(address of the database handle) -> Lock */
static PyObject *p2f_new_lock(PyObject *m, PyObject *addr)
{
    (void)m;
    void *db = PyLong_AsVoidPtr(addr);
    if (db == NULL && PyErr_Occurred())
        return NULL;
    p2f_lock *l = PyObject_New(p2f_lock, p2f_lock_type);
    if (l == NULL)
        return NULL;
    l->owner = 0;
    l->count = 0;
    l->waiters = 0;
    l->db = db;
    l->wake = PyThread_allocate_lock();    /* taken: waiters sleep until it is posted */
    if (l->wake == NULL || !PyThread_acquire_lock(l->wake, NOWAIT_LOCK)) {
        Py_DECREF(l);
        return PyErr_NoMemory();
    }
    return (PyObject *)l;
}

/* The offset of an object slot of `rec` (a class whose base declared the slot) */
static Py_ssize_t p2f_slot_offset(PyObject *descr, PyObject *rec)
{
    if (!PyObject_TypeCheck(descr, &PyMemberDescr_Type)
        || !PyType_IsSubtype((PyTypeObject *)rec, ((PyDescrObject *)descr)->d_type)) {
        PyErr_SetString(PyExc_TypeError, "container(): expected a slot's member descriptor "
                        "of a base of the record class");
        return -1;
    }
    PyMemberDef *d = ((PyMemberDescrObject *)descr)->d_member;
    if (d->type != T_OBJECT_EX) {
        PyErr_SetString(PyExc_TypeError, "container(): expected an object slot");
        return -1;
    }
    return d->offset;
}

/* container(name, lock, owner, record class, values slot, ref slot, origin slot,
             insert, get, find, update_by, delete_by, fail, update, delete) -> Container, or None when the
   container has no table (a record too large, or with too many text fields) */
static PyObject *p2f_new(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    (void)m;
    if (nargs != 18) {
        PyErr_SetString(PyExc_TypeError, "container() takes 18 arguments");
        return NULL;
    }
    const char *name = PyUnicode_AsUTF8(args[0]);
    if (name == NULL)
        return NULL;
    const p2f_container *t = NULL;
    for (size_t i = 0; i < sizeof p2f_containers / sizeof p2f_containers[0]; i++)
        if (p2f_containers[i].name != NULL && strcmp(p2f_containers[i].name, name) == 0)
            t = &p2f_containers[i];
    if (t == NULL)
        Py_RETURN_NONE;
    if (!Py_IS_TYPE(args[1], p2f_lock_type) || !PyType_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError, "container(): bad lock or record class");
        return NULL;
    }
    /* args[15]: the record insert starts from; args[16]: per field, 1 if insert needs it */
    if (!PyBytes_CheckExact(args[15]) || (size_t)PyBytes_GET_SIZE(args[15]) != t->rsize
        || !PyBytes_CheckExact(args[16]) || PyBytes_GET_SIZE(args[16]) != t->nfields
        || !PyTuple_CheckExact(args[17]) || PyTuple_GET_SIZE(args[17]) != t->nfields) {
        PyErr_SetString(PyExc_TypeError, "container(): bad start record, required fields "
                        "or default texts");
        return NULL;
    }
    PyObject *dict = PyObject_GenericGetDict(args[2], NULL);
    if (dict == NULL)
        return NULL;
    Py_ssize_t ov = p2f_slot_offset(args[4], args[3]), orf = p2f_slot_offset(args[5], args[3]),
               oo = p2f_slot_offset(args[6], args[3]);
    if (ov < 0 || orf < 0 || oo < 0) {
        Py_DECREF(dict);
        return NULL;
    }
    PyObject *names = PyTuple_New(t->nfields);
    if (names == NULL) {
        Py_DECREF(dict);
        return NULL;
    }
    for (int i = 0; i < t->nfields; i++) {
        PyObject *s = PyUnicode_InternFromString(t->fields[i].name);
        if (s == NULL) {
            Py_DECREF(names);
            Py_DECREF(dict);
            return NULL;
        }
        PyTuple_SET_ITEM(names, i, s);
    }
    p2f_obj *o = PyObject_GC_New(p2f_obj, p2f_type);
    if (o == NULL) {
        Py_DECREF(names);
        Py_DECREF(dict);
        return NULL;
    }
    o->t = t;
    o->lock = (p2f_lock *)Py_NewRef(args[1]);
    o->owner = Py_NewRef(args[2]);
    o->dict = dict;
    o->version = o->links = 0;
    o->rec = (PyTypeObject *)Py_NewRef(args[3]);
    o->origin = Py_NewRef(args[0]);
    o->off_values = ov;
    o->off_ref = orf;
    o->off_origin = oo;
    o->names = names;
    o->slow_insert = Py_NewRef(args[7]);
    o->slow_get = Py_NewRef(args[8]);
    o->slow_find = Py_NewRef(args[9]);
    o->slow_update_by = Py_NewRef(args[10]);
    o->slow_delete_by = Py_NewRef(args[11]);
    o->fail = Py_NewRef(args[12]);
    o->slow_update = Py_NewRef(args[13]);
    o->slow_delete = Py_NewRef(args[14]);
    o->tdefaults = Py_NewRef(args[17]);
    o->zero = PyMem_Calloc(1, t->rsize);
    o->required = PyMem_Calloc(1, (size_t)t->nfields + 1);
    if (o->zero == NULL || o->required == NULL) {
        PyObject_GC_Track(o);
        Py_DECREF(o);
        return PyErr_NoMemory();
    }
    memcpy(o->zero, PyBytes_AS_STRING(args[15]), t->rsize);
    o->nrequired = 0;
    for (int i = 0; i < t->nfields; i++) {
        o->required[i] = PyBytes_AS_STRING(args[16])[i] != 0;
        o->nrequired += o->required[i];
    }
    PyObject_GC_Track(o);
    return (PyObject *)o;
}

static PyMethodDef p2f_module_methods[] = {
    {"lock", (PyCFunction)p2f_new_lock, METH_O, "lock(handle address) -> Lock"},
    {"field", (PyCFunction)(void (*)(void))p2f_new_field, METH_FASTCALL,
     "field(i, values slot, doc) -> a record class's accessor of field i"},
    {"container", (PyCFunction)(void (*)(void))p2f_new, METH_FASTCALL,
     "container(name, lock, owner, record, values, ref, origin, insert, get, find, "
     "update_by, delete_by, fail, update, delete) -> the C paths of a container, or None"},
    {"bind_role", (PyCFunction)(void (*)(void))p2f_bind_role, METH_FASTCALL,
     "bind_role(role, container, name, its C paths, the partner's, walk class, Python "
     "class) -> whether the role's calls take the C paths"},
    {NULL, NULL, 0, NULL}
};

static struct PyModuleDef p2f_module = {
    PyModuleDef_HEAD_INIT, P2F_MODULE, "The C paths of the Python binding (see p2gen.runtime.pyapi).",
    -1, p2f_module_methods, NULL, NULL, NULL, NULL
};

static PyObject *p2f_make(void)
{
    if (p2f_type == NULL) {
        p2f_lock_type = (PyTypeObject *)PyType_FromSpec(&p2f_lock_spec);
        if (p2f_lock_type == NULL)
            return NULL;
        p2f_type = (PyTypeObject *)PyType_FromSpec(&p2f_spec);
        if (p2f_type == NULL)
            return NULL;
        p2f_s_version = PyUnicode_InternFromString("_version");
        p2f_s_links = PyUnicode_InternFromString("_links");
        p2f_one = PyLong_FromLong(1);
        p2f_s_check = PyUnicode_InternFromString("_check");
        p2f_s_refill = PyUnicode_InternFromString("_refill");
        if (p2f_s_version == NULL || p2f_s_links == NULL || p2f_one == NULL
            || p2f_s_check == NULL || p2f_s_refill == NULL)
            return NULL;
        p2f_walk_type = (PyTypeObject *)PyType_FromSpec(&p2f_walk_spec);
        if (p2f_walk_type == NULL)
            return NULL;
        p2f_fieldget_type = (PyTypeObject *)PyType_FromSpec(&p2f_fieldget_spec);
        if (p2f_fieldget_type == NULL)
            return NULL;
        p2f_many_type = (PyTypeObject *)PyType_FromSpec(&p2f_many_spec);
        p2f_one_type = (PyTypeObject *)PyType_FromSpec(&p2f_one_spec);
        p2f_rwalk_type = (PyTypeObject *)PyType_FromSpecWithBases(&p2f_rwalk_spec,
                                                                  (PyObject *)p2f_walk_type);
        if (p2f_many_type == NULL || p2f_one_type == NULL || p2f_rwalk_type == NULL)
            return NULL;
    }
    PyObject *mod = PyModule_Create(&p2f_module);
    if (mod == NULL)
        return NULL;
    if (PyModule_AddObjectRef(mod, "Lock", (PyObject *)p2f_lock_type) < 0
        || PyModule_AddObjectRef(mod, "Walk", (PyObject *)p2f_walk_type) < 0
        || PyModule_AddObjectRef(mod, "RoleWalk", (PyObject *)p2f_rwalk_type) < 0
        || PyModule_AddObjectRef(mod, "ManyRole", (PyObject *)p2f_many_type) < 0
        || PyModule_AddObjectRef(mod, "OneRole", (PyObject *)p2f_one_type) < 0
        || PyModule_AddIntConstant(mod, "STACK_MAX", P2F_STACK_MAX) < 0
        || PyModule_AddIntConstant(mod, "API", P2F_API) < 0) {
        Py_DECREF(mod);
        return NULL;
    }
    /* which extension made it (a spec's prefix may be built twice): p2py__fast_id() */
    PyObject *init = PyLong_FromUnsignedLongLong((unsigned long long)(uintptr_t)&p2f_module);
    if (init == NULL || PyModule_AddObjectRef(mod, "ID", init) < 0) {
        Py_XDECREF(init);
        Py_DECREF(mod);
        return NULL;
    }
    Py_DECREF(init);
    return mod;
}
#endif

/* What identifies this extension's module (its ID), 0 without one */
uintptr_t p2py__fast_id(void)
{
#ifdef P2F_ON
    return (uintptr_t)&p2f_module;
#else
    return 0;
#endif
}

/* Create the module and register it in sys.modules; 0, or -1 (no module: Python paths).
   Called through CFFI, which released the GIL: take it back. */
int p2py__fast_init(void)
{
#ifdef P2F_ON
    PyGILState_STATE g = PyGILState_Ensure();
    int rc = -1;
    PyObject *mod = p2f_make();
    if (mod != NULL) {
        PyObject *mods = PyImport_GetModuleDict();    /* borrowed */
        rc = PyDict_SetItemString(mods, P2F_MODULE, mod);
        Py_DECREF(mod);
    }
    if (rc < 0)
        PyErr_Clear();
    PyGILState_Release(g);
    return rc;
#else
    return -1;
#endif
}
