/* multidev._speedups: C fast paths for the binary operators of the per-backend Tensor classes.
 *
 * ``install(cls, base, bool_dtype, ops)`` puts C functions into the number slots (nb_add, ...)
 * and tp_richcompare of ``cls``, a class made by ``multidev.dispatch.tensor_class``. For two
 * operands of exactly ``cls`` with the same dtype and device object, the dtype present in the
 * operator's table and the device outside the backend's scoped devices, the slot calls the
 * native op and makes the result tensor itself (what the Python operator's fast path does,
 * without its frame). Every other case calls the Python operator from the class dict, with the
 * dispatch rules of CPython's own slot for a class that defines ``__add__``/``__radd__`` in
 * Python, so reflected operands, other classes and errors behave as without this module;
 * where the native op raises, the Python operator runs instead and raises multidev's error.
 * The Python operators stay in the class dict (torch.compile inlines those).
 * The class's tp_dealloc becomes tensor_dealloc (CPython's generic dealloc for this one
 * layout), which keeps a few freed tensors for the fast path to reuse.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

enum {
    OP_ADD, OP_SUB, OP_MUL, OP_TRUEDIV, OP_FLOORDIV, OP_MOD, OP_POW, OP_MATMUL, OP_AND, OP_OR,
    N_NUMBER,
    OP_LT = N_NUMBER, OP_LE, OP_EQ, OP_NE, OP_GT, OP_GE,
    N_OPS
};

static const char *const OP_NAMES[N_OPS] = {
    "__add__", "__sub__", "__mul__", "__truediv__", "__floordiv__", "__mod__", "__pow__",
    "__matmul__", "__and__", "__or__",
    "__lt__", "__le__", "__eq__", "__ne__", "__gt__", "__ge__",
};
static const char *const REFLECTED[N_NUMBER] = {
    "__radd__", "__rsub__", "__rmul__", "__rtruediv__", "__rfloordiv__", "__rmod__", "__rpow__",
    "__rmatmul__", "__rand__", "__ror__",
};
/* Py_LT ... Py_GE (0..5) as an op index */
static const int RICH_TO_OP[6] = {OP_LT, OP_LE, OP_EQ, OP_NE, OP_GT, OP_GE};

static PyObject *op_names[N_OPS];
static PyObject *reflected_names[N_NUMBER];

typedef struct {
    PyObject *fns;    /* dict: dtype -> native op; NULL where the slot is not installed */
    PyObject *scoped; /* the backend's scoped devices, or NULL where it has none */
    int is_cmp;
} OpData;

#define MAX_CLASSES 64
/* tensors of a class kept for reuse by the fast path (untracked, slots cleared, each holding
 * a reference to the class) */
#if defined(Py_REF_DEBUG) || defined(Py_TRACE_REFS)
#define MAX_FREE 0 /* debug builds count and list every new reference: no reuse there */
#else
#define MAX_FREE 16
#endif
typedef struct {
    PyTypeObject *cls;
    OpData ops[N_OPS];
    int n_free;
    PyObject *free[MAX_FREE > 0 ? MAX_FREE : 1];
} ClassData;

static ClassData classes[MAX_CLASSES];
static int n_classes;
static PyObject *bool_dtype;
/* offsets of Tensor's slots _native, _bk, _dev, _dtype */
static Py_ssize_t off_native = -1, off_bk, off_dev, off_dtype;
/* CPython's generic slots of a class defining the dunders in Python, read at install */
static void *generic[N_NUMBER];
static richcmpfunc generic_richcompare;

#define SLOT(obj, off) (*(PyObject **)((char *)(obj) + (off)))

static ClassData *
find_class(PyTypeObject *tp)
{
    for (int i = 0; i < n_classes; i++) {
        if (classes[i].cls == tp) {
            return &classes[i];
        }
    }
    return NULL;
}

/* A new tensor of the installed class ``tp`` with its slots NULL: from the free list where
 * it has one, else from tp_alloc. */
static inline PyObject *
new_tensor(ClassData *data, PyTypeObject *tp)
{
    if (data->n_free > 0) {
        PyObject *out = data->free[--data->n_free];
        Py_SET_REFCNT(out, 1); /* the class reference it held passes to the new tensor */
        PyObject_GC_Track(out);
        return out;
    }
    return tp->tp_alloc(tp, 0);
}

