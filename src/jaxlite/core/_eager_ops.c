/* jaxlite.core._eager_ops: the eager operators' fast path in C.
 *
 * ``x + 1`` on a small concrete array spends most of its time in Python-level checks
 * around one NumPy ufunc call (bench/PROFILES.md, W8).  An ``Operator`` does the same
 * checks and the same work as the Python operator it wraps (numpy/_methods.py
 * ``_fast_binop``) for the one case that path memoises: both operands plain concrete
 * arrays (or one a Python scalar) outside every transformation, the operator's plan
 * already in the Python operator's memo, the operands' buffers on the default or a
 * committed device.  It reads the very state the Python operator reads (the trace state,
 * monitoring's listeners, the mesh context, jax_enable_x64, NumPy's error state) and runs
 * the memoised ufunc under NumPy's "ignore every floating-point error" state.  Anything
 * else, including a memo miss, calls the wrapped Python operator, which decides.
 *
 * Nothing here decides what an operation means: the memo entries are the Python side's
 * (ufunc, constant, constant-first, output aval) tuples, and a result that is not a fresh
 * ndarray of the output dtype is handed to the Python side's ``finish``.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

/* what ``configure`` was given; all strong references, kept for the process */
static struct {
    int ready;                    /* configured and switched on */
    int configured;
    PyTypeObject *array_type;     /* core.array.ArrayImpl (exact type only) */
    PyTypeObject *buffer_type;    /* runtime.buffer.Buffer (exact type only) */
    PyTypeObject *ndarray_type;   /* numpy.ndarray */
    PyObject *trace_var;          /* core.trace._state (a ContextVar) */
    PyObject *monitoring;         /* the jaxlite.monitoring module (its _listeners) */
    PyObject *mesh_context;       /* core.sharded.mesh_context (its .mesh) */
    PyObject *config;             /* jaxlite.config (its jax_enable_x64) */
    PyObject *eager;              /* core.eager (its _fp_pair, fp_ignore_begin) */
    PyObject *fp_var;             /* NumPy's error-state ContextVar */
    PyObject *get_default_device; /* runtime.get_default_device */
    PyObject *finish;             /* finish(out, out_aval, device, committed, a, b) */
    Py_ssize_t off_buf, off_aval, off_committed, off_key;   /* ArrayImpl slots */
    Py_ssize_t off_data, off_device, off_nbytes;            /* Buffer slots */
} S;

static PyObject *s_eager, *s_listeners, *s_mesh, *s_x64, *s_fp_pair, *s_fp_begin, *s_dtype;
static PyObject *s_setflags, *s_nbytes, *s_bytes_in_use, *s_num_allocs, *s_peak, *s_largest;
static PyObject *s_one;

/* the slot of ``obj`` at byte offset ``off`` (borrowed; NULL when unset) */
#define SLOT(obj, off) (*(PyObject **)((char *)(obj) + (off)))

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *fallback;     /* the Python operator: fallback(self, other) */
    PyObject *memo32;       /* its memo dicts, by jax_enable_x64 */
    PyObject *memo64;
    int reflected;          /* ``other OP self`` */
} Operator;

/* the byte offset of the __slots__ member ``name`` of ``tp``, or -1 with an error set */
static Py_ssize_t
slot_offset(PyTypeObject *tp, const char *name)
{
    PyObject *d = PyObject_GetAttrString((PyObject *)tp, name);
    if (d == NULL)
        return -1;
    if (!Py_IS_TYPE(d, &PyMemberDescr_Type)
            || ((PyMemberDescrObject *)d)->d_member->type != T_OBJECT_EX) {
        PyErr_Format(PyExc_TypeError, "%s.%s is not a __slots__ member", tp->tp_name, name);
        Py_DECREF(d);
        return -1;
    }
    Py_ssize_t off = ((PyMemberDescrObject *)d)->d_member->offset;
    Py_DECREF(d);
    return off;
}

/* 1 when ``obj.name`` is true, 0 when false, -1 on error */
static int
attr_true(PyObject *obj, PyObject *name)
{
    PyObject *v = PyObject_GetAttr(obj, name);
    if (v == NULL)
        return -1;
    int r = PyObject_IsTrue(v);
    Py_DECREF(v);
    return r;
}

