# What every C call of the bridge goes through: the claims that refuse outputs
# shared between concurrent calls, Ctrl-C polling, scratch and per-thread workspaces.
# (Included by mli/_core.pyx: one module, so it shares the module's names and cimports.)

cdef struct _Claim:
    intptr_t a0, a1
    unsigned long ident
    unsigned long call   # the claiming call's number (what _release removes)

cdef _Claim *_in_flight = NULL
cdef Py_ssize_t _n_in_flight = 0, _room_in_flight = 0
cdef unsigned long _calls = 0


cdef unsigned long _claim(tuple names, tuple outputs) except? 0:
    """Reserve the outputs' buffers for this call (returns the number to
    pass to _release); BridgeError when another thread's call is writing into one."""
    cdef PyObject *outs[8]
    cdef Py_ssize_t i, n = len(outputs)
    if n > 8:
        raise ValueError("_claim: at most 8 outputs")
    for i in range(n):
        outs[i] = <PyObject *>outputs[i]
    return _claim_a(names, outs, n)


cdef unsigned long _claim_a(tuple names, PyObject **outs, Py_ssize_t n) except? 0:
    """_claim over `n` outputs (CTensors or None, borrowed)."""
    global _in_flight, _n_in_flight, _room_in_flight, _calls
    cdef CTensor o
    cdef intptr_t a0, a1
    cdef Py_ssize_t i, j
    cdef unsigned long ident
    cdef _Claim *grown
    for i in range(n):
        if not _live_p(outs[i]) or not _n_in_flight:
            continue
        o = <CTensor>outs[i]
        a0 = <intptr_t>o.t.data
        a1 = a0 + (o.t.capacity if o.t.capacity else 1)
        for j in range(_n_in_flight):
            if a0 < _in_flight[j].a1 and _in_flight[j].a0 < a1:
                raise BridgeError(names[i], f"is being written by a kernel call on another thread "
                                            f"(id {_in_flight[j].ident}); give each thread its own outputs and "
                                            "cfg.ir (or cfg.ir=None)")
    _calls += 1
    if _calls == 0:
        _calls = 1
    if _n_in_flight + n > _room_in_flight:
        grown = <_Claim *>PyMem_Realloc(_in_flight, (_n_in_flight + n + 16) * sizeof(_Claim))
        if grown == NULL:
            raise MemoryError()
        _in_flight, _room_in_flight = grown, _n_in_flight + n + 16
    ident = PyThread_get_thread_ident()
    for i in range(n):
        if _live_p(outs[i]):
            o = <CTensor>outs[i]
            _in_flight[_n_in_flight].a0 = <intptr_t>o.t.data
            _in_flight[_n_in_flight].a1 = _in_flight[_n_in_flight].a0 + (o.t.capacity if o.t.capacity else 1)
            _in_flight[_n_in_flight].ident = ident
            _in_flight[_n_in_flight].call = _calls
            _n_in_flight += 1
    return _calls


cdef void _release(unsigned long call) noexcept:
    global _n_in_flight
    cdef Py_ssize_t i = 0
    while i < _n_in_flight:
        if _in_flight[i].call == call:
            _n_in_flight -= 1
            _in_flight[i] = _in_flight[_n_in_flight]
        else:
            i += 1


def check_call(tuple names, tuple inputs, tuple outputs, bint elementwise=False, bint scalars=False):
    """The bridge's memory checks for a call about to be made (raises BridgeError);
    `scalars`: rank-0 value tensors are accepted (eltwise operands)."""
    for t in inputs + outputs:
        if t is not None and not isinstance(t, CTensor):
            raise TypeError(f"Cannot convert {type(t).__name__} to mli._core.CTensor")
    _prep(names, inputs, outputs, elementwise, scalars)


def last_error():
    """(status, function, argument, field, reason, expected, actual, has_values, mlipy_safety)
    of the last C call on this thread."""
    cdef const mlipy_error_detail *d = mlipy_last_error()
    return (<int>d.status, d.function.decode(), d.argument.decode(), d.field.decode(),
            d.reason.decode(), d.expected, d.actual, bool(d.has_values), bool(d.mlipy_safety))


