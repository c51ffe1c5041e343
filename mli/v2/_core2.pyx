# cython: language_level=3, boundscheck=False, wraparound=False, embedsignature=True
"""The bridge between Python objects and mli-py's MLI 2.0.2 C library: it
only marshals.  Tensors, LUTs and cfgs arrive as plain Python objects (see
mli.v2.tensor); each call builds the C structs field for field, checks that
no capacity exceeds the buffer it describes (so the C core cannot be led
outside it), runs the kernel with the GIL released, writes back the output
fields the kernel changed and returns the integer status."""
import builtins
import threading

import numpy as np

from libc.stdint cimport int8_t, int16_t, int32_t, uint8_t, uint32_t
from libc.stdlib cimport calloc, free
from libc.string cimport memset, strcmp
from cpython.buffer cimport (PyObject_GetBuffer, PyBuffer_Release, PyBuffer_FillInfo, PyBUF_SIMPLE, PyBUF_WRITABLE,
                             PyBUF_RECORDS_RO)

cdef extern from "mli_api.h" nogil:
    ctypedef int mli_status
    ctypedef int mli_element_type
    ctypedef union mli_mem "mli_data_container::mem":
        void *ptr
        int16_t *pi16
        int8_t *pi8
        int32_t i32
        int16_t i16
        int8_t i8
    ctypedef struct mli_data_container:
        uint32_t capacity
        mli_mem mem
    ctypedef struct mli_fx_params "mli_element_params::fx":
        int8_t frac_bits
    ctypedef struct mli_sa_params "mli_element_params::sa":
        int type
        mli_data_container zero_point
        mli_data_container scale
        int32_t dim
        mli_data_container scale_frac_bits
    ctypedef union mli_element_params:
        mli_fx_params fx
        mli_sa_params sa
    ctypedef struct mli_tensor:
        mli_data_container data
        int32_t mem_stride[4]
        uint32_t shape[4]
        uint32_t rank
        mli_element_type el_type
        mli_element_params el_params
    ctypedef struct mli_lut:
        mli_data_container data
        mli_element_type type
        int32_t length
        int32_t in_frac_bits
        int32_t out_frac_bits
        int32_t input_offset
        int32_t output_offset
    ctypedef struct mli_relu_cfg:
        int type
    ctypedef struct mli_fully_connected_cfg:
        mli_relu_cfg relu
    ctypedef struct mli_rnn_cell_cfg:
        int direction
        int results
        int act
        mli_data_container scratch_data
    ctypedef struct mli_rnn_dense_cfg:
        uint8_t inputs_num

    int32_t mli_krn_tanh_get_lut_size()
    int32_t mli_krn_sigm_get_lut_size()
    mli_status mli_krn_tanh_create_lut(mli_lut *lut)
    mli_status mli_krn_sigm_create_lut(mli_lut *lut)
    mli_status mli_krn_tanh_fx8(const mli_tensor *, const mli_lut *, mli_tensor *)
    mli_status mli_krn_tanh_fx16(const mli_tensor *, const mli_lut *, mli_tensor *)
    mli_status mli_krn_tanh_sa8(const mli_tensor *, const mli_lut *, mli_tensor *)
    mli_status mli_krn_sigm_fx8(const mli_tensor *, const mli_lut *, mli_tensor *)
    mli_status mli_krn_sigm_fx16(const mli_tensor *, const mli_lut *, mli_tensor *)
    mli_status mli_krn_sigm_sa8(const mli_tensor *, const mli_lut *, mli_tensor *)
    mli_status mli_krn_fully_connected_fx8(const mli_tensor *, const mli_tensor *, const mli_tensor *,
                                           const mli_fully_connected_cfg *, mli_tensor *)
    mli_status mli_krn_fully_connected_fx16(const mli_tensor *, const mli_tensor *, const mli_tensor *,
                                            const mli_fully_connected_cfg *, mli_tensor *)
    mli_status mli_krn_fully_connected_fx16_fx8_fx8(const mli_tensor *, const mli_tensor *, const mli_tensor *,
                                                    const mli_fully_connected_cfg *, mli_tensor *)
    mli_status mli_krn_fully_connected_sa8_sa8_sa32(const mli_tensor *, const mli_tensor *, const mli_tensor *,
                                                    const mli_fully_connected_cfg *, mli_tensor *)
    mli_status mli_krn_fully_connected_sa8_sa8_sa32_ext_bias(const mli_tensor *, const mli_tensor *,
                                                             const mli_tensor *, const mli_fully_connected_cfg *,
                                                             mli_tensor *)
    mli_status mli_krn_rnn_dense_fx16(const mli_tensor **, const mli_tensor **, const mli_tensor *,
                                      const mli_rnn_dense_cfg *, mli_tensor *)
    mli_status mli_krn_rnn_dense_fx16_fx8_fx8(const mli_tensor **, const mli_tensor **, const mli_tensor *,
                                              const mli_rnn_dense_cfg *, mli_tensor *)
    mli_status mli_krn_rnn_dense_sa8_sa8_sa32(const mli_tensor **, const mli_tensor **, const mli_tensor *,
                                              const mli_rnn_dense_cfg *, mli_tensor *)
    mli_status mli_krn_lstm_cell_fx16(const mli_tensor *, const mli_tensor *, const mli_tensor *, const mli_tensor *,
                                      const mli_tensor *, const mli_lut *, const mli_lut *, const mli_rnn_cell_cfg *,
                                      mli_tensor *, mli_tensor *)
    mli_status mli_krn_lstm_cell_fx16_fx8_fx8(const mli_tensor *, const mli_tensor *, const mli_tensor *,
                                              const mli_tensor *, const mli_tensor *, const mli_lut *,
                                              const mli_lut *, const mli_rnn_cell_cfg *, mli_tensor *, mli_tensor *)
    mli_status mli_krn_lstm_cell_sa8_sa8_sa32(const mli_tensor *, const mli_tensor *, const mli_tensor *,
                                              const mli_tensor *, const mli_tensor *, const mli_lut *,
                                              const mli_lut *, const mli_rnn_cell_cfg *, mli_tensor *, mli_tensor *)
    mli_status mli_krn_gru_cell_fx16(const mli_tensor *, const mli_tensor *, const mli_tensor *, const mli_tensor *,
                                     const mli_tensor *, const mli_lut *, const mli_lut *, const mli_rnn_cell_cfg *,
                                     mli_tensor *)
    mli_status mli_krn_gru_cell_fx16_fx8_fx8(const mli_tensor *, const mli_tensor *, const mli_tensor *,
                                             const mli_tensor *, const mli_tensor *, const mli_lut *,
                                             const mli_lut *, const mli_rnn_cell_cfg *, mli_tensor *)
    mli_status mli_krn_gru_cell_sa8_sa8_sa32(const mli_tensor *, const mli_tensor *, const mli_tensor *,
                                             const mli_tensor *, const mli_tensor *, const mli_lut *,
                                             const mli_lut *, const mli_rnn_cell_cfg *, mli_tensor *)