/* ``a + b`` stored back into ``obj.name``; the sum (a new reference) or NULL */
static PyObject *
add_to_attr(PyObject *obj, PyObject *name, PyObject *b)
{
    PyObject *a = PyObject_GetAttr(obj, name);
    if (a == NULL)
        return NULL;
    PyObject *s = PyNumber_Add(a, b);
    Py_DECREF(a);
    if (s != NULL && PyObject_SetAttr(obj, name, s) < 0)
        Py_CLEAR(s);
    return s;
}

/* ``obj.name = value`` when ``value > obj.name``; 0, or -1 with an error */
static int
raise_attr(PyObject *obj, PyObject *name, PyObject *value)
{
    PyObject *cur = PyObject_GetAttr(obj, name);
    if (cur == NULL)
        return -1;
    int r = PyObject_RichCompareBool(value, cur, Py_GT);
    Py_DECREF(cur);
    if (r > 0)
        r = PyObject_SetAttr(obj, name, value);
    return r < 0 ? -1 : 0;
}

/* ``Buffer(data, device)`` for a fresh ndarray ``data`` while no monitoring listener is
 * registered: what runtime/buffer.py's ``Buffer.__init__`` does (keep the two alike),
 * without its Python frame.  A new reference, or NULL with an error. */
static PyObject *
new_buffer(PyObject *data, PyObject *device)
{
    PyObject *r = PyObject_CallMethodOneArg(data, s_setflags, Py_False);
    if (r == NULL)
        return NULL;
    Py_DECREF(r);
    PyObject *n = PyObject_GetAttr(data, s_nbytes);
    if (n == NULL)
        return NULL;
    PyObject *buf = S.buffer_type->tp_alloc(S.buffer_type, 0);
    if (buf == NULL) {
        Py_DECREF(n);
        return NULL;
    }
    Py_INCREF(data);
    SLOT(buf, S.off_data) = data;
    Py_INCREF(device);
    SLOT(buf, S.off_device) = device;
    Py_INCREF(n);
    SLOT(buf, S.off_nbytes) = n;
    PyObject *used = add_to_attr(device, s_bytes_in_use, n);
    PyObject *count = used ? add_to_attr(device, s_num_allocs, s_one) : NULL;
    int bad = count == NULL || raise_attr(device, s_peak, used) < 0
              || raise_attr(device, s_largest, n) < 0;
    Py_XDECREF(used);
    Py_XDECREF(count);
    Py_DECREF(n);
    if (bad) {
        Py_DECREF(buf);
        return NULL;
    }
    return buf;
}

#define MISS ((PyObject *)1)   /* "the Python operator decides" */

