# The bridge of the data-movement kernels (included by _core.pyx): permute,
# concat, padding2d_chw / _hwc, fx8 / fx16 (mli_krn_data.c).

def permute_api(int index, str fname, x, tuple perm_dim, out, u64 count):
    """mli.permute_<kind>(x, cfg): `perm_dim` 4 uint8 (None: a NULL cfg)."""
    cdef _permute_fn f = _PERMUTE[_index(index, len(TABLE_NAMES["permute"]), "permute")]
    cdef CTensor tx = _arg(fname, "in", x)
    cdef PyObject *a[2]
    a[0] = <PyObject *>tx
    cdef CTensor y = _any_out(fname, out, count, MLI_EL_FX_16 if tx.t.el_type == MLI_EL_FX_16 else MLI_EL_FX_8,
                              ("in", "out"), a, 1)
    cdef mli_element_params old = y.t.el_params
    cdef mli_permute_cfg c
    cdef mli_permute_cfg *pc = NULL
    cdef mli_status st
    cdef int i
    if perm_dim is not None:
        for i in range(4):
            c.perm_dim[i] = _u8(perm_dim[i], "cfg.perm_dim")
        pc = &c
    cdef mli_tensor *p_in = tp(tx)
    cdef mli_tensor *p_out = tp(y)
    with nogil:
        st = f(p_in, pc, p_out)
    y.generation += 1
    _more_status(<int>st, fname, y, &old)
    return y


def padding2d_api(int index, str fname, x, tuple pads, out, u64 count):
    """mli.padding2d_<layout>_<kind>(x, cfg): `pads` (left, right, top, bottom) or None for a NULL cfg."""
    cdef _padding2d_fn f = _PADDING2D[_index(index, len(TABLE_NAMES["padding2d"]), "padding2d")]
    cdef CTensor tx = _arg(fname, "in", x)
    cdef PyObject *a[2]
    a[0] = <PyObject *>tx
    cdef CTensor y = _any_out(fname, out, count, MLI_EL_FX_16 if tx.t.el_type == MLI_EL_FX_16 else MLI_EL_FX_8,
                              ("in", "out"), a, 1)
    cdef mli_element_params old = y.t.el_params
    cdef mli_padding2d_cfg c
    cdef mli_padding2d_cfg *pc = NULL
    cdef mli_status st
    if pads is not None:
        c.padding_left = _u8(pads[0], "cfg.padding_left")
        c.padding_right = _u8(pads[1], "cfg.padding_right")
        c.padding_top = _u8(pads[2], "cfg.padding_top")
        c.padding_bottom = _u8(pads[3], "cfg.padding_bottom")
        pc = &c
    cdef mli_tensor *p_in = tp(tx)
    cdef mli_tensor *p_out = tp(y)
    with nogil:
        st = f(p_in, pc, p_out)
    y.generation += 1
    _more_status(<int>st, fname, y, &old)
    return y


def concat_api(int index, str fname, inputs, tuple cfg, out, u64 count, int el_type):
    """mli.concat_<kind>(inputs, cfg): `inputs` a sequence of tensors or None
    (a NULL entry), or None for a NULL array; `cfg` (tensors_num, axis) or
    None for a NULL cfg.  MLI reads tensors_num pointers of the array: more
    than the inputs given is refused here (it would read beyond the array)."""
    cdef _concat_fn f = _CONCAT[_index(index, len(TABLE_NAMES["concat"]), "concat")]
    cdef mli_concat_cfg c
    cdef mli_concat_cfg *pc = NULL
    cdef const mli_tensor *ptrs[256]
    cdef const mli_tensor **pp = NULL
    cdef PyObject *a[257]
    cdef Py_ssize_t n = 0, i
    cdef CTensor t
    cdef mli_status st
    names = []
    if cfg is not None:
        c.tensors_num = _u8(cfg[0], "cfg.tensors_num")
        c.axis = _u8(cfg[1], "cfg.axis")
        pc = &c
    if inputs is not None:
        seq = list(inputs)
        n = len(seq)
        if n > 256:
            raise BridgeError("inputs", f"at most 256 tensors (tensors_num is a uint8_t), got {n}")
        if pc != NULL and n < c.tensors_num <= 8:   # (above 8, MLI's check rejects it before reading them)
            raise BridgeError("cfg.tensors_num", f"is {c.tensors_num}, but only {n} inputs are given: MLI would read "
                                                 "pointers beyond the array")
        for i in range(n, 256):   # what a check may read past the inputs given is NULL, never stack garbage
            ptrs[i] = NULL
        held = []
        for i in range(n):
            if seq[i] is None:
                ptrs[i] = NULL
                a[i] = <PyObject *>None
            else:
                t = _arg(fname, f"inputs[{i}]", seq[i])
                held.append(t)
                ptrs[i] = tp(t)
                a[i] = <PyObject *>t
            names.append(f"inputs[{i}]")
        pp = ptrs
    names.append("out")
    cdef CTensor y = _any_out(fname, out, count, el_type, tuple(names), a, n)
    cdef mli_element_params old = y.t.el_params
    cdef mli_tensor *p_out = tp(y)
    with nogil:
        st = f(pp, pc, p_out)
    y.generation += 1
    _more_status(<int>st, fname, y, &old)
    return y