cdef extern from "mlipy2_ext.h" nogil:
    ctypedef struct mlipy2_error_detail:
        mli_status status
        const char *function
        const char *argument
        const char *reason
        int mlipy_safety
    const mlipy2_error_detail *mlipy2_last_error()
    void mlipy2_set_thread_rounding(int mode)
    int mlipy2_get_isa()
    int mlipy2_set_isa(int isa)
    int mlipy2_isa_supported(int isa)
    ctypedef int (*mlipy2_poll_fn)() noexcept
    void mlipy2_set_poll(mlipy2_poll_fn fn)
    mli_status MLIPY2_STATUS_INTERRUPTED

ctypedef mli_status (*fc_fn)(const mli_tensor *, const mli_tensor *, const mli_tensor *,
                             const mli_fully_connected_cfg *, mli_tensor *) noexcept nogil

ctypedef mli_status (*dense_fn)(const mli_tensor **, const mli_tensor **, const mli_tensor *,
                                const mli_rnn_dense_cfg *, mli_tensor *) noexcept nogil

ctypedef mli_status (*lstm_fn)(const mli_tensor *, const mli_tensor *, const mli_tensor *, const mli_tensor *,
                               const mli_tensor *, const mli_lut *, const mli_lut *, const mli_rnn_cell_cfg *,
                               mli_tensor *, mli_tensor *) noexcept nogil