/* The fast path: a new reference (the result), NULL with an error, or MISS. */
static PyObject *
fast(Operator *op, PyObject *self, PyObject *other)
{
    PyObject *state, *t, *key, *memo, *e, *buf, *buf2 = NULL, *v, *v2 = NULL, *device;
    PyObject *committed, *impl, *c, *out_aval, *a, *b, *pair, *cur, *token, *out;
    PyObject *result = MISS;
    int r;

    if (Py_TYPE(self) != S.array_type)
        return MISS;
    /* get_state().eager */
    if (PyContextVar_Get(S.trace_var, NULL, &state) < 0)
        return NULL;
    if (state == NULL)
        return MISS;
    r = attr_true(state, s_eager);
    Py_DECREF(state);
    if (r <= 0)
        return r < 0 ? NULL : MISS;
    /* not monitoring._listeners */
    r = attr_true(S.monitoring, s_listeners);
    if (r != 0)
        return r < 0 ? NULL : MISS;
    /* mesh_context.mesh is None */
    PyObject *mesh = PyObject_GetAttr(S.mesh_context, s_mesh);
    if (mesh == NULL)
        return NULL;
    Py_DECREF(mesh);
    if (mesh != Py_None)
        return MISS;

    /* the memo key: (aval, aval) or (aval, scalar type, scalar) */
    PyObject *aval = SLOT(self, S.off_aval);
    if (aval == NULL)
        return MISS;
    t = (PyObject *)Py_TYPE(other);
    if (t == (PyObject *)S.array_type) {
        PyObject *aval2 = SLOT(other, S.off_aval);
        if (aval2 == NULL)
            return MISS;
        key = PyTuple_Pack(2, aval, aval2);
    }
    else if (t == (PyObject *)&PyLong_Type || t == (PyObject *)&PyBool_Type) {
        key = PyTuple_Pack(3, aval, t, other);
    }
    else if (t == (PyObject *)&PyFloat_Type || t == (PyObject *)&PyComplex_Type) {
        /* zero is left to the Python operator: 0.0 and -0.0 are one key */
        r = PyObject_IsTrue(other);
        if (r <= 0)
            return r < 0 ? NULL : MISS;
        key = PyTuple_Pack(3, aval, t, other);
    }
    else
        return MISS;
    if (key == NULL)
        return NULL;
    r = attr_true(S.config, s_x64);
    if (r < 0) {
        Py_DECREF(key);
        return NULL;
    }
    memo = r ? op->memo64 : op->memo32;
    e = PyDict_GetItemWithError(memo, key);
    Py_DECREF(key);
    if (e == NULL)
        return PyErr_Occurred() ? NULL : MISS;
    if (!PyTuple_CheckExact(e) || PyTuple_GET_SIZE(e) != 4)
        return MISS;        /* False: the full path */
    Py_INCREF(e);           /* the memo may be cleared while Python code runs below */

    buf = SLOT(self, S.off_buf);
    if (buf == NULL || Py_TYPE(buf) != S.buffer_type)
        goto done;
    Py_INCREF(buf);
    if (t == (PyObject *)S.array_type) {
        buf2 = SLOT(other, S.off_buf);
        if (buf2 == NULL || Py_TYPE(buf2) != S.buffer_type) {
            buf2 = NULL;
            goto done_buf;
        }
        Py_INCREF(buf2);
    }
    v = SLOT(buf, S.off_data);
    device = SLOT(buf, S.off_device);
    committed = SLOT(self, S.off_committed);
    if (v == NULL || v == Py_None || device == NULL || committed == NULL)
        goto done_buf;
    if (buf2 != NULL) {
        v2 = SLOT(buf2, S.off_data);
        if (v2 == NULL || v2 == Py_None || SLOT(buf2, S.off_device) != device)
            goto done_buf;
        r = PyObject_IsTrue(committed);
        if (r < 0) {
            result = NULL;
            goto done_buf;
        }
        if (!r) {
            committed = SLOT(other, S.off_committed);
            if (committed == NULL)
                goto done_buf;
        }
    }
    Py_INCREF(v);
    Py_XINCREF(v2);
    Py_INCREF(device);
    Py_INCREF(committed);
    r = PyObject_IsTrue(committed);
    if (r < 0) {
        result = NULL;
        goto done_values;
    }
    if (!r) {
        PyObject *dd = PyObject_CallNoArgs(S.get_default_device);
        if (dd == NULL) {
            result = NULL;
            goto done_values;
        }
        Py_DECREF(dd);
        if (dd != device)
            goto done_values;
    }

    impl = PyTuple_GET_ITEM(e, 0);
    c = PyTuple_GET_ITEM(e, 1);
    out_aval = PyTuple_GET_ITEM(e, 3);
    if (c != Py_None) {
        r = PyObject_IsTrue(PyTuple_GET_ITEM(e, 2));
        if (r < 0) {
            result = NULL;
            goto done_values;
        }
        a = r ? c : v;
        b = r ? v : c;
    }
    else if (v2 == NULL)
        goto done_values;
    else {
        a = op->reflected ? v2 : v;
        b = op->reflected ? v : v2;
    }

    /* NumPy's error state: every floating-point error ignored around the ufunc */
    pair = PyObject_GetAttr(S.eager, s_fp_pair);
    if (pair == NULL) {
        result = NULL;
        goto done_values;
    }
    if (PyContextVar_Get(S.fp_var, NULL, &cur) < 0) {
        Py_DECREF(pair);
        result = NULL;
        goto done_values;
    }
    if (PyTuple_CheckExact(pair) && PyTuple_GET_SIZE(pair) == 2 && cur != NULL
            && PyTuple_GET_ITEM(pair, 0) == cur)
        token = PyContextVar_Set(S.fp_var, PyTuple_GET_ITEM(pair, 1));
    else
        token = PyObject_CallMethodNoArgs(S.eager, s_fp_begin);
    Py_XDECREF(cur);
    Py_DECREF(pair);
    if (token == NULL) {
        result = NULL;
        goto done_values;
    }
    {
        PyObject *args[2] = {a, b};
        out = PyObject_Vectorcall(impl, args, 2, NULL);
    }
    {
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        r = PyContextVar_Reset(S.fp_var, token);
        Py_DECREF(token);
        if (r < 0) {
            Py_XDECREF(et);
            Py_XDECREF(ev);
            Py_XDECREF(tb);
            Py_XDECREF(out);
            result = NULL;
            goto done_values;
        }
        PyErr_Restore(et, ev, tb);
    }
    if (out == NULL) {
        result = NULL;
        goto done_values;
    }

    /* a fresh ufunc result of the exact dtype: Buffer(out, device) in an ArrayImpl */
    if (Py_TYPE(out) == S.ndarray_type) {
        PyObject *d1 = PyObject_GetAttr(out, s_dtype);
        PyObject *d2 = d1 ? PyObject_GetAttr(out_aval, s_dtype) : NULL;
        Py_XDECREF(d1);
        Py_XDECREF(d2);
        if (d2 == NULL) {
            Py_DECREF(out);
            result = NULL;
            goto done_values;
        }
        if (d1 == d2) {
            PyObject *nbuf = new_buffer(out, device);
            Py_DECREF(out);
            if (nbuf == NULL) {
                result = NULL;
                goto done_values;
            }
            PyObject *arr = S.array_type->tp_alloc(S.array_type, 0);
            if (arr == NULL) {
                Py_DECREF(nbuf);
                result = NULL;
                goto done_values;
            }
            SLOT(arr, S.off_buf) = nbuf;
            Py_INCREF(out_aval);
            SLOT(arr, S.off_aval) = out_aval;
            Py_INCREF(committed);
            SLOT(arr, S.off_committed) = committed;
            Py_INCREF(Py_None);
            SLOT(arr, S.off_key) = Py_None;
            result = arr;
            goto done_values;
        }
    }
    {
        PyObject *args[6] = {out, out_aval, device, committed, a, b};
        result = PyObject_Vectorcall(S.finish, args, 6, NULL);
        Py_DECREF(out);
    }

done_values:
    Py_DECREF(v);
    Py_XDECREF(v2);
    Py_DECREF(device);
    Py_DECREF(committed);
done_buf:
    Py_DECREF(buf);
    Py_XDECREF(buf2);
done:
    Py_DECREF(e);
    return result;
}