_tls = threading.local()


cdef extern from "Python.h":
    int PyErr_CheckSignals() except -1


cdef int _poll() noexcept with gil:
    """The kernels' poll (mlipy_set_poll): runs Python's signal handlers, so
    Ctrl-C interrupts a long sequence within MLIPY_POLL_STEPS steps."""
    try:
        PyErr_CheckSignals()
    except BaseException as e:
        _tls.interrupt = e
        return 1
    return 0


cdef int _reraise(mli_status st) except -1:
    """Raise what interrupted a kernel call (KeyboardInterrupt ...)."""
    if st == MLIPY_STATUS_INTERRUPTED:
        e = getattr(_tls, "interrupt", None)
        _tls.interrupt = None
        raise e if e is not None else KeyboardInterrupt()
    return 0


# Per-thread private tensors: the cell a kernel updates when the caller's
# cell must stay as it is, and the cfg.ir of a call whose cfg.ir is None.
# Reused across calls (a call that finds them in use, e.g. from a signal
# handler, makes its own).
cdef class _Scratch:
    cdef CTensor ir, cell
    cdef bint busy

    def __cinit__(self):
        self.ir = CTensor()
        self.cell = CTensor()


cdef class _PerThread:
    """What the kernel calls of one thread keep between calls: the
    workspaces (most recently used first) and the scratch tensors."""
    cdef list workspaces
    cdef _Scratch scratch

    def __cinit__(self):
        self.workspaces = []
        self.scratch = _Scratch()

    def __dealloc__(self):
        global _per_thread_freed
        _per_thread_freed += 1     # every thread's cached pointer is checked again


cdef unsigned long long _per_thread_freed = 0   # _PerThread objects freed so far (GIL held)


cdef extern from *:
    """
    #if defined(_MSC_VER)
    #define MLIPY_PY_TLS __declspec(thread)
    #else
    #define MLIPY_PY_TLS _Thread_local
    #endif
    /* this thread's _tls.state (borrowed: _tls keeps it) and the Python
       thread state it belongs to (a thread state id is never reused) */
    static MLIPY_PY_TLS PyObject *mlipy_py_thread_obj = NULL;
    static MLIPY_PY_TLS unsigned long long mlipy_py_thread_id = 0;
    static MLIPY_PY_TLS void *mlipy_py_thread_interp = NULL;
    static MLIPY_PY_TLS unsigned long long mlipy_py_thread_freed = 0;
    """
    PyObject *mlipy_py_thread_obj
    unsigned long long mlipy_py_thread_id
    void *mlipy_py_thread_interp
    unsigned long long mlipy_py_thread_freed


cdef extern from "Python.h":
    ctypedef struct PyThreadState
    PyThreadState *PyThreadState_Get()
    unsigned long long PyThreadState_GetID(PyThreadState *)
    void *PyThreadState_GetInterpreter(PyThreadState *)


cdef _PerThread _this_thread():
    """This thread's _PerThread (kept in _tls.state; found through a C
    thread-local pointer checked against the Python thread state, so that a
    thread state made anew on the same OS thread gets its own, and against
    the count of _PerThread objects freed, so that it never outlives its object)."""
    global mlipy_py_thread_obj, mlipy_py_thread_id, mlipy_py_thread_interp, mlipy_py_thread_freed
    cdef PyThreadState *ts = PyThreadState_Get()
    cdef unsigned long long ident = PyThreadState_GetID(ts)
    cdef void *interp = PyThreadState_GetInterpreter(ts)
    if mlipy_py_thread_obj != NULL and mlipy_py_thread_id == ident and mlipy_py_thread_interp == interp and \
            mlipy_py_thread_freed == _per_thread_freed:
        return <_PerThread>mlipy_py_thread_obj
    mlipy_py_thread_obj = NULL
    p = getattr(_tls, "state", None)
    if p is None:
        p = _PerThread()
        _tls.state = p
    mlipy_py_thread_obj = <PyObject *>p
    mlipy_py_thread_id, mlipy_py_thread_interp, mlipy_py_thread_freed = ident, interp, _per_thread_freed
    return <_PerThread>p