ctypedef mli_status (*gru_fn)(const mli_tensor *, const mli_tensor *, const mli_tensor *, const mli_tensor *,
                              const mli_tensor *, const mli_lut *, const mli_lut *, const mli_rnn_cell_cfg *,
                              mli_tensor *) noexcept nogil


SA_TYPES = (0x108, 0x120)


class BridgeError(ValueError):
    """A call refused before C: a capacity larger than the buffer it describes."""

    def __init__(self, argument, message):
        super().__init__(f"{argument}: {message}")
        self.argument = argument


cdef class _View:
    """A contiguous buffer export held for the length of a call."""
    cdef Py_buffer view
    cdef bint held

    def __dealloc__(self):
        if self.held:
            PyBuffer_Release(&self.view)


cdef void *_ptr(object buf, Py_ssize_t capacity, str name, list keep, bint output, str suffix="") except? NULL:
    """The start of `buf`'s contiguous memory (NULL for None or an empty
    buffer), checking that `capacity` bytes fit in it.  Inputs may be
    read-only (MLI's API takes them as const); a buffer the call writes
    (`output`) must be writable.  Errors name `name + suffix` (joined only
    then)."""
    cdef _View v
    if buf is None:
        return NULL
    # one buffer request in the common case (a typed memoryview costs a few
    # hundred ns per tensor); what it does not take raises its error below
    v = _View.__new__(_View)
    try:
        PyObject_GetBuffer(buf, &v.view, (PyBUF_SIMPLE | PyBUF_WRITABLE) if output else PyBUF_SIMPLE)
        v.held = True
    except Exception:
        pass
    if not v.held:
        if output:
            try:
                PyObject_GetBuffer(buf, &v.view, PyBUF_SIMPLE)
                v.held = True
            except Exception:
                pass
            if v.held:
                raise BridgeError(name + suffix, "the output buffer is read-only")
        memoryview(buf).cast("B")  # the reason (not a buffer, not contiguous, ...)
        raise BridgeError(name + suffix, "needs a contiguous buffer")
    if capacity > v.view.len:
        raise BridgeError(name + suffix, f"capacity {capacity} exceeds the {v.view.len} bytes of its buffer")
    if v.view.len == 0:
        return NULL
    keep.append(v)
    return v.view.buf


cdef int _container(mli_data_container *c, object arr, Py_ssize_t capacity, str name, list keep,
                    bint output=False, str suffix="") except -1:
    c.capacity = <uint32_t>capacity
    c.mem.ptr = _ptr(arr, capacity, name, keep, output, suffix)
    return 0


cdef extern from "Python.h":
    int PyObject_GenericSetAttr(object o, object name, object value) except -1


cdef class SaMemory:
    """The memory of the SA parameter arrays that :class:`mli.v2.Tensor` makes
    (``zero_point``, ``scale``, ``scale_frac_bits`` are numpy views of it):
    `nbytes` zeroed bytes, exported as a writable buffer, that live as long as
    this object and never move or resize, so the bridge may keep pointers
    into them and read the arrays' current values (in-place changes too)."""
    cdef char *mem
    cdef Py_ssize_t size

    def __cinit__(self, Py_ssize_t nbytes):
        if nbytes < 0:
            raise ValueError("nbytes < 0")
        self.mem = <char *>calloc(max(nbytes, 1), 1)
        if self.mem == NULL:
            raise MemoryError()
        self.size = nbytes

    def __dealloc__(self):
        free(self.mem)

    def __getbuffer__(self, Py_buffer *buf, int flags):
        PyBuffer_FillInfo(buf, self, <void *>self.mem, self.size, 0, flags)

    def __releasebuffer__(self, Py_buffer *buf):
        pass


cdef class _SaCache:
    """The SA parameters of one Tensor as the bridge read them, kept in the
    tensor's ``_sa_cache`` (mli.v2.Tensor replaces it whenever one of its SA
    attributes is assigned) when its three arrays are views of SaMemory:
    pointers into that memory, read (per tensor) or handed to C (per axis)
    at every call, so changes of the arrays' values in place count."""
    cdef mli_element_params ep      # .sa: type, dim, capacities and (per axis) pointers as the C struct takes them
    cdef const int16_t *zp          # per tensor: where the values are
    cdef const int16_t *sc
    cdef const int8_t *fb
    cdef object hold                # the SaMemory objects pointed into
    cdef bint plain                 # sa_type, sa_dim and the capacities are ints, sa_dim == -1


