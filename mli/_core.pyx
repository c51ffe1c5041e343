# cython: language_level=3, boundscheck=False, wraparound=False, embedsignature=True
"""The bridge between numpy and the C core: it only marshals.

`CTensor` holds an `mli_tensor` struct and pins the memory its data points
into; the kernel wrappers pass those structs to C with the GIL released and
return the integer `mli_status`.  Python-side validation lives in `mli`."""
import threading

cimport cython
from cpython.buffer cimport (PyObject_GetBuffer, PyBuffer_Release, PyBuffer_IsContiguous, PyBUF_SIMPLE,
                             PyBUF_WRITABLE, PyBUF_RECORDS_RO)
from cpython.mem cimport PyMem_Realloc
from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_FromStringAndSize
from cpython.pythread cimport (PyThread_type_lock, PyThread_allocate_lock, PyThread_free_lock,
                               PyThread_acquire_lock, PyThread_release_lock, NOWAIT_LOCK, WAIT_LOCK,
                               PyThread_get_thread_ident)
from libc.stdint cimport int8_t, int16_t, intptr_t, uint32_t, uint8_t
from libc.string cimport memcmp, memcpy, memset
from cpython.ref cimport PyObject
from ._mli cimport *

MAX_RANK = 4


class BridgeError(ValueError):
    """A call the bridge refuses before it reaches C (it would touch memory
    outside the buffers it was given).  Carries the argument name."""

    def __init__(self, argument, message):
        super().__init__(f"{argument}: {message}")
        self.argument = argument


@cython.no_gc_clear  # keep `base` alive until __dealloc__ has released the buffer view
cdef class CTensor:
    """An `mli_tensor`, field for field, plus the memory it points into.

    Invariant kept by every setter: when `data` points into a buffer,
    `capacity` never exceeds the bytes of that buffer from `data` on, so no
    kernel can be led outside it.
    """
    cdef mli_tensor t
    cdef Py_buffer view
    cdef bint has_view
    cdef Py_ssize_t nbytes          # bytes available from data on
    cdef Py_ssize_t _offset         # data - start of base's buffer, in bytes
    cdef readonly object base       # the object owning the memory
    cdef readonly bint writable
    cdef readonly bint data_is_value  # rank-0 scalar kept in the data field
    cdef object _owner              # keeps a parent CTensor (sub-tensor views) alive
    cdef public bint is_null        # stands for a NULL mli_tensor pointer
    cdef readonly unsigned long generation  # bumped by every change of a field or the memory
    cdef public object _cache       # per-tensor caches (e.g. packed weights)
    cdef public bint _strided_copy  # mli.Tensor's copy of a strided view (never an output)

    def __cinit__(self, *args, **kwargs):
        memset(&self.t, 0, sizeof(mli_tensor))
        self.has_view = False

    def __dealloc__(self):
        if self.has_view:
            PyBuffer_Release(&self.view)

    def _attach(self, obj, bint need_writable=False):
        """Point data at the start of `obj`'s (contiguous) buffer."""
        self._attach_c(obj, need_writable)

    cdef int _attach_c(self, obj, bint need_writable) except -1:
        if self.has_view:
            PyBuffer_Release(&self.view)
            self.has_view = False
        self.writable = True
        try:
            PyObject_GetBuffer(obj, &self.view, PyBUF_SIMPLE | PyBUF_WRITABLE)
        except (BufferError, ValueError, TypeError):
            if need_writable:
                raise
            PyObject_GetBuffer(obj, &self.view, PyBUF_SIMPLE)  # read-only input
            self.writable = False
        self.has_view = True
        self.base = obj
        self._owner = None
        self.t.data = self.view.buf
        self.nbytes = self.view.len
        self._offset = 0
        self.data_is_value = False
        if self.t.capacity > self.nbytes:
            self.t.capacity = <uint32_t>self.nbytes
        self.generation += 1
        return 0

    def _detach(self):
        """data = NULL (a state a C caller can create)."""
        self._detach_c()

    cdef void _detach_c(self) noexcept:
        if self.has_view:
            PyBuffer_Release(&self.view)
            self.has_view = False
        self.base = None
        self._owner = None
        self.t.data = NULL
        self.nbytes = 0
        self.writable = False
        self.data_is_value = False

    def copy(self):
        """A tensor of the same class over a private copy of the buffer
        (capacity bytes), all fields equal."""
        return self._copy_into(type(self)())

    cdef CTensor _copy_into(self, CTensor t):
        """Make the new tensor `t` a copy of this one (see copy)."""
        cdef mli_tensor fields = self.t
        if self.data_is_value or self.t.data == NULL:
            t.t = fields
            t.data_is_value = self.data_is_value
            t.is_null = self.is_null
            return t
        buf = PyByteArray_FromStringAndSize(NULL, self.t.capacity if self.t.capacity > 1 else 1)
        if self.t.capacity == 0:
            PyByteArray_AS_STRING(buf)[0] = 0   # as bytearray(1)
        t._attach_c(buf, False)
        memcpy(t.t.data, self.t.data, self.t.capacity)
        fields.data = t.t.data
        t.t = fields
        t.is_null = self.is_null
        return t

    def copy_from(self, CTensor src):
        """Copy src's fields (except data) and its capacity bytes into this
        tensor's buffer (which must be writable and large enough)."""
        self._copy_from(src)

    cdef int _copy_from(self, CTensor src) except -1:
        if not self.writable or self.t.data == NULL or self.data_is_value:
            raise BridgeError("cell_out", "needs a writable buffer")
        if src.data_is_value or src.t.data == NULL:
            raise BridgeError("cell", "has no data to copy")
        if src.t.capacity > self.nbytes:
            raise BridgeError("cell_out", f"buffer of {self.nbytes} bytes is smaller than {src.t.capacity}")
        if self.t.data != src.t.data:
            memcpy(self.t.data, src.t.data, src.t.capacity)
        cdef void *data = self.t.data
        self.t = src.t
        self.t.data = data
        self.generation += 1
        return 0

    property data_null:
        def __get__(self):
            return self.t.data == NULL and not self.data_is_value

    property nbytes_available:
        def __get__(self):
            return self.nbytes

    property offset:
        """Byte offset of data within `base`'s buffer."""
        def __get__(self):
            return self._offset

    property capacity:
        def __get__(self):
            return self.t.capacity
        def __set__(self, value):
            value = int(value)
            if value < 0 or value > 0xFFFFFFFF:
                raise ValueError(f"capacity must be in 0..2**32-1, got {value}")
            if self.t.data != NULL and not self.data_is_value and value > self.nbytes:
                raise ValueError(f"capacity {value} exceeds the {self.nbytes} bytes of the buffer")
            self.t.capacity = <uint32_t>value
            self.generation += 1

    property rank:
        def __get__(self):
            return self.t.rank
        def __set__(self, value):
            value = int(value)
            if value < 0 or value > 0xFFFFFFFF:
                raise ValueError(f"rank must be in 0..2**32-1, got {value}")
            self.t.rank = <uint32_t>value
            self.generation += 1

    property shape4:
        """All four shape entries (entries beyond rank are kept as C keeps them)."""
        def __get__(self):
            return tuple(self.t.shape[i] for i in range(4))
        def __set__(self, value):
            value = [int(v) for v in value]
            if len(value) > 4 or any(v < 0 or v > 0xFFFFFFFF for v in value):
                raise ValueError(f"shape must be at most 4 entries in 0..2**32-1, got {value}")
            value += [0] * (4 - len(value))
            for i in range(4):
                self.t.shape[i] = <uint32_t>value[i]
            self.generation += 1

    property mem_stride:
        def __get__(self):
            return tuple(self.t.mem_stride[i] for i in range(4))
        def __set__(self, value):
            value = [int(v) for v in value]
            if len(value) > 4 or any(v < -2**31 or v >= 2**31 for v in value):
                raise ValueError(f"mem_stride must be at most 4 int32 entries, got {value}")
            value += [0] * (4 - len(value))
            for i in range(4):
                self.t.mem_stride[i] = value[i]
            self.generation += 1

    property el_type:
        def __get__(self):
            return <int>self.t.el_type
        def __set__(self, value):
            value = int(value)
            if value < 0 or value > 0x7FFFFFFF:
                raise ValueError(f"el_type must be a non-negative int32, got {value}")
            self.t.el_type = <mli_element_type>value
            self.generation += 1

    property frac_bits:
        def __get__(self):
            return self.t.el_params.fx.frac_bits
        def __set__(self, value):
            if isinstance(value, bool) or int(value) != value or not 0 <= int(value) <= 255:
                raise ValueError(f"frac_bits must be an integer in 0..255, got {value!r}")
            self.t.el_params.fx.frac_bits = <uint8_t>int(value)
            self.generation += 1

    property scalar_value:
        """The value a rank-0 tensor keeps in its data field (None otherwise)."""
        def __get__(self):
            if not self.data_is_value:
                return None
            return <int>(<intptr_t>self.t.data)
        def __set__(self, value):
            value = int(value)
            if not -32768 <= value <= 32767:
                raise ValueError(f"a scalar value must fit in 16 bits, got {value}")
            self._detach()
            self.t.data = <void *>(<intptr_t>value)
            self.data_is_value = True
            self.generation += 1


cdef inline mli_tensor *tp(CTensor t):
    if t is None or t.is_null:
        return NULL
    return &t.t


cdef inline bint _live(CTensor t):
    return t is not None and not t.is_null and t.t.data != NULL and not t.data_is_value


cdef int _prep(tuple names, tuple inputs, tuple outputs, bint elementwise, bint scalars=False) except -1:
    """Refuse calls on which C would write read-only memory or write into a
    buffer that another argument reads (MLI does not model aliasing)."""
    cdef Py_ssize_t n_in = len(inputs), n = n_in + len(outputs), i
    cdef PyObject *all_[16]
    if n > 16:
        raise ValueError("_prep: at most 16 tensors")
    for i in range(n_in):
        all_[i] = <PyObject *>inputs[i]
    for i in range(n - n_in):
        all_[n_in + i] = <PyObject *>outputs[i]
    return _prep_a(names, all_, n_in, n, elementwise, scalars)


cdef inline bint _value_p(PyObject *p) noexcept:
    """A rank-0 value tensor (p: a borrowed CTensor or None)."""
    return p != <PyObject *>None and (<CTensor>p).data_is_value


cdef inline bint _live_p(PyObject *p) noexcept:
    """_live of a borrowed CTensor or None."""
    return p != <PyObject *>None and not (<CTensor>p).is_null and (<CTensor>p).t.data != NULL and \
        not (<CTensor>p).data_is_value