static PyObject *
operator_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf,
                    PyObject *kwnames)
{
    Operator *op = (Operator *)callable;
    Py_ssize_t n = PyVectorcall_NARGS(nargsf);
    if (S.ready && n == 2 && kwnames == NULL) {
        PyObject *r = fast(op, args[0], args[1]);
        if (r != MISS)
            return r;
    }
    return PyObject_Vectorcall(op->fallback, args, nargsf, kwnames);
}

static PyObject *
operator_new(PyTypeObject *tp, PyObject *args, PyObject *kwds)
{
    PyObject *fallback, *memo32, *memo64;
    int reflected;
    static char *kwlist[] = {"fallback", "memo32", "memo64", "reflected", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OO!O!p:Operator", kwlist, &fallback,
                                     &PyDict_Type, &memo32, &PyDict_Type, &memo64,
                                     &reflected))
        return NULL;
    if (!PyCallable_Check(fallback)) {
        PyErr_SetString(PyExc_TypeError, "Operator: fallback must be callable");
        return NULL;
    }
    Operator *op = (Operator *)tp->tp_alloc(tp, 0);
    if (op == NULL)
        return NULL;
    op->vectorcall = operator_vectorcall;
    Py_INCREF(fallback);
    op->fallback = fallback;
    Py_INCREF(memo32);
    op->memo32 = memo32;
    Py_INCREF(memo64);
    op->memo64 = memo64;
    op->reflected = reflected;
    return (PyObject *)op;
}