_tensor_type = None
_ndarray = np.ndarray
_memoryview = builtins.memoryview


def _register_tensor_type(cls):
    """mli.v2.tensor registers Tensor: only objects of exactly that class get
    a _SaCache (its __setattr__ drops the cache; a subclass or a Tensor-like
    object may compute its attributes, so those are read at every call)."""
    global _tensor_type
    _tensor_type = cls


cdef int _in_memory(object arr, const char *fmt, Py_ssize_t one, list hold, const void **where,
                    Py_ssize_t *nbytes) except -1:
    """Whether `arr` is a contiguous numpy array of dtype `fmt` ("h" int16, "b"
    int8) that views an SaMemory (then *where: its start, *nbytes: its size,
    and the SaMemory appended to `hold`); `one`: it must have one element."""
    cdef Py_buffer v
    cdef SaMemory m
    cdef const char *p
    if type(arr) is not _ndarray:
        return 0
    base = arr.base
    if type(base) is not _memoryview:
        return 0
    owner = base.obj
    if type(owner) is not SaMemory:
        return 0
    m = <SaMemory>owner
    try:
        PyObject_GetBuffer(arr, &v, PyBUF_RECORDS_RO)
    except Exception:
        return 0
    try:
        if v.ndim != 1 or v.format == NULL or strcmp(v.format, fmt) != 0 or \
                v.itemsize != (2 if fmt[0] == c'h' else 1) or v.strides[0] != v.itemsize:
            return 0
        if one and v.shape[0] != 1:
            return 0
        p = <const char *>v.buf
        if p < m.mem or p + v.len > m.mem + m.size:
            return 0
        hold.append(m)
        where[0] = <const void *>p
        nbytes[0] = v.len
        return 1
    finally:
        PyBuffer_Release(&v)


cdef object _sa_cache_of(mli_tensor *t, object zp, object sc, object fb):
    """A _SaCache of t's SA parameters (just read from zp, sc, fb) when those
    arrays are views of SaMemory, else None."""
    cdef _SaCache c = _SaCache.__new__(_SaCache)
    cdef list hold = []
    cdef const void *pz
    cdef const void *ps
    cdef const void *pf
    cdef Py_ssize_t nz, ns, nf
    cdef bint one = t.el_params.sa.dim < 0
    if not (_in_memory(zp, "h", one, hold, &pz, &nz) and _in_memory(sc, "h", one, hold, &ps, &ns)
            and _in_memory(fb, "b", one, hold, &pf, &nf)):
        return None
    c.ep = t.el_params
    if one:
        c.zp, c.sc, c.fb = <const int16_t *>pz, <const int16_t *>ps, <const int8_t *>pf
    else:
        # as _ptr gives them (the capacities were checked against these sizes)
        c.ep.sa.zero_point.mem.ptr = <void *>pz if nz else NULL
        c.ep.sa.scale.mem.ptr = <void *>ps if ns else NULL
        c.ep.sa.scale_frac_bits.mem.ptr = <void *>pf if nf else NULL
    c.hold = tuple(hold)
    return c


