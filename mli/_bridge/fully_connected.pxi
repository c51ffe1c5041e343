# mli_krn_fully_connected_* (csrc/src/kernels/mli_krn_fully_connected.c).
# (Included by mli/_core.pyx: one module, so it shares the module's names and cimports.)

ctypedef mli_status (*fc_fn)(const mli_tensor *, const mli_tensor *, const mli_tensor *, mli_tensor *) noexcept nogil


# variant index: 0 fx8, 1 fx16, 2 fx8w16d
cdef fc_fn FC[3]
FC[:] = [mli_krn_fully_connected_fx8, mli_krn_fully_connected_fx16, mli_krn_fully_connected_fx8w16d]


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


def fc_kernel(int variant, str fname):
    def fn(x, weights, bias, *, out=None, out_frac_bits=None):
        return _fc_api(variant, fname, x, weights, bias, out, out_frac_bits)
    return fn