static int
operator_traverse(Operator *op, visitproc visit, void *arg)
{
    Py_VISIT(op->fallback);
    Py_VISIT(op->memo32);
    Py_VISIT(op->memo64);
    return 0;
}

static int
operator_clear(Operator *op)
{
    Py_CLEAR(op->fallback);
    Py_CLEAR(op->memo32);
    Py_CLEAR(op->memo64);
    return 0;
}

static void
operator_dealloc(Operator *op)
{
    PyObject_GC_UnTrack(op);
    operator_clear(op);
    Py_TYPE(op)->tp_free((PyObject *)op);
}

/* a method: ``x.__add__`` is the operator bound to ``x`` */
static PyObject *
operator_descr_get(PyObject *self, PyObject *obj, PyObject *type)
{
    if (obj == NULL || obj == Py_None) {
        Py_INCREF(self);
        return self;
    }
    return PyMethod_New(self, obj);
}

/* attributes the type does not have (``__name__``, ``__qualname__``, ...) are the
 * wrapped Python operator's */
static PyObject *
operator_getattro(PyObject *self, PyObject *name)
{
    PyObject *r = PyObject_GenericGetAttr(self, name);
    if (r == NULL && PyErr_ExceptionMatches(PyExc_AttributeError)) {
        PyErr_Clear();
        r = PyObject_GetAttr(((Operator *)self)->fallback, name);
    }
    return r;
}

static PyObject *
operator_doc(Operator *op, void *closure)
{
    return PyObject_GetAttrString(op->fallback, "__doc__");
}

static PyObject *
operator_repr(Operator *op)
{
    return PyUnicode_FromFormat("<jaxlite operator %R (native fast path)>", op->fallback);
}

static PyMemberDef operator_members[] = {
    {"__wrapped__", T_OBJECT, offsetof(Operator, fallback), READONLY,
     "the Python operator this one does the work of"},
    {"memo32", T_OBJECT, offsetof(Operator, memo32), READONLY,
     "the Python operator's memo without jax_enable_x64"},
    {"memo64", T_OBJECT, offsetof(Operator, memo64), READONLY,
     "the Python operator's memo with jax_enable_x64"},
    {"reflected", T_INT, offsetof(Operator, reflected), READONLY, NULL},
    {NULL}
};

static PyGetSetDef operator_getset[] = {
    {"__doc__", (getter)operator_doc, NULL, NULL, NULL},
    {NULL}
};

static PyTypeObject OperatorType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "jaxlite.core._eager_ops.Operator",
    .tp_basicsize = sizeof(Operator),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL
                | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_doc = "Operator(fallback, memo32, memo64, reflected): an array operator whose "
              "memoised eager case runs in C (see the module); everything else calls "
              "fallback(self, other).",
    .tp_new = operator_new,
    .tp_dealloc = (destructor)operator_dealloc,
    .tp_traverse = (traverseproc)operator_traverse,
    .tp_clear = (inquiry)operator_clear,
    .tp_vectorcall_offset = offsetof(Operator, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_descr_get = operator_descr_get,
    .tp_getattro = operator_getattro,
    .tp_repr = (reprfunc)operator_repr,
    .tp_members = operator_members,
    .tp_getset = operator_getset,
};

