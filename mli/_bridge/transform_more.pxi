# The bridge of leaky ReLU and softmax (included by _core.pyx; their C is in
# mli_krn_transform.c), fx8 / fx16.

def leaky_relu_api(int index, str fname, x, slope, out, u64 count):
    """mli.leaky_relu_<kind>(x, slope): `slope` a rank-0 (value) or one-element
    tensor; out may be x (in place, as MLI's element-wise loop allows)."""
    cdef _leaky_relu_fn f = _LEAKY_RELU[_index(index, len(TABLE_NAMES["leaky_relu"]), "leaky_relu")]
    cdef CTensor tx = _arg(fname, "in", x)
    cdef CTensor ts = _arg(fname, "slope_coeff", slope)
    cdef PyObject *a[3]
    cdef CTensor y
    a[0] = <PyObject *>tx
    if ts.data_is_value and ts.t.rank == 0:
        y = _any_out(fname, out, count, MLI_EL_FX_16 if tx.t.el_type == MLI_EL_FX_16 else MLI_EL_FX_8,
                     ("in", "out"), a, 1, True)
    else:
        a[1] = <PyObject *>ts
        y = _any_out(fname, out, count, MLI_EL_FX_16 if tx.t.el_type == MLI_EL_FX_16 else MLI_EL_FX_8,
                     ("in", "slope_coeff", "out"), a, 2, True)
    cdef mli_element_params old = y.t.el_params
    cdef mli_status st
    cdef mli_tensor *p_in = tp(tx)
    cdef mli_tensor *p_s = tp(ts)
    cdef mli_tensor *p_out = tp(y)
    with nogil:
        st = f(p_in, p_s, p_out)
    y.generation += 1
    _more_status(<int>st, fname, y, &old)
    return y


def softmax_api(int index, str fname, x, out, u64 count):
    """mli.softmax_<kind>(x): out may be x (in place, as MLI allows)."""
    cdef _softmax_fn f = _SOFTMAX[_index(index, len(TABLE_NAMES["softmax"]), "softmax")]
    cdef CTensor tx = _arg(fname, "in", x)
    cdef PyObject *a[2]
    a[0] = <PyObject *>tx
    cdef CTensor y = _any_out(fname, out, count, MLI_EL_FX_16 if tx.t.el_type == MLI_EL_FX_16 else MLI_EL_FX_8,
                              ("in", "out"), a, 1, True)
    cdef mli_element_params old = y.t.el_params
    cdef mli_status st
    cdef mli_tensor *p_in = tp(tx)
    cdef mli_tensor *p_out = tp(y)
    with nogil:
        st = f(p_in, p_out)
    y.generation += 1
    _more_status(<int>st, fname, y, &old)
    return y