cdef int _prep_a(tuple names, PyObject **all_, Py_ssize_t n_in, Py_ssize_t n, bint elementwise,
                 bint scalars) except -1:
    """_prep over `n` tensors (CTensors or None, borrowed), the first `n_in` of them inputs."""
    cdef Py_ssize_t i, j
    cdef intptr_t a0, a1, b0, b1
    for i in range(n):   # callers pass CTensors or None (check_call checks)
        if _value_p(all_[i]) and not scalars:
            raise BridgeError(names[i], "a rank-0 value tensor is only accepted by eltwise kernels")
        if _value_p(all_[i]) and (<CTensor>all_[i]).t.rank != 0:
            raise BridgeError(names[i], "a tensor whose data field holds a value must have rank 0")
    for i in range(n_in, n):
        if not _live_p(all_[i]):
            continue
        if not (<CTensor>all_[i]).writable:
            raise BridgeError(names[i], "the output buffer is read-only")
        a0 = <intptr_t>(<CTensor>all_[i]).t.data
        a1 = a0 + (<CTensor>all_[i]).t.capacity
        for j in range(n):
            if j == i or not _live_p(all_[j]):
                continue
            b0 = <intptr_t>(<CTensor>all_[j]).t.data
            b1 = b0 + (<CTensor>all_[j]).t.capacity
            if a0 < b1 and b0 < a1:
                if elementwise and j < n_in and a0 == b0 and \
                        (<CTensor>all_[i]).t.capacity == (<CTensor>all_[j]).t.capacity:
                    continue  # in-place element-wise operation: allowed by MLI
                raise BridgeError(names[i], f"the output buffer overlaps {names[j]}")
    return 0


# Output buffers of recurrent kernel calls in flight (GIL released): byte
# ranges, so that two threads never write one buffer at once (e.g. one
# cfg.ir shared by threads).  Touched only with the GIL held.
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


def get_isa():
    return mlipy_get_isa()


def set_isa(int isa):
    """Force an instruction-set path (0 scalar, 1 AVX2, 2 AVX-512 VNNI; -1 = best).
    Returns the path now in use, or -1 when the CPU lacks the one asked for."""
    return mlipy_set_isa(isa)


def isa_supported(int isa):
    return bool(mlipy_isa_supported(isa))


def isa_name(int isa):
    return mlipy_isa_name(isa).decode()


def set_rounding(int up):
    mlipy_set_rounding(MLIPY_ROUND_UP if up else MLIPY_ROUND_CONVERGENT)


def get_rounding():
    """The mode a call started now on this thread would use (0 / 1)."""
    return <int>mlipy_get_rounding()


def set_thread_rounding(int mode):
    """Override the process default for this thread (-1: no override)."""
    mlipy_set_thread_rounding(mode)


def get_thread_rounding():
    return mlipy_get_thread_rounding()


# ----------------------------------------------------------------- kernels
ctypedef mli_status (*fc_fn)(const mli_tensor *, const mli_tensor *, const mli_tensor *, mli_tensor *) noexcept nogil
ctypedef mli_status (*rnn_fn)(const mli_tensor *, const mli_tensor *, const mli_tensor *, const mli_tensor *,
                              const mli_rnn_cell_cfg *, mli_tensor *) noexcept nogil
ctypedef mli_status (*lstm_fn)(const mli_tensor *, const mli_tensor *, const mli_tensor *, const mli_tensor *,
                               const mli_rnn_cell_cfg *, mli_tensor *, mli_tensor *) noexcept nogil
ctypedef mli_status (*unary_fn)(const mli_tensor *, mli_tensor *) noexcept nogil
ctypedef mli_status (*relu_fn)(const mli_tensor *, const mli_relu_cfg *, mli_tensor *) noexcept nogil
ctypedef mli_status (*binary_fn)(const mli_tensor *, const mli_tensor *, mli_tensor *) noexcept nogil

# variant index: 0 fx8, 1 fx16, 2 fx8w16d
cdef fc_fn FC[3]
FC[:] = [mli_krn_fully_connected_fx8, mli_krn_fully_connected_fx16, mli_krn_fully_connected_fx8w16d]
cdef rnn_fn RNN[3]
RNN[:] = [mli_krn_basic_rnn_cell_fx8, mli_krn_basic_rnn_cell_fx16, mli_krn_basic_rnn_cell_fx8w16d]
cdef lstm_fn LSTM[3]
LSTM[:] = [mli_krn_lstm_cell_fx8, mli_krn_lstm_cell_fx16, mli_krn_lstm_cell_fx8w16d]
cdef unary_fn TANH[2]
TANH[:] = [mli_krn_tanh_fx8, mli_krn_tanh_fx16]
cdef unary_fn SIGM[2]
SIGM[:] = [mli_krn_sigm_fx8, mli_krn_sigm_fx16]
cdef relu_fn RELU[2]
RELU[:] = [mli_krn_relu_fx8, mli_krn_relu_fx16]
cdef binary_fn ELTWISE[5][2]
ELTWISE[0][:] = [mli_krn_eltwise_add_fx8, mli_krn_eltwise_add_fx16]
ELTWISE[1][:] = [mli_krn_eltwise_sub_fx8, mli_krn_eltwise_sub_fx16]
ELTWISE[2][:] = [mli_krn_eltwise_mul_fx8, mli_krn_eltwise_mul_fx16]
ELTWISE[3][:] = [mli_krn_eltwise_max_fx8, mli_krn_eltwise_max_fx16]
ELTWISE[4][:] = [mli_krn_eltwise_min_fx8, mli_krn_eltwise_min_fx16]
ELTWISE_OPS = ("add", "sub", "mul", "max", "min")


cdef inline int _variant(int v, int n) except -1:
    if v < 0 or v >= n:
        raise ValueError(f"variant must be in 0..{n - 1}, got {v}")
    return v


cdef int _fc_run(int variant, CTensor inp, CTensor weights, CTensor bias, CTensor out) except -1:
    cdef fc_fn f = FC[_variant(variant, 3)]
    cdef mli_status st
    _prep(("in", "weights", "bias", "out"), (inp, weights, bias), (out,), False)
    cdef mli_tensor *p_inp = tp(inp)
    cdef mli_tensor *p_weights = tp(weights)
    cdef mli_tensor *p_bias = tp(bias)
    cdef mli_tensor *p_out = tp(out)
    with nogil:
        st = f(p_inp, p_weights, p_bias, p_out)
    return <int>st


def fully_connected(int variant, CTensor inp, CTensor weights, CTensor bias, CTensor out):
    return _fc_run(variant, inp, weights, bias, out)


# argument names of the recurrent kernels (inputs, then outputs), for the bridge's messages
cdef tuple _RNN_NAMES = ("in", "prev_out", "weights", "bias", "cfg.ir_tsr", "out")
cdef tuple _RNN_OUTS = ("cfg.ir_tsr", "out")
cdef tuple _LSTM_NAMES = ("in", "prev_out", "weights", "bias", "cfg.ir_tsr", "cell", "out")
cdef tuple _LSTM_OUTS = ("cfg.ir_tsr", "cell", "out")


cdef inline void _cfg(mli_rnn_cell_cfg *cfg, int mode, int act, CTensor ir):
    cfg.mode = <mli_rnn_mode>mode
    cfg.act = <mli_rnn_out_activation>act
    cfg.ir_tsr = tp(ir)


cdef char _virtual_byte = 0


cdef inline void _virtual(mli_tensor *t) noexcept:
    """A stand-in for an output not allocated yet: it passes every output
    check (data somewhere, dense, the largest capacity) and is never written."""
    memset(t, 0, sizeof(mli_tensor))
    t.data = &_virtual_byte
    t.capacity = 0xFFFFFFFF


cdef int _check_cell_c(bint lstm, int variant, mli_tensor *inp, mli_tensor *prev_out, mli_tensor *weights,
                       mli_tensor *bias, int mode, int act, mli_tensor *ir, mli_tensor *cell, mli_tensor *out,
                       bint v_ir, bint v_out) noexcept:
    """The status of the kernel's argument checks alone (mlipy_check_*); v_ir,
    v_out: a stand-in (_virtual) for the ir / out the caller allocates later."""
    cdef mli_rnn_cell_cfg cfg
    cdef mli_tensor vir, vout
    _virtual(&vir)
    _virtual(&vout)
    cfg.mode = <mli_rnn_mode>mode
    cfg.act = <mli_rnn_out_activation>act
    cfg.ir_tsr = &vir if v_ir else ir
    if lstm:
        return <int>mlipy_check_lstm_cell(variant, inp, prev_out, weights, bias, &cfg, cell,
                                          &vout if v_out else out)
    return <int>mlipy_check_basic_rnn_cell(variant, inp, prev_out, weights, bias, &cfg, &vout if v_out else out)


def check_cell(bint lstm, int variant, CTensor inp, CTensor prev_out, CTensor weights, CTensor bias, int mode,
               int act, CTensor ir, CTensor cell, CTensor out):
    """The C checks of a basic RNN / LSTM call (MLI's order and status) before
    its outputs exist: `ir` or `out` None stands for the one the caller is
    about to allocate (sized from the shapes these checks have then vouched
    for).  The bridge's input checks run first, as in a call.  Returns the
    status (last_error() names the argument)."""
    _variant(variant, 3)
    _prep(("in", "prev_out", "weights", "bias") + (("cell",) if lstm else ()),
          (inp, prev_out, weights, bias) + ((cell,) if lstm else ()), (), False)
    return _check_cell_c(lstm, variant, tp(inp), tp(prev_out), tp(weights), tp(bias), mode, act, tp(ir),
                         tp(cell) if lstm else NULL, tp(out), ir is None, out is None)


cdef int _rnn_run(int variant, CTensor inp, CTensor prev_out, CTensor weights, CTensor bias,
                  int mode, int act, CTensor ir, CTensor out) except -1:
    _variant(variant, 3)
    cdef mli_rnn_cell_cfg cfg
    cdef PyObject *a[6]
    a[0], a[1], a[2], a[3] = <PyObject *>inp, <PyObject *>prev_out, <PyObject *>weights, <PyObject *>bias
    a[4], a[5] = <PyObject *>ir, <PyObject *>out
    _cfg(&cfg, mode, act, ir)
    _prep_a(_RNN_NAMES, a, 4, 6, False, False)
    cdef size_t nws = _ws_size(weights, prev_out, (bias.t.shape[0] if bias is not None and bias.t.rank == 2 else 1))
    cdef unsigned long keys = _claim_a(_RNN_OUTS, a + 4, 2)
    try:
        return _rec_call(False, variant, tp(inp), tp(prev_out), weights, tp(bias), &cfg, NULL, tp(out), nws)
    finally:
        _release(keys)


cdef int _rec_call(bint lstm, int variant, mli_tensor *inp, mli_tensor *prev_out, CTensor weights, mli_tensor *bias,
                   mli_rnn_cell_cfg *cfg, mli_tensor *cell, mli_tensor *out, size_t nws) except -1:
    """The C call of a recurrent kernel (variant checked by the caller): with
    the GIL released, the thread's workspace of `nws` bytes (whose packing of
    the weights C reuses when they are byte for byte as last packed) and the
    Ctrl-C poll.  Returns the status (raises what interrupted the call)."""
    cdef lstm_fn fl = LSTM[variant]
    cdef rnn_fn fr = RNN[variant]
    cdef mli_status st
    cdef mli_tensor *p_weights = tp(weights)
    cdef _Workspace wsp = None
    cdef unsigned char *ws = NULL
    cdef bint reuse = False
    try:
        if nws:
            wsp = _workspace(weights, nws)
            ws, reuse = <unsigned char *>PyByteArray_AS_STRING(wsp.buf), wsp.reuse
        with nogil:
            if reuse:
                mlipy_set_workspace_reuse(ws, nws)
            else:
                mlipy_set_workspace(ws, nws)
            mlipy_set_poll(_poll)
            if lstm:
                st = fl(inp, prev_out, p_weights, bias, cfg, cell, out)
            else:
                st = fr(inp, prev_out, p_weights, bias, cfg, out)
            mlipy_set_poll(NULL)
            mlipy_set_workspace(NULL, 0)
    finally:
        if wsp is not None:
            wsp.busy = False
    _reraise(st)
    return <int>st


