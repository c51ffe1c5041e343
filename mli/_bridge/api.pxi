# What the kernels' Python API shares.  mli.kernels' functions are closures made
# by each family's `*_kernel(variant, name)` over its `_*_api`: one call into the
# bridge per kernel call, which runs every check of the API.  Here: the registered
# Python classes, argument conversion, new outputs, statuses and frac bits.
# (Included by mli/_core.pyx: one module, so it shares the module's names and cimports.)

cdef inline int _variant(int v, int n) except -1:
    if v < 0 or v >= n:
        raise ValueError(f"variant must be in 0..{n - 1}, got {v}")
    return v


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
