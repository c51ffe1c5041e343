# The bridge's shared part for the rest of MLI 1.1 (included by _core.pyx):
# the sa8 element parameters of a tensor, and outputs of any element type.
# The families' bridges are in conv.pxi, pool.pxi, data.pxi,
# transform_more.pxi and fc_sa8.pxi beside it; their C function tables in
# the generated tables.pxi (included first).

cdef object _DT32 = None         # np.dtype(np.int32), given by register_more()


def register_more(dt32):
    global _DT32
    _DT32 = dt32


# ------------------------------------------------------------ sa8 tensors
def asym_params(CTensor t):
    """(zero_point, scale, dim, scale_frac_bits) of el_params.asym; with
    dim >= 0 (per axis) zero_point and scale are the containers' addresses
    (the arrays are the Python tensor's)."""
    cdef int32_t dim = t.t.el_params.asym.dim
    if dim < 0:
        return (<int>t.t.el_params.asym.zero_point.i16, <long long>t.t.el_params.asym.scale.i32, dim,
                <int>t.t.el_params.asym.scale_frac_bits)
    return (<intptr_t>t.t.el_params.asym.zero_point.pi16, <intptr_t>t.t.el_params.asym.scale.pi32, dim,
            <int>t.t.el_params.asym.scale_frac_bits)


def set_asym(CTensor t, int dim, int scale_frac_bits, zero_point, scale):
    """Set el_params.asym as a C caller does: per tensor (dim < 0) the int16
    zero point and int32 scale stored inside the containers (the rest of each
    container 0); per axis the containers point to the int16 / int32
    C-contiguous arrays `zero_point` and `scale`, which the caller keeps alive."""
    cdef const int16_t[::1] z
    cdef const int32_t[::1] s
    if not -128 <= scale_frac_bits <= 127:
        raise ValueError(f"scale_frac_bits must be an int8 (-128..127), got {scale_frac_bits}")
    memset(&t.t.el_params, 0, sizeof(mli_element_params))
    if dim < 0:
        zp, sc = int(zero_point), int(scale)
        if not -32768 <= zp <= 32767:
            raise ValueError(f"zero_point must be an int16, got {zp}")
        if not -2 ** 31 <= sc < 2 ** 31:
            raise ValueError(f"scale must be an int32, got {sc}")
        t.t.el_params.asym.zero_point.pi16 = <int16_t *>(<intptr_t>(zp & 0xFFFF))
        t.t.el_params.asym.scale.pi32 = <int32_t *>(<intptr_t>(sc & 0xFFFFFFFF))
    else:
        z = zero_point
        s = scale
        t.t.el_params.asym.zero_point.pi16 = <int16_t *>&z[0] if z.shape[0] else NULL
        t.t.el_params.asym.scale.pi32 = <int32_t *>&s[0] if s.shape[0] else NULL
    t.t.el_params.asym.dim = dim
    t.t.el_params.asym.scale_frac_bits = <int8_t>scale_frac_bits
    t.generation += 1


def el_params_bytes(CTensor t):
    """The raw bytes of el_params (what a C caller's struct holds)."""
    return (<char *>&t.t.el_params)[:sizeof(mli_element_params)]


def set_el_params_bytes(CTensor t, bytes raw):
    if len(raw) != sizeof(mli_element_params):
        raise ValueError(f"el_params has {sizeof(mli_element_params)} bytes, got {len(raw)}")
    memcpy(&t.t.el_params, <const char *>raw, sizeof(mli_element_params))
    t.generation += 1


# ---------------------------------------------------------------- outputs
cdef inline int _el_size(int el_type) noexcept:
    return 2 if el_type == MLI_EL_FX_16 else 4 if el_type == MLI_EL_ASYM_I32 else 1


cdef CTensor _new_any(u64 count, int el_type):
    """mli.Tensor over np.zeros(max(count, 1)) of el_type's container, rank 1, capacity count elements."""
    cdef int es = _el_size(el_type)
    cdef u64 cap = count * es
    if count > 0xFFFFFFFF or cap > 0xFFFFFFFF:
        raise ValueError(f"the output would need {cap} bytes, more than an mli_tensor's capacity (2**32-1)")
    arr = _np_zeros(count if count > 1 else 1, _DT8 if es == 1 else _DT16 if es == 2 else _DT32)
    cdef CTensor t = CTensor.__new__(_Tensor)
    t._attach_c(arr, False)
    t.t.el_type = <mli_element_type>el_type
    t.t.shape[0] = <uint32_t>(count if count > 1 else 1)
    t.t.rank = 1
    t.t.capacity = <uint32_t>cap
    return t


cdef CTensor _any_out(str fname, object out, u64 count, int el_type, tuple names, PyObject **a, Py_ssize_t n_in,
                      bint elementwise=False, bint scalars=False):
    """The output: a new tensor of `count` elements of `el_type`, or the
    caller's `out`; then the bridge's memory checks of every tensor of the
    call (value tensors, read-only or overlapping outputs)."""
    cdef CTensor y
    if out is None:
        y = _new_any(count, el_type)
    else:
        y = _arg(fname, "out", out)
        if y._strided_copy:
            raise ValueError(f"{fname}: out wraps a copy of a non-contiguous array, so the results would not "
                             f"reach the caller's array: pass np.ascontiguousarray(...) and read the tensor")
    a[n_in] = <PyObject *>y
    _prep_a(names, a, n_in, n_in + 1, elementwise, scalars)
    return y


cdef inline int _more_status(int st, str fname, CTensor y, mli_element_params *old) except -1:
    """Raise for a non-OK status, the output's element parameters put back first."""
    if st != 0:
        if y is not None and old != NULL:
            y.t.el_params = old[0]
            y.generation += 1
        _reraise(<mli_status>st)
        _raise_for_status(st, "mli_krn_" + fname)
    return 0


cdef inline int _index(int i, int n, str table) except -1:
    if i < 0 or i >= n:
        raise ValueError(f"{table}: index must be in 0..{n - 1}, got {i}")
    return i


cdef inline uint8_t _u8(object v, str name) except? 255:
    cdef int i = v
    if i < 0 or i > 255:
        raise ValueError(f"{name} must be a uint8_t (0..255), got {i}")
    return <uint8_t>i


cdef object _debug_name(char *name):
    return None if name == NULL else name.decode()