def basic_rnn_cell(int variant, CTensor inp, CTensor prev_out, CTensor weights, CTensor bias,
                   int mode, int act, CTensor ir, CTensor out):
    return _rnn_run(variant, inp, prev_out, weights, bias, mode, act, ir, out)


cdef int _lstm_run(int variant, CTensor inp, CTensor prev_out, CTensor weights, CTensor bias,
                   int mode, int act, CTensor ir, CTensor cell, CTensor out, bint cfg_null=False) except -1:
    _variant(variant, 3)
    cdef mli_rnn_cell_cfg cfg
    cdef mli_rnn_cell_cfg *pcfg = NULL if cfg_null else &cfg
    cdef PyObject *a[7]
    a[0], a[1], a[2], a[3] = <PyObject *>inp, <PyObject *>prev_out, <PyObject *>weights, <PyObject *>bias
    a[4], a[5], a[6] = <PyObject *>ir, <PyObject *>cell, <PyObject *>out
    _cfg(&cfg, mode, act, ir)
    _prep_a(_LSTM_NAMES, a, 4, 7, False, False)
    cdef size_t nws = _ws_size(weights, prev_out, 4)
    cdef unsigned long keys = _claim_a(_LSTM_OUTS, a + 4, 3)
    try:
        return _rec_call(True, variant, tp(inp), tp(prev_out), weights, tp(bias), pcfg, tp(cell), tp(out), nws)
    finally:
        _release(keys)


def lstm_cell(int variant, CTensor inp, CTensor prev_out, CTensor weights, CTensor bias,
              int mode, int act, CTensor ir, CTensor cell, CTensor out, bint cfg_null=False):
    return _lstm_run(variant, inp, prev_out, weights, bias, mode, act, ir, cell, out, cfg_null)


cdef int _unary_run(unary_fn *table, int variant, CTensor inp, CTensor out) except -1:
    cdef unary_fn f = table[_variant(variant, 2)]
    cdef mli_status st
    _prep(("in", "out"), (inp,), (out,), True)
    cdef mli_tensor *p_inp = tp(inp)
    cdef mli_tensor *p_out = tp(out)
    with nogil:
        st = f(p_inp, p_out)
    return <int>st


def tanh(int variant, CTensor inp, CTensor out):
    return _unary_run(TANH, variant, inp, out)


def sigm(int variant, CTensor inp, CTensor out):
    return _unary_run(SIGM, variant, inp, out)


cdef int _relu_run(int variant, CTensor inp, int relu_type, CTensor out) except -1:
    cdef relu_fn f = RELU[_variant(variant, 2)]
    cdef mli_relu_cfg cfg
    cdef mli_status st
    cfg.type = <mli_relu_type>relu_type
    _prep(("in", "out"), (inp,), (out,), True)
    cdef mli_tensor *p_inp = tp(inp)
    cdef mli_tensor *p_out = tp(out)
    with nogil:
        st = f(p_inp, &cfg, p_out)
    return <int>st


def relu(int variant, CTensor inp, int relu_type, CTensor out):
    return _relu_run(variant, inp, relu_type, out)


cdef int _eltwise_run(int k, int variant, CTensor in1, CTensor in2, CTensor out) except -1:
    cdef binary_fn f = ELTWISE[k][_variant(variant, 2)]
    cdef mli_status st
    _prep(("in1", "in2", "out"), (in1, in2), (out,), True, True)
    cdef mli_tensor *p_in1 = tp(in1)
    cdef mli_tensor *p_in2 = tp(in2)
    cdef mli_tensor *p_out = tp(out)
    with nogil:
        st = f(p_in1, p_in2, p_out)
    return <int>st


def eltwise(op, int variant, CTensor in1, CTensor in2, CTensor out):
    return _eltwise_run(ELTWISE_OPS.index(op), variant, in1, in2, out)


# ------------------------------------------ the kernels' Python API (mli.kernels)
# mli.kernels' functions hand their arguments straight to these: every check
# of the Python API runs here once, in its order and with its message, and the
# structs go to C with no Python layer in between.
cdef object _Tensor = None       # mli.Tensor and mli.RnnCellConfig,
cdef object _Config = None       # given by mli.kernels through register()
cdef object _error = None        # mli._status.error and raise_for_status
cdef object _raise_for_status = None
cdef object _np_zeros = None
cdef object _DT8 = None
cdef object _DT16 = None
cdef object _B2B = 1             # RnnMode.BATCH_TO_BATCH, RnnMode.BATCH_TO_LAST, RnnActivation.NONE
cdef object _B2L = 2
cdef object _ACT_NONE = 0


def register(tensor_cls, config_cls, error, raise_for_status, np_zeros, dt8, dt16, b2b, b2l, act_none):
    """Give the bridge the Python types and helpers of the kernel API."""
    global _Tensor, _Config, _error, _raise_for_status, _np_zeros, _DT8, _DT16, _B2B, _B2L, _ACT_NONE
    _Tensor, _Config, _error, _raise_for_status = tensor_cls, config_cls, error, raise_for_status
    _np_zeros, _DT8, _DT16, _B2B, _B2L, _ACT_NONE = np_zeros, dt8, dt16, b2b, b2l, act_none


cdef inline CTensor _arg(str fname, str name, object t):
    """An argument that must be an mli.Tensor (TypeError naming it otherwise)."""
    if not isinstance(t, _Tensor):
        raise TypeError(f"{fname}: {name} must be an mli.Tensor, got {type(t).__name__}")
    return <CTensor>t


cdef inline CTensor _ir_arg(object ir):
    """cfg.ir given by the caller, as the bridge's kernel functions take it."""
    if not isinstance(ir, CTensor):
        raise TypeError(f"Argument 'ir' has incorrect type (expected mli._core.CTensor, got {type(ir).__name__})")
    return <CTensor>ir


ctypedef unsigned long long u64
cdef u64 _U64_MAX = <u64>-1


cdef inline u64 _mul(u64 a, u64 b) noexcept:
    """a * b, saturated (it is only compared with capacity products below 2**64)."""
    if a != 0 and b > _U64_MAX // a:
        return _U64_MAX
    return a * b


cdef inline u64 _count(CTensor t) noexcept:
    """The elements of shape[0:rank] (0 beyond rank 4)."""
    cdef u64 n = 1
    cdef uint32_t i
    if t.t.rank > 4:
        return 0
    for i in range(t.t.rank):
        n = _mul(n, t.t.shape[i])
    return n


cdef inline u64 _room(CTensor t) noexcept:
    return (t.t.capacity if t.t.capacity > 1 else 1) if t.t.data != NULL and not t.data_is_value else 1


cdef inline u64 _fits(u64 count, CTensor a, CTensor b=None):
    """`count` when the tensors it is derived from could hold that many
    elements, else 1: then a C check rejects them (their capacity is too
    small for their shape) and nothing large is allocated from bogus shape fields."""
    cdef u64 room = _room(a) if b is None else _mul(_room(a), _room(b))
    return count if count <= room else 1


cdef inline u64 _batch(CTensor x, object mode) except? 0:
    """Steps whose outputs a call keeps: the batch in batch-to-batch mode, else one
    (batch-to-last keeps the last step; other mode values write one step's place)."""
    return x.t.shape[0] if mode == _B2B and 1 <= x.t.rank <= 4 else 1


cdef inline int _c_int(object v) except? -1:
    """int(v) as the bridge's int parameters take it."""
    return v if isinstance(v, int) else int(v)


cdef CTensor _new_tensor(u64 count, int variant, u64 capacity):
    """mli.Tensor(np.zeros(max(count, 1), dtype)) with `capacity`, made without Tensor.__init__."""
    if capacity > 0xFFFFFFFF:
        raise ValueError(f"capacity must be in 0..2**32-1, got {capacity}")
    arr = _np_zeros(count if count > 1 else 1, _DT8 if variant == 0 else _DT16)
    cdef CTensor t = CTensor.__new__(_Tensor)
    t._attach_c(arr, False)
    t.t.el_type = MLI_EL_FX_8 if variant == 0 else MLI_EL_FX_16
    t.t.shape[0] = <uint32_t>(count if count > 1 else 1)
    t.t.rank = 1
    t.t.capacity = <uint32_t>capacity
    return t


cdef CTensor _out_arg(str fname, object out, u64 count, int variant, tuple names, PyObject **a, Py_ssize_t n_in,
                      bint elementwise=False, bint scalars=False):
    """A new output tensor of `count` elements, or the caller's, checked
    against aliasing the inputs: nothing of the caller's is touched before
    every check has passed.  NULL data and a short capacity reach C, which
    answers with MLI's status in MLI's order.  `a` holds the `n_in` inputs
    and room for the output after them."""
    cdef CTensor y
    if out is None:
        return _new_tensor(count, variant, count * (1 if variant == 0 else 2))
    y = _arg(fname, "out", out)
    if y._strided_copy:  # the caller's memory, not mli.Tensor's copy of a strided view
        raise ValueError(f"{fname}: out wraps a copy of a non-contiguous array, so the results would not "
                         f"reach the caller's array: pass np.ascontiguousarray(...) and read the tensor")
    a[n_in] = <PyObject *>y
    _prep_a(names, a, n_in, n_in + 1, elementwise, scalars)
    return y


cdef inline int _status(int st, str fname) except -1:
    if st != 0:
        _raise_for_status(st, "mli_krn_" + fname)
    return 0


cdef int _frac_for(CTensor out, object frac) except -1:
    """Set the frac bits the caller asks for (checked as the attribute's setter checks them)."""
    if isinstance(frac, int) and not isinstance(frac, bool) and 0 <= frac <= 255:
        out.t.el_params.fx.frac_bits = <uint8_t>frac
        out.generation += 1
    else:
        out.frac_bits = frac
    return 0


cdef inline void _frac_back(CTensor out, uint8_t old) noexcept:
    """Put the caller's frac bits back after a failed call."""
    out.t.el_params.fx.frac_bits = old
    out.generation += 1


cdef size_t _SCRATCH_KEEP = 1 << 16   # bytes; larger scratch is made per call


cdef _Scratch _take_scratch():
    cdef _Scratch s = _this_thread().scratch
    if s.busy:
        return None
    s.busy = True
    return s


cdef inline void _give_back(_Scratch s) noexcept:
    if s is not None:
        s.busy = False


