# The bridge of pooling (included by _core.pyx): avepool / maxpool, chw and
# hwc, fx8 / fx16 / sa8, and their variants: one function for all, taking
# the index of the C function in _POOL (tables.pxi).

cdef int _pool_cfg(mli_pool_cfg *c, tuple cfg) except -1:
    c.kernel_width = _u8(cfg[0], "cfg.kernel_width")
    c.kernel_height = _u8(cfg[1], "cfg.kernel_height")
    c.stride_width = _u8(cfg[2], "cfg.stride_width")
    c.stride_height = _u8(cfg[3], "cfg.stride_height")
    c.padding_left = _u8(cfg[4], "cfg.padding_left")
    c.padding_right = _u8(cfg[5], "cfg.padding_right")
    c.padding_top = _u8(cfg[6], "cfg.padding_top")
    c.padding_bottom = _u8(cfg[7], "cfg.padding_bottom")
    return 0


def pool_api(int index, str fname, x, tuple cfg, out, u64 count):
    """mli.<pool>(x, cfg, out=...): `cfg` the tuple (kernel_width,
    kernel_height, stride_width, stride_height, padding_left, _right, _top,
    _bottom) or None for a NULL cfg; a new output has `count` elements of
    in's element type.  The kernel sets the output's metadata (in's element
    parameters)."""
    cdef _pool_fn f = _POOL[_index(index, len(TABLE_NAMES["pool"]), "pool")]
    cdef CTensor tx = _arg(fname, "in", x)
    cdef PyObject *a[2]
    a[0] = <PyObject *>tx
    cdef int el = tx.t.el_type if tx.t.el_type <= MLI_EL_ASYM_I8 else MLI_EL_FX_8
    cdef CTensor y = _any_out(fname, out, count, el, ("in", "out"), a, 1)
    cdef mli_element_params old = y.t.el_params
    cdef mli_pool_cfg c
    cdef mli_pool_cfg *pc = NULL
    cdef mli_status st
    if cfg is not None:
        _pool_cfg(&c, cfg)
        pc = &c
    cdef mli_tensor *p_in = tp(tx)
    cdef mli_tensor *p_out = tp(y)
    with nogil:
        st = f(p_in, pc, p_out)
    y.generation += 1
    _more_status(<int>st, fname, y, &old)
    return y


def pool_debug(int index, tuple cfg):
    """The name of the function the pooling dispatcher would call for `cfg` (mli_debug_krn_*), or None."""
    cdef _pool_debug_fn f = _POOL_DEBUG[_index(index, len(TABLE_NAMES["pool_debug"]), "pool_debug")]
    cdef mli_pool_cfg c
    cdef mli_pool_cfg *pc = NULL
    if cfg is not None:
        _pool_cfg(&c, cfg)
        pc = &c
    return _debug_name(f(NULL, pc, NULL))
