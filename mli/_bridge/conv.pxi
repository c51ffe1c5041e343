# The bridge of the convolutions (included by _core.pyx): conv2d_chw,
# conv2d_hwc, depthwise_conv2d_chw (fx8 / fx16 / fx8w16d), conv2d_nhwc and
# depthwise_conv2d_hwcn (sa8) and their variants: one function for all,
# taking the index of the C function in _CONV (tables.pxi).

cdef int _conv_cfg(mli_conv2d_cfg *c, tuple cfg) except -1:
    c.relu.type = <mli_relu_type>(<int>cfg[0])
    c.stride_width = _u8(cfg[1], "cfg.stride_width")
    c.stride_height = _u8(cfg[2], "cfg.stride_height")
    c.padding_left = _u8(cfg[3], "cfg.padding_left")
    c.padding_right = _u8(cfg[4], "cfg.padding_right")
    c.padding_top = _u8(cfg[5], "cfg.padding_top")
    c.padding_bottom = _u8(cfg[6], "cfg.padding_bottom")
    return 0


def conv_api(int index, str fname, x, weights, bias, tuple cfg, out, u64 count, int out_el_type, object frac,
             tuple asym_out):
    """mli.<conv>(x, weights, bias, cfg, out=...): `cfg` the tuple (relu type,
    stride_width, stride_height, padding_left, _right, _top, _bottom) or None
    for a NULL cfg; a new output has `count` elements of `out_el_type`; `frac`
    (fx) sets the output's frac bits, `asym_out` (sa8: dim, scale_frac_bits,
    zero_point, scale) a new output's asym parameters."""
    cdef _conv_fn f = _CONV[_index(index, len(TABLE_NAMES["conv"]), "conv")]
    cdef CTensor tx = _arg(fname, "in", x)
    cdef CTensor tw = _arg(fname, "weights", weights)
    cdef CTensor tb = _arg(fname, "bias", bias)
    cdef PyObject *a[4]
    a[0], a[1], a[2] = <PyObject *>tx, <PyObject *>tw, <PyObject *>tb
    cdef bint new = out is None
    cdef CTensor y = _any_out(fname, out, count, out_el_type, ("in", "weights", "bias", "out"), a, 3)
    cdef mli_element_params old = y.t.el_params
    cdef mli_conv2d_cfg c
    cdef mli_conv2d_cfg *pc = NULL
    cdef mli_status st
    if cfg is not None:
        _conv_cfg(&c, cfg)
        pc = &c
    if asym_out is not None:
        if new:
            set_asym(y, asym_out[0], asym_out[1], asym_out[2], asym_out[3])
    elif frac is not None:
        _frac_for(y, frac)
    cdef mli_tensor *p_in = tp(tx)
    cdef mli_tensor *p_w = tp(tw)
    cdef mli_tensor *p_b = tp(tb)
    cdef mli_tensor *p_out = tp(y)
    with nogil:
        st = f(p_in, p_w, p_b, pc, p_out)
    y.generation += 1
    _more_status(<int>st, fname, y, &old)
    return y


def conv_debug(int index, x, weights, bias, tuple cfg, out):
    """The name of the function the dispatcher would call (mli_debug_krn_*), or None."""
    cdef _conv_debug_fn f = _CONV_DEBUG[_index(index, len(TABLE_NAMES["conv_debug"]), "conv_debug")]
    cdef CTensor tx = _arg("debug", "in", x)
    cdef CTensor tw = _arg("debug", "weights", weights)
    cdef CTensor tb = _arg("debug", "bias", bias) if bias is not None else None
    cdef CTensor ty = _arg("debug", "out", out) if out is not None else None
    cdef mli_conv2d_cfg c
    cdef mli_conv2d_cfg *pc = NULL
    if cfg is not None:
        _conv_cfg(&c, cfg)
        pc = &c
    return _debug_name(f(tp(tx), tp(tw), tp(tb), pc, tp(ty)))