cdef int _scratch_buffer(CTensor t, size_t n) except -1:
    if not (t.has_view and t.nbytes >= <Py_ssize_t>n):
        t._attach_c(bytearray(n if n > 64 else 64), True)
    return 0


cdef CTensor _zero_ir(_Scratch s, u64 count, int variant):
    """Tensor(np.zeros(max(count, 1), dtype)): a call's cfg.ir, in the scratch when it fits."""
    cdef size_t el = 1 if variant == 0 else 2
    if count < 1:
        count = 1
    if s is None or count * el > _SCRATCH_KEEP:
        return _new_tensor(count, variant, count * el)
    cdef CTensor t = s.ir
    _scratch_buffer(t, count * el)
    memset(&t.t, 0, sizeof(mli_tensor))
    t.t.data = t.view.buf
    memset(t.t.data, 0, count * el)
    t.t.shape[0] = <uint32_t>count
    t.t.rank = 1
    t.t.capacity = <uint32_t>(count * el)
    t.t.el_type = MLI_EL_FX_8 if variant == 0 else MLI_EL_FX_16
    t.generation += 1
    return t


cdef CTensor _cell_copy(_Scratch s, CTensor cell):
    """cell.copy(): into the scratch when `s` is given and the cell has a
    buffer, else a new tensor (of the cell's class, as copy() makes)."""
    cdef CTensor t
    if s is not None and cell.t.data != NULL and not cell.data_is_value and not cell.is_null \
            and cell.t.capacity <= _SCRATCH_KEEP:
        t = s.cell
        _scratch_buffer(t, cell.t.capacity)
        memcpy(t.view.buf, cell.t.data, cell.t.capacity)
        t.t = cell.t
        t.t.data = t.view.buf
        t.generation += 1
        return t
    if type(cell) is _Tensor:   # what copy() makes, without running Tensor.__init__
        return cell._copy_into(CTensor.__new__(_Tensor))
    return cell.copy()


cdef int _vouch(bint lstm, int variant, str fname, u64 count, CTensor tx, CTensor th, CTensor tw, CTensor tb, cfg,
                CTensor tc) except -1:
    """Before a new output of `count` elements is allocated: when it is large,
    the kernel's checks (with stand-ins for out and a missing cfg.ir) see the
    shapes it comes from first, so that a shape the tensors merely claim ends
    in the checker's error naming the argument, not in a huge allocation (the
    product of two claimed sizes can pass _fits)."""
    if _mul(count, 1 if variant == 0 else 2) <= _SCRATCH_KEEP:
        return 0
    ir = cfg.ir
    _status(check_cell(lstm, variant, tx, th, tw, tb, _c_int(cfg.mode), _c_int(cfg.act),
                       None if ir is None else _ir_arg(ir), tc, None), fname)
    return 0


def lstm_api(int variant, str fname, x, prev_out, weights, bias, cfg, cell, out, cell_out):
    """mli.lstm_cell_<kind>(x, prev_out, weights, bias, cfg, cell, out=out, cell_out=cell_out)."""
    return _lstm_api(variant, fname, x, prev_out, weights, bias, cfg, cell, out, cell_out)


cdef object _lstm_api(int variant, str fname, x, prev_out, weights, bias, cfg, cell, out, cell_out):
    cdef CTensor tx = _arg(fname, "in", x)
    cdef CTensor th = _arg(fname, "prev_out", prev_out)
    cdef CTensor tw = _arg(fname, "weights", weights)
    cdef CTensor tb = _arg(fname, "bias", bias)
    cdef CTensor tc = _arg(fname, "cell", cell)
    cdef CTensor tco = None, c, ir
    cdef _Scratch s = None
    cdef PyObject *a[7]
    if not isinstance(cfg, _Config):
        raise TypeError(f"{fname}: cfg must be an mli.RnnCellConfig")
    mode = cfg.mode
    cdef u64 M = _fits(_count(th), th)
    cdef u64 count = _fits(_mul(M, _batch(tx, mode)), th, tx)
    if out is None:
        _vouch(True, variant, fname, count, tx, th, tw, tb, cfg, tc)
    a[0], a[1], a[2], a[3], a[4] = <PyObject *>th, <PyObject *>tw, <PyObject *>tb, <PyObject *>tc, <PyObject *>tx
    cdef CTensor y = _out_arg(fname, out, count, variant,
                              ("prev_out", "weights", "bias", "cell", "in", "out"), a, 5)
    cdef bint apart = cell_out is not None and cell_out is not cell   # nothing is copied into an alias
    if apart:
        tco = _arg(fname, "cell_out", cell_out)
        a[0], a[1], a[2], a[3], a[4], a[5] = <PyObject *>tx, <PyObject *>th, <PyObject *>tw, <PyObject *>tb, \
            <PyObject *>tc, <PyObject *>y
        a[6] = <PyObject *>tco
        _prep_a(("in", "prev_out", "weights", "bias", "cell", "out", "cell_out"), a, 6, 7, False, False)
    # the kernel updates its cell in place: a private copy, unless the
    # caller passed its cell as cell_out (C writes nothing when it fails)
    ir_obj = cfg.ir
    if apart or ir_obj is None:
        s = _take_scratch()
    try:
        c = tc if cell_out is cell or (tc.t.data == NULL and not tc.data_is_value) else \
            _cell_copy(s if apart else None, tc)
        ir = _zero_ir(s, 4 * M, variant) if ir_obj is None else _ir_arg(ir_obj)
        _status(_lstm_run(variant, tx, th, tw, tb, _c_int(mode), _c_int(cfg.act), ir, c, y), fname)
        if apart:
            tco._copy_from(c)
            return y, cell_out
        return y, c
    finally:
        _give_back(s)


def rnn_api(int variant, str fname, x, prev_out, weights, bias, cfg, out, out_frac_bits):
    """mli.basic_rnn_cell_<kind>(x, prev_out, weights, bias, cfg, out=out, out_frac_bits=out_frac_bits)."""
    return _rnn_api(variant, fname, x, prev_out, weights, bias, cfg, out, out_frac_bits)


cdef object _rnn_api(int variant, str fname, x, prev_out, weights, bias, cfg, out, out_frac_bits):
    cdef CTensor tx = _arg(fname, "in", x)
    cdef CTensor th = _arg(fname, "prev_out", prev_out)
    cdef CTensor tw = _arg(fname, "weights", weights)
    cdef CTensor tb = _arg(fname, "bias", bias)
    cdef CTensor ir = None
    cdef _Scratch s = None
    if not isinstance(cfg, _Config):
        raise TypeError(f"{fname}: cfg must be an mli.RnnCellConfig")
    mode = cfg.mode
    cdef u64 K = _fits(_count(tb), tb)
    cdef u64 count = _fits(_mul(K, _batch(tx, mode)), tb, tx)
    if out is None:
        _vouch(False, variant, fname, count, tx, th, tw, tb, cfg, None)
    frac = th.t.el_params.fx.frac_bits if out_frac_bits is None else out_frac_bits
    cdef PyObject *a[5]
    a[0], a[1], a[2], a[3] = <PyObject *>th, <PyObject *>tw, <PyObject *>tb, <PyObject *>tx
    cdef CTensor y = _out_arg(fname, out, count, variant, ("prev_out", "weights", "bias", "in", "out"), a, 4)
    cdef uint8_t old = y.t.el_params.fx.frac_bits
    cdef bint set_frac
    cdef const mlipy_error_detail *d
    ir_obj = cfg.ir
    cdef bint b2l = ir_obj is None and mode == _B2L
    if b2l:
        s = _take_scratch()
    try:
        if ir_obj is None:
            if b2l:
                ir = _zero_ir(s, K, variant)
        else:
            ir = _ir_arg(ir_obj)
        act = cfg.act
        set_frac = act == _ACT_NONE   # the format the caller asks for, for this call
        if set_frac:
            _frac_for(y, frac)
        try:
            _status(_rnn_run(variant, tx, th, tw, tb, _c_int(mode), _c_int(act), ir, y), fname)
            # a basic RNN whose out is too short for its steps: MLI 1.1 returns OK
            # and writes past out's end; the C core writes nothing and flags it
            d = mlipy_last_error()
            if d.status == MLI_STATUS_OK and d.mlipy_safety:
                raise _error(5, "mli_krn_" + fname, d.argument.decode(), d.field.decode(), d.reason.decode(),
                             mlipy_safety=True)
        except BaseException:
            if set_frac:
                _frac_back(y, old)
            raise
        return y
    finally:
        _give_back(s)


def fc_api(int variant, str fname, x, weights, bias, out, out_frac_bits):
    """mli.fully_connected_<kind>(x, weights, bias, out=out, out_frac_bits=out_frac_bits)."""
    return _fc_api(variant, fname, x, weights, bias, out, out_frac_bits)


cdef object _fc_api(int variant, str fname, x, weights, bias, out, out_frac_bits):
    cdef CTensor tx = _arg(fname, "in", x)
    cdef CTensor tw = _arg(fname, "weights", weights)
    cdef CTensor tb = _arg(fname, "bias", bias)
    cdef u64 K = _fits(tw.t.shape[0] if 1 <= tw.t.rank <= 4 else 0, tw)
    frac = tx.t.el_params.fx.frac_bits if out_frac_bits is None else out_frac_bits
    cdef PyObject *a[4]
    a[0], a[1], a[2] = <PyObject *>tw, <PyObject *>tb, <PyObject *>tx
    cdef CTensor y = _out_arg(fname, out, K, variant, ("weights", "bias", "in", "out"), a, 3)
    cdef uint8_t old = y.t.el_params.fx.frac_bits
    _frac_for(y, frac)
    try:
        _status(_fc_run(variant, tx, tw, tb, y), fname)
    except BaseException:
        _frac_back(y, old)
        raise
    return y


def unary_api(int op, int variant, str fname, x, out, relu_type=None):
    """mli.tanh_<kind> (op 0), sigm_<kind> (op 1) or relu_<kind> (op 2; relu_type already checked)."""
    return _unary_api(op, variant, fname, x, out, relu_type)


cdef object _unary_api(int op, int variant, str fname, x, out, relu_type=None):
    cdef CTensor tx = _arg(fname, "in", x)
    cdef PyObject *a[2]
    a[0] = <PyObject *>tx
    cdef CTensor y = _out_arg(fname, out, _fits(_count(tx), tx), variant, ("in", "out"), a, 1, True)
    if op == 2:
        _status(_relu_run(variant, tx, relu_type, y), fname)
    elif op == 1:
        _status(_unary_run(SIGM, variant, tx, y), fname)
    else:
        _status(_unary_run(TANH, variant, tx, y), fname)
    return y


def eltwise_api(int op, int variant, str fname, in1, in2, out, out_frac_bits):
    """mli.eltwise_<op>_<kind>(in1, in2, out=out, out_frac_bits=out_frac_bits); op indexes ELTWISE_OPS."""
    return _eltwise_api(op, variant, fname, in1, in2, out, out_frac_bits)