/* tp_dealloc of an installed class whose base is Tensor, a direct subclass of object with the
 * four object slots and __weakref__ only: what CPython's subtype_dealloc does for it (the
 * finalizer, weak references, the slots, the class reference), with freed tensors of the
 * class itself kept for reuse. Instances of Python subclasses arrive here from their own
 * subtype_dealloc (which ran their finalizer and cleared their own slots and dict). */
static void
tensor_dealloc(PyObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    ClassData *data = NULL;
    for (PyTypeObject *t = tp; t != NULL && data == NULL; t = t->tp_base) {
        data = find_class(t);
    }
    int exact = data != NULL && data->cls == tp;
    if (exact && tp->tp_finalize != NULL && PyObject_CallFinalizerFromDealloc(self) < 0) {
        return; /* resurrected */
    }
    PyObject_GC_UnTrack(self);
    if (SLOT(self, tp->tp_weaklistoffset) != NULL) {
        PyObject_ClearWeakRefs(self);
    }
    Py_CLEAR(SLOT(self, off_bk));
    Py_CLEAR(SLOT(self, off_dev));
    Py_CLEAR(SLOT(self, off_dtype));
    Py_CLEAR(SLOT(self, off_native));
    if (exact && tp->tp_finalize == NULL && data->n_free < MAX_FREE) {
        data->free[data->n_free++] = self;
        return;
    }
    tp->tp_free(self);
    Py_DECREF(tp);
}

/* Whether an enabled md.autocast is open in any thread (``set_autocast``): ``@`` then takes
 * the Python operator, which casts its operands by the autocast policy. */
static int autocast_on = 0;

/* The fast path: a new tensor of a's class, or NULL without an error where it does not
 * apply or where the native op raised an Exception (the Python operator then runs it again
 * and translates the error); NULL with an error for anything else (KeyboardInterrupt, ...). */
static PyObject *
fast(PyObject *a, PyObject *b, int op, int *applied)
{
    *applied = 0;
    if (op == OP_MATMUL && autocast_on) {
        return NULL;
    }
    PyTypeObject *tp = Py_TYPE(a);
    if (Py_TYPE(b) != tp) {
        return NULL;
    }
    ClassData *data = find_class(tp);
    if (data == NULL || data->ops[op].fns == NULL) {
        return NULL;
    }
    OpData *od = &data->ops[op];
    PyObject *dt = SLOT(a, off_dtype), *dev = SLOT(a, off_dev);
    PyObject *an = SLOT(a, off_native), *bn = SLOT(b, off_native), *bk = SLOT(a, off_bk);
    if (dt == NULL || dev == NULL || an == NULL || bn == NULL || bk == NULL ||
        SLOT(b, off_dtype) != dt || SLOT(b, off_dev) != dev) {
        return NULL;
    }
    PyObject *fn = PyDict_GetItemWithError(od->fns, dt);
    if (fn == NULL) {
        *applied = PyErr_Occurred() != NULL;
        return NULL;
    }
    if (od->scoped != NULL) {
        int in = PySequence_Contains(od->scoped, dev);
        if (in != 0) {
            *applied = in < 0; /* on a scoped device the Python operator runs the op */
            return NULL;
        }
    }
    *applied = 1;
    /* strong references across the call, which runs Python code; the backend is read after
     * it, as the Python operator reads it */
    PyObject *args[2] = {an, bn};
    PyObject *held[5] = {fn, an, bn, dt, dev};
    for (int i = 0; i < 5; i++) {
        Py_INCREF(held[i]);
    }
    PyObject *native = PyObject_Vectorcall(fn, args, 2, NULL);
    PyObject *out = NULL;
    if (native != NULL) {
        bk = SLOT(a, off_bk);
        bk = bk != NULL ? Py_NewRef(bk) : PyObject_GetAttrString(a, "_bk");
        out = bk != NULL ? new_tensor(data, tp) : NULL;
        if (out == NULL) {
            Py_DECREF(native);
            Py_XDECREF(bk);
        }
        else {
            SLOT(out, off_native) = native;
            SLOT(out, off_bk) = bk;
            SLOT(out, off_dev) = Py_NewRef(dev);
            SLOT(out, off_dtype) = Py_NewRef(od->is_cmp ? bool_dtype : dt);
        }
    }
    for (int i = 0; i < 5; i++) {
        Py_DECREF(held[i]);
    }
    if (native == NULL && PyErr_ExceptionMatches(PyExc_Exception)) {
        /* the native op raised: the Python operator runs it again and turns the framework's
         * error into multidev's (ShapeError for shapes that do not fit), so that the error
         * translation is written once, in Python, and costs nothing while ops succeed */
        PyErr_Clear();
        *applied = 0;
    }
    return out;
}