static PyObject *
configure(PyObject *module, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"array_type", "buffer_type", "ndarray_type", "trace_var",
                             "monitoring", "mesh_context", "config", "eager", "fp_var",
                             "get_default_device", "finish", NULL};
    PyObject *at, *bt, *nt, *tv, *mon, *mc, *cfg, *eg, *fv, *gdd, *fin;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!O!O!OOOOOOOO:configure", kwlist,
                                     &PyType_Type, &at, &PyType_Type, &bt, &PyType_Type,
                                     &nt, &tv, &mon, &mc, &cfg, &eg, &fv, &gdd, &fin))
        return NULL;
    if (!PyContextVar_CheckExact(tv) || !PyContextVar_CheckExact(fv)) {
        PyErr_SetString(PyExc_TypeError, "configure: trace_var and fp_var must be ContextVars");
        return NULL;
    }
    Py_ssize_t offs[7];
    offs[0] = slot_offset((PyTypeObject *)at, "_buf");
    offs[1] = offs[0] < 0 ? -1 : slot_offset((PyTypeObject *)at, "aval");
    offs[2] = offs[1] < 0 ? -1 : slot_offset((PyTypeObject *)at, "_committed");
    offs[3] = offs[2] < 0 ? -1 : slot_offset((PyTypeObject *)at, "_key");
    offs[4] = offs[3] < 0 ? -1 : slot_offset((PyTypeObject *)bt, "data");
    offs[5] = offs[4] < 0 ? -1 : slot_offset((PyTypeObject *)bt, "device");
    offs[6] = offs[5] < 0 ? -1 : slot_offset((PyTypeObject *)bt, "nbytes");
    if (offs[6] < 0)
        return NULL;
    S.ready = S.configured = 0;
#define KEEP(field, value) do { Py_INCREF(value); Py_XSETREF(S.field, (void *)(value)); } while (0)
    KEEP(array_type, at);
    KEEP(buffer_type, bt);
    KEEP(ndarray_type, nt);
    KEEP(trace_var, tv);
    KEEP(monitoring, mon);
    KEEP(mesh_context, mc);
    KEEP(config, cfg);
    KEEP(eager, eg);
    KEEP(fp_var, fv);
    KEEP(get_default_device, gdd);
    KEEP(finish, fin);
#undef KEEP
    S.off_buf = offs[0];
    S.off_aval = offs[1];
    S.off_committed = offs[2];
    S.off_key = offs[3];
    S.off_data = offs[4];
    S.off_device = offs[5];
    S.off_nbytes = offs[6];
    S.configured = S.ready = 1;
    Py_RETURN_NONE;
}

static PyObject *
set_enabled(PyObject *module, PyObject *flag)
{
    int on = PyObject_IsTrue(flag);
    if (on < 0)
        return NULL;
    S.ready = S.configured && on;
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"configure", (PyCFunction)(void (*)(void))configure, METH_VARARGS | METH_KEYWORDS,
     "configure(array_type, buffer_type, ndarray_type, trace_var, monitoring, mesh_context, "
     "config, eager, fp_var, get_default_device, finish): the objects the fast path reads "
     "(numpy/_methods.py passes them once)."},
    {"set_enabled", set_enabled, METH_O,
     "set_enabled(flag): False makes every Operator call its Python operator "
     "(config jaxlite_native_ops)."},
    {NULL}
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "jaxlite.core._eager_ops",
    .m_doc = "The eager operators' fast path in C (see numpy/_methods.py).",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC
PyInit__eager_ops(void)
{
#define INTERN(var, text) if ((var = PyUnicode_InternFromString(text)) == NULL) return NULL
    INTERN(s_eager, "eager");
    INTERN(s_listeners, "_listeners");
    INTERN(s_mesh, "mesh");
    INTERN(s_x64, "jax_enable_x64");
    INTERN(s_fp_pair, "_fp_pair");
    INTERN(s_fp_begin, "fp_ignore_begin");
    INTERN(s_dtype, "dtype");
    INTERN(s_setflags, "setflags");
    INTERN(s_nbytes, "nbytes");
    INTERN(s_bytes_in_use, "_bytes_in_use");
    INTERN(s_num_allocs, "_num_allocs");
    INTERN(s_peak, "_peak");
    INTERN(s_largest, "_largest");
    if ((s_one = PyLong_FromLong(1)) == NULL)
        return NULL;
#undef INTERN
    if (PyType_Ready(&OperatorType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module_def);
    if (m == NULL)
        return NULL;
    Py_INCREF(&OperatorType);
    if (PyModule_AddObject(m, "Operator", (PyObject *)&OperatorType) < 0) {
        Py_DECREF(&OperatorType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