cdef object _sa_read(mli_tensor *t, object obj, str name, list keep):
    """t's SA parameters from obj: from its _SaCache when it has a valid one,
    else read field by field (and a _SaCache made for an exact Tensor).
    Returns the _SaCache used or made, or None."""
    cdef _SaCache c
    token = getattr(obj, "_sa_cache", None)
    if type(token) is _SaCache:
        c = <_SaCache>token
        t.el_params = c.ep
        if c.ep.sa.dim < 0:
            t.el_params.sa.zero_point.mem.i16 = c.zp[0]
            t.el_params.sa.scale.mem.i16 = c.sc[0]
            t.el_params.sa.scale_frac_bits.mem.i8 = c.fb[0]
        else:
            keep.append(c)  # its memory stays for the call, whatever other threads assign
        return c
    # field by field, as the C struct takes them
    sa_type = obj.sa_type
    t.el_params.sa.type = sa_type
    sa_dim = obj.sa_dim
    t.el_params.sa.dim = sa_dim
    zc, sc_cap, fc = obj.zero_point_capacity, obj.scale_capacity, obj.scale_frac_bits_capacity
    zp, sc, fb = obj.zero_point, obj.scale, obj.scale_frac_bits
    if sa_dim < 0:
        t.el_params.sa.zero_point.capacity = <uint32_t>zc
        t.el_params.sa.scale.capacity = <uint32_t>sc_cap
        t.el_params.sa.scale_frac_bits.capacity = <uint32_t>fc
        t.el_params.sa.zero_point.mem.i16 = <int16_t>int(zp[0])
        t.el_params.sa.scale.mem.i16 = <int16_t>int(sc[0])
        t.el_params.sa.scale_frac_bits.mem.i8 = <int8_t>int(fb[0])
    else:
        _container(&t.el_params.sa.zero_point, zp, zc, name, keep, False, ".zero_point")
        _container(&t.el_params.sa.scale, sc, sc_cap, name, keep, False, ".scale")
        _container(&t.el_params.sa.scale_frac_bits, fb, fc, name, keep, False, ".scale_frac_bits")
    if _tensor_type is None or type(obj) is not _tensor_type:
        return None
    made = _sa_cache_of(t, zp, sc, fb)
    if made is None:
        return None  # arrays of the caller's own: read at every call
    c = <_SaCache>made
    c.plain = (type(sa_type) is int and type(sa_dim) is int and sa_dim == -1 and type(zc) is int
               and type(sc_cap) is int and type(fc) is int)
    # kept only if no SA attribute was assigned meanwhile (Tensor.__setattr__
    # replaces the token); the check and the store run without Python code between
    if getattr(obj, "_sa_cache", None) is token:
        PyObject_GenericSetAttr(obj, "_sa_cache", c)
    return c


cdef object _fill(mli_tensor *t, object obj, str name, list keep, bint output=False):
    """Build t from a mli.v2 Tensor-like object (see mli.v2.tensor.Tensor);
    `output`: the kernel writes its data (then it must be writable).
    Returns the _SaCache of an SA tensor read through one, else None."""
    cdef int i
    memset(t, 0, sizeof(mli_tensor))
    cap = int(obj.capacity)
    if cap < 0 or cap > 0xFFFFFFFF:
        raise BridgeError(name, "capacity outside uint32")
    t.data.capacity = <uint32_t>cap
    t.data.mem.ptr = _ptr(obj.buffer, cap, name, keep, output)
    t.rank = <uint32_t>obj.rank
    shape, stride = obj.shape, obj.mem_stride  # (read once each)
    for i in range(4):
        t.shape[i] = <uint32_t>(shape[i] & 0xFFFFFFFF)
        t.mem_stride[i] = <int32_t>stride[i]
    t.el_type = <mli_element_type>obj.el_type
    if t.el_type == 0x108 or t.el_type == 0x120:  # SA_TYPES
        return _sa_read(t, obj, name, keep)
    t.el_params.fx.frac_bits = <int8_t>obj.frac_bits
    return None