/* ``type(args[0]).<name>(*args)`` looked up on the type, as CPython's slots call dunders;
 * NotImplemented where the type has none. */
static PyObject *
call_special(PyObject *name, PyObject *const *args, Py_ssize_t n)
{
    PyObject *self = args[0];
    PyObject *f = _PyType_Lookup(Py_TYPE(self), name);
    if (f == NULL) {
        if (PyErr_Occurred()) {
            return NULL;
        }
        Py_RETURN_NOTIMPLEMENTED;
    }
    Py_INCREF(f);
    PyObject *r;
    if (PyType_HasFeature(Py_TYPE(f), Py_TPFLAGS_METHOD_DESCRIPTOR)) {
        r = PyObject_Vectorcall(f, args, n, NULL);
    }
    else {
        descrgetfunc get = Py_TYPE(f)->tp_descr_get;
        if (get != NULL) {
            PyObject *bound = get(f, self, (PyObject *)Py_TYPE(self));
            Py_DECREF(f);
            if (bound == NULL) {
                return NULL;
            }
            f = bound;
        }
        r = PyObject_Vectorcall(f, args + 1, n - 1, NULL);
    }
    Py_DECREF(f);
    return r;
}

static int
lookup_attr(PyObject *obj, PyObject *name, PyObject **result)
{
    *result = PyObject_GetAttr(obj, name);
    if (*result != NULL) {
        return 1;
    }
    if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
        PyErr_Clear();
        return 0;
    }
    return -1;
}

/* Whether ``type(right).<name>`` differs from ``type(left).<name>`` (CPython's rule for
 * trying a subclass's reflected operator first). */
static int
method_is_overloaded(PyObject *left, PyObject *right, PyObject *name)
{
    PyObject *a, *b;
    int found = lookup_attr((PyObject *)Py_TYPE(right), name, &b);
    if (found <= 0) {
        return found;
    }
    found = lookup_attr((PyObject *)Py_TYPE(left), name, &a);
    if (found <= 0) {
        Py_DECREF(b);
        return found < 0 ? -1 : 1;
    }
    int ne = PyObject_RichCompareBool(a, b, Py_NE);
    Py_DECREF(a);
    Py_DECREF(b);
    return ne;
}

static void *
number_slot(PyTypeObject *tp, int op)
{
    PyNumberMethods *nb = tp->tp_as_number;
    if (nb == NULL) {
        return NULL;
    }
    switch (op) {
    case OP_ADD: return (void *)nb->nb_add;
    case OP_SUB: return (void *)nb->nb_subtract;
    case OP_MUL: return (void *)nb->nb_multiply;
    case OP_TRUEDIV: return (void *)nb->nb_true_divide;
    case OP_FLOORDIV: return (void *)nb->nb_floor_divide;
    case OP_MOD: return (void *)nb->nb_remainder;
    case OP_POW: return (void *)nb->nb_power;
    case OP_MATMUL: return (void *)nb->nb_matrix_multiply;
    case OP_AND: return (void *)nb->nb_and;
    case OP_OR: return (void *)nb->nb_or;
    }
    return NULL;
}

static void *const mine[N_NUMBER];

/* Whether ``tp``'s slot calls the Python dunders: CPython's generic slot, or this module's. */
static int
dispatches(PyTypeObject *tp, int op)
{
    void *slot = number_slot(tp, op);
    return slot != NULL && (slot == mine[op] || slot == generic[op]);
}

/* CPython's generic binary slot (SLOT1BINFULL in typeobject.c) for a and b. */
static PyObject *
generic_binary(PyObject *a, PyObject *b, int op)
{
    PyObject *args[2];
    int do_other = Py_TYPE(a) != Py_TYPE(b) && dispatches(Py_TYPE(b), op);
    if (dispatches(Py_TYPE(a), op)) {
        PyObject *r;
        if (do_other && PyType_IsSubtype(Py_TYPE(b), Py_TYPE(a))) {
            int ok = method_is_overloaded(a, b, reflected_names[op]);
            if (ok < 0) {
                return NULL;
            }
            if (ok) {
                args[0] = b;
                args[1] = a;
                r = call_special(reflected_names[op], args, 2);
                if (r != Py_NotImplemented) {
                    return r;
                }
                Py_DECREF(r);
                do_other = 0;
            }
        }
        args[0] = a;
        args[1] = b;
        r = call_special(op_names[op], args, 2);
        if (r != Py_NotImplemented || Py_TYPE(a) == Py_TYPE(b)) {
            return r;
        }
        Py_DECREF(r);
    }
    if (do_other) {
        args[0] = b;
        args[1] = a;
        return call_special(reflected_names[op], args, 2);
    }
    Py_RETURN_NOTIMPLEMENTED;
}