cdef object _eltwise_api(int op, int variant, str fname, in1, in2, out, out_frac_bits):
    cdef CTensor a = _arg(fname, "in1", in1)
    cdef CTensor b = _arg(fname, "in2", in2)
    cdef u64 na = _fits(_count(a), a) if a.t.rank else 1
    cdef u64 nb = _fits(_count(b), b) if b.t.rank else 1
    frac = a.t.el_params.fx.frac_bits if out_frac_bits is None else out_frac_bits
    cdef PyObject *args[3]
    args[0], args[1] = <PyObject *>a, <PyObject *>b
    cdef CTensor y = _out_arg(fname, out, na if na > nb else nb, variant, ("in1", "in2", "out"), args, 2, True, True)
    cdef uint8_t old = y.t.el_params.fx.frac_bits
    _frac_for(y, frac)
    try:
        _status(_eltwise_run(op, variant, a, b, y), fname)
    except BaseException:
        _frac_back(y, old)
        raise
    return y


# ----------------------------------------- fused TensorIterator (mli.graph)
# A TensorIterator over a KernelBody whose port map is a recurrence runs one
# batch-to-batch call per row (mli/graph/kernel_body.py).  FusedSeq does that
# for C-contiguous arrays of the body's dtype, y concatenated (if at all) on
# the axis x is sliced on, in either direction: straight from the caller's
# arrays into the outputs, with no tensor wrappers; a row whose sequence is
# contiguous (x [..., L, N] sliced forward) is read in place and its y written
# in place in the concatenated output, others go through one scratch.  Any
# other input, a kernel function that is not the package's own (a test's spy)
# or a changed body returns None: the TensorIterator then takes its Python
# paths, which do the checks and raise the errors of stepping.

cdef enum:
    _OUT_Y_CONCAT = 0     # ConcatOutput of y on the sliced axis, part 1
    _OUT_Y_LAST = 1       # LastIterationOutput of y
    _OUT_H_LAST = 2       # LastIterationOutput of h_out
    _OUT_C_LAST = 3       # LastIterationOutput of c_out


cdef inline void _fill(mli_tensor *t, char *data, uint32_t d0, uint32_t d1, uint32_t rank, Py_ssize_t es,
                       int el_type, int frac) noexcept:
    """A dense rank-1 ([d0]) or rank-2 ([d0, d1]) tensor, every field as bind() sets it."""
    memset(t, 0, sizeof(mli_tensor))
    t.data = data
    t.shape[0] = d0
    t.shape[1] = d1 if rank == 2 else 0
    t.rank = rank
    t.capacity = d0 * (d1 if rank == 2 else 1) * es
    t.el_type = <mli_element_type>el_type
    t.el_params.fx.frac_bits = <uint8_t>frac


cdef inline bint _frac_ok(object v):
    return type(v) is int and 0 <= v <= 255


cdef inline bint _dense(Py_buffer *b, char code, Py_ssize_t es) noexcept:
    """A C-contiguous buffer of native `code` ('b' int8, 'h' int16) items."""
    return b.format != NULL and b.format[0] == code and b.format[1] == 0 and b.itemsize == es and \
        PyBuffer_IsContiguous(b, b'C')


cdef class FusedSeq:
    """The fused run of one TensorIterator over one KernelBody (see above);
    made once per TensorIterator from its port map (KernelBody's _FusedPlan)."""
    cdef object body, kernels, kernel, xp, np_empty, ndarray, b2b, act_none
    cdef str fname
    cdef bint lstm
    cdef int variant
    cdef Py_ssize_t x_ext, h_ext, c_ext, n_ext, n_out
    cdef long long xp_axis, n_fixed
    cdef list kinds                 # per external output: (kind, concat axis, concat stride sign)
    cdef bint eligible
    cdef Py_ssize_t plan_L          # the last axis length planned and its plan
    cdef long long plan_n, plan_first, plan_step

    def __init__(self, body, kernels, str fname, bint lstm, int variant, Py_ssize_t x_ext, Py_ssize_t h_ext,
                 Py_ssize_t c_ext, Py_ssize_t n_ext, xp, long long xp_axis, n_fixed, list kinds, bint eligible,
                 np_empty, ndarray, b2b, act_none):
        self.body, self.kernels, self.fname, self.kernel = body, kernels, fname, kernels._OWN[fname]
        self.lstm, self.variant = lstm, _variant(variant, 3)
        self.x_ext, self.h_ext, self.c_ext, self.n_ext = x_ext, h_ext, c_ext, n_ext
        self.xp, self.xp_axis = xp, xp_axis
        self.n_fixed = -1 if n_fixed is None else n_fixed
        self.kinds, self.n_out, self.eligible = kinds, len(kinds), eligible
        self.np_empty, self.ndarray, self.b2b, self.act_none = np_empty, ndarray, b2b, act_none
        self.plan_L = -1

    def run(self, ti, tuple inputs):
        """The TensorIterator's outputs for `inputs`, or None: take the general paths."""
        if not self.eligible or len(inputs) != self.n_ext:
            return None
        body = self.body
        if ti.body is not body or not body.fuse or getattr(self.kernels, self.fname) is not self.kernel:
            return None
        x, h0 = inputs[self.x_ext], inputs[self.h_ext]
        c0 = inputs[self.c_ext] if self.lstm else None
        if type(x) is not self.ndarray or type(h0) is not self.ndarray or \
                (self.lstm and type(c0) is not self.ndarray):
            return None
        cdef Py_buffer bx, bh, bc
        cdef bint hx = False, hh = False, hc = False
        try:
            try:
                PyObject_GetBuffer(x, &bx, PyBUF_RECORDS_RO)
                hx = True
                PyObject_GetBuffer(h0, &bh, PyBUF_RECORDS_RO)
                hh = True
                if self.lstm:
                    PyObject_GetBuffer(c0, &bc, PyBUF_RECORDS_RO)
                    hc = True
            except (BufferError, ValueError, TypeError):
                return None
            return self._run(body, x, h0, c0, &bx, &bh, &bc if hc else NULL)
        finally:
            if hc:
                PyBuffer_Release(&bc)
            if hh:
                PyBuffer_Release(&bh)
            if hx:
                PyBuffer_Release(&bx)

    cdef object _run(self, body, x, h0, c0, Py_buffer *bx, Py_buffer *bh, Py_buffer *bc):
        cdef int variant = self.variant
        cdef Py_ssize_t es = 1 if variant == 0 else 2
        cdef char code = b'b' if variant == 0 else b'h'
        cdef int el = MLI_EL_FX_8 if variant == 0 else MLI_EL_FX_16
        cdef int nd = bx.ndim, i
        cdef Py_ssize_t N, M, L, B, P, Q, r, p, q, kind, sign, row_x, row_y
        cdef long long axis, n, first, step, ca, t, dst
        # the inputs: the body's dtype, C-contiguous; x [pre..., L, post..., N] sliced on L; h and c
        # [..., M] with the B = P*Q rows of x (P, Q: the elements of pre and post), in that order
        if not _dense(bx, code, es) or not _dense(bh, code, es) or nd < 2 or bh.ndim < 1:
            return None
        if bc != NULL:
            if not _dense(bc, code, es) or bc.ndim != bh.ndim:
                return None
            for i in range(bh.ndim):
                if bc.shape[i] != bh.shape[i]:
                    return None
        weights, bias = body.weights, body.bias
        if not isinstance(weights, _Tensor) or not isinstance(bias, _Tensor) or \
                not _live(<CTensor>weights) or not _live(<CTensor>bias):
            return None
        cdef CTensor tw = <CTensor>weights, tb = <CTensor>bias
        if tw.t.rank < 2 or tw.t.rank > 4:
            return None
        M = tw.t.shape[tw.t.rank - 2]
        N = <Py_ssize_t>tw.t.shape[tw.t.rank - 1] - M
        if M < 1 or N < 1 or bx.shape[nd - 1] != N or bh.shape[bh.ndim - 1] != M:
            return None
        if body.input_size != N or body.state_size != M:
            return None
        axis = self.xp_axis + nd if self.xp_axis < 0 else self.xp_axis
        if not 0 <= axis < nd - 1:
            return None
        L = bx.shape[axis]
        if L != self.plan_L:
            try:
                n, first, step = self.xp.plan(L)
            except ValueError:
                return None
            self.plan_L, self.plan_n, self.plan_first, self.plan_step = L, n, first, step
        else:
            n, first, step = self.plan_n, self.plan_first, self.plan_step
        if n < 1 or (step != 1 and step != -1) or (self.n_fixed >= 0 and n != self.n_fixed):
            return None
        P = Q = 1
        for i in range(axis):
            P *= bx.shape[i]
        for i in range(axis + 1, nd - 1):
            Q *= bx.shape[i]
        B = P * Q
        if B < 1 or bh.len != B * M * es or n * (N if N > M else M) * es > 0xFFFFFFFF:
            return None
        # the body's formats and configuration, read per call as the Python paths read them
        cfg = getattr(body, "_seq", None)       # its batch-to-batch cfg (anything else: the Python paths)
        in_frac, state_frac = body.in_frac, body.state_frac
        cell_frac = body.cell_frac if self.lstm else 0
        if not isinstance(cfg, _Config) or not _frac_ok(in_frac) or not _frac_ok(state_frac) or \
                not _frac_ok(cell_frac):
            return None
        mode = cfg.mode
        if cfg.ir is not None or not (mode is self.b2b or mode == self.b2b):
            return None
        act_obj = cfg.act
        if not isinstance(act_obj, int) or not -2 ** 31 <= act_obj < 2 ** 31:
            return None
        cdef int act = act_obj
        cdef int out_frac = 0
        if not self.lstm:      # out's frac bits: body.out_frac passed for act NONE, else prev_out's; set for act NONE
            frac = body.out_frac if body.act == self.act_none else state_frac
            if act_obj == self.act_none:
                if not _frac_ok(frac):
                    return None
                out_frac = frac
        # the outputs: y concatenated on the sliced axis (iteration order, or reversed), the last steps
        cdef list kinds = self.kinds
        shape = tuple([bx.shape[i] for i in range(nd - 1)])
        y = None
        sign = 1
        for i in range(self.n_out):
            kind, ca, t = kinds[i]
            if kind == _OUT_Y_CONCAT:
                ca = ca + nd if ca < 0 else ca
                if ca != axis:
                    return None
                y = self.np_empty(shape[:axis] + (n,) + shape[axis + 1:] + (M,), x.dtype)
                sign = t
        # x rows gathered (a strided or reversed sequence) and y rows scattered (strided or reversed)
        # through one scratch of this call; else each row is read and written in place
        cdef bint gather = Q > 1 or step < 0
        cdef bint direct = y is not None and Q == 1 and sign > 0
        cdef Py_ssize_t x_room = n * N * es if gather else 0
        cdef Py_ssize_t y_room = 0 if direct else n * M * es
        tmp = PyByteArray_FromStringAndSize(NULL, x_room + y_room + B * M * es)
        cdef char *xt = PyByteArray_AS_STRING(tmp)
        cdef char *yt = xt + x_room
        cdef char *last = yt + y_room        # each row's last step
        cdef Py_buffer by, bcell
        cdef bint hy = False, hcell = False
        cdef _Scratch s = None
        cdef CTensor ir
        cdef mli_tensor tx, th, tc, ty
        cdef mli_rnn_cell_cfg ccfg
        cdef char *xp = <char *>bx.buf
        cdef char *xrow
        cdef char *yrow
        cdef char *yp = NULL
        cdef char *cp = NULL
        cdef size_t nws
        cdef const mlipy_error_detail *d
        cdef uint32_t rows_per_state = 4 if self.lstm else (tb.t.shape[0] if tb.t.rank == 2 else 1)
        c = self.np_empty(h0.shape, x.dtype) if self.lstm else None
        try:
            if y is not None:
                PyObject_GetBuffer(y, &by, PyBUF_SIMPLE | PyBUF_WRITABLE)
                hy = True
                yp = <char *>by.buf
            if self.lstm:
                PyObject_GetBuffer(c, &bcell, PyBUF_SIMPLE | PyBUF_WRITABLE)
                hcell = True
                cp = <char *>bcell.buf
                memcpy(cp, bc.buf, B * M * es)
                s = _take_scratch()
            for r in range(B):
                if r:
                    PyErr_CheckSignals()
                p, q = r // Q, r % Q
                if gather:
                    for t in range(n):
                        memcpy(xt + t * N * es, xp + ((p * L + first + t * step) * Q + q) * N * es, N * es)
                    xrow = xt
                else:
                    xrow = xp + (p * L + first) * N * es
                yrow = yp + r * n * M * es if direct else yt
                _fill(&tx, xrow, <uint32_t>n, <uint32_t>N, 2, es, el, in_frac)
                _fill(&th, <char *>bh.buf + r * M * es, <uint32_t>M, 0, 1, es, el, state_frac)
                _fill(&ty, yrow, <uint32_t>n, <uint32_t>M, 2, es, el, out_frac)
                nws = _ws_size_s(&tw.t, &th, rows_per_state)
                if self.lstm:
                    _fill(&tc, cp + r * M * es, <uint32_t>M, 0, 1, es, el, cell_frac)
                    ir = _zero_ir(s, 4 * M, variant)
                    _cfg(&ccfg, 1, act, ir)
                    _status(_rec_call(True, variant, &tx, &th, tw, &tb.t, &ccfg, &tc, &ty, nws), self.fname)
                else:
                    _cfg(&ccfg, 1, act, None)
                    _status(_rec_call(False, variant, &tx, &th, tw, &tb.t, &ccfg, NULL, &ty, nws), self.fname)
                    d = mlipy_last_error()
                    if d.status == MLI_STATUS_OK and d.mlipy_safety:
                        raise _error(5, "mli_krn_" + self.fname, d.argument.decode(), d.field.decode(),
                                     d.reason.decode(), mlipy_safety=True)
                memcpy(last + r * M * es, yrow + (n - 1) * M * es, M * es)
                if y is not None and not direct:
                    for t in range(n):
                        dst = t if sign > 0 else n - 1 - t
                        memcpy(yp + ((p * n + dst) * Q + q) * M * es, yt + t * M * es, M * es)
            result = [None] * self.n_out
            y_last = h_last = None
            for i in range(self.n_out):
                kind, ca, t = kinds[i]
                if kind == _OUT_Y_CONCAT:
                    v = y
                elif kind == _OUT_C_LAST:
                    v = c
                else:
                    v = y_last if kind == _OUT_Y_LAST else h_last
                    if v is None:    # y of one iteration [pre..., 1, post..., M], h_out shaped like h
                        v = self.np_empty(shape[:axis] + (1,) + shape[axis + 1:] + (M,) if kind == _OUT_Y_LAST
                                          else h0.shape, x.dtype)
                        _copy_to(v, last, B * M * es)
                        if kind == _OUT_Y_LAST:
                            y_last = v
                        else:
                            h_last = v
                result[i] = v
            return tuple(result)
        finally:
            _give_back(s)
            if hcell:
                PyBuffer_Release(&bcell)
            if hy:
                PyBuffer_Release(&by)