cdef _write_back(const mli_tensor *t, object obj, object used):
    """Copy the fields a kernel may change (rank, shape, strides, params) back;
    `used`: the _SaCache _fill read obj's SA parameters through (or None): when
    the kernel left them as they are, out keeps its parameter arrays."""
    cdef _SaCache c
    rank, shape = int(t.rank), [int(t.shape[i]) for i in range(4)]
    stride = [int(t.mem_stride[i]) for i in range(4)]
    if _tensor_type is not None and type(obj) is _tensor_type:
        # (fields Tensor.__setattr__ has nothing to do for: set as object.__setattr__ would)
        PyObject_GenericSetAttr(obj, "rank", rank)
        PyObject_GenericSetAttr(obj, "shape", shape)
        PyObject_GenericSetAttr(obj, "mem_stride", stride)
    else:
        obj.rank, obj.shape, obj.mem_stride = rank, shape, stride
    if t.el_type == 0x108 or t.el_type == 0x120:
        if t.el_params.sa.dim < 0:
            if used is not None:
                c = <_SaCache>used
                if (c.plain and c.ep.sa.type == t.el_params.sa.type
                        and c.zp[0] == t.el_params.sa.zero_point.mem.i16 and c.sc[0] == t.el_params.sa.scale.mem.i16
                        and c.fb[0] == t.el_params.sa.scale_frac_bits.mem.i8
                        and c.ep.sa.zero_point.capacity == t.el_params.sa.zero_point.capacity
                        and c.ep.sa.scale.capacity == t.el_params.sa.scale.capacity
                        and c.ep.sa.scale_frac_bits.capacity == t.el_params.sa.scale_frac_bits.capacity
                        and getattr(obj, "_sa_cache", None) is c):
                    return  # out's parameters are already what the kernel left
            obj._set_sa_inline(t.el_params.sa.type, t.el_params.sa.zero_point.mem.i16,
                               t.el_params.sa.scale.mem.i16, t.el_params.sa.scale_frac_bits.mem.i8,
                               t.el_params.sa.zero_point.capacity, t.el_params.sa.scale.capacity,
                               t.el_params.sa.scale_frac_bits.capacity)
    elif _tensor_type is not None and type(obj) is _tensor_type:
        PyObject_GenericSetAttr(obj, "frac_bits", int(t.el_params.fx.frac_bits))
    else:
        obj.frac_bits = t.el_params.fx.frac_bits


cdef int _lut(mli_lut *l, object obj, str name, list keep, bint output=False) except -1:
    memset(l, 0, sizeof(mli_lut))
    _container(&l.data, obj.buffer, obj.capacity, name, keep, output)
    l.type = obj.type
    l.length = obj.length
    l.in_frac_bits = obj.in_frac_bits
    l.out_frac_bits = obj.out_frac_bits
    l.input_offset = obj.input_offset
    l.output_offset = obj.output_offset
    return 0


def last_error():
    """(status, function, argument, reason, mlipy_safety) of this thread's last call."""
    cdef const mlipy2_error_detail *d = mlipy2_last_error()
    return (int(d.status), d.function.decode() if d.function else "", d.argument.decode() if d.argument else "",
            d.reason.decode() if d.reason else "", bool(d.mlipy_safety))


def get_isa():
    return mlipy2_get_isa()


def set_isa(int isa):
    return mlipy2_set_isa(isa)


def isa_supported(int isa):
    return bool(mlipy2_isa_supported(isa))


def lut_size(str fn):
    return mli_krn_tanh_get_lut_size() if fn == "tanh" else mli_krn_sigm_get_lut_size()


def create_lut(str fn, object lut):
    """Run mli_krn_<fn>_create_lut on `lut` (mli.v2.Lut) and copy its fields back."""
    cdef mli_lut l
    cdef list keep = []
    cdef mli_status st
    cdef bint is_tanh = fn == "tanh"
    _lut(&l, lut, "lut", keep, True)
    with nogil:
        st = mli_krn_tanh_create_lut(&l) if is_tanh else mli_krn_sigm_create_lut(&l)
    lut.type, lut.length, lut.in_frac_bits = l.type, l.length, l.in_frac_bits
    lut.out_frac_bits, lut.input_offset, lut.output_offset = l.out_frac_bits, l.input_offset, l.output_offset
    return int(st)


def activation(str fn, str kind, object x, object lut, object out, int round_mode):
    """tanh / sigm: returns the status."""
    cdef mli_tensor ti, to
    cdef mli_lut l
    cdef const mli_tensor *pin = NULL
    cdef const mli_lut *pl = NULL
    cdef mli_tensor *pout = NULL
    cdef list keep = []
    cdef mli_status st
    oc = None
    cdef int which = ("tanh", "sigm").index(fn) * 3 + ("fx8", "fx16", "sa8").index(kind)
    if x is not None:
        _fill(&ti, x, "in", keep); pin = &ti
    if lut is not None:
        _lut(&l, lut, "lut", keep); pl = &l
    if out is not None:
        oc = _fill(&to, out, "out", keep, True); pout = &to
    mlipy2_set_thread_rounding(round_mode)
    with nogil:
        if which == 0: st = mli_krn_tanh_fx8(pin, pl, pout)
        elif which == 1: st = mli_krn_tanh_fx16(pin, pl, pout)
        elif which == 2: st = mli_krn_tanh_sa8(pin, pl, pout)
        elif which == 3: st = mli_krn_sigm_fx8(pin, pl, pout)
        elif which == 4: st = mli_krn_sigm_fx16(pin, pl, pout)
        else: st = mli_krn_sigm_sa8(pin, pl, pout)
    if st == 0:
        _write_back(&to, out, oc)
    return int(st)