static PyObject *
binary(PyObject *a, PyObject *b, int op)
{
    int applied;
    PyObject *out = fast(a, b, op, &applied);
    if (applied || out != NULL) {
        return out;
    }
    return generic_binary(a, b, op);
}

#define BINARY(fname, op) \
    static PyObject *fname(PyObject *a, PyObject *b) { return binary(a, b, op); }
BINARY(fast_add, OP_ADD)
BINARY(fast_sub, OP_SUB)
BINARY(fast_mul, OP_MUL)
BINARY(fast_truediv, OP_TRUEDIV)
BINARY(fast_floordiv, OP_FLOORDIV)
BINARY(fast_mod, OP_MOD)
BINARY(fast_matmul, OP_MATMUL)
BINARY(fast_and, OP_AND)
BINARY(fast_or, OP_OR)

/* ``a ** b`` and ``pow(a, b, m)``: the three-argument form calls ``__pow__`` only (no
 * reflection), as CPython's slot does. */
static PyObject *
fast_pow(PyObject *a, PyObject *b, PyObject *m)
{
    if (m == Py_None) {
        return binary(a, b, OP_POW);
    }
    if (dispatches(Py_TYPE(a), OP_POW)) {
        PyObject *args[3] = {a, b, m};
        return call_special(op_names[OP_POW], args, 3);
    }
    Py_RETURN_NOTIMPLEMENTED;
}

static PyObject *
fast_richcompare(PyObject *a, PyObject *b, int cmp)
{
    if (cmp >= 0 && cmp < 6) {
        int applied;
        PyObject *out = fast(a, b, RICH_TO_OP[cmp], &applied);
        if (applied || out != NULL) {
            return out;
        }
    }
    return generic_richcompare(a, b, cmp);
}

static void *const mine[N_NUMBER] = {
    (void *)fast_add, (void *)fast_sub, (void *)fast_mul, (void *)fast_truediv,
    (void *)fast_floordiv, (void *)fast_mod, (void *)fast_pow, (void *)fast_matmul,
    (void *)fast_and, (void *)fast_or,
};

static void
set_number_slot(PyTypeObject *tp, int op)
{
    PyNumberMethods *nb = tp->tp_as_number;
    switch (op) {
    case OP_ADD: nb->nb_add = fast_add; break;
    case OP_SUB: nb->nb_subtract = fast_sub; break;
    case OP_MUL: nb->nb_multiply = fast_mul; break;
    case OP_TRUEDIV: nb->nb_true_divide = fast_truediv; break;
    case OP_FLOORDIV: nb->nb_floor_divide = fast_floordiv; break;
    case OP_MOD: nb->nb_remainder = fast_mod; break;
    case OP_POW: nb->nb_power = fast_pow; break;
    case OP_MATMUL: nb->nb_matrix_multiply = fast_matmul; break;
    case OP_AND: nb->nb_and = fast_and; break;
    case OP_OR: nb->nb_or = fast_or; break;
    }
}

static Py_ssize_t
member_offset(PyTypeObject *base, const char *name)
{
    PyObject *descr = PyDict_GetItemString(base->tp_dict, name);
    if (descr == NULL || !Py_IS_TYPE(descr, &PyMemberDescr_Type)) {
        PyErr_Format(PyExc_TypeError,
                     "Expected %s to declare the slot %s. Received: %R. "
                     "Rebuild multidev._speedups from the same multidev sources.",
                     base->tp_name, name, descr == NULL ? Py_None : descr);
        return -1;
    }
    PyMemberDef *m = ((PyMemberDescrObject *)descr)->d_member;
    if (m->type != T_OBJECT_EX) {
        PyErr_Format(PyExc_TypeError, "Expected %s.%s to be an object slot.", base->tp_name,
                     name);
        return -1;
    }
    return m->offset;
}