cdef class _Workspace:
    """A per-thread scratch buffer for the recurrent kernels, which pack their
    weights into it, and a copy of the weights it was last handed with: a
    later call whose weights are byte for byte that copy (same address, same
    capacity) lets C reuse the packing (mlipy_set_workspace_reuse) instead of
    packing again.  C's own header still checks the dimensions and stride."""
    cdef bytearray buf
    cdef bytearray snap          # the weights' capacity bytes at the last packing call
    cdef const void *w
    cdef uint32_t wlen
    cdef bint busy
    cdef bint reuse              # this call may reuse the packing


cdef size_t _SNAP_MAX = 1 << 22   # bytes of weights worth a copy (packing costs more than a compare)
cdef int _N_WORKSPACES = 4        # per thread: e.g. the layers of a network stepped one call at a time


cdef _Workspace _workspace(CTensor weights, size_t n):
    """The workspace for a call with these weights (most recently used
    first); `reuse` says whether C may keep what it packed last time.  The
    caller keeps the object (and _ws_done) around the C call."""
    cdef list pool = _this_thread().workspaces
    cdef _Workspace w = None, cand
    cdef const void *data = weights.t.data
    cdef uint32_t cap = weights.t.capacity
    cdef Py_ssize_t i
    for i in range(len(pool)):
        cand = <_Workspace>pool[i]
        if cand.w == data and cand.wlen == cap and not cand.busy:
            w = cand
            if i:
                del pool[i]
                pool.insert(0, w)
            break
    if w is None:
        for i in range(len(pool) - 1, -1, -1):     # the least recently used one that is free
            if not (<_Workspace>pool[i]).busy:
                w = <_Workspace>pool[i]
                del pool[i]
                break
        if w is None or len(pool) >= _N_WORKSPACES:
            w = _Workspace()
        pool.insert(0, w)
        del pool[_N_WORKSPACES:]
        w.w, w.wlen, w.snap = NULL, 0, None
    w.reuse = False
    if w.buf is None or <size_t>len(w.buf) < n:
        w.buf = bytearray(max(n, 4096))
        w.w, w.snap = NULL, None
    elif w.snap is not None and w.w == data and w.wlen == cap and \
            memcmp(PyByteArray_AS_STRING(w.snap), data, cap) == 0:
        w.reuse = True
    if not w.reuse:
        w.w, w.wlen, w.snap = NULL, 0, None
        if data != NULL and not weights.data_is_value and 0 < cap <= _SNAP_MAX:
            w.snap = PyByteArray_FromStringAndSize(<const char *>data, cap)
            w.w, w.wlen = data, cap
    w.busy = True
    return w


cdef size_t _ws_size(CTensor weights, CTensor prev_out, int rows_per_state):
    """Workspace bytes for a recurrent kernel (0 when the shapes are not
    usable; the kernel then checks and runs its plain path)."""
    if weights is None or prev_out is None or weights.is_null or prev_out.is_null:
        return 0
    return _ws_size_s(&weights.t, &prev_out.t, rows_per_state)


cdef size_t _ws_size_s(const mli_tensor *w, const mli_tensor *prev_out, int rows_per_state) noexcept:
    """_ws_size of the structs."""
    if w.rank < 1 or w.rank > 4 or prev_out.rank != 1:
        return 0
    cdef long long S = prev_out.shape[0]
    cdef long long cols = w.shape[w.rank - 1]
    cdef long long K = rows_per_state * S
    if S <= 0 or cols <= S or K * cols > (1 << 28):
        return 0
    # shapes their tensors merely claim never size the workspace: the weights
    # and the state must hold them (else the kernel's checks refuse them)
    if w.data == NULL or prev_out.data == NULL or \
            <unsigned long long>(K * cols) * (1 if w.el_type == MLI_EL_FX_8 else 2) > w.capacity or \
            <unsigned long long>S * (1 if prev_out.el_type == MLI_EL_FX_8 else 2) > prev_out.capacity:
        return 0
    return mlipy_workspace_size(<int>K, <int>(cols - S), <int>S)