def fully_connected(str kind, object x, object weights, object bias, object relu, object out, int round_mode):
    """relu: the cfg's relu type, or None for a NULL cfg."""
    cdef mli_tensor ti, tw, tb, to
    cdef mli_fully_connected_cfg cfg
    cdef const mli_tensor *pin = NULL
    cdef const mli_tensor *pw = NULL
    cdef const mli_tensor *pb = NULL
    cdef mli_tensor *pout = NULL
    cdef const mli_fully_connected_cfg *pc = NULL
    cdef list keep = []
    cdef mli_status st
    oc = None
    cdef fc_fn f
    kinds = ("fx8", "fx16", "fx16_fx8_fx8", "sa8_sa8_sa32", "sa8_sa8_sa32_ext_bias")
    k = kinds.index(kind)
    f = (mli_krn_fully_connected_fx8 if k == 0 else mli_krn_fully_connected_fx16 if k == 1 else
         mli_krn_fully_connected_fx16_fx8_fx8 if k == 2 else mli_krn_fully_connected_sa8_sa8_sa32 if k == 3 else
         mli_krn_fully_connected_sa8_sa8_sa32_ext_bias)
    if x is not None:
        _fill(&ti, x, "in", keep); pin = &ti
    if weights is not None:
        _fill(&tw, weights, "weights", keep); pw = &tw
    if bias is not None:
        _fill(&tb, bias, "bias", keep); pb = &tb
    if out is not None:
        oc = _fill(&to, out, "out", keep, True); pout = &to
    if relu is not None:
        cfg.relu.type = relu; pc = &cfg
    mlipy2_set_thread_rounding(round_mode)
    with nogil:
        st = f(pin, pw, pb, pc, pout)
    if st == 0:
        _write_back(&to, out, oc)
    return int(st)


def rnn_dense(str kind, list ins, list weights, object bias, object inputs_num, object out, int round_mode):
    """ins / weights: up to 4 entries each (None = a NULL entry); inputs_num None = NULL cfg."""
    cdef mli_tensor ti[4]
    cdef mli_tensor tw[4]
    cdef mli_tensor tb, to
    cdef const mli_tensor *pin[4]
    cdef const mli_tensor *pw[4]
    cdef const mli_tensor *pb = NULL
    cdef mli_tensor *pout = NULL
    cdef mli_rnn_dense_cfg cfg
    cdef const mli_rnn_dense_cfg *pc = NULL
    cdef list keep = []
    cdef mli_status st
    oc = None
    cdef dense_fn f
    cdef int i
    k = ("fx16", "fx16_fx8_fx8", "sa8_sa8_sa32").index(kind)
    f = mli_krn_rnn_dense_fx16 if k == 0 else mli_krn_rnn_dense_fx16_fx8_fx8 if k == 1 else mli_krn_rnn_dense_sa8_sa8_sa32
    if len(ins) > 4 or len(weights) > 4:
        raise BridgeError("in", "at most 4 inputs")
    for i in range(4):
        pin[i] = NULL
        pw[i] = NULL
        if i < len(ins) and ins[i] is not None:
            _fill(&ti[i], ins[i], f"in[{i}]", keep); pin[i] = &ti[i]
        if i < len(weights) and weights[i] is not None:
            _fill(&tw[i], weights[i], f"weights[{i}]", keep); pw[i] = &tw[i]
    if bias is not None:
        _fill(&tb, bias, "bias", keep); pb = &tb
    if out is not None:
        oc = _fill(&to, out, "out", keep, True); pout = &to
    if inputs_num is not None:
        cfg.inputs_num = <uint8_t>inputs_num; pc = &cfg
    mlipy2_set_thread_rounding(round_mode)
    with nogil:
        st = f(pin, pw, pb, pc, pout)
    if st == 0:
        _write_back(&to, out, oc)
    return int(st)


_tls = threading.local()


