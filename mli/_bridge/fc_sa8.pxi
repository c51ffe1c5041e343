# The bridge of mli_krn_fully_connected_sa8_sa8_sa32 (included by _core.pyx).

def fc_sa8_api(int index, str fname, x, weights, bias, out, u64 count, tuple asym_out):
    """mli.fully_connected_sa8_sa8_sa32(x, weights, bias): a new output has
    `count` ASYM_I8 elements and the asym parameters `asym_out` (dim,
    scale_frac_bits, zero_point, scale); the caller's out keeps its own."""
    cdef _fc_sa8_fn f = _FC_SA8[_index(index, len(TABLE_NAMES["fc_sa8"]), "fc_sa8")]
    cdef CTensor tx = _arg(fname, "in", x)
    cdef CTensor tw = _arg(fname, "weights", weights)
    cdef CTensor tb = _arg(fname, "bias", bias)
    cdef PyObject *a[4]
    a[0], a[1], a[2] = <PyObject *>tx, <PyObject *>tw, <PyObject *>tb
    cdef bint new = out is None
    cdef CTensor y = _any_out(fname, out, count, MLI_EL_ASYM_I8, ("in", "weights", "bias", "out"), a, 3)
    cdef mli_element_params old = y.t.el_params
    cdef mli_status st
    if new and asym_out is not None:
        set_asym(y, asym_out[0], asym_out[1], asym_out[2], asym_out[3])
    cdef mli_tensor *p_in = tp(tx)
    cdef mli_tensor *p_w = tp(tw)
    cdef mli_tensor *p_b = tp(tb)
    cdef mli_tensor *p_out = tp(y)
    with nogil:
        st = f(p_in, p_w, p_b, p_out)
    y.generation += 1
    _more_status(<int>st, fname, y, &old)
    return y