static int
op_index(PyObject *name)
{
    for (int i = 0; i < N_OPS; i++) {
        if (PyUnicode_Compare(name, op_names[i]) == 0) {
            return i;
        }
    }
    if (!PyErr_Occurred()) {
        PyErr_Format(PyExc_ValueError,
                     "Expected an operator name among __add__ ... __ge__. Received: %R.", name);
    }
    return -1;
}

PyDoc_STRVAR(install_doc,
"install(cls, base, bool_dtype, ops)\n--\n\n"
"Put C fast paths into the operator slots of ``cls`` (a heap subclass of ``base``, the\n"
"Tensor class). ``ops`` maps a dunder name (``'__add__'``, ``'__lt__'``...) to\n"
"``(fns, is_cmp, scoped)``: the native op for each dtype that takes the fast path, whether\n"
"the result dtype is ``bool_dtype``, and the devices on which the Python operator must run\n"
"instead. TypeError where ``cls`` is not such a class; ValueError for an unknown name.");

static PyObject *
install(PyObject *module, PyObject *args)
{
    PyTypeObject *cls, *base;
    PyObject *booldt, *ops;
    if (!PyArg_ParseTuple(args, "O!O!OO!:install", &PyType_Type, &cls, &PyType_Type, &base,
                          &booldt, &PyDict_Type, &ops)) {
        return NULL;
    }
    if (!(cls->tp_flags & Py_TPFLAGS_HEAPTYPE) || cls->tp_base != base ||
        cls->tp_as_number == NULL || cls->tp_richcompare == NULL) {
        PyErr_Format(PyExc_TypeError,
                     "Expected a class made by multidev.dispatch.tensor_class (a direct heap "
                     "subclass of %s with Python operators). Received: %R.",
                     base->tp_name, (PyObject *)cls);
        return NULL;
    }
    Py_ssize_t offs[4];
    const char *names[4] = {"_native", "_bk", "_dev", "_dtype"};
    for (int i = 0; i < 4; i++) {
        offs[i] = member_offset(base, names[i]);
        if (offs[i] < 0) {
            return NULL;
        }
    }
    if (off_native >= 0 && (offs[0] != off_native || offs[1] != off_bk ||
                            offs[2] != off_dev || offs[3] != off_dtype)) {
        PyErr_SetString(PyExc_TypeError,
                        "Expected one Tensor layout in a process. Received: a second one; "
                        "reload the interpreter instead of reloading multidev.");
        return NULL;
    }
    ClassData *data = find_class(cls);
    if (data == NULL) {
        if (n_classes == MAX_CLASSES) {
            Py_RETURN_FALSE; /* the Python operators serve further classes */
        }
        data = &classes[n_classes];
        memset(data, 0, sizeof(*data));
    }
    else {
        PyErr_Format(PyExc_ValueError, "Expected a class not installed yet. Received: %R.",
                     (PyObject *)cls);
        return NULL;
    }
    OpData staged[N_OPS];
    memset(staged, 0, sizeof(staged));
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(ops, &pos, &key, &value)) {
        int op = op_index(key);
        PyObject *fns, *scoped;
        int is_cmp;
        if (op < 0) {
            goto fail;
        }
        if (!PyArg_ParseTuple(value, "O!pO;Expected (fns: dict, is_cmp: bool, scoped) per "
                              "operator", &PyDict_Type, &fns, &is_cmp, &scoped)) {
            goto fail;
        }
        void *slot = op < N_NUMBER ? number_slot(cls, op) : (void *)cls->tp_richcompare;
        if (slot == NULL || (op < N_NUMBER && generic[op] != NULL && slot != generic[op]) ||
            (op >= N_NUMBER && generic_richcompare != NULL &&
             slot != (void *)generic_richcompare)) {
            PyErr_Format(PyExc_TypeError,
                         "Expected %R to reach %U through CPython's generic slot. "
                         "Received: another slot function.", (PyObject *)cls, key);
            goto fail;
        }
        Py_ssize_t n = PyObject_Length(scoped);
        if (n < 0) {
            goto fail;
        }
        Py_XDECREF(staged[op].fns);
        Py_XDECREF(staged[op].scoped);
        staged[op].fns = Py_NewRef(fns);
        staged[op].scoped = n ? Py_NewRef(scoped) : NULL;
        staged[op].is_cmp = is_cmp;
    }
    off_native = offs[0];
    off_bk = offs[1];
    off_dev = offs[2];
    off_dtype = offs[3];
    Py_XSETREF(bool_dtype, Py_NewRef(booldt));
    data->cls = (PyTypeObject *)Py_NewRef((PyObject *)cls);
    for (int op = 0; op < N_OPS; op++) {
        data->ops[op] = staged[op];
        if (staged[op].fns == NULL) {
            continue;
        }
        if (op < N_NUMBER) {
            generic[op] = number_slot(cls, op);
            set_number_slot(cls, op);
        }
        else {
            generic_richcompare = cls->tp_richcompare;
        }
    }
    for (int op = N_NUMBER; op < N_OPS; op++) {
        if (staged[op].fns != NULL) {
            cls->tp_richcompare = fast_richcompare;
            break;
        }
    }
    /* tensor_dealloc where the layout is the one it knows: CPython's subtype_dealloc on cls
     * and base, base right under object with the four slots and __weakref__ (at a fixed
     * offset), no __dict__, no tp_del */
    if (cls->tp_dealloc == base->tp_dealloc && base->tp_base == &PyBaseObject_Type &&
        Py_SIZE(cls) == 0 && Py_SIZE(base) == 4 && base->tp_weaklistoffset > 0 &&
        cls->tp_weaklistoffset == base->tp_weaklistoffset && cls->tp_dictoffset == 0 &&
        base->tp_dictoffset == 0 && cls->tp_del == NULL && base->tp_del == NULL &&
        PyType_IS_GC(cls) && cls->tp_free == PyObject_GC_Del) {
        cls->tp_dealloc = tensor_dealloc;
    }
    n_classes++;
    Py_RETURN_TRUE;