cdef extern from "Python.h":
    int PyErr_CheckSignals() except -1


cdef int _poll() noexcept with gil:
    """The cells' poll (mlipy2_set_poll): runs Python's signal handlers, so
    Ctrl-C stops a long sequence within MLIPY2_POLL_STEPS steps; what the
    handler raised is raised again once the cell has returned."""
    try:
        PyErr_CheckSignals()
    except BaseException as e:
        _tls.interrupt = e
        return 1
    return 0


def rnn_cell(str cell_kind, str kind, object x, object prev_out, object weights_in, object weights_out, object bias,
             object tanh_lut, object sigm_lut, object cfg, object cell, object out, int round_mode):
    """lstm / gru.  cfg: None (NULL) or an object with direction, results, act,
    scratch_buffer (None = NULL pointer) and scratch_capacity."""
    cdef mli_tensor ti, tp, twi, two, tb, tc, to
    cdef mli_lut lt, ls
    cdef mli_rnn_cell_cfg c
    cdef const mli_tensor *p_in = NULL
    cdef const mli_tensor *p_prev = NULL
    cdef const mli_tensor *p_wi = NULL
    cdef const mli_tensor *p_wo = NULL
    cdef const mli_tensor *p_b = NULL
    cdef mli_tensor *p_cell = NULL
    cdef mli_tensor *p_out = NULL
    cdef const mli_lut *p_lt = NULL
    cdef const mli_lut *p_ls = NULL
    cdef const mli_rnn_cell_cfg *p_c = NULL
    cdef list keep = []
    cdef mli_status st
    oc = None
    cdef lstm_fn fl = NULL
    cdef gru_fn fg = NULL
    k = ("fx16", "fx16_fx8_fx8", "sa8_sa8_sa32").index(kind)
    if cell_kind == "lstm":
        fl = mli_krn_lstm_cell_fx16 if k == 0 else mli_krn_lstm_cell_fx16_fx8_fx8 if k == 1 else mli_krn_lstm_cell_sa8_sa8_sa32
    else:
        fg = mli_krn_gru_cell_fx16 if k == 0 else mli_krn_gru_cell_fx16_fx8_fx8 if k == 1 else mli_krn_gru_cell_sa8_sa8_sa32
    if x is not None:
        _fill(&ti, x, "in", keep); p_in = &ti
    if prev_out is not None:
        _fill(&tp, prev_out, "prev_out", keep); p_prev = &tp
    if weights_in is not None:
        _fill(&twi, weights_in, "weights_in", keep); p_wi = &twi
    if weights_out is not None:
        _fill(&two, weights_out, "weights_out", keep); p_wo = &two
    if bias is not None:
        _fill(&tb, bias, "bias", keep); p_b = &tb
    if cell is not None:
        _fill(&tc, cell, "cell", keep, True); p_cell = &tc
    if out is not None:
        oc = _fill(&to, out, "out", keep, True); p_out = &to
    if tanh_lut is not None:
        _lut(&lt, tanh_lut, "tanh_lut", keep); p_lt = &lt
    if sigm_lut is not None:
        _lut(&ls, sigm_lut, "sigm_lut", keep); p_ls = &ls
    if cfg is not None:
        memset(&c, 0, sizeof(c))
        c.direction = cfg.direction
        c.results = cfg.results
        c.act = cfg.act
        _container(&c.scratch_data, cfg.scratch_buffer, cfg.scratch_capacity, "cfg.scratch_data", keep, True)
        p_c = &c
    mlipy2_set_thread_rounding(round_mode)
    with nogil:
        mlipy2_set_poll(_poll)
        if fl != NULL:
            st = fl(p_in, p_prev, p_wi, p_wo, p_b, p_lt, p_ls, p_c, p_cell, p_out)
        else:
            st = fg(p_in, p_prev, p_wi, p_wo, p_b, p_lt, p_ls, p_c, p_out)
        mlipy2_set_poll(NULL)
    if st == 0 or st == MLIPY2_STATUS_INTERRUPTED:
        _write_back(&to, out, oc)
    if st == MLIPY2_STATUS_INTERRUPTED:
        e = getattr(_tls, "interrupt", None)
        _tls.interrupt = None
        raise e if e is not None else KeyboardInterrupt()
    return int(st)
