# The bridge's tensor: `CTensor` (an `mli_tensor` and the memory it pins) and the
# preparation of a call's tensor arguments.
# (Included by mli/_core.pyx: one module, so it shares the module's names and cimports.)

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