fail:
    for (int op = 0; op < N_OPS; op++) {
        Py_XDECREF(staged[op].fns);
        Py_XDECREF(staged[op].scoped);
    }
    return NULL;
}

PyDoc_STRVAR(installed_doc,
"installed(cls)\n--\n\n"
"The dunder names whose C fast path is in ``cls``'s slots now (a tuple; empty for a class\n"
"never installed, and without a name whose slot Python has replaced since, e.g. by\n"
"assigning the dunder).");

static PyObject *
installed(PyObject *module, PyObject *arg)
{
    if (!PyType_Check(arg)) {
        PyErr_Format(PyExc_TypeError, "Expected a class. Received: %R.", arg);
        return NULL;
    }
    PyTypeObject *cls = (PyTypeObject *)arg;
    ClassData *data = find_class(cls);
    PyObject *out = PyList_New(0);
    if (out == NULL || data == NULL) {
        return out == NULL ? NULL : PyList_AsTuple(out);
    }
    for (int op = 0; op < N_OPS; op++) {
        if (data->ops[op].fns == NULL) {
            continue;
        }
        int in_slot = op < N_NUMBER ? number_slot(cls, op) == mine[op]
                                    : cls->tp_richcompare == fast_richcompare;
        if (in_slot && PyList_Append(out, op_names[op]) < 0) {
            Py_DECREF(out);
            return NULL;
        }
    }
    PyObject *t = PyList_AsTuple(out);
    Py_DECREF(out);
    return t;
}

/* ``exact_result(fn, cls, convert)``: a callable giving ``fn(*args)`` where its type is exactly
 * ``cls`` and ``convert(fn(*args))`` otherwise; ``fn`` is called once. An adapter puts it
 * around a native op whose results it must normalise (NumPy's ufuncs return scalars for 0-d
 * results), so that the common case costs the native call and one pointer comparison. */
typedef struct {
    PyObject_HEAD
    PyObject *fn;
    PyObject *cls;
    PyObject *convert;
    vectorcallfunc vectorcall;
} ExactResult;

static PyObject *
exact_call(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    ExactResult *e = (ExactResult *)self;
    PyObject *r = PyObject_Vectorcall(e->fn, args, nargsf, kwnames);
    if (r == NULL || Py_TYPE(r) == (PyTypeObject *)e->cls) {
        return r;
    }
    PyObject *out = PyObject_CallOneArg(e->convert, r);
    Py_DECREF(r);
    return out;
}