cdef int _copy_to(object dst, const char *src, Py_ssize_t nbytes) except -1:
    """The first `nbytes` of dst (a new C-contiguous array) = src."""
    cdef Py_buffer b
    PyObject_GetBuffer(dst, &b, PyBUF_SIMPLE | PyBUF_WRITABLE)
    try:
        memcpy(b.buf, src, nbytes)
    finally:
        PyBuffer_Release(&b)
    return 0


# The kernel functions of mli.kernels (named, documented and exported there):
# closures over the variant and the name, so that a call is one call into the
# bridge, which runs every check of the API.
def lstm_kernel(int variant, str fname):
    def fn(x, prev_out, weights, bias, cfg, cell, *, out=None, cell_out=None):
        return _lstm_api(variant, fname, x, prev_out, weights, bias, cfg, cell, out, cell_out)
    return fn


def rnn_kernel(int variant, str fname):
    def fn(x, prev_out, weights, bias, cfg, *, out=None, out_frac_bits=None):
        return _rnn_api(variant, fname, x, prev_out, weights, bias, cfg, out, out_frac_bits)
    return fn


def fc_kernel(int variant, str fname):
    def fn(x, weights, bias, *, out=None, out_frac_bits=None):
        return _fc_api(variant, fname, x, weights, bias, out, out_frac_bits)
    return fn


def unary_kernel(int op, int variant, str fname):
    def fn(x, *, out=None):
        return _unary_api(op, variant, fname, x, out, None)
    return fn


def eltwise_kernel(int op, int variant, str fname):
    def fn(in1, in2, *, out=None, out_frac_bits=None):
        return _eltwise_api(op, variant, fname, in1, in2, out, out_frac_bits)
    return fn


def bind(CTensor t, arr, int frac):
    """Point `t` at the C-contiguous int8/int16 array `arr` (rank 1..4) with
    every field as Tensor(arr, frac) sets it: for wrappers kept and reused
    from call to call (mli.graph's fused TensorIterator)."""
    cdef int nd = arr.ndim
    cdef int i
    if not 1 <= nd <= 4 or not 0 <= frac <= 255:
        raise ValueError("bind: needs an array of rank 1 to 4 and frac bits in 0..255")
    shape = arr.shape
    t._attach_c(arr, False)
    memset(t.t.shape, 0, sizeof(t.t.shape))
    memset(t.t.mem_stride, 0, sizeof(t.t.mem_stride))
    for i in range(nd):
        t.t.shape[i] = <uint32_t>shape[i]
    t.t.rank = nd
    t.t.capacity = <uint32_t>t.nbytes
    t.t.el_type = MLI_EL_FX_8 if arr.itemsize == 1 else MLI_EL_FX_16
    t.t.el_params.fx.frac_bits = <uint8_t>frac
    t.is_null = False
    return t


def unbind(tuple tensors):
    """Let go of the arrays that bind() pointed the tensors at."""
    for t in tensors:
        (<CTensor?>t)._detach_c()


# ----------------------------------------------------------------- helpers
def count_elem_num(CTensor inp, uint32_t start_dim):
    return mli_hlp_count_elem_num(tp(inp), start_dim)


def tensor_element_size(CTensor inp):
    return mli_hlp_tensor_element_size(tp(inp))


def point_to_subtensor(CTensor inp, start_coord, int coord_num, int first_out_dim_size, CTensor out,
                       bint cfg_null=False):
    cdef mli_point_to_subtsr_cfg cfg
    cdef mli_status st
    cdef Py_ssize_t delta
    coords = [int(c) for c in start_coord] + [0] * (4 - len(start_coord))
    if len(coords) != 4 or not 0 <= coord_num <= 255 or not 0 <= first_out_dim_size <= 255:
        raise ValueError("point_to_subtensor: start_coord has at most 4 entries, coord_num and "
                         "first_out_dim_size are in 0..255")
    for i in range(4):
        cfg.start_coord[i] = <uint32_t>coords[i]
    cfg.coord_num = <uint8_t>coord_num
    cfg.first_out_dim_size = <uint8_t>first_out_dim_size
    _prep(("in", "out"), (inp,), (), False)
    st = mli_hlp_point_to_subtensor(tp(inp), NULL if cfg_null else &cfg, tp(out))
    if st == MLI_STATUS_OK and out is not None and not out.is_null:
        # out now points into in's buffer: share (and pin) that memory
        delta = <char *>out.t.data - <char *>inp.t.data
        out.has_view = False
        out.base = inp.base
        out._owner = inp
        out.writable = inp.writable
        out.data_is_value = False
        out._offset = inp._offset + delta
        out.nbytes = inp.nbytes - delta
        out.generation += 1
    return <int>st


def convert_tensor(CTensor inp, CTensor out):
    cdef mli_status st
    _prep(("in", "out"), (inp,), (out,), False)
    cdef mli_tensor *p_inp = tp(inp)
    cdef mli_tensor *p_out = tp(out)
    with nogil:
        st = mli_hlp_convert_tensor(p_inp, p_out)
    return <int>st


def float_to_fx_tensor(const float[::1] src, CTensor dst):
    cdef mli_status st
    cdef uint32_t n = <uint32_t>src.shape[0]
    _prep(("dst",), (), (dst,), False)
    cdef mli_tensor *p_dst = tp(dst)
    with nogil:
        st = mli_hlp_float_to_fx_tensor(&src[0] if n else NULL, n, p_dst)
    return <int>st


def fx_tensor_to_float(CTensor src, float[::1] dst, uint32_t dst_size):
    cdef mli_status st
    if dst_size > <uint32_t>dst.shape[0]:
        raise BridgeError("dst_size", f"{dst_size} exceeds the {dst.shape[0]} floats of dst")
    _prep(("src",), (src,), (), False)
    cdef mli_tensor *p_src = tp(src)
    with nogil:
        st = mli_hlp_fx_tensor_to_float(p_src, &dst[0] if dst.shape[0] else NULL, dst_size)
    return <int>st


# ------------------------------------------------------- LSTM step access
def _step_sizes(gates, M, cell, h):
    """Sizes checked in Python integers (no C int overflow)."""
    if M < 1 or len(gates) < 4 * M:
        raise BridgeError("gates", f"needs 4*M values with M >= 1 (M={M}, {len(gates)} given)")
    if cell is not None and len(cell) < M:
        raise BridgeError("cell", f"needs M={M} values")
    if h is not None and len(h) < M:
        raise BridgeError("h", f"needs M={M} values")
def lstm_gates(int variant, gates, int M, int f_ir):
    """Activate 4*M dense gate values in place (int8 for fx8, else int16)."""
    cdef int8_t[::1] g8
    cdef int16_t[::1] g16
    _variant(variant, 3)
    _step_sizes(gates, M, None, None)
    if variant == 0:
        g8 = gates
        mlipy_lstm_gates_fx8(&g8[0], M, f_ir)
    else:
        g16 = gates
        (mlipy_lstm_gates_fx16 if variant == 1 else mlipy_lstm_gates_fx8w16d)(&g16[0], M, f_ir)


def lstm_cell_update(int variant, gates, int M, cell, int ir_shift):
    """Update M cell values in place from activated gates (i, g, f, o)."""
    cdef const int8_t[::1] g8
    cdef int8_t[::1] c8
    cdef const int16_t[::1] g16
    cdef int16_t[::1] c16
    _variant(variant, 3)
    _step_sizes(gates, M, cell, None)
    if not -64 <= ir_shift <= 64: raise BridgeError("ir_shift", "must be in -64..64")
    if variant == 0:
        g8 = gates; c8 = cell
        mlipy_lstm_cell_update_fx8(&g8[0], M, &c8[0], ir_shift)
    else:
        g16 = gates; c16 = cell
        (mlipy_lstm_cell_update_fx16 if variant == 1 else mlipy_lstm_cell_update_fx8w16d)(&g16[0], M, &c16[0], ir_shift)


def lstm_hidden(int variant, gates, int M, cell, int f_c, int act, int mshift, h):
    """h[m] = out(p[m] * o[m]) with p = cell or its activation."""
    cdef const int8_t[::1] g8, c8
    cdef int8_t[::1] h8
    cdef const int16_t[::1] g16, c16
    cdef int16_t[::1] h16
    _variant(variant, 3)
    if not 0 <= act <= 2: raise BridgeError("act", "must be 0, 1 or 2")
    _step_sizes(gates, M, cell, h)
    if not 0 <= f_c <= 255: raise BridgeError("f_c", "must be in 0..255")
    if not -64 <= mshift <= 64: raise BridgeError("mshift", "must be in -64..64")
    if variant == 0:
        g8 = gates; c8 = cell; h8 = h
        mlipy_lstm_hidden_fx8(&g8[0], M, &c8[0], f_c, <mli_rnn_out_activation>act, mshift, &h8[0])
    else:
        g16 = gates; c16 = cell; h16 = h
        (mlipy_lstm_hidden_fx16 if variant == 1 else mlipy_lstm_hidden_fx8w16d)(
            &g16[0], M, &c16[0], f_c, <mli_rnn_out_activation>act, mshift, &h16[0])


# ------------------------------------------------------------ prepared calls
cdef inline unsigned long _gen(CTensor t):
    return t.generation if t is not None else 0


cdef class PreparedCall:
    """A basic RNN or LSTM kernel call with its tensors bound once: calling
    it runs the kernel on the tensors' current contents with no marshalling
    and no allocation (weights stay packed between calls).  Raises through
    `on_error(status)` when the kernel returns a non-OK status."""
    cdef int lstm, variant
    cdef CTensor inp, prev_out, weights, bias, ir, cell, out
    cdef mli_rnn_cell_cfg cfg
    cdef object ws_buf
    cdef unsigned char *ws
    cdef size_t nws
    cdef object on_error
    cdef PyThread_type_lock lock  # one call at a time: the calls share the workspace and out
    cdef unsigned long gens[7]

    cdef inline bint _changed(self):
        return (_gen(self.inp) != self.gens[0] or _gen(self.prev_out) != self.gens[1] or
                _gen(self.weights) != self.gens[2] or _gen(self.bias) != self.gens[3] or
                _gen(self.ir) != self.gens[4] or _gen(self.cell) != self.gens[5] or _gen(self.out) != self.gens[6])

    cdef int _check(self) except -1:
        if self.lstm:
            _prep(("in", "prev_out", "weights", "bias", "cfg.ir_tsr", "cell", "out"),
                  (self.inp, self.prev_out, self.weights, self.bias), (self.ir, self.cell, self.out), False)
        else:
            _prep(("in", "prev_out", "weights", "bias", "cfg.ir_tsr", "out"),
                  (self.inp, self.prev_out, self.weights, self.bias), (self.ir, self.out), False)
        self.gens[0], self.gens[1], self.gens[2] = _gen(self.inp), _gen(self.prev_out), _gen(self.weights)
        self.gens[3], self.gens[4], self.gens[5], self.gens[6] = _gen(self.bias), _gen(self.ir), _gen(self.cell), _gen(self.out)
        return 0

    def __init__(self, bint lstm, int variant, CTensor inp, CTensor prev_out, CTensor weights, CTensor bias,
                 int mode, int act, CTensor ir, CTensor cell, CTensor out, on_error):
        cdef unsigned char[::1] mv
        _variant(variant, 3)
        self.lstm, self.variant = lstm, variant
        self.inp, self.prev_out, self.weights, self.bias = inp, prev_out, weights, bias
        self.ir, self.cell, self.out = ir, cell, out
        self.on_error = on_error
        if self.lock == NULL:
            self.lock = PyThread_allocate_lock()
            if self.lock == NULL:
                raise MemoryError()
        _cfg(&self.cfg, mode, act, ir)
        self._check()
        self.nws = _ws_size(weights, prev_out, 4 if lstm else
                            (bias.t.shape[0] if bias is not None and bias.t.rank == 2 else 1))
        self.ws_buf = bytearray(max(self.nws, 1))
        mv = self.ws_buf
        self.ws = &mv[0] if self.nws else NULL
        mlipy_set_workspace(NULL, 0)

    def __dealloc__(self):
        if self.lock != NULL:
            PyThread_free_lock(self.lock)

    def __call__(self):
        """Concurrent calls from several threads run one after the other."""
        if not PyThread_acquire_lock(self.lock, NOWAIT_LOCK):
            with nogil:  # another thread's call is running: wait with the GIL released
                PyThread_acquire_lock(self.lock, WAIT_LOCK)
        try:
            self._call()
        finally:
            PyThread_release_lock(self.lock)

    cdef _call(self):
        cdef mli_status st
        if self._changed():  # a tensor was changed since: check again
            self._check()
        cdef mli_tensor *a = tp(self.inp)
        cdef mli_tensor *b = tp(self.prev_out)
        cdef mli_tensor *c = tp(self.weights)
        cdef mli_tensor *d = tp(self.bias)
        cdef mli_tensor *e = tp(self.cell)
        cdef mli_tensor *o = tp(self.out)
        cdef lstm_fn fl = LSTM[self.variant]
        cdef rnn_fn fr = RNN[self.variant]
        with nogil:
            mlipy_set_workspace_reuse(self.ws, self.nws)
            mlipy_set_poll(_poll)
            if self.lstm:
                st = fl(a, b, c, d, &self.cfg, e, o)
            else:
                st = fr(a, b, c, d, &self.cfg, o)
            mlipy_set_poll(NULL)
            mlipy_set_workspace(NULL, 0)
        _reraise(st)
        if st != MLI_STATUS_OK:
            self.on_error(<int>st)


# ------------------------------------------- batched rows (mli-py extension)
# mlipy_*_cell_rows_* (mlipy_ext.h): B rows with shared weights in one call.
from cpython.mem cimport PyMem_Malloc, PyMem_Free

cdef extern from "mlipy_ext.h" nogil:
    mli_status mlipy_lstm_cell_rows_fx8(int, const mli_tensor *, const mli_tensor *, const mli_tensor *,
                                        const mli_tensor *, const mli_rnn_cell_cfg *, mli_tensor *, mli_tensor *, int *)
    mli_status mlipy_lstm_cell_rows_fx16(int, const mli_tensor *, const mli_tensor *, const mli_tensor *,
                                         const mli_tensor *, const mli_rnn_cell_cfg *, mli_tensor *, mli_tensor *, int *)
    mli_status mlipy_lstm_cell_rows_fx8w16d(int, const mli_tensor *, const mli_tensor *, const mli_tensor *,
                                            const mli_tensor *, const mli_rnn_cell_cfg *, mli_tensor *, mli_tensor *,
                                            int *)
    mli_status mlipy_basic_rnn_cell_rows_fx8(int, const mli_tensor *, const mli_tensor *, const mli_tensor *,
                                             const mli_tensor *, const mli_rnn_cell_cfg *, mli_tensor *, int *)
    mli_status mlipy_basic_rnn_cell_rows_fx16(int, const mli_tensor *, const mli_tensor *, const mli_tensor *,
                                              const mli_tensor *, const mli_rnn_cell_cfg *, mli_tensor *, int *)
    mli_status mlipy_basic_rnn_cell_rows_fx8w16d(int, const mli_tensor *, const mli_tensor *, const mli_tensor *,
                                                 const mli_tensor *, const mli_rnn_cell_cfg *, mli_tensor *, int *)

ctypedef mli_status (*lstm_rows_fn)(int, const mli_tensor *, const mli_tensor *, const mli_tensor *, const mli_tensor *,
                                    const mli_rnn_cell_cfg *, mli_tensor *, mli_tensor *, int *) noexcept nogil
ctypedef mli_status (*rnn_rows_fn)(int, const mli_tensor *, const mli_tensor *, const mli_tensor *, const mli_tensor *,
                                   const mli_rnn_cell_cfg *, mli_tensor *, int *) noexcept nogil
cdef lstm_rows_fn LSTM_ROWS[3]
LSTM_ROWS[:] = [mlipy_lstm_cell_rows_fx8, mlipy_lstm_cell_rows_fx16, mlipy_lstm_cell_rows_fx8w16d]
cdef rnn_rows_fn RNN_ROWS[3]
RNN_ROWS[:] = [mlipy_basic_rnn_cell_rows_fx8, mlipy_basic_rnn_cell_rows_fx16, mlipy_basic_rnn_cell_rows_fx8w16d]

# rows are C ints; the per-row tensors of one call live in one allocation
MAX_ROWS = 2 ** 31 - 1


cdef int _row_views(str name, object obj, bint stacked, bint output, Py_ssize_t rows, mli_tensor *dst) except -1:
    """dst[r] = row r of `obj`: a list holds one tensor per row (inputs only;
    the C checks judge each); with `stacked`, the tensor without its leading
    axis (the rows), at r times the row's bytes; else the tensor itself,
    shared by every row."""
    cdef Py_ssize_t r, i
    cdef unsigned long long count = 1, es, row_bytes
    cdef mli_tensor v
    cdef CTensor t
    if isinstance(obj, list):
        if output or len(obj) != rows:
            raise BridgeError(name, f"a list needs one tensor per row ({rows})")
        for r in range(rows):
            t = obj[r]
            if t is None or t.is_null or t.data_is_value:
                raise BridgeError(f"{name}[{r}]", "needs a tensor (not NULL, not a rank-0 value)")
            if dst != NULL:
                dst[r] = t.t
        return 0
    t = obj
    if t is None or t.is_null or not _live(t):
        raise BridgeError(name, "needs a tensor with data")
    if output and not t.writable:
        raise BridgeError(name, "the output buffer is read-only")
    if not stacked:
        for r in range(rows if dst != NULL else 0):
            dst[r] = t.t
        return 0
    if t.t.rank < 1 or t.t.rank > 4 or t.t.shape[0] != rows:
        raise BridgeError(name, f"needs the {rows} rows on its first axis (shape[0] == {rows})")
    for i in range(4):
        if t.t.mem_stride[i] != 0:
            raise BridgeError(name, "a stacked row tensor must be dense (mem_stride all 0)")
    for i in range(1, t.t.rank):
        count *= t.t.shape[i]
    es = 2 if t.t.el_type == MLI_EL_FX_16 else (4 if t.t.el_type == MLI_EL_ASYM_I32 else 1)
    row_bytes = count * es
    if row_bytes * <unsigned long long>rows > t.t.capacity:
        raise BridgeError(name, f"capacity {t.t.capacity} is smaller than {rows} rows of {row_bytes} bytes")
    v = t.t
    v.rank = t.t.rank - 1
    for i in range(4):
        v.shape[i] = t.t.shape[i + 1] if i + 1 < 4 else 0
    v.capacity = <uint32_t>row_bytes
    if dst == NULL:    # validated only (check_rows)
        return 0
    for r in range(rows):
        v.data = <char *>t.t.data + r * row_bytes
        dst[r] = v
    return 0