static PyObject *
exact_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *fn, *cls, *convert;
    if (kwargs != NULL && PyDict_GET_SIZE(kwargs) != 0) {
        PyErr_SetString(PyExc_TypeError,
                        "Expected exact_result(fn, cls, convert) with positional arguments. "
                        "Received: keyword arguments.");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "OO!O:exact_result", &fn, &PyType_Type, &cls, &convert)) {
        return NULL;
    }
    if (!PyCallable_Check(fn) || !PyCallable_Check(convert)) {
        PyErr_Format(PyExc_TypeError,
                     "Expected exact_result(fn, cls, convert) with callables fn and convert. "
                     "Received: fn=%R, convert=%R.", fn, convert);
        return NULL;
    }
    ExactResult *e = PyObject_GC_New(ExactResult, type);
    if (e == NULL) {
        return NULL;
    }
    e->fn = Py_NewRef(fn);
    e->cls = Py_NewRef(cls);
    e->convert = Py_NewRef(convert);
    e->vectorcall = exact_call;
    PyObject_GC_Track(e);
    return (PyObject *)e;
}

static int
exact_traverse(ExactResult *e, visitproc visit, void *arg)
{
    Py_VISIT(e->fn);
    Py_VISIT(e->cls);
    Py_VISIT(e->convert);
    return 0;
}

static int
exact_clear(ExactResult *e)
{
    Py_CLEAR(e->fn);
    Py_CLEAR(e->cls);
    Py_CLEAR(e->convert);
    return 0;
}

static void
exact_dealloc(ExactResult *e)
{
    PyObject_GC_UnTrack(e);
    exact_clear(e);
    PyObject_GC_Del(e);
}

static PyObject *
exact_repr(ExactResult *e)
{
    return PyUnicode_FromFormat("<multidev._speedups.exact_result of %R>", e->fn);
}

static PyMemberDef exact_members[] = {
    {"fn", T_OBJECT, offsetof(ExactResult, fn), READONLY, "the op called"},
    {"cls", T_OBJECT, offsetof(ExactResult, cls), READONLY, "the result type kept as is"},
    {"convert", T_OBJECT, offsetof(ExactResult, convert), READONLY,
     "called on a result of another type"},
    {NULL},
};

PyDoc_STRVAR(exact_doc,
"exact_result(fn, cls, convert)\n--\n\n"
"A callable returning ``fn(*args, **kwargs)`` where its type is exactly ``cls``, else\n"
"``convert`` of it (``fn`` is called once). TypeError where fn or convert is not callable.");

static PyTypeObject ExactResult_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "multidev._speedups.exact_result",
    .tp_basicsize = sizeof(ExactResult),
    .tp_dealloc = (destructor)exact_dealloc,
    .tp_vectorcall_offset = offsetof(ExactResult, vectorcall),
    .tp_repr = (reprfunc)exact_repr,
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = exact_doc,
    .tp_traverse = (traverseproc)exact_traverse,
    .tp_clear = (inquiry)exact_clear,
    .tp_members = exact_members,
    .tp_new = exact_new,
};

PyDoc_STRVAR(set_autocast_doc,
             "set_autocast(on, /)\n--\n\n"
             "Whether an enabled md.autocast is open in any thread: while it is, ``@`` runs the "
             "Python operator (which applies the autocast policy) instead of its fast path.");

static PyObject *
set_autocast(PyObject *module, PyObject *arg)
{
    int on = PyObject_IsTrue(arg);
    if (on < 0) {
        return NULL;
    }
    autocast_on = on;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"set_autocast", set_autocast, METH_O, set_autocast_doc},
    {"install", install, METH_VARARGS, install_doc},
    {"installed", installed, METH_O, installed_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    "multidev._speedups",
    "C fast paths for the operators of multidev's per-backend Tensor classes (optional).",
    -1,
    methods,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    for (int i = 0; i < N_OPS; i++) {
        op_names[i] = PyUnicode_InternFromString(OP_NAMES[i]);
        if (op_names[i] == NULL) {
            return NULL;
        }
        if (i < N_NUMBER) {
            reflected_names[i] = PyUnicode_InternFromString(REFLECTED[i]);
            if (reflected_names[i] == NULL) {
                return NULL;
            }
        }
    }
    if (PyType_Ready(&ExactResult_Type) < 0) {
        return NULL;
    }
    PyObject *m = PyModule_Create(&module_def);
    if (m == NULL) {
        return NULL;
    }
    if (PyModule_AddObjectRef(m, "exact_result", (PyObject *)&ExactResult_Type) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