cdef void _row_at(object obj, bint stacked, Py_ssize_t r, mli_tensor *dst) noexcept:
    """Row r's view of `obj` as _row_views makes it (which has validated `obj`)."""
    cdef CTensor t
    cdef unsigned long long count = 1, es
    cdef uint32_t i
    if isinstance(obj, list):
        dst[0] = (<CTensor>obj[r]).t
        return
    t = obj
    dst[0] = t.t
    if not stacked:
        return
    for i in range(1, t.t.rank):
        count *= t.t.shape[i]
    es = 2 if t.t.el_type == MLI_EL_FX_16 else (4 if t.t.el_type == MLI_EL_ASYM_I32 else 1)
    dst.rank = t.t.rank - 1
    for i in range(4):
        dst.shape[i] = t.t.shape[i + 1] if i + 1 < 4 else 0
    dst.capacity = <uint32_t>(count * es)
    dst.data = <char *>t.t.data + r * count * es


def check_rows(bint lstm, int variant, Py_ssize_t rows, object inp, object prev_out, bint prev_rows,
               CTensor weights, CTensor bias, int mode, int act, CTensor ir, object cell, bint cell_rows,
               CTensor out):
    """Each row's kernel checks, as cell_rows runs them first, before the
    caller allocates what the shapes ask for: `ir` or `out` None stands for
    the one about to be allocated (see check_cell); `cell` is the caller's
    (stacked when cell_rows, else shared by every row).  No memory is taken
    per row.  Returns (status, failed_row)."""
    cdef int v = _variant(variant, 3)
    cdef mli_tensor r_in, r_prev, r_cell, r_out
    cdef Py_ssize_t r
    cdef int st
    if rows < 1 or rows > MAX_ROWS:
        raise BridgeError("rows", f"must be in 1..{MAX_ROWS}, got {rows}")
    _row_views("in", inp, True, False, rows, NULL)
    _row_views("prev_out", prev_out, prev_rows, False, rows, NULL)
    if out is not None:
        _row_views("out", out, True, True, rows, NULL)
    if lstm:
        _row_views("cell", cell, cell_rows, False, rows, NULL)
    for r in range(rows):
        _row_at(inp, True, r, &r_in)
        _row_at(prev_out, prev_rows, r, &r_prev)
        if out is not None:
            _row_at(out, True, r, &r_out)
        if lstm:
            _row_at(cell, cell_rows, r, &r_cell)
        st = _check_cell_c(lstm, v, &r_in, &r_prev, tp(weights), tp(bias), mode, act, tp(ir),
                           &r_cell if lstm else NULL, &r_out if out is not None else NULL, ir is None, out is None)
        if st != 0:
            return st, <int>r
    return 0, -1


def cell_rows(bint lstm, int variant, Py_ssize_t rows, object inp, object prev_out, bint prev_rows,
              CTensor weights, CTensor bias, int mode, int act, CTensor ir, CTensor cell, CTensor out):
    """One mlipy_*_cell_rows_* call over stacked tensors (in, out and cell
    with the rows on their first axis; prev_out stacked when prev_rows, else
    shared; in and prev_out may be lists of row tensors).  Returns (status,
    failed_row, row 0's out frac bits)."""
    cdef int v = _variant(variant, 3)
    cdef lstm_rows_fn fl = LSTM_ROWS[v]
    cdef rnn_rows_fn fr = RNN_ROWS[v]
    cdef mli_rnn_cell_cfg cfg
    cdef mli_status st
    cdef int bad = -1
    cdef int n
    if rows < 1 or rows > MAX_ROWS:
        raise BridgeError("rows", f"must be in 1..{MAX_ROWS}, got {rows}")
    n = <int>rows
    _cfg(&cfg, mode, act, ir)
    cdef mli_tensor *views = <mli_tensor *>PyMem_Malloc(4 * rows * sizeof(mli_tensor))
    if views == NULL:
        raise MemoryError(f"no memory for {rows} rows")
    cdef mli_tensor *v_in = views
    cdef mli_tensor *v_prev = views + rows
    cdef mli_tensor *v_out = views + 2 * rows
    cdef mli_tensor *v_cell = views + 3 * rows
    cdef mli_tensor *p_w = tp(weights)
    cdef mli_tensor *p_b = tp(bias)
    try:
        _row_views("in", inp, True, False, rows, v_in)
        _row_views("prev_out", prev_out, prev_rows, False, rows, v_prev)
        _row_views("out", out, True, True, rows, v_out)
        if lstm:
            _row_views("cell", cell, True, True, rows, v_cell)
        keys = _claim(("cell", "out"), (cell if lstm else None, out))
        try:
            with nogil:
                mlipy_set_poll(_poll)
                if lstm:
                    st = fl(n, v_in, v_prev, p_w, p_b, &cfg, v_cell, v_out, &bad)
                else:
                    st = fr(n, v_in, v_prev, p_w, p_b, &cfg, v_out, &bad)
                mlipy_set_poll(NULL)
        finally:
            _release(keys)
        _reraise(st)
        return <int>st, bad, v_out[0].el_params.fx.frac_bits
    finally:
        PyMem_Free(views)

# --- float32 recurrent sequences (beyond MLI): mlipy_float_rnn_sequence -------------------

from libc.stdint cimport int64_t

cdef extern from "mlipy_ext.h" nogil:
    int mlipy_float_rnn_sequence(int cell, int act, int lbr, float clip, int B, int T, int N,
                                 int M, int nd, const int *reverse, const float *x,
                                 const float *h0, const float *c0, const int64_t *lengths,
                                 const float *w, const float *r, const float *bias, float *y,
                                 float *h_out, float *c_out)

FRNN_CELLS = {"rnn": 0, "gru": 1, "lstm": 2}
FRNN_ACTS = {"tanh": 0, "sigmoid": 1, "relu": 2}


def float_rnn_sequence(str cell, str act, bint lbr, double clip, directions,
                       const float[:, :, ::1] x, const float[:, :, ::1] h0, c0,
                       const int64_t[::1] lengths, const float[:, :, ::1] w,
                       const float[:, :, ::1] r, const float[:, ::1] b,
                       float[:, :, :, ::1] y, float[:, :, ::1] h_out, c_out):
    """Run a float32 LSTM/GRU/RNN sequence in C (see mlipy_float_rnn.c for the
    order of operations).  `directions`: a list of booleans (reverse?), one per
    direction.  x [B, T, N]; h0, c0, h_out, c_out [B, nd, M] (c0/c_out: LSTM
    only, else None); lengths int64 [B]; w [nd, G*M, N], r [nd, G*M, M],
    b [nd, NB*M]; y [B, nd, T, M] (written whole).  Raises ValueError on
    inconsistent shapes, MemoryError when the scratch cannot be allocated."""
    cdef int kind = FRNN_CELLS[cell], a = FRNN_ACTS[act]
    cdef int G = 4 if kind == 2 else (3 if kind == 1 else 1)
    cdef int NB = 4 if (kind == 1 and lbr) else G
    cdef Py_ssize_t B = x.shape[0], T = x.shape[1], N = x.shape[2], M = h0.shape[2]
    cdef Py_ssize_t nd = len(directions)
    cdef int rev[2]
    cdef const float[:, :, ::1] c0v
    cdef float[:, :, ::1] cov
    cdef const float *c0p = NULL
    cdef float *cop = NULL
    cdef int st
    if nd < 1 or nd > 2:
        raise ValueError(f"directions: 1 or 2, got {nd}")
    for i in range(nd):
        rev[i] = 1 if directions[i] else 0
    if max(B, T, N, M) > 0x7fffffff:
        raise ValueError(f"sizes B={B} T={T} N={N} M={M} exceed the C int range")
    if M <= 0 or h0.shape[0] != B or h0.shape[1] != nd:
        raise ValueError(f"h0: [{B}, {nd}, M>0], got [{h0.shape[0]}, {h0.shape[1]}, {h0.shape[2]}]")
    if lengths.shape[0] != B:
        raise ValueError(f"lengths: [{B}], got {lengths.shape[0]}")
    if (w.shape[0], w.shape[1], w.shape[2]) != (nd, G * M, N) or \
            (r.shape[0], r.shape[1], r.shape[2]) != (nd, G * M, M) or \
            (b.shape[0], b.shape[1]) != (nd, NB * M):
        raise ValueError("w, r, b: inconsistent with x and h0")
    if (y.shape[0], y.shape[1], y.shape[2], y.shape[3]) != (B, nd, T, M) or \
            (h_out.shape[0], h_out.shape[1], h_out.shape[2]) != (B, nd, M):
        raise ValueError("y, h_out: inconsistent with x and h0")
    if kind == 2:
        c0v = c0
        cov = c_out
        if (c0v.shape[0], c0v.shape[1], c0v.shape[2]) != (B, nd, M) or \
                (cov.shape[0], cov.shape[1], cov.shape[2]) != (B, nd, M):
            raise ValueError("c0, c_out: [B, nd, M]")
        c0p = &c0v[0, 0, 0] if B else NULL
        cop = &cov[0, 0, 0] if B else NULL
    if B == 0:
        return
    cdef const float *xp = &x[0, 0, 0] if T and N else NULL
    cdef float *yp = &y[0, 0, 0, 0] if T else NULL
    cdef const float *wp = &w[0, 0, 0] if N else NULL
    if kind == 2 and c0p == NULL:
        raise ValueError("c0, c_out: required for an LSTM")
    with nogil:
        st = mlipy_float_rnn_sequence(kind, a, lbr, <float>clip, <int>B, <int>T, <int>N, <int>M,
                                      <int>nd, rev, xp, &h0[0, 0, 0], c0p, &lengths[0], wp,
                                      &r[0, 0, 0], &b[0, 0], yp, &h_out[0, 0, 0], cop)
    if st == -2:
        raise MemoryError("float_rnn_sequence: scratch memory")
    if st != 0:
        raise ValueError("float_rnn_sequence: arguments refused (sizes or lengths)")


# ------------------------------------- the rest of MLI 1.1 (one file per family)
include "_core_more.pxi"
include "_core_conv.pxi"
include "_core_pool.pxi"
include "_core_data.pxi"
include "_core_transform_more.pxi"
include "_core_fc_sa8.pxi"
